/* fuzz_ncu.c: the ncu CSV parser and what is built from its result (the
 * metrics object and the text for the LLM) on arbitrary bytes. */
#include "eval/sg_ncu.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sg_ncu_report rep;
  sg_err err;
  if (sg_ncu_parse((const char *)data, size, &rep, &err) == 0) {
    json_t *j = sg_ncu_report_json(&rep);
    json_decref(j);
    free(sg_ncu_report_text(&rep));
    sg_ncu_report_free(&rep);
  }
  return 0;
}
