/* sg_sim_llm.h: the simulated LLM servers and their prefix caches: how long
 * a generation takes under load, and how much of a fork's prompt is served
 * from a cache (the server's own KV memory, or the remote prefix cache in
 * the spare memory of the pool's devices) instead of being prefilled.
 *
 * Servers. Workflows are served in groups of `llm.workflows_per_server`
 * (the paper: 10 workflows on one vLLM instance); a server's streams are its
 * workflows' live generations. A stream's per-token decode rate depends on
 * how many streams the server has when it starts (fixed from then on, a
 * simplification that keeps the cost O(1) per generation):
 *   r(n) = rate x (1 + c (n_ref - 1)) / (1 + c (n - 1))
 * with c = `llm.contention` and n_ref = `llm.ref_streams`, the baseline's
 * mean in-flight generations (the paper's), at which r is the calibrated
 * rate. So the baseline keeps its measured generation times and every
 * extra stream (a fork) slows all that start while it runs.
 *
 * Prefix cache. With `llm.kv_capacity_tokens` = 0 a fork finds the constant
 * share `llm.local_cache_hit` (or `llm.remote_cache_hit` with the remote
 * cache) of its reasoning prefix cached. Otherwise the share is the
 * mechanism's: the server's working set is the context of its live main
 * generations (prompt + tokens so far) plus each live fork's own tokens;
 * when it exceeds the KV capacity, LRU keeps capacity / working set of it,
 * so a fork finds that share of its prefix resident. The rest was evicted:
 * without the remote cache it is prefilled; with it, the evicted KV went to
 * the remote store, whose capacity is the pool's spare device memory
 * (`kv.remote_gb_per_device` per device, less `kv.eval_gb` on each device
 * running an evaluation: the store yields to evaluations), shared by all
 * servers' evicted working sets. The share of the evicted part the store
 * holds is restored by transfer (`kv.bytes_per_token` at
 * `kv.transfer_gb_s`), the rest prefilled. Hits, misses, transferred bytes,
 * transfer time and yields are counted.
 */
#ifndef SG_SIM_LLM_H
#define SG_SIM_LLM_H

#include "sim/sg_sim_params.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct sg_sim_llm_stats {
  double local_hit_tokens;    /* prefix tokens found in the server's KV */
  double remote_hit_tokens;   /* restored from the remote store */
  double miss_tokens;         /* prefilled again */
  double transfer_bytes;      /* remote store to server */
  double transfer_s;          /* summed transfer time */
  double prefill_s;           /* summed prefill time of forks */
  uint64_t yields;            /* evaluations that made the store shrink */
  double yield_bytes;         /* what those yields evicted */
  double stream_s;            /* summed stream-seconds (mean load) */
} sg_sim_llm_stats;

typedef struct sg_sim_llm sg_sim_llm;

/* remote: the configuration has the remote prefix cache. */
sg_sim_llm *sg_sim_llm_new(const sg_sim_params *p, bool remote);
void sg_sim_llm_free(sg_sim_llm *m);

/* The server of workflow w. */
int sg_sim_llm_server(const sg_sim_llm *m, uint32_t w);

/* Per-token decode rate of a stream starting now on server sv, given the
 * calibrated rate at the reference load; counts the stream as started. */
double sg_sim_llm_start_stream(sg_sim_llm *m, int sv, double rate, int64_t now_us);
/* A stream of server sv ended (finished, failed or cancelled). */
void sg_sim_llm_end_stream(sg_sim_llm *m, int sv, int64_t now_us);

/* A main generation's context joins / leaves server sv's working set:
 * prompt tokens at its start, growing at rate tokens/s from t0. */
void sg_sim_llm_main_begin(sg_sim_llm *m, int sv, double prompt, double rate,
                           int64_t t0_us);
void sg_sim_llm_main_end(sg_sim_llm *m, int sv, double prompt, double rate,
                         int64_t t0_us);
/* A fork's own tokens (its unshared prompt and its answer) join / leave. */
void sg_sim_llm_fork_begin(sg_sim_llm *m, int sv, double tokens);
void sg_sim_llm_fork_end(sg_sim_llm *m, int sv, double tokens);

/* A fork on server sv needs prefix tokens of its parent's reasoning: how
 * many come from a cache (*cached) and how long restoring and prefilling
 * take (*delay_s), for other (unshared) prompt tokens to prefill too. */
void sg_sim_llm_fork_prompt(sg_sim_llm *m, int sv, double prefix, double other,
                            int64_t now_us, double *cached, double *delay_s);

/* An evaluation starts / ends on a device: the store yields that memory. */
void sg_sim_llm_device_busy(sg_sim_llm *m, int64_t now_us);
void sg_sim_llm_device_idle(sg_sim_llm *m);

void sg_sim_llm_stats_get(const sg_sim_llm *m, sg_sim_llm_stats *st);

#endif
