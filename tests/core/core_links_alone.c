/* core_links_alone.c: the core is pure by construction. This program links
 * the whole of the sgcore library (every object of it, link_whole) with
 * only sgcommon, libm and threads; a core source that calls into eval/,
 * llm/, runtime/ or any other library leaves a symbol undefined and the
 * build fails. The test that runs it also checks one call works.
 */
#include "core/sg_outcome.h"

#include <stdio.h>
#include <string.h>

int main(void) {
  if (strcmp(sg_eval_status_name(SG_EVAL_INFRA_ERROR), "infra_error") != 0)
    return 1;
  printf("the core links with the C library, libm and threads alone\n");
  return 0;
}
