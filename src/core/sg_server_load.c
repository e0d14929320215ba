/* sg_server_load.c: the per-stream rate per streams live, and the cap it
 * allows at the mains live (sg_server_load.h). */
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
  l->mains = 1;
  l->cap = l->o.cap_max;
  l->wait_s = l->o.reprobe_s;
}

static int clamp_n(int n) { return n < 1 ? 1 : n > SG_LOAD_KMAX ? SG_LOAD_KMAX : n; }

static bool counts(const sg_server_load *l, int n) {
  const sg_load_bucket *b = &l->b[n];
  return b->seconds > 0 && b->tokens >= l->o.min_tokens && b->seconds >= l->o.min_s;
}

double sg_load_rate(const sg_server_load *l, int n) {
  if (n < 1 || n > SG_LOAD_KMAX || !counts(l, n))
    return NAN;
  return l->b[n].tokens / l->b[n].seconds;
}

double sg_load_slowdown(const sg_server_load *l, int m, int k) {
  if (m < 1 || k < 1 || m + k > SG_LOAD_KMAX)
    return NAN;
  double rm = sg_load_rate(l, m), rk = sg_load_rate(l, m + k);
  if (!isfinite(rm) || !isfinite(rk) || rm <= 0)
    return NAN;
  return 1 - rk / rm;
}

int sg_load_measured_max(const sg_server_load *l) {
  for (int n = SG_LOAD_KMAX; n >= 1; n--)
    if (counts(l, n))
      return n;
  return 0;
}

static bool too_slow(const sg_server_load *l, int m, int k) {
  double s = sg_load_slowdown(l, m, k);
  return isfinite(s) && s > l->o.slowdown_max;
}

int sg_load_cap(const sg_server_load *l, int mains) {
  int m = clamp_n(mains);
  int cap = l->bad[m] ? l->bad[m] - 1 : l->o.cap_max;
  if (l->probe_m == m && cap > l->probe_k)
    cap = l->probe_k; /* one fork more than before, until measured */
  return cap > l->o.cap_max ? l->o.cap_max : cap;
}

/* A lowered cap's wait is over: at the m live now, the too-slow bucket is
 * forgotten and one fork more allowed until it is measured again. */
static void maybe_probe(sg_server_load *l, double now_s, int m) {
  if (l->probe_m != 0 || l->bad[m] == 0 || sg_load_cap(l, m) >= l->o.cap_max ||
      now_s - l->lowered_s < l->wait_s)
    return;
  l->probe_m = m;
  l->probe_k = l->bad[m];
  memset(&l->b[m + l->probe_k], 0, sizeof l->b[0]);
  l->probes++;
}

/* The probe of m ends: too slow again (the wait doubles) or not. */
static void probe_done(sg_server_load *l, double now_s, bool again) {
  l->probe_m = l->probe_k = 0;
  l->wait_s = again ? 2 * l->wait_s : l->o.reprobe_s;
  if (l->wait_s > SG_LOAD_WAIT_MAX * l->o.reprobe_s)
    l->wait_s = SG_LOAD_WAIT_MAX * l->o.reprobe_s;
  l->lowered_s = now_s; /* the next probe waits from here */
}

/* bad[m] from the rates: the smallest k too slow beside m streams. */
static void decide_m(sg_server_load *l, double now_s, int m) {
  int bad = 0;
  for (int k = 1; counts(l, m) && m + k <= SG_LOAD_KMAX && bad == 0; k++)
    if (too_slow(l, m, k))
      bad = k;
  bool probing = l->probe_m == m;
  /* A lowering holds: the k once measured too slow bounds the cap, though
   * its bucket no longer counts or its newer samples look fine, until a
   * probe of it (counted, with the backoff) measures it again. */
  if (l->bad[m] != 0 && !(probing && l->bad[m] == l->probe_k) &&
      (bad == 0 || l->bad[m] < bad))
    bad = l->bad[m];
  int before = sg_load_cap(l, m);
  l->bad[m] = bad;
  if (probing) {
    if (bad == l->probe_k)
      probe_done(l, now_s, true);
    else if (counts(l, m + l->probe_k) || (bad != 0 && bad < l->probe_k))
      probe_done(l, now_s, false); /* fine now (or a smaller k is too slow) */
  } else if (sg_load_cap(l, m) < before) {
    l->lowered++;
    l->lowered_s = now_s;
  }
}

int sg_load_observe(sg_server_load *l, double now_s, double tokens, double seconds,
                    int streams, int mains) {
  l->mains = clamp_n(mains);
  if (!(seconds > 0) || !(tokens >= 0) || !isfinite(seconds) || !isfinite(tokens))
    return l->cap = sg_load_cap(l, l->mains);
  sg_load_bucket *b = &l->b[clamp_n(streams)];
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
  maybe_probe(l, now_s, l->mains);
  for (int m = 1; m < SG_LOAD_KMAX; m++)
    decide_m(l, now_s, m);
  return l->cap = sg_load_cap(l, l->mains);
}
