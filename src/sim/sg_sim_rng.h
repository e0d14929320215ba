/* sg_sim_rng.h: the simulator's random numbers (streams of the shared
 * generator, common/sg_rng.h), with the distributions its models draw from.
 *
 * Everything random in `specgen sim` comes from streams of this generator,
 * each seeded from the run's seed and a stream number, so a seed replays a
 * campaign bit for bit and two configurations can share the same task draws
 * (common random numbers make their comparison sharper). Never seeded from a
 * clock.
 */
#ifndef SG_SIM_RNG_H
#define SG_SIM_RNG_H

#include "common/sg_rng.h"

#include <stdint.h>

/* One stream of the shared generator. */
typedef sg_rng sg_sim_rng;

/* Seeds the stream (seed, stream): different pairs give unrelated streams. */
void sg_sim_rng_seed(sg_sim_rng *r, uint64_t seed, uint64_t stream);
uint64_t sg_sim_rng_next(sg_sim_rng *r);
/* Uniform in [0, 1). */
double sg_sim_rng_uniform(sg_sim_rng *r);
/* Uniform in [lo, hi). */
double sg_sim_rng_range(sg_sim_rng *r, double lo, double hi);
/* true with probability p (p <= 0: never, p >= 1: always). */
int sg_sim_rng_bernoulli(sg_sim_rng *r, double p);
/* Standard normal (Box-Muller, one value per call). */
double sg_sim_rng_normal(sg_sim_rng *r);
/* Log-normal with the given mean and coefficient of variation (cv = 0:
 * the mean itself). */
double sg_sim_rng_lognormal(sg_sim_rng *r, double mean, double cv);
/* Exponential with the given mean. */
double sg_sim_rng_exponential(sg_sim_rng *r, double mean);
/* Poisson with the given mean (Knuth's method; mean < 500). */
int sg_sim_rng_poisson(sg_sim_rng *r, double mean);

#endif
