/* sg_sim_variant.c: the simulator's configurations, the paper's ablation
 * (sg_sim.h): each a set of policy switches, by name. */
#include "sim/sg_sim.h"

#include <string.h>

static const sg_sim_variant variants[SG_SIM_VARIANTS] = {
    {"baseline", false, false, false, false},
    {"spec", true, false, false, false},
    {"spec+realloc", true, true, false, false},
    {"spec+realloc+priority", true, true, true, false},
    {"full", true, true, true, true},
};

const char *sg_sim_variant_name(int i) {
  return i >= 0 && i < SG_SIM_VARIANTS ? variants[i].name : NULL;
}

int sg_sim_variant_parse(const char *name, sg_sim_variant *v, sg_err *err) {
  for (int i = 0; i < SG_SIM_VARIANTS; i++)
    if (strcmp(name, variants[i].name) == 0) {
      *v = variants[i];
      return 0;
    }
  return sg_err_set(err, SG_ENOENT,
                    "unknown configuration \"%s\" (known: baseline, spec, "
                    "spec+realloc, spec+realloc+priority, full)",
                    name);
}
