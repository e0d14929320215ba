/* sg_triggers_eval.c: annotations and scoring for the trigger scanner.
 *
 * Matching is one-to-one and nearest-first: all (expected, reported) pairs
 * of one class within the window are sorted by distance and taken greedily
 * while both sides are free. A trace holds at most a few hundred triggers,
 * so the quadratic pair list is small, and the result does not depend on
 * the order of the annotation lines.
 */
#include "core/sg_triggers_eval.h"

#include "common/sg_alloc.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void sg_trig_anns_free(sg_trig_anns *a) {
  if (a == NULL)
    return;
  free(a->v);
  memset(a, 0, sizeof *a);
}

static void push(sg_trig_anns *a, uint64_t off, sg_trigger_class cls) {
  if (a->n == a->cap) {
    a->cap = a->cap ? a->cap * 2 : 32;
    a->v = sg_realloc(a->v, a->cap * sizeof *a->v);
  }
  a->v[a->n].offset = off;
  a->v[a->n].cls = cls;
  a->n++;
}

/* One "# key: value" header; only family is read. */
static int header(const char *p, size_t n, sg_trig_anns *out) {
  static const char key[] = "family:";
  size_t i = 1;
  while (i < n && (p[i] == ' ' || p[i] == '\t'))
    i++;
  if (n - i < sizeof key - 1 || memcmp(p + i, key, sizeof key - 1) != 0)
    return 0;
  i += sizeof key - 1;
  while (i < n && (p[i] == ' ' || p[i] == '\t'))
    i++;
  size_t e = n;
  while (e > i && (p[e - 1] == ' ' || p[e - 1] == '\t' || p[e - 1] == '\r'))
    e--;
  if (e - i == 0 || e - i >= SG_TRIG_FAMILY_MAX)
    return -1;
  memcpy(out->family, p + i, e - i);
  out->family[e - i] = '\0';
  return 0;
}

static int line(const char *p, size_t n, sg_trig_anns *out, const char *name,
                size_t lineno, sg_err *err) {
  size_t i = 0;
  uint64_t off = 0;
  if (i == n || p[i] < '0' || p[i] > '9')
    return sg_err_set(err, SG_EPARSE, "%s:%zu: offset: expected a byte offset",
                      name, lineno);
  for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
    if (off > (UINT64_MAX - 9) / 10)
      return sg_err_set(err, SG_EPARSE, "%s:%zu: offset: too large", name, lineno);
    off = off * 10 + (uint64_t)(p[i] - '0');
  }
  if (i == n || (p[i] != '\t' && p[i] != ' '))
    return sg_err_set(err, SG_EPARSE,
                      "%s:%zu: expected the offset, a tab and a class", name,
                      lineno);
  while (i < n && (p[i] == '\t' || p[i] == ' '))
    i++;
  size_t c0 = i;
  while (i < n && p[i] != '\t' && p[i] != ' ' && p[i] != '\r')
    i++;
  char cls[16];
  size_t cl = i - c0;
  int k = -1;
  if (cl > 0 && cl < sizeof cls) {
    memcpy(cls, p + c0, cl);
    cls[cl] = '\0';
    k = sg_trigger_class_parse(cls);
  }
  if (k < 0)
    return sg_err_set(err, SG_EPARSE,
                      "%s:%zu: class: '%.*s' is not design, fence, kernel or "
                      "phrase", name, lineno, (int)(cl > 32 ? 32 : cl), p + c0);
  push(out, off, (sg_trigger_class)k);
  return 0;
}

int sg_trig_anns_parse(const char *text, size_t len, const char *name,
                       sg_trig_anns *out, sg_err *err) {
  memset(out, 0, sizeof *out);
  size_t lineno = 0, i = 0;
  while (i < len) {
    size_t e = i;
    while (e < len && text[e] != '\n')
      e++;
    lineno++;
    const char *p = text + i;
    size_t n = e - i;
    while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
      n--;
    int rc = 0;
    if (n > 0 && p[0] == '#') {
      if (header(p, n, out) < 0)
        rc = sg_err_set(err, SG_EPARSE, "%s:%zu: family: empty or over %d bytes",
                        name, lineno, SG_TRIG_FAMILY_MAX - 1);
    } else if (n > 0) {
      rc = line(p, n, out, name, lineno, err);
    }
    if (rc < 0) {
      sg_trig_anns_free(out);
      return rc;
    }
    i = e + 1;
  }
  return 0;
}

typedef struct pair {
  uint64_t dist;
  size_t w, g;
} pair;

static int pair_cmp(const void *a, const void *b) {
  const pair *x = a, *y = b;
  if (x->dist != y->dist)
    return x->dist < y->dist ? -1 : 1;
  if (x->w != y->w)
    return x->w < y->w ? -1 : 1;
  return x->g < y->g ? -1 : x->g > y->g;
}

static uint64_t absdiff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

void sg_trig_eval_add(const sg_trig_anns *want, const sg_trigger *got,
                      size_t ngot, uint64_t window_bytes,
                      sg_trig_score score[SG_TRIGGER__COUNT]) {
  for (size_t i = 0; i < want->n; i++)
    score[want->v[i].cls].expected++;
  for (size_t i = 0; i < ngot; i++)
    score[got[i].cls].reported++;
  size_t np = 0, cap = 0;
  pair *pairs = NULL;
  for (size_t w = 0; w < want->n; w++)
    for (size_t g = 0; g < ngot; g++) {
      if (got[g].cls != want->v[w].cls)
        continue;
      uint64_t d = absdiff(got[g].offset, want->v[w].offset);
      if (d > window_bytes)
        continue;
      if (np == cap) {
        cap = cap ? cap * 2 : 64;
        pairs = sg_realloc(pairs, cap * sizeof *pairs);
      }
      pairs[np++] = (pair){d, w, g};
    }
  if (np > 1)
    qsort(pairs, np, sizeof *pairs, pair_cmp);
  bool *wused = sg_calloc(want->n + 1, sizeof *wused);
  bool *gused = sg_calloc(ngot + 1, sizeof *gused);
  for (size_t i = 0; i < np; i++) {
    if (wused[pairs[i].w] || gused[pairs[i].g])
      continue;
    wused[pairs[i].w] = gused[pairs[i].g] = true;
    sg_trig_score *s = &score[want->v[pairs[i].w].cls];
    s->matched++;
    s->exact += pairs[i].dist == 0;
    s->err_sum_bytes += pairs[i].dist;
    if (pairs[i].dist > s->err_max_bytes)
      s->err_max_bytes = pairs[i].dist;
  }
  free(wused);
  free(gused);
  free(pairs);
}

double sg_trig_score_precision(const sg_trig_score *s) {
  return s->reported ? (double)s->matched / (double)s->reported : 1.0;
}

double sg_trig_score_recall(const sg_trig_score *s) {
  return s->expected ? (double)s->matched / (double)s->expected : 1.0;
}
