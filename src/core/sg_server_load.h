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
 * The runtime reports each main generation's progress between two of its
 * chunks: the tokens it decoded, the seconds they took and the most forks
 * of the server that were live (prefilling or decoding) in that time
 * (sg_load_observe). The estimator keeps, per k forks live, the mains'
 * per-stream rate (tokens / seconds; the oldest half forgotten each time a
 * bucket holds window_s seconds, unless the half left would not count: a
 * slow server's bucket, once measured, stays measured), and sets the cap
 * to the largest k whose measured slowdown of the mains,
 * 1 - rate(k) / rate(0), is at most slowdown_max: the smallest measured k
 * that is slower makes the cap k - 1, 0 (no forks) when one fork is
 * already too slow. A bucket counts once it holds min_tokens tokens over
 * min_s seconds; until rate(0) does, and while no measured k is too slow,
 * the cap is cap_max, the configured one. A main's wait while a fork
 * prefills is a gap with a fork live: it counts as slowdown, as it is.
 *
 * A lowering holds: the smallest k once measured too slow (l->bad) bounds
 * the cap though its bucket's newer samples look fine or it stops
 * counting; only a probe of it raises the cap.
 *
 * Re-probe: a lowered cap is not for good. Once reprobe_s seconds have
 * passed since it was lowered, the too-slow bucket is forgotten and the cap
 * raised by one (one fork more is allowed) until that bucket is measured
 * again: too slow again, the cap goes back and the wait doubles (up to 16x
 * reprobe_s); fine, the wait goes back to reprobe_s and the cap goes on up.
 * So a load that passes (another tenant, a long prompt) does not turn
 * speculation off for the rest of the run.
 *
 * Pure: plain data, no I/O, no clock (the caller passes the time).
 */
#ifndef SG_SERVER_LOAD_H
#define SG_SERVER_LOAD_H

#include <stdbool.h>
#include <stdint.h>

/* Buckets kept: k = 0 .. SG_LOAD_KMAX forks live; more are pooled in the
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
  sg_load_bucket b[SG_LOAD_KMAX + 1];
  int cap;          /* the cap now */
  int bad;          /* the smallest k measured too slow; 0: none */
  int probe;        /* k being probed again (its bucket forgotten); 0: none */
  double lowered_s; /* when the cap was last lowered by a measurement */
  double wait_s;    /* the wait before the next probe */
  uint64_t probes;  /* probes started */
  uint64_t lowered; /* times a measurement lowered the cap */
} sg_server_load;

void sg_load_init(sg_server_load *l, const sg_load_opts *o);

/* A main generation decoded `tokens` in `seconds` (> 0) ending at now_s,
 * with at most `forks` forks of the server live meanwhile. Returns the cap
 * (also l->cap). Observations with seconds <= 0 or tokens < 0 are ignored. */
int sg_load_observe(sg_server_load *l, double now_s, double tokens, double seconds, int forks);

/* Tokens per second of a main with k forks live; NAN until the bucket
 * counts (min_tokens, min_s). */
double sg_load_rate(const sg_server_load *l, int k);
/* 1 - rate(k) / rate(0); NAN until both count. */
double sg_load_slowdown(const sg_server_load *l, int k);
/* The largest k whose bucket counts (-1: none). */
int sg_load_measured_max(const sg_server_load *l);

#endif
