/* fuzz_report.c: what the report and the dashboard read from outside, on
 * any bytes: the dashboard address (a flag or a YAML value), URL redaction
 * (the configuration's URLs) and the script-safe JSON of any string (kernel
 * sources, messages). Asserts that the JSON never holds a '<' and reads back
 * as the same string. */
#include "report/sg_dashboard.h"
#include "report/sg_report.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  memcpy(text, data, size);
  text[size] = '\0';
  char host[64];
  int port = -1;
  sg_err err;
  if (sg_dashboard_parse_addr(text, host, sizeof host, &port, &err) == 0)
    assert(port >= 0 && port <= 65535 && strlen(host) < sizeof host);
  char *r = sg_report_redact_url(text);
  assert(strlen(r) <= strlen(text));
  free(r);
  json_t *s = json_stringn(text, size);
  if (s) {
    char *j = sg_report_json_for_script(s);
    assert(strchr(j, '<') == NULL);
    json_t *back = json_loads(j, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    assert(back && json_equal(back, s));
    json_decref(back);
    free(j);
    json_decref(s);
  }
  free(text);
  return 0;
}
