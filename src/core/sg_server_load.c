/* sg_server_load.c: the mains' rate per forks live, and the cap it allows
 * (sg_server_load.h). */
#include "core/sg_server_load.h"

#include <math.h>
#include <string.h>

/* A probe that finds the slowdown again waits twice as long next time, up
 * to this many times reprobe_s. */
#define SG_LOAD_WAIT_MAX 16.0

void sg_load_opts_default(sg_load_opts *o, double slowdown_max, int cap_max) {
  memset(o, 0, sizeof *o);
  o->slowdown_max = slowdown_max;
  o->cap_max = cap_max;
  o->min_tokens = 32;
  o->min_s = 2;
  o->window_s = 120;
  o->reprobe_s = 60;
}

void sg_load_init(sg_server_load *l, const sg_load_opts *o) {
  memset(l, 0, sizeof *l);
  l->o = *o;
  if (l->o.cap_max < 0)
    l->o.cap_max = 0;
  l->cap = l->o.cap_max;
  l->wait_s = l->o.reprobe_s;
}

static bool counts(const sg_server_load *l, int k) {
  const sg_load_bucket *b = &l->b[k];
  return b->seconds > 0 && b->tokens >= l->o.min_tokens && b->seconds >= l->o.min_s;
}

double sg_load_rate(const sg_server_load *l, int k) {
  if (k < 0 || k > SG_LOAD_KMAX || !counts(l, k))
    return NAN;
  return l->b[k].tokens / l->b[k].seconds;
}

double sg_load_slowdown(const sg_server_load *l, int k) {
  double r0 = sg_load_rate(l, 0), rk = sg_load_rate(l, k);
  if (!isfinite(r0) || !isfinite(rk) || r0 <= 0)
    return NAN;
  return 1 - rk / r0;
}

int sg_load_measured_max(const sg_server_load *l) {
  for (int k = SG_LOAD_KMAX; k >= 0; k--)
    if (counts(l, k))
      return k;
  return -1;
}

static bool too_slow(const sg_server_load *l, int k) {
  double s = sg_load_slowdown(l, k);
  return isfinite(s) && s > l->o.slowdown_max;
}

/* A lowered cap's wait is over: the too-slow bucket is forgotten and one
 * fork more allowed until it is measured again. */
static void maybe_probe(sg_server_load *l, double now_s) {
  if (l->probe != 0 || l->bad == 0 || l->cap >= l->o.cap_max ||
      now_s - l->lowered_s < l->wait_s)
    return;
  l->probe = l->bad;
  memset(&l->b[l->probe], 0, sizeof l->b[l->probe]);
  l->probes++;
}

static void decide(sg_server_load *l, double now_s) {
  int bad = 0;
  for (int k = 1; k <= SG_LOAD_KMAX && bad == 0; k++)
    if (too_slow(l, k))
      bad = k;
  /* A lowering holds: the k once measured too slow bounds the cap, though
   * its bucket no longer counts or its newer samples look fine, until a
   * probe of it (counted, with the backoff) measures it again. */
  if (l->bad != 0 && l->bad != l->probe && (bad == 0 || l->bad < bad))
    bad = l->bad;
  l->bad = bad;
  int cap = bad ? bad - 1 : l->o.cap_max;
  if (l->probe != 0) {
    if (bad == l->probe) { /* measured too slow again: back, and wait longer */
      l->probe = 0;
      l->wait_s *= 2;
      if (l->wait_s > SG_LOAD_WAIT_MAX * l->o.reprobe_s)
        l->wait_s = SG_LOAD_WAIT_MAX * l->o.reprobe_s;
      l->lowered_s = now_s;
    } else if (counts(l, l->probe) || (bad != 0 && bad < l->probe)) {
      l->probe = 0; /* fine now (or a smaller k is too slow): done, and
                       the next probe waits reprobe_s from here */
      l->wait_s = l->o.reprobe_s;
      l->lowered_s = now_s;
    } else if (cap > l->probe) {
      cap = l->probe; /* one fork more than before, until measured */
    }
  }
  if (cap > l->o.cap_max)
    cap = l->o.cap_max;
  if (cap < l->cap && l->probe == 0) {
    l->lowered++;
    l->lowered_s = now_s;
  }
  l->cap = cap;
}

int sg_load_observe(sg_server_load *l, double now_s, double tokens, double seconds, int forks) {
  if (!(seconds > 0) || !(tokens >= 0) || !isfinite(seconds) || !isfinite(tokens))
    return l->cap;
  int k = forks < 0 ? 0 : forks > SG_LOAD_KMAX ? SG_LOAD_KMAX : forks;
  sg_load_bucket *b = &l->b[k];
  b->tokens += tokens;
  b->seconds += seconds;
  /* The older half goes, unless the half left would no longer count (a
   * slow server: window_s holds too few tokens), so a measured bucket
   * stays measured and one being measured gets there. */
  if (b->seconds > l->o.window_s && b->tokens >= 2 * l->o.min_tokens &&
      b->seconds >= 2 * l->o.min_s) {
    b->tokens /= 2;
    b->seconds /= 2;
  }
  maybe_probe(l, now_s);
  decide(l, now_s);
  return l->cap;
}
