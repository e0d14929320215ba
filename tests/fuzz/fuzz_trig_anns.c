/* fuzz_trig_anns.c: trigger annotation files (sg_triggers_eval.h) on
 * arbitrary bytes.
 *
 * A file either parses (every offset and class kept, the family a
 * NUL-terminated string within its cap) or fails with SG_EPARSE and a
 * message naming the file and a line, holding nothing. What parses is then
 * scored against the scanner's own triggers on the same bytes: counts stay
 * consistent (matched never above expected or reported, errors within the
 * window). */
#include "core/sg_triggers_eval.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TRIG 1024

typedef struct got {
  sg_trigger t[MAX_TRIG];
  size_t n;
} got;

static void cb(void *user, const sg_trigger *t) {
  got *g = user;
  if (g->n < MAX_TRIG)
    g->t[g->n++] = *t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sg_trig_anns a;
  sg_err err;
  sg_err_clear(&err);
  int rc = sg_trig_anns_parse((const char *)data, size, "f.ann", &a, &err);
  if (rc < 0) {
    assert(rc == SG_EPARSE);
    assert(strncmp(err.msg, "f.ann:", 6) == 0);
    assert(a.v == NULL && a.n == 0);
    return 0;
  }
  assert(strlen(a.family) < SG_TRIG_FAMILY_MAX);
  for (size_t i = 0; i < a.n; i++)
    assert((unsigned)a.v[i].cls < SG_TRIGGER__COUNT);
  static got g;
  g.n = 0;
  sg_scanner *s = sg_scanner_new(NULL);
  sg_scanner_feed(s, (const char *)data, size, cb, &g);
  sg_scanner_finish(s, cb, &g);
  sg_scanner_free(s);
  sg_trig_score sc[SG_TRIGGER__COUNT];
  memset(sc, 0, sizeof sc);
  uint64_t window = size % 97;
  sg_trig_eval_add(&a, g.t, g.n, window, sc);
  for (int k = 0; k < SG_TRIGGER__COUNT; k++) {
    assert(sc[k].matched <= sc[k].expected && sc[k].matched <= sc[k].reported);
    assert(sc[k].exact <= sc[k].matched);
    assert(sc[k].err_max_bytes <= window);
    assert(sc[k].err_sum_bytes <= sc[k].matched * window);
  }
  sg_trig_anns_free(&a);
  return 0;
}
