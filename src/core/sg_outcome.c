/* sg_outcome.c: the names of evaluation outcomes (sg_outcome.h). */
#include "core/sg_outcome.h"

#include <string.h>

static const char *const status_names[SG_EVAL__COUNT] = {
    "ok", "compile_error", "runtime_error", "numerical_error",
    "timeout", "rejected", "aborted", "infra_error"};

const char *sg_eval_status_name(sg_eval_status s) {
  return (unsigned)s < SG_EVAL__COUNT ? status_names[s] : "unknown";
}

int sg_eval_status_parse(const char *name) {
  for (int i = 0; name && i < SG_EVAL__COUNT; i++)
    if (strcmp(name, status_names[i]) == 0)
      return i;
  return -1;
}
