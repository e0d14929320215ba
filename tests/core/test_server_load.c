/* test_server_load.c: the server's load estimate (core/sg_server_load.h):
 * the per-stream rate per streams live and the fork budget's cap it allows, with
 * its edges: nothing measured yet, too few samples, a prefill stall, the
 * pooled top bucket, the decay of old samples (a slow server's bucket
 * included), the re-probe rule and a lowering that holds until it; and
 * the model itself: rates per streams live, the cap at the mains live
 * (a compute-bound server, a GPU-like one, a rate kept fresh by any mix).
 * The single-main cases run with one main: n = 1 + forks. */
#include "sg_test.h"

#include "core/sg_server_load.h"

#include <math.h>

/* A load with small minimums: a bucket counts with 10 tokens over 1 s. */
static void init(sg_server_load *l, double slowdown_max, int cap_max) {
  sg_load_opts o;
  sg_load_opts_default(&o, slowdown_max, cap_max);
  o.min_tokens = 10;
  o.min_s = 1;
  o.window_s = 1000;
  o.reprobe_s = 60;
  sg_load_init(l, &o);
}

/* init's small minimums, slowdown_max 0.15, a window of window_s. */
static void init_window(sg_server_load *l, int cap_max, double window_s) {
  init(l, 0.15, cap_max);
  l->o.window_s = window_s;
}

/* A load with the defaults (32 tokens over 2 s, window 120 s) and
 * slowdown_max 0.15. */
static void init_default(sg_server_load *l, int cap_max) {
  sg_load_opts o;
  sg_load_opts_default(&o, 0.15, cap_max);
  sg_load_init(l, &o);
}

/* n chunks of one token each, every gap_s, with `streams` streams live of
 * which `mains` mains, from *t. */
static int feed_at(sg_server_load *l, double *t, int n, double gap_s, int streams, int mains) {
  int cap = l->cap;
  for (int i = 0; i < n; i++) {
    *t += gap_s;
    cap = sg_load_observe(l, *t, 1, gap_s, streams, mains);
  }
  return cap;
}

/* One main and `forks` forks live (the single-main cases). */
static int feed(sg_server_load *l, double *t, int n, double gap_s, int forks) {
  return feed_at(l, t, n, gap_s, 1 + forks, 1);
}

/* A one-core server of configured cap 3: the mains decode 10 tokens/s
 * alone, 5 with one fork live. Returns the cap (0). */
static int one_fork_halves(sg_server_load *l, double *t) {
  init(l, 0.15, 3);
  feed(l, t, 30, 0.1, 0);
  return feed(l, t, 30, 0.2, 1);
}

static void test_defaults(void) {
  sg_load_opts o;
  sg_load_opts_default(&o, 0.15, 5);
  SG_CHECK_NEAR(o.slowdown_max, 0.15, 1e-12);
  SG_CHECK_EQ_INT(o.cap_max, 5);
  SG_CHECK_NEAR(o.min_tokens, 32, 1e-12);
  SG_CHECK_NEAR(o.min_s, 2, 1e-12);
  SG_CHECK_NEAR(o.window_s, 120, 1e-12);
  SG_CHECK_NEAR(o.reprobe_s, 60, 1e-12);
}

/* Nothing measured: the configured cap; the rates are NAN. */
static void test_no_measurement_keeps_the_configured_cap(void) {
  sg_server_load l;
  init(&l, 0.15, 7);
  SG_CHECK_EQ_INT(l.cap, 7);
  SG_CHECK(isnan(sg_load_rate(&l, 1)));
  SG_CHECK(isnan(sg_load_slowdown(&l, 1, 1)));
  SG_CHECK_EQ_INT(sg_load_measured_max(&l), 0);
  /* forks measured slow, but no rate alone to compare with: no decision */
  double t = 0;
  SG_CHECK_EQ_INT(feed(&l, &t, 50, 1.0, 1), 7);
  SG_CHECK(isfinite(sg_load_rate(&l, 2)));
  SG_CHECK(isnan(sg_load_slowdown(&l, 1, 1)));
  SG_CHECK_EQ_INT(l.cap, 7);
}

/* Too few samples decide nothing: 9 tokens (min 10), or 10 tokens in less
 * than min_s. */
static void test_few_samples_decide_nothing(void) {
  sg_server_load l;
  init(&l, 0.15, 4);
  double t = 0;
  feed(&l, &t, 20, 0.1, 0); /* 10 tokens/s alone, 2 s */
  SG_CHECK_NEAR(sg_load_rate(&l, 1), 10, 1e-9);
  feed(&l, &t, 9, 0.5, 1); /* 2 tokens/s with a fork, 9 tokens */
  SG_CHECK(isnan(sg_load_rate(&l, 2)));
  SG_CHECK_EQ_INT(l.cap, 4);
  sg_server_load m;
  init(&m, 0.15, 4);
  t = 0;
  feed(&m, &t, 20, 0.1, 0);
  feed(&m, &t, 12, 0.05, 2); /* 12 tokens in 0.6 s < min_s */
  SG_CHECK(isnan(sg_load_rate(&m, 3)));
  SG_CHECK_EQ_INT(m.cap, 4);
}

/* One fork halves the mains (a one-core server): cap 0. */
static void test_one_fork_too_slow_gives_cap_zero(void) {
  sg_server_load l;
  double t = 0;
  SG_CHECK_EQ_INT(one_fork_halves(&l, &t), 0);
  SG_CHECK_NEAR(sg_load_slowdown(&l, 1, 1), 0.5, 1e-9);
  SG_CHECK_EQ_INT(l.bad[1], 1);
  SG_CHECK_EQ_INT((int)l.lowered, 1);
}

/* Forks nearly free (a GPU server): the cap stays the configured one,
 * unbounded included. */
static void test_free_forks_keep_the_cap(void) {
  sg_server_load l;
  init(&l, 0.15, SG_LOAD_UNBOUNDED);
  double t = 0;
  feed(&l, &t, 30, 0.1, 0);
  for (int k = 1; k <= 8; k++)
    feed(&l, &t, 30, 0.105, k); /* 5% slower */
  SG_CHECK_EQ_INT(l.cap, SG_LOAD_UNBOUNDED);
  SG_CHECK_EQ_INT(sg_load_measured_max(&l), 9);
  SG_CHECK_NEAR(sg_load_slowdown(&l, 1, 8), 1 - 1 / 1.05, 1e-9);
  SG_CHECK_EQ_INT(l.bad[1], 0);
}

/* The largest k at most slowdown_max: 1 and 2 fine, 3 too slow: cap 2. The
 * boundary itself (exactly slowdown_max) is fine. */
static void test_cap_is_the_largest_fine_k(void) {
  sg_server_load l;
  init(&l, 0.25, 10);
  double t = 0;
  feed(&l, &t, 40, 0.1, 0);   /* 10 tokens/s */
  feed(&l, &t, 40, 0.125, 1); /* 8: slowdown 0.2 */
  SG_CHECK_NEAR(sg_load_rate(&l, 1), 10, 1e-12);
  l.b[1] = (sg_load_bucket){40, 4}; /* exactly 10, for the boundary */
  t += 4;
  sg_load_observe(&l, t, 30, 4, 3, 1); /* 7.5: exactly 0.25 */
  SG_CHECK_NEAR(sg_load_slowdown(&l, 1, 2), 0.25, 0);
  SG_CHECK_EQ_INT(l.cap, 10);
  feed(&l, &t, 40, 0.2, 3); /* 5: 0.5 */
  SG_CHECK_EQ_INT(l.cap, 2);
  SG_CHECK_EQ_INT(l.bad[1], 3);
  /* a too-slow k above a too-slow smaller k: the smaller decides */
  feed(&l, &t, 40, 0.3, 5);
  SG_CHECK_EQ_INT(l.cap, 2);
}

/* The cap never exceeds the configured one. */
static void test_cap_bounded_by_configured(void) {
  sg_server_load l;
  init(&l, 0.15, 2);
  double t = 0;
  feed(&l, &t, 30, 0.1, 0);
  feed(&l, &t, 30, 0.3, 5); /* too slow at 5: cap would be 4 */
  SG_CHECK_EQ_INT(l.cap, 2);
  sg_server_load z;
  init(&z, 0.15, 0); /* configured 0: stays 0 */
  t = 0;
  feed(&z, &t, 30, 0.1, 0);
  SG_CHECK_EQ_INT(z.cap, 0);
  sg_server_load n;
  init(&n, 0.15, -3); /* a negative configured cap is 0 */
  SG_CHECK_EQ_INT(n.cap, 0);
}

/* A prefill stall: one gap of many seconds with a fork live (prefilling)
 * counts as slowdown, though the decode rate after it is unchanged. */
static void test_prefill_stall_counts_as_slowdown(void) {
  sg_server_load l;
  init(&l, 0.15, 3);
  double t = 0;
  feed(&l, &t, 30, 0.1, 0);
  feed(&l, &t, 1, 4.0, 1);  /* the fork's prompt prefills: 4 s for a token */
  feed(&l, &t, 30, 0.1, 1); /* then as fast as alone */
  /* 31 tokens in 7 s: 4.4 tokens/s against 10 */
  SG_CHECK_NEAR(sg_load_rate(&l, 2), 31 / 7.0, 1e-9);
  SG_CHECK_EQ_INT(l.cap, 0);
}

/* Bad observations are ignored; forks beyond SG_LOAD_KMAX pool in the last
 * bucket, negative forks count as none. */
static void test_bad_input_and_pooling(void) {
  sg_server_load l;
  init(&l, 0.15, 3);
  SG_CHECK_EQ_INT(sg_load_observe(&l, 1, 1, 0, 1, 1), 3);
  SG_CHECK_EQ_INT(sg_load_observe(&l, 1, 1, -1, 1, 1), 3);
  SG_CHECK_EQ_INT(sg_load_observe(&l, 1, -1, 1, 1, 1), 3);
  SG_CHECK_EQ_INT(sg_load_observe(&l, 1, NAN, 1, 1, 1), 3);
  SG_CHECK_EQ_INT(sg_load_observe(&l, 1, 1, INFINITY, 1, 1), 3);
  SG_CHECK_EQ_INT(sg_load_measured_max(&l), 0);
  double t = 0;
  feed_at(&l, &t, 30, 0.1, -2, -5); /* under 1: one stream, one main */
  SG_CHECK_NEAR(sg_load_rate(&l, 1), 10, 1e-9);
  SG_CHECK_EQ_INT(l.mains, 1);
  feed_at(&l, &t, 30, 0.1, 1000, 1000);
  SG_CHECK_NEAR(sg_load_rate(&l, SG_LOAD_KMAX), 10, 1e-9);
  SG_CHECK_EQ_INT(l.mains, SG_LOAD_KMAX);
  SG_CHECK(isnan(sg_load_rate(&l, SG_LOAD_KMAX + 1)));
  SG_CHECK(isnan(sg_load_rate(&l, 0)));
  SG_CHECK(isnan(sg_load_rate(&l, -1)));
  /* past the pooled bucket no slowdown is measured */
  SG_CHECK(isnan(sg_load_slowdown(&l, SG_LOAD_KMAX, 1)));
  SG_CHECK(isnan(sg_load_slowdown(&l, 1, 0)));
}

/* Old samples fade: a bucket's sums halve once they pass window_s, so a
 * rate that changed is followed. */
static void test_window_follows_a_change(void) {
  sg_server_load l;
  init_window(&l, 3, 10);
  double t = 0;
  feed(&l, &t, 100, 0.1, 0); /* 10 tokens/s */
  feed(&l, &t, 200, 0.2, 0); /* then 5 */
  SG_CHECK(l.b[1].seconds <= 10);
  SG_CHECK_NEAR(sg_load_rate(&l, 1), 5, 0.2);
}

/* Re-probe: after reprobe_s the too-slow bucket is forgotten and one fork
 * more allowed; measured too slow again, the cap goes back and the wait
 * doubles (at most 16x); measured fine, the cap goes up and the wait is
 * reprobe_s again. Not before the wait. */
static void test_reprobe_rule(void) {
  sg_server_load l;
  double t = 0;
  SG_CHECK_EQ_INT(one_fork_halves(&l, &t), 0);
  double low = l.lowered_s;
  /* mains alone until just before the wait: no probe */
  while (t + 0.1 < low + 60)
    feed(&l, &t, 1, 0.1, 0);
  SG_CHECK_EQ_INT(l.cap, 0);
  SG_CHECK_EQ_INT((int)l.probes, 0);
  feed(&l, &t, 2, 0.1, 0);
  SG_CHECK_EQ_INT((int)l.probes, 1);
  SG_CHECK_EQ_INT(l.probe_k, 1);
  SG_CHECK_EQ_INT(l.probe_m, 1);
  SG_CHECK_EQ_INT(l.cap, 1); /* one fork allowed, not the configured 3 */
  SG_CHECK(isnan(sg_load_rate(&l, 2)));
  /* still too slow: back to 0, wait 120 */
  feed(&l, &t, 30, 0.2, 1);
  SG_CHECK_EQ_INT(l.cap, 0);
  SG_CHECK_EQ_INT(l.probe_k, 0);
  SG_CHECK_NEAR(l.wait_s, 120, 1e-9);
  /* the waits double up to 16 x 60 */
  for (int i = 0; i < 8; i++) {
    double from = l.lowered_s;
    while (l.probe_k == 0)
      feed(&l, &t, 1, 0.1, 0);
    SG_CHECK(t - from >= l.wait_s - 0.11);
    feed(&l, &t, 30, 0.2, 1);
    SG_CHECK_EQ_INT(l.cap, 0);
  }
  SG_CHECK_NEAR(l.wait_s, 16 * 60, 1e-9);
  /* the load passed: the probe finds one fork fine, the cap goes up */
  while (l.probe_k == 0)
    feed(&l, &t, 1, 0.1, 0);
  SG_CHECK_EQ_INT(l.cap, 1);
  feed(&l, &t, 30, 0.1, 1);
  SG_CHECK_EQ_INT(l.probe_k, 0);
  SG_CHECK_EQ_INT(l.cap, 3);
  SG_CHECK_NEAR(l.wait_s, 60, 1e-9);
}

/* A probe walks up: 1 fine, 2 too slow measured earlier: cap 1; the probe
 * of 2 holds the cap at 2 (not the configured 5) until measured. */
static void test_probe_walks_up(void) {
  sg_server_load l;
  init(&l, 0.15, 5);
  double t = 0;
  feed(&l, &t, 30, 0.1, 0);
  feed(&l, &t, 30, 0.1, 1);
  feed(&l, &t, 30, 0.3, 2);
  feed(&l, &t, 30, 0.3, 3);
  SG_CHECK_EQ_INT(l.cap, 1);
  while (l.probe_k == 0)
    feed(&l, &t, 1, 0.1, 0);
  SG_CHECK_EQ_INT(l.probe_k, 2);
  SG_CHECK_EQ_INT(l.cap, 2);
  feed(&l, &t, 30, 0.1, 2); /* 2 fine now; 3 is still measured too slow */
  SG_CHECK_EQ_INT(l.probe_k, 0);
  SG_CHECK_EQ_INT(l.cap, 2);
  SG_CHECK_EQ_INT(l.bad[1], 3);
}

/* While probing k, a smaller k measured too slow ends the probe there. */
static void test_probe_ended_by_a_smaller_k(void) {
  sg_server_load l;
  init(&l, 0.15, 5);
  double t = 0;
  feed(&l, &t, 30, 0.1, 0);
  feed(&l, &t, 30, 0.1, 1);
  feed(&l, &t, 30, 0.3, 2);
  while (l.probe_k == 0)
    feed(&l, &t, 1, 0.1, 0);
  SG_CHECK_EQ_INT(l.probe_k, 2);
  feed(&l, &t, 20, 0.5, 1); /* now one fork is too slow */
  SG_CHECK_EQ_INT(l.probe_k, 0);
  SG_CHECK_EQ_INT(l.cap, 0);
}

/* A cap at the configured one is never probed. */
static void test_no_probe_without_a_lowered_cap(void) {
  sg_server_load l;
  init(&l, 0.15, 2);
  double t = 0;
  feed(&l, &t, 30, 0.1, 0);
  feed(&l, &t, 30, 0.3, 4); /* too slow at 4, cap 2 = configured */
  for (int i = 0; i < 2000; i++)
    feed(&l, &t, 1, 0.1, 0);
  SG_CHECK_EQ_INT((int)l.probes, 0);
  SG_CHECK_EQ_INT(l.cap, 2);
}

/* A slow server (0.25 tokens/s): window_s (120 s) holds fewer than
 * 2 x min_tokens, so halving at window_s would drop the bucket below
 * min_tokens each time and it would never count. It counts once it has
 * min_tokens and stays counted; it halves only while the half left counts. */
static void test_slow_bucket_stays_measured(void) {
  sg_server_load l;
  init_default(&l, 2);
  double t = 0;
  feed(&l, &t, 31, 4.0, 0);
  SG_CHECK(isnan(sg_load_rate(&l, 1)));
  for (int i = 0; i < 300; i++) {
    feed(&l, &t, 1, 4.0, 0);
    SG_CHECK_NEAR(sg_load_rate(&l, 1), 0.25, 1e-9);
    SG_CHECK(l.b[1].seconds <= 2 * 32 * 4.0 + 4.0);
  }
}

/* A lowering holds: once one fork was measured too slow, samples that make
 * that bucket look fine (the load passed, or noise about slowdown_max) do
 * not raise the cap; only the probe after reprobe_s does, and it counts. */
static void test_lowering_holds_until_the_probe(void) {
  sg_server_load l;
  double t = 0;
  SG_CHECK_EQ_INT(one_fork_halves(&l, &t), 0);
  double low = l.lowered_s;
  while (t + 0.1 < low + 60) {
    feed(&l, &t, 1, 0.1, 1); /* forks still live, now as fast as alone */
    SG_CHECK_EQ_INT(l.cap, 0);
  }
  SG_CHECK(sg_load_slowdown(&l, 1, 1) < 0.15); /* the bucket looks fine */
  SG_CHECK_EQ_INT((int)l.probes, 0);
  SG_CHECK_EQ_INT((int)l.lowered, 1);
  feed(&l, &t, 2, 0.1, 0);
  SG_CHECK_EQ_INT((int)l.probes, 1);
  SG_CHECK_EQ_INT(l.cap, 1);
  feed(&l, &t, 30, 0.1, 1); /* the probe finds it fine: up */
  SG_CHECK_EQ_INT(l.cap, 3);
}

/* A live campaign's sequence (one-thread llama.cpp, cap 2): mains at 0.69
 * tokens/s alone, 0.31 with 2 forks live, the forks already live going on
 * after the cap fell to 1. The cap was lowered, then raised again without
 * a probe each time the 2-fork row stopped counting, and so on, with no
 * probe ever. Each raise must be a probe, at most one per reprobe_s. */
static void test_campaign_cap_does_not_flap(void) {
  sg_server_load l;
  init_default(&l, 2);
  double t = 0;
  feed(&l, &t, 76, 1.45, 0); /* 110 s alone */
  int cap = l.cap, raises = 0, changes = 0;
  double last_raise = -1e9;
  for (int i = 0; i < 600; i++) {
    /* two mains, each a token per 3.2 s, in the same instant */
    t += 3.2;
    for (int m = 0; m < 2; m++) {
      int c = sg_load_observe(&l, t + m * 1e-3, 1, 3.2, 3, 1);
      if (c != cap) {
        changes++;
        if (c > cap) {
          raises++;
          SG_CHECK(t - last_raise >= l.o.reprobe_s);
          last_raise = t;
        }
      }
      cap = c;
    }
  }
  SG_CHECK(raises <= (int)l.probes);
  SG_CHECK(changes <= 2 * (int)l.probes + 1);
  SG_CHECK(l.cap <= 1 || l.probe_k == 2);
  SG_CHECK(isfinite(sg_load_slowdown(&l, 1, 2)) || l.probe_k == 2);
}

/* r(n) = rate(n) for n = 1 .. top streams, each bucket measured once
 * (120 chunks, with n streams live and as many mains). */
static void feed_rates(sg_server_load *l, double *t, int top, double (*rate)(int n)) {
  for (int n = 1; n <= top; n++)
    feed_at(l, t, 120, 1 / rate(n), n, n);
}

/* One core shared by every stream: 100 tokens/s in all. */
static double compute_bound(int n) { return 100.0 / n; }

/* A compute-bound server (r(n) = T / n): one fork beside m streams costs
 * each 1 / (m + 1). At 15% that is too much while m < 6 (cap 0); beside 6
 * to 10 mains one fork is allowed (beside 10 it costs 9%), two are not
 * (2 / 12 = 17% beside 10). The cap is asked at the mains live. */
static void test_compute_bound_cap_depends_on_the_mains(void) {
  sg_server_load l;
  init(&l, 0.15, 8);
  double t = 0;
  feed_rates(&l, &t, 12, compute_bound);
  for (int m = 1; m <= 5; m++)
    SG_CHECK_MSG(sg_load_cap(&l, m) == 0, "m %d: cap %d", m, sg_load_cap(&l, m));
  for (int m = 6; m <= 10; m++)
    SG_CHECK_MSG(sg_load_cap(&l, m) == 1, "m %d: cap %d", m, sg_load_cap(&l, m));
  SG_CHECK_NEAR(sg_load_slowdown(&l, 10, 1), 1 / 11.0, 1e-9);
  SG_CHECK_NEAR(sg_load_slowdown(&l, 1, 1), 0.5, 1e-9);
  /* observe answers the cap at the mains it is told are live */
  SG_CHECK_EQ_INT(sg_load_observe(&l, t += 0.1, 1, 0.1, 11, 10), 1);
  SG_CHECK_EQ_INT(l.cap, 1);
  SG_CHECK_EQ_INT(sg_load_observe(&l, t += 0.1, 1, 0.1, 11, 2), 0);
  SG_CHECK_EQ_INT(l.mains, 2);
  /* the probe is of the m live: bucket 2 + 1 forgotten, one fork allowed
   * beside 2 mains; the lowering beside 3 (whose base it was) holds */
  while (l.probe_m == 0)
    feed_at(&l, &t, 1, 0.02, 2, 2);
  SG_CHECK_EQ_INT(l.probe_m, 2);
  SG_CHECK_EQ_INT(l.probe_k, 1);
  SG_CHECK(isnan(sg_load_rate(&l, 3)));
  SG_CHECK_EQ_INT(sg_load_cap(&l, 2), 1);
  SG_CHECK_EQ_INT(sg_load_cap(&l, 3), 0);
  feed_at(&l, &t, 120, 3 / 100.0, 3, 2); /* still compute-bound: back to 0 */
  SG_CHECK_EQ_INT(l.probe_m, 0);
  SG_CHECK_EQ_INT(sg_load_cap(&l, 2), 0);
  SG_CHECK_NEAR(l.wait_s, 120, 1e-9);
}

/* A GPU server decodes 8 streams at full speed, more share it. */
static double batch_of_8(int n) { return n <= 8 ? 100 : 100.0 * 8 / n; }

/* A GPU-like server (r flat up to a batch of 8): forks are allowed up to
 * the batch, 8 - m beside m mains (the 9th stream costs 11%, over 10%). */
static void test_gpu_like_server_allows_forks_up_to_its_batch(void) {
  sg_server_load l;
  init(&l, 0.10, SG_LOAD_UNBOUNDED);
  double t = 0;
  feed_rates(&l, &t, 12, batch_of_8);
  for (int m = 1; m <= 8; m++)
    SG_CHECK_MSG(sg_load_cap(&l, m) == 8 - m, "m %d: cap %d", m, sg_load_cap(&l, m));
}

/* Staleness: the rate at m streams is measured whenever any mix makes m
 * streams, not only m mains alone. Two mains alone decode 10 tokens/s each,
 * 9.5 with a fork (5%); then another tenant halves the server, and only
 * one main with one fork (2 streams) and two mains with one fork (3) run:
 * r(2) follows to 5 from the first, so one fork beside two mains still
 * costs 5% and the cap at 2 stays open. A rate of mains alone would have
 * stayed at 10 and made it 52%. */
static void test_rate_at_m_measured_by_any_mix(void) {
  sg_server_load l;
  init_window(&l, 4, 10);
  double t = 0;
  feed_at(&l, &t, 100, 0.1, 2, 2);
  feed_at(&l, &t, 100, 0.105, 3, 2);
  SG_CHECK_EQ_INT(sg_load_cap(&l, 2), 4);
  feed_at(&l, &t, 300, 0.2, 2, 1); /* one main and one fork */
  SG_CHECK_NEAR(sg_load_rate(&l, 2), 5, 0.3);
  SG_CHECK_EQ_INT(feed_at(&l, &t, 300, 0.21, 3, 2), 4);
  SG_CHECK_NEAR(sg_load_slowdown(&l, 2, 1), 1 - 1 / 1.05, 0.03);
  SG_CHECK_EQ_INT((int)l.lowered, 0);
}

SG_TEST_MAIN(SG_TEST(test_defaults), SG_TEST(test_no_measurement_keeps_the_configured_cap),
             SG_TEST(test_few_samples_decide_nothing),
             SG_TEST(test_one_fork_too_slow_gives_cap_zero),
             SG_TEST(test_free_forks_keep_the_cap), SG_TEST(test_cap_is_the_largest_fine_k),
             SG_TEST(test_cap_bounded_by_configured),
             SG_TEST(test_prefill_stall_counts_as_slowdown),
             SG_TEST(test_bad_input_and_pooling), SG_TEST(test_window_follows_a_change),
             SG_TEST(test_reprobe_rule), SG_TEST(test_probe_walks_up),
             SG_TEST(test_probe_ended_by_a_smaller_k),
             SG_TEST(test_no_probe_without_a_lowered_cap),
             SG_TEST(test_slow_bucket_stays_measured),
             SG_TEST(test_lowering_holds_until_the_probe),
             SG_TEST(test_campaign_cap_does_not_flap),
             SG_TEST(test_compute_bound_cap_depends_on_the_mains),
             SG_TEST(test_gpu_like_server_allows_forks_up_to_its_batch),
             SG_TEST(test_rate_at_m_measured_by_any_mix))
