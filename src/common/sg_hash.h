/* sg_hash.h: the one non-cryptographic hash, 64-bit FNV-1a: content keys
 * (the run store's candidate dedup, the build caches), stable ids and seeds
 * drawn from text. Not for anything an adversary chooses to collide. */
#ifndef SG_HASH_H
#define SG_HASH_H

#include <stddef.h>
#include <stdint.h>

#define SG_FNV1A64_INIT UINT64_C(0xcbf29ce484222325)
#define SG_FNV1A64_PRIME UINT64_C(0x100000001b3)

/* h continued over one byte: for hashes built a byte at a time that skip
 * or fold what they do not count (the trigger scanner's words, the evolve
 * search's sources without whitespace). Start from SG_FNV1A64_INIT. */
static inline uint64_t sg_fnv1a64_byte(uint64_t h, unsigned char c) {
  return (h ^ c) * SG_FNV1A64_PRIME;
}

/* h continued over data: sg_fnv1a64_update(SG_FNV1A64_INIT, ...) first. */
uint64_t sg_fnv1a64_update(uint64_t h, const void *data, size_t len);
/* The hash of data alone. */
uint64_t sg_fnv1a64(const void *data, size_t len);

/* A kernel's source as the run compares it: one candidate is the same as
 * another when their normalized texts are equal (same task). Normalizing
 * removes what never changes what a compiler or interpreter builds and what
 * an LLM varies freely: "\r\n" line ends and any trailing blanks of a line
 * (spaces, tabs, \r, \v, \f), and blank lines before the first and after
 * the last line with text. Everything else, interior blank lines, comments
 * and indentation included, is kept byte for byte (Python indents, and a
 * comment may be a pragma). Writes the normalized text to out (at least
 * len bytes; not terminated) and returns its length, at most len. */
size_t sg_source_normalize(const char *src, size_t len, char *out);
/* FNV-1a 64 of the normalized text (without allocating). */
uint64_t sg_source_key(const char *src, size_t len);

#endif
