/* sg_hash.h: the one non-cryptographic hash, 64-bit FNV-1a: content keys
 * (the run store's candidate dedup, the build caches), stable ids and seeds
 * drawn from text. Not for anything an adversary chooses to collide. */
#ifndef SG_HASH_H
#define SG_HASH_H

#include <stddef.h>
#include <stdint.h>

#define SG_FNV1A64_INIT UINT64_C(0xcbf29ce484222325)

/* h continued over data: sg_fnv1a64_update(SG_FNV1A64_INIT, ...) first. */
uint64_t sg_fnv1a64_update(uint64_t h, const void *data, size_t len);
/* The hash of data alone. */
uint64_t sg_fnv1a64(const void *data, size_t len);

#endif
