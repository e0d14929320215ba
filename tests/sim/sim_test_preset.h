/* sim_test_preset.h: a preset's parameters for the simulator's tests,
 * failing the test when the preset is unknown. */
#ifndef SIM_TEST_PRESET_H
#define SIM_TEST_PRESET_H

#include "sg_test.h"
#include "sim/sg_sim_params.h"

static inline sg_sim_params sim_test_preset(const char *name) {
  sg_sim_params p;
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_sim_params_preset(&p, name, &err), err);
  return p;
}

#endif
