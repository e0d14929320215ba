/* sg_rng.h: the one pseudo-random generator specgen uses.
 *
 * xoshiro256** (Blackman and Vigna), seeded through splitmix64: fast, small,
 * and the same stream for the same seed on every machine, so inputs, the test
 * model and the simulator replay exactly from a seed. Modules build their own
 * distributions on top (the evaluators' normals, the simulator's models).
 * Pure: no global state.
 */
#ifndef SG_RNG_H
#define SG_RNG_H

#include <stdint.h>

typedef struct sg_rng {
  uint64_t s[4];
} sg_rng;

/* splitmix64: advances *state and returns the next value; also a good 64-bit
 * mixer for deriving seeds. */
uint64_t sg_splitmix64(uint64_t *state);

/* Seeds r from one 64-bit value (four splitmix64 draws). */
void sg_rng_seed(sg_rng *r, uint64_t seed);

/* The next 64 bits. Inline: the evaluators draw tens of millions of values
 * per evaluation, and a call per draw was a third of their cost. */
inline uint64_t sg_rng_next(sg_rng *r) {
  uint64_t *s = r->s;
  uint64_t x = s[1] * 5;
  uint64_t result = ((x << 7) | (x >> 57)) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = (s[3] << 45) | (s[3] >> 19);
  return result;
}
/* Uniform in [0, 1), 53 random bits. */
double sg_rng_uniform(sg_rng *r);

#endif
