/* fuzz_sim_config.c: the simulator's YAML configuration loader on arbitrary
 * bytes: it must accept or refuse with a message, never crash, and a
 * configuration it accepts must either validate or be refused by
 * sg_sim_params_validate with a message. */
#include "sim/sg_sim_params.h"

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sg_sim_params p;
  sg_err err;
  sg_err_clear(&err);
  if (sg_sim_params_preset(&p, "paper-glm", &err) != 0)
    return 0;
  int rc = sg_sim_params_load_yaml_string(&p, (const char *)data, size, "fuzz.yaml",
                                          &err);
  if (rc < 0) {
    assert(err.msg[0] != '\0');
    return 0;
  }
  sg_err_clear(&err);
  if (sg_sim_params_validate(&p, &err) < 0)
    assert(err.msg[0] != '\0');
  return 0;
}
