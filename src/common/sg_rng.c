/* sg_rng.c: xoshiro256**, seeded by splitmix64 (see sg_rng.h). */
#include "common/sg_rng.h"

uint64_t sg_splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void sg_rng_seed(sg_rng *r, uint64_t seed) {
  uint64_t x = seed;
  for (int i = 0; i < 4; i++)
    r->s[i] = sg_splitmix64(&x);
}

/* the one external definition of the inline sg_rng_next (C11 6.7.4) */
extern inline uint64_t sg_rng_next(sg_rng *r);

double sg_rng_uniform(sg_rng *r) {
  return (double)(sg_rng_next(r) >> 11) * 0x1.0p-53;
}
