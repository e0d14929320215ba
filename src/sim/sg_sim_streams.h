/* sg_sim_streams.h: the stream model measured on real reasoning traces
 * (docs/simulation.md, "The stream model, measured").
 *
 * scripts/measure_streams.py runs the project's trigger scanner over real
 * traces and writes sim/streams/<model>.json; the build compiles those
 * files in, and a preset names one (`stream.profile`). A main generation
 * then draws from them, instead of the guessed Poisson count, uniform
 * positions and per-task useful prefix: how many triggers its reasoning
 * holds (as the controller's scanner fires on them, at its gap), where
 * they fall, whether the reasoning holds a complete kernel and, if so,
 * where the first one appears (the prefix past which a fork can write a
 * valid kernel). A profile may also be read from a file of the same form
 * (a `stream.profile` ending in ".json"). */
#ifndef SG_SIM_STREAMS_H
#define SG_SIM_STREAMS_H

#include "common/sg_error.h"

#include <stdbool.h>
#include <stddef.h>

/* A distribution's quantile function at 0%, 1%, ..., 100%. */
#define SG_SIM_QUANTILES 101
typedef struct sg_sim_qf {
  double q[SG_SIM_QUANTILES];
} sg_sim_qf;

typedef struct sg_sim_streams {
  sg_sim_qf triggers;      /* triggers per trace at the controller's gap */
  sg_sim_qf trigger_pos;   /* where they fall, fraction of the reasoning */
  sg_sim_qf first_kernel;  /* first complete kernel, fraction, in the
                              traces that hold one */
  double share_without_kernel; /* traces whose reasoning holds none */
} sg_sim_streams;

/* True for "none" (the guessed model: `triggers.per_gen`, uniform
 * positions, `valid.threshold_*`, `valid.prefix_useful_p`). */
bool sg_sim_streams_none(const char *profile);

/* Loads profile: a compiled-in name ("qwq32b", "gptoss120b") or a path
 * ending in ".json". Errors name the profile and the field. */
int sg_sim_streams_load(const char *profile, sg_sim_streams *out, sg_err *err);
/* The same from JSON text; name is used in messages. */
int sg_sim_streams_parse(const char *json, size_t len, const char *name,
                         sg_sim_streams *out, sg_err *err);

/* The distribution's value at u in [0, 1) (inverse transform, linear
 * between the quantiles). */
double sg_sim_qf_at(const sg_sim_qf *qf, double u);

#endif
