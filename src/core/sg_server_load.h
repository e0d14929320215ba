/* sg_server_load.h: what forks cost the main generations of one LLM server,
 * measured while the run goes, and the fork budget's cap it allows.
 *
 * `--llm-streams` says how many streams a server takes; it does not say how
 * much a fork slows the mains beside it. On a GPU server (vLLM) a fork is
 * nearly free up to the batch size; on a one-thread llama.cpp server every
 * fork's prefill and decode take the core from the mains (measured: a run
 * with forks took 1.8x the time of one without). Which case holds is found
 * by measuring.
 *
 * The model: streams, not forks. What a server shares is its live streams,
 * mains and forks alike: a real campaign runs ten workflows against one
 * one-thread llama.cpp server, and each main decodes about 0.7 tokens/s
 * with ten mains live, about 3 with two. A rate keyed on the forks live
 * alone mixes those loads (its "no fork" rate is that of one to ten mains),
 * so its slowdown compares unlike loads; and once forks are always live its
 * "no fork" rate is never measured again. So the estimator keeps, per n
 * streams of the server live (prefilling or decoding; n = 1 ..
 * SG_LOAD_KMAX, more pooled in the last), the per-stream rate r(n): every
 * chunk of any stream (a main or a fork: they are streams of the same
 * server) after its first reports the tokens since its last chunk, the
 * seconds they took and the most streams live in that time
 * (sg_load_observe). k more forks beside m live streams slow each of them
 * by 1 - r(m + k) / r(m), and r(m) is measured whenever any mix of mains
 * and forks makes m streams. A compute-bound server (r(n) = T / n) makes
 * one fork cost 1 / (m + 1): 50% beside one main, 9% beside ten.
 *
 * The cap at m mains live (sg_load_cap) is the largest k whose slowdown is
 * at most slowdown_max: the smallest measured k that is slower makes the
 * cap k - 1, 0 (no forks) when one fork is already too slow; until r(m)
 * counts, and while no measured k is too slow, the cap is cap_max, the
 * configured one. A bucket counts once it holds min_tokens tokens over
 * min_s seconds; its oldest half is forgotten each time it holds window_s
 * seconds, unless the half left would not count (a slow server's bucket,
 * once measured, stays measured). A stream's wait while a fork prefills is
 * a gap with that fork live: it counts as slowdown, as it is.
 *
 * A lowering holds: per m, the smallest k once measured too slow
 * (l->bad[m]) bounds the cap at m though its bucket's newer samples look
 * fine or it stops counting; only a probe of it raises the cap.
 *
 * Re-probe: a lowered cap is not for good. Once reprobe_s seconds have
 * passed since the last lowering, at the m live then the too-slow bucket
 * (m + bad[m]) is forgotten and the cap raised by one (one fork more is
 * allowed) until that bucket is measured again: too slow again, the cap
 * goes back and the wait doubles (up to 16x reprobe_s); fine, the wait goes
 * back to reprobe_s and the cap goes on up. So a load that passes (another
 * tenant, a long prompt) does not turn speculation off for the rest of the
 * run.
 *
 * Pure: plain data, no I/O, no clock (the caller passes the time).
 */
#ifndef SG_SERVER_LOAD_H
#define SG_SERVER_LOAD_H

#include <stdbool.h>
#include <stdint.h>

/* Buckets kept: n = 1 .. SG_LOAD_KMAX streams live; more are pooled in the
 * last. */
#define SG_LOAD_KMAX 32
/* The cap when nothing bounds it (no --llm-streams). */
#define SG_LOAD_UNBOUNDED 1000000

typedef struct sg_load_opts {
  double slowdown_max; /* > 0: the most the mains may slow (0.15: 15%) */
  int cap_max;         /* >= 0: the configured cap, the start and the top */
  double min_tokens;   /* a bucket counts with this many tokens (32) */
  double min_s;        /* ... over this many seconds (2) */
  double window_s;     /* a bucket's sums halve when they pass this (120) */
  double reprobe_s;    /* first wait before a lowered cap is probed (60) */
} sg_load_opts;

/* The defaults above, for slowdown_max and cap_max. */
void sg_load_opts_default(sg_load_opts *o, double slowdown_max, int cap_max);

typedef struct sg_load_bucket {
  double tokens, seconds;
} sg_load_bucket;

typedef struct sg_server_load {
  sg_load_opts o;
  sg_load_bucket b[SG_LOAD_KMAX + 1]; /* b[n]: n streams live (b[0] unused) */
  int bad[SG_LOAD_KMAX + 1]; /* bad[m]: the smallest k forks measured too
                                slow beside m streams; 0: none */
  int mains;        /* the mains live at the last observation (>= 1) */
  int cap;          /* the cap at `mains`: sg_load_cap(l, l->mains) */
  int probe_m;      /* the m whose bad[m] is probed again; 0: none */
  int probe_k;      /* ... its k (bucket probe_m + probe_k forgotten) */
  double lowered_s; /* when a cap was last lowered by a measurement */
  double wait_s;    /* the wait before the next probe */
  uint64_t probes;  /* probes started */
  uint64_t lowered; /* times a measurement lowered a cap */
} sg_server_load;

void sg_load_init(sg_server_load *l, const sg_load_opts *o);

/* A stream of the server (a main or a fork) decoded `tokens` in `seconds`
 * (> 0) ending at now_s, with at most `streams` streams of the server live
 * meanwhile (itself included); `mains` main generations are live now.
 * Returns the cap at `mains` (also l->cap). Observations with seconds <= 0
 * or tokens < 0 are ignored (the cap is still asked at `mains`). Streams
 * and mains under 1 count as 1, over SG_LOAD_KMAX as SG_LOAD_KMAX. */
int sg_load_observe(sg_server_load *l, double now_s, double tokens, double seconds,
                    int streams, int mains);

/* The cap at m mains live, from what is measured and held now (a probe
 * under way at m included). */
int sg_load_cap(const sg_server_load *l, int mains);

/* Tokens per second of one stream with n streams live; NAN until the
 * bucket counts (min_tokens, min_s). */
double sg_load_rate(const sg_server_load *l, int n);
/* What k more streams cost each of m: 1 - rate(m + k) / rate(m); NAN until
 * both count, or when m + k passes SG_LOAD_KMAX. */
double sg_load_slowdown(const sg_server_load *l, int m, int k);
/* The largest n whose bucket counts (0: none). */
int sg_load_measured_max(const sg_server_load *l);

#endif
