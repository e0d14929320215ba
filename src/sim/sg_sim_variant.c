/* sg_sim_variant.c: the simulator's configurations, the paper's ablation
 * and the policies beyond it (sg_sim.h): each a set of policy switches, by
 * name. */
#include "sim/sg_sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const sg_sim_variant variants[SG_SIM_VARIANTS_ALL] = {
    {"baseline", false, false, false, false, false, false, false, false, 0, false, false, false},
    {"spec", true, false, false, false, false, false, false, false, 0, false, false, false},
    {"spec+realloc", true, true, false, false, false, false, false, false, 0, false, false, false},
    {"spec+realloc+priority", true, true, true, false, false, false, false, false, 0, false, false, false},
    {"full", true, true, true, true, false, false, false, false, 0, false, false, false},
    {"full+wc", true, true, true, true, true, false, false, false, 0, false, false, false},
    {"full+gate", true, true, true, true, false, true, false, false, 0, false, false, false},
    {"full+cutoff", true, true, true, true, false, false, true, false, 0, false, false, false},
    {"full+gate+cutoff", true, true, true, true, false, true, true, false, 0, false, false, false},
    {"beyond", true, true, true, true, true, true, true, false, 0, false, false, false},
    {"full+vd", true, true, true, true, false, false, false, false, 1, false, false, false},
    {"full+cutoff+vd", true, true, true, true, false, false, true, false, 1, false, false, false},
    {"full+gate+cutoff+vd", true, true, true, true, false, true, true, false, 1, false, false, false},
    {"beyond+vd", true, true, true, true, true, true, true, false, 1, false, false, false},
    {"full+wcs", true, true, true, true, true, false, false, true, 0, false, false, false},
    {"full+wcs+vd", true, true, true, true, true, false, false, true, 1, false, false, false},
    {"full+wcs+cutoff+vd", true, true, true, true, true, false, true, true, 1, false, false, false},
    {"full+wcs+gate+cutoff+vd", true, true, true, true, true, true, true, true, 1, false, false, false},
    {"full+cutoff+detach", true, true, true, true, false, false, true, false, 0, true, false, false},
    {"full+cutoff+detach+vd", true, true, true, true, false, false, true, false, 1, true, false, false},
    {"full+gate+cutoff+detach+vd", true, true, true, true, false, true, true, false, 1, true, false, false},
    {"full+wcs+gate+cutoff+detach+vd", true, true, true, true, true, true, true, true, 1,
     true, false, false},
    {"full+vds", true, true, true, true, false, false, false, false, 1, false, true, false},
    {"full+wcs+vds", true, true, true, true, true, false, false, true, 1, false, true, false},
    {"full+wcs+gate+cutoff+detach+vds", true, true, true, true, true, true, true, true, 1,
     true, true, false},
    {"full+ahead", true, true, true, true, false, false, false, false, 0, false, false, true},
    {"full+vd+ahead", true, true, true, true, false, false, false, false, 1, false, false, true},
    {"full+gate+vd", true, true, true, true, false, true, false, false, 1, false, false, false},
    {"full+gate+vd+ahead", true, true, true, true, false, true, false, false, 1, false, false,
     true},
    {"full+wcs+gate+vd+ahead", true, true, true, true, true, true, false, true, 1, false, false,
     true},
    {"full+gate+ahead", true, true, true, true, false, true, false, false, 0, false, false, true},
};

const char *sg_sim_variant_name(int i) {
  return i >= 0 && i < SG_SIM_VARIANTS_ALL ? variants[i].name : NULL;
}

/* "NAME" or, for a configuration that decides at validation, "NAME:M"
 * with its margin M (1..10). */
int sg_sim_variant_parse(const char *name, sg_sim_variant *v, sg_err *err) {
  const char *colon = strchr(name, ':');
  size_t base = colon ? (size_t)(colon - name) : strlen(name);
  for (int i = 0; i < SG_SIM_VARIANTS_ALL; i++) {
    if (strlen(variants[i].name) != base ||
        strncmp(name, variants[i].name, base) != 0)
      continue;
    *v = variants[i];
    if (colon == NULL)
      return 0;
    char *end;
    double m = strtod(colon + 1, &end);
    if (v->at_validation <= 0 || end == colon + 1 || *end != '\0' ||
        !(m >= 1 && m <= 10) || strlen(name) >= sizeof v->name)
      return sg_err_set(err, SG_EINVAL,
                        "configuration \"%s\": a margin (:M, M in 1..10) goes "
                        "only with a configuration that decides at validation "
                        "(+vd)",
                        name);
    v->at_validation = m;
    snprintf(v->name, sizeof v->name, "%s", name);
    return 0;
  }
  char known[1024];
  size_t off = 0;
  for (int i = 0; i < SG_SIM_VARIANTS_ALL && off < sizeof known; i++)
    off += (size_t)snprintf(known + off, sizeof known - off, "%s%s", i ? ", " : "",
                            variants[i].name);
  return sg_err_set(err, SG_ENOENT,
                    "unknown configuration \"%s\" (known: %s; +vd ones take a "
                    "margin, e.g. full+vd:1.1)",
                    name, known);
}
