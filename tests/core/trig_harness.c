/* trig_harness.c: feeding helpers shared by the trigger scanner's tests. */
#include "trig_harness.h"

#include "common/sg_alloc.h"
#include "common/sg_rng.h"
#include "core/sg_triggers_priv.h"
#include "sg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <string.h>

static void collect(void *user, const sg_trigger *t) {
  result *r = user;
  SG_CHECK_MSG(r->n < MAX_TRIGGERS, "too many triggers");
  if (r->n > 0)
    SG_CHECK_MSG(t->offset >= r->t[r->n - 1].offset, "offsets out of order");
  SG_CHECK(strlen(t->text) < SG_TRIGGER_TEXT_MAX);
  r->t[r->n++] = *t;
}

/* Feeds one chunk from a copy that ends exactly where the chunk does. */
static void feed_tight(sg_scanner *s, const char *p, size_t n, result *r) {
  char *copy = sg_malloc(n ? n : 1);
  memcpy(copy, p, n);
  sg_scanner_feed(s, copy, n, collect, r);
  free(copy);
}

/* reference: every byte through the byte machines (no prose fast path). */
static void run(const char *in, size_t len, const sg_scanner_opts *o,
                size_t chunk, uint64_t seed, bool reference, result *r) {
  memset(r, 0, sizeof *r);
  sg_scanner *s = sg_scanner_new(o);
  trig_scanner_set_reference(s, reference);
  size_t i = 0;
  sg_rng g;
  sg_rng_seed(&g, seed);
  while (i < len) {
    size_t n = chunk;
    if (n == 0)
      n = 1 + (size_t)(sg_rng_next(&g) % 97);
    if (n > len - i)
      n = len - i;
    feed_tight(s, in + i, n, r);
    i += n;
  }
  SG_CHECK_EQ_INT(sg_scanner_offset(s), len);
  sg_scanner_finish(s, collect, r);
  sg_scanner_free(s);
}

void trig_run(const char *in, size_t len, const sg_scanner_opts *o,
              size_t chunk, uint64_t seed, result *r) {
  run(in, len, o, chunk, seed, false, r);
}

bool trig_same(const result *a, const result *b) {
  if (a->n != b->n)
    return false;
  for (size_t i = 0; i < a->n; i++)
    if (a->t[i].cls != b->t[i].cls || a->t[i].offset != b->t[i].offset ||
        strcmp(a->t[i].text, b->t[i].text) != 0)
      return false;
  return true;
}

void trig_dump(const char *what, const result *r) {
  printf("# %s: %zu triggers\n", what, r->n);
  for (size_t i = 0; i < r->n; i++)
    printf("#   %llu %s \"%s\"\n", (unsigned long long)r->t[i].offset,
           sg_trigger_class_name(r->t[i].cls), r->t[i].text);
}

/* Scans in at every split; checks they agree; returns the whole-feed result. */
void trig_scan_all_splits(const char *in, const sg_scanner_opts *o,
                            result *whole) {
  size_t len = strlen(in);
  trig_run(in, len, o, len ? len : 1, 0, whole);
  result *other = sg_malloc(sizeof *other);
  size_t max_chunk = len <= 400 ? len : 64;
  for (size_t c = 1; c < max_chunk; c++) {
    trig_run(in, len, o, c, 0, other);
    if (!trig_same(whole, other)) {
      trig_dump("whole", whole);
      trig_dump("split", other);
      SG_FAIL("chunk size %zu disagrees with the whole feed", c);
    }
  }
  /* The prose fast path must take exactly the byte machines' steps. */
  run(in, len, o, len ? len : 1, 0, true, other);
  if (!trig_same(whole, other)) {
    trig_dump("whole", whole);
    trig_dump("reference", other);
    SG_FAIL("the byte-by-byte reference disagrees with the whole feed");
  }
  for (uint64_t seed = 1; seed <= 8; seed++) {
    trig_run(in, len, o, 0, seed, other);
    if (!trig_same(whole, other)) {
      trig_dump("whole", whole);
      trig_dump("split", other);
      SG_FAIL("random split (seed %llu) disagrees", (unsigned long long)seed);
    }
  }
  free(other);
}

sg_scanner_opts trig_gap0(void) {
  sg_scanner_opts o;
  sg_scanner_opts_default(&o);
  o.min_gap_bytes = 0;
  return o;
}

/* Expected classes as letters: D design, F fence, K kernel, P phrase. */
void trig_expect_classes(const char *in, const char *want) {
  sg_scanner_opts o = trig_gap0();
  result *r = sg_malloc(sizeof *r);
  trig_scan_all_splits(in, &o, r);
  char got[MAX_TRIGGERS + 1];
  for (size_t i = 0; i < r->n; i++)
    got[i] = "DFKP"[r->t[i].cls];
  got[r->n] = '\0';
  if (strcmp(got, want) != 0) {
    trig_dump("got", r);
    SG_FAIL("input \"%s\": classes \"%s\", want \"%s\"", in, got, want);
  }
  free(r);
}


void trig_run_table(const tcase *t, size_t n) {
  for (size_t i = 0; i < n; i++)
    trig_expect_classes(t[i].in, t[i].want);
}

int trig_sh(const char *cmd, char **out) {
  char *full = sg_asprintf("%s 2>&1", cmd);
  FILE *p = popen(full, "r");
  free(full);
  SG_CHECK(p != NULL);
  size_t cap = 1 << 16, len = 0;
  char *buf = sg_malloc(cap);
  size_t n;
  while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
    len += n;
    if (len + 1 == cap)
      buf = sg_realloc(buf, cap *= 2);
  }
  buf[len] = '\0';
  int st = pclose(p);
  *out = buf;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
