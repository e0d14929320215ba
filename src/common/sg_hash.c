/* sg_hash.c: 64-bit FNV-1a (sg_hash.h). */
#include "common/sg_hash.h"

uint64_t sg_fnv1a64_update(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= UINT64_C(0x100000001b3);
  }
  return h;
}

uint64_t sg_fnv1a64(const void *data, size_t len) {
  return sg_fnv1a64_update(SG_FNV1A64_INIT, data, len);
}
