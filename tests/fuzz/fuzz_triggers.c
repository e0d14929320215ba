/* fuzz_triggers.c: the trigger scanner on arbitrary bytes.
 *
 * The first byte picks the options and a split point; the rest is the text.
 * It is fed whole, in two parts at the split, and in chunks of a size taken
 * from the input, and once byte by byte through the byte machines (no
 * prose fast path); every feeding must report the same triggers (offsets in
 * order and within the text, texts NUL-terminated and within the cap). */
#include "core/sg_triggers.h"
#include "core/sg_triggers_priv.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TRIG 4096

typedef struct res {
  sg_trigger t[MAX_TRIG];
  size_t n;
  uint64_t len;
} res;

static void cb(void *user, const sg_trigger *t) {
  res *r = user;
  assert(t->offset <= r->len);
  assert(r->n == 0 || t->offset >= r->t[r->n - 1].offset);
  assert(strlen(t->text) < SG_TRIGGER_TEXT_MAX);
  assert((unsigned)t->cls < SG_TRIGGER__COUNT);
  if (r->n < MAX_TRIG)
    r->t[r->n++] = *t;
}

static void scan(const sg_scanner_opts *o, const uint8_t *d, size_t len,
                 size_t split, size_t chunk, bool reference, res *r) {
  r->n = 0;
  r->len = len;
  sg_scanner *s = sg_scanner_new(o);
  trig_scanner_set_reference(s, reference);
  if (chunk == 0) {
    sg_scanner_feed(s, (const char *)d, split, cb, r);
    sg_scanner_feed(s, (const char *)d + split, len - split, cb, r);
  } else {
    for (size_t i = 0; i < len; i += chunk)
      sg_scanner_feed(s, (const char *)d + i, len - i < chunk ? len - i : chunk,
                      cb, r);
  }
  assert(sg_scanner_offset(s) == len);
  sg_scanner_finish(s, cb, r);
  sg_scanner_free(s);
}

static int same(const res *a, const res *b) {
  if (a->n != b->n)
    return 0;
  for (size_t i = 0; i < a->n; i++)
    if (a->t[i].cls != b->t[i].cls || a->t[i].offset != b->t[i].offset ||
        strcmp(a->t[i].text, b->t[i].text) != 0)
      return 0;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  static res whole, other;
  sg_scanner_opts o;
  sg_scanner_opts_default(&o);
  o.classes = data[0] & 0x0F;
  o.min_gap_bytes = (data[0] & 0x10) ? 256 : 0;
  const uint8_t *d = data + 1;
  size_t len = size - 1;
  size_t split = len ? (size_t)(data[0] * 7919u) % (len + 1) : 0;
  scan(&o, d, len, len, 0, false, &whole);
  scan(&o, d, len, split, 0, false, &other);
  assert(same(&whole, &other));
  scan(&o, d, len, 0, 1 + (data[0] >> 5), false, &other);
  assert(same(&whole, &other));
  scan(&o, d, len, len, 0, true, &other);
  assert(same(&whole, &other));
  return 0;
}
