/* sg_sim_variant.c: the simulator's configurations, the paper's ablation
 * and the policies beyond it (sg_sim.h): each a set of policy switches, by
 * name. */
#include "sim/sg_sim.h"

#include <string.h>

static const sg_sim_variant variants[SG_SIM_VARIANTS_ALL] = {
    {"baseline", false, false, false, false, false, false, false},
    {"spec", true, false, false, false, false, false, false},
    {"spec+realloc", true, true, false, false, false, false, false},
    {"spec+realloc+priority", true, true, true, false, false, false, false},
    {"full", true, true, true, true, false, false, false},
    {"full+wc", true, true, true, true, true, false, false},
    {"full+gate", true, true, true, true, false, true, false},
    {"full+cutoff", true, true, true, true, false, false, true},
    {"full+gate+cutoff", true, true, true, true, false, true, true},
    {"beyond", true, true, true, true, true, true, true},
};

const char *sg_sim_variant_name(int i) {
  return i >= 0 && i < SG_SIM_VARIANTS_ALL ? variants[i].name : NULL;
}

int sg_sim_variant_parse(const char *name, sg_sim_variant *v, sg_err *err) {
  for (int i = 0; i < SG_SIM_VARIANTS_ALL; i++)
    if (strcmp(name, variants[i].name) == 0) {
      *v = variants[i];
      return 0;
    }
  return sg_err_set(err, SG_ENOENT,
                    "unknown configuration \"%s\" (known: baseline, spec, "
                    "spec+realloc, spec+realloc+priority, full, full+wc, "
                    "full+gate, full+cutoff, full+gate+cutoff, beyond)",
                    name);
}
