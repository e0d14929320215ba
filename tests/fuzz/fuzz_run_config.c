/* fuzz_run_config.c: `specgen run`'s YAML configuration loader on arbitrary
 * bytes: it must accept or refuse with a message that names the file, never
 * crash or leak; a configuration it accepts must survive the JSON record's
 * round trip unchanged, and sg_run_config_check must answer it (0, or an
 * error with a message). */
#include "run/sg_run_config.h"

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sg_run_config c;
  sg_err err;
  sg_err_clear(&err);
  sg_run_config_init(&c);
  int rc = sg_run_config_load_yaml_string(&c, (const char *)data, size,
                                          "fuzz.yaml", &err);
  if (rc < 0) {
    assert(strncmp(err.msg, "fuzz.yaml", 9) == 0);
    sg_run_config_free(&c);
    return 0;
  }
  json_t *j = sg_run_config_to_json(&c);
  sg_run_config d;
  sg_run_config_init(&d);
  sg_err_clear(&err);
  rc = sg_run_config_from_json(&d, j, &err);
  assert(rc == 0);
  json_t *k = sg_run_config_to_json(&d);
  assert(json_equal(j, k));
  json_decref(j);
  json_decref(k);
  sg_err_clear(&err);
  if (sg_run_config_check(&c, &err) < 0)
    assert(err.msg[0] != '\0');
  sg_run_config_free(&c);
  sg_run_config_free(&d);
  return 0;
}
