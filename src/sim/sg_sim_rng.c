/* sg_sim_rng.c: seeded streams of the shared generator (common/sg_rng.h) and
 * the distributions the simulator's models use. See sg_sim_rng.h. */
#include "sim/sg_sim_rng.h"

#include <assert.h>
#include <math.h>

void sg_sim_rng_seed(sg_sim_rng *r, uint64_t seed, uint64_t stream) {
  uint64_t x = seed ^ (stream * 0xd1b54a32d192ed03ull);
  /* Mix the stream in twice so (seed, stream) and (seed', stream') that
   * collide after the xor still diverge. */
  x = sg_splitmix64(&x) ^ stream;
  for (int i = 0; i < 4; i++)
    r->s[i] = sg_splitmix64(&x);
}

uint64_t sg_sim_rng_next(sg_sim_rng *r) { return sg_rng_next(r); }

double sg_sim_rng_uniform(sg_sim_rng *r) { return sg_rng_uniform(r); }

double sg_sim_rng_range(sg_sim_rng *r, double lo, double hi) {
  return lo + (hi - lo) * sg_sim_rng_uniform(r);
}

int sg_sim_rng_bernoulli(sg_sim_rng *r, double p) {
  /* Always draw, so the stream advances the same way whatever p is. */
  double u = sg_sim_rng_uniform(r);
  return u < p;
}

double sg_sim_rng_normal(sg_sim_rng *r) {
  double u1 = sg_sim_rng_uniform(r);
  double u2 = sg_sim_rng_uniform(r);
  if (u1 < 1e-300)
    u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double sg_sim_rng_lognormal(sg_sim_rng *r, double mean, double cv) {
  double z = sg_sim_rng_normal(r);
  if (cv <= 0)
    return mean;
  double s2 = log(1.0 + cv * cv);
  double mu = log(mean) - s2 / 2.0;
  return exp(mu + sqrt(s2) * z);
}

double sg_sim_rng_exponential(sg_sim_rng *r, double mean) {
  double u = sg_sim_rng_uniform(r);
  return -mean * log(1.0 - u);
}

int sg_sim_rng_poisson(sg_sim_rng *r, double mean) {
  assert(mean >= 0 && mean < 500);
  double l = exp(-mean), p = 1.0;
  int k = 0;
  do {
    k++;
    p *= sg_sim_rng_uniform(r);
  } while (p > l && k < 10000);
  return k - 1;
}
