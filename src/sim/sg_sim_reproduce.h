/* sg_sim_reproduce.h: `specgen sim --reproduce`: the paper's Tables 4, 5,
 * 7, 8 and 9 cell by cell, the paper's value beside the simulator's and the
 * ratio sim / paper, for both presets.
 *
 * The paper's values are compiled in (they are what is compared against,
 * from its tables); every simulated value comes out of campaigns run here
 * with the given parameters: per preset the five configurations of the
 * ablation and the `full` configuration under each termination criterion.
 * Where a paper cell has no counterpart in the simulator (CudaForge+, the
 * other baseline systems) it is left out; docs/simulation.md says why.
 */
#ifndef SG_SIM_REPRODUCE_H
#define SG_SIM_REPRODUCE_H

#include "common/sg_error.h"
#include "sim/sg_sim_params.h"

/* glm and dsv4 are the two presets' parameters (with any overrides).
 * Renders the comparison as a text table or JSON into *out (caller
 * frees). */
int sg_sim_reproduce(const sg_sim_params *glm, const sg_sim_params *dsv4, bool json,
                     char **out, sg_err *err);

#endif
