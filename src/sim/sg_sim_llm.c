/* sg_sim_llm.c: the simulated LLM servers and prefix caches (see
 * sg_sim_llm.h for the model). Every call is O(1): a server keeps sums from
 * which its working set at any time follows, and the remote store's
 * occupancy is derived from the servers' total overflow. */
#include "sim/sg_sim_llm.h"

#include "common/sg_alloc.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct server {
  int streams;            /* live generations */
  /* Working set: sum over live mains of prompt + rate x (now - t0), kept as
   * prompt_sum + rate_sum x now - rate_t0_sum, plus the forks' own tokens. */
  double prompt_sum, rate_sum, rate_t0_sum;
  double fork_tokens;
  /* Prefill load: the fork prefill seconds of the last window, decayed
   * exponentially (prefill_s / window at pf_us). */
  double pf_load;
  int64_t pf_us;
} server;

struct sg_sim_llm {
  const sg_sim_params *p;
  bool remote;
  int nservers;
  server *sv;
  int streams;            /* over all servers */
  int64_t last_us;        /* stream-seconds integrated up to here */
  int busy_devices;
  sg_sim_llm_stats st;
};

sg_sim_llm *sg_sim_llm_new(const sg_sim_params *p, bool remote) {
  sg_sim_llm *m = sg_calloc(1, sizeof *m);
  m->p = p;
  m->remote = remote;
  int per = p->llm_workflows_per_server > 0 ? p->llm_workflows_per_server : 1;
  m->nservers = (p->workflows + per - 1) / per;
  if (m->nservers < 1)
    m->nservers = 1;
  m->sv = sg_calloc((size_t)m->nservers, sizeof *m->sv);
  return m;
}

void sg_sim_llm_free(sg_sim_llm *m) {
  if (m == NULL)
    return;
  free(m->sv);
  free(m);
}

int sg_sim_llm_server(const sg_sim_llm *m, uint32_t w) {
  int per = m->p->llm_workflows_per_server > 0 ? m->p->llm_workflows_per_server : 1;
  int s = (int)(w / (uint32_t)per);
  return s < m->nservers ? s : m->nservers - 1;
}

static void integrate(sg_sim_llm *m, int64_t now_us) {
  if (now_us > m->last_us)
    m->st.stream_s += (double)m->streams * (double)(now_us - m->last_us) / 1e6;
  m->last_us = now_us;
}

/* The server's prefill load now: prefill seconds per second over the
 * last window (an exponential average). */
static double prefill_load(const sg_sim_llm *m, const server *s, int64_t now_us) {
  if (s->pf_load <= 0 || now_us <= s->pf_us)
    return s->pf_load;
  return s->pf_load * exp(-(double)(now_us - s->pf_us) / 1e6 / m->p->llm_prefill_window_s);
}

double sg_sim_llm_start_stream(sg_sim_llm *m, int sv, double rate, int64_t now_us) {
  assert(sv >= 0 && sv < m->nservers);
  integrate(m, now_us);
  server *s = &m->sv[sv];
  s->streams++;
  m->streams++;
  double c = m->p->llm_contention;
  double nref = m->p->llm_ref_streams > 1 ? m->p->llm_ref_streams : 1;
  double r = rate * (1 + c * (nref - 1)) / (1 + c * (double)(s->streams - 1));
  /* Prefill shares the server's GPUs with decoding: a share of its
   * prefill time is time no stream decodes in. */
  if (m->p->llm_prefill_interference > 0)
    r /= 1 + m->p->llm_prefill_interference * prefill_load(m, s, now_us);
  return r;
}

void sg_sim_llm_end_stream(sg_sim_llm *m, int sv, int64_t now_us) {
  assert(sv >= 0 && sv < m->nservers && m->sv[sv].streams > 0);
  integrate(m, now_us);
  m->sv[sv].streams--;
  m->streams--;
}

void sg_sim_llm_main_begin(sg_sim_llm *m, int sv, double prompt, double rate,
                           int64_t t0_us) {
  server *s = &m->sv[sv];
  s->prompt_sum += prompt;
  s->rate_sum += rate;
  s->rate_t0_sum += rate * (double)t0_us / 1e6;
}

void sg_sim_llm_main_end(sg_sim_llm *m, int sv, double prompt, double rate,
                         int64_t t0_us) {
  server *s = &m->sv[sv];
  s->prompt_sum -= prompt;
  s->rate_sum -= rate;
  s->rate_t0_sum -= rate * (double)t0_us / 1e6;
}

void sg_sim_llm_fork_begin(sg_sim_llm *m, int sv, double tokens) {
  m->sv[sv].fork_tokens += tokens;
}

void sg_sim_llm_fork_end(sg_sim_llm *m, int sv, double tokens) {
  m->sv[sv].fork_tokens -= tokens;
}

static double working_set(const server *s, int64_t now_us) {
  double ws = s->prompt_sum + s->rate_sum * (double)now_us / 1e6 - s->rate_t0_sum +
              s->fork_tokens;
  return ws > 0 ? ws : 0;
}

/* Tokens the remote store can hold now: the pool's spare memory less what
 * running evaluations took back. */
static double remote_capacity_tokens(const sg_sim_llm *m) {
  const sg_sim_params *p = m->p;
  double gb = (double)p->devices * p->kv_remote_gb_per_device -
              (double)m->busy_devices * fmin(p->kv_eval_gb, p->kv_remote_gb_per_device);
  if (gb <= 0 || p->kv_bytes_per_token <= 0)
    return 0;
  return gb * 1e9 / p->kv_bytes_per_token;
}

/* What all servers evicted (and the remote store is asked to hold). With
 * several servers this sums the overflow of their total, a simplification
 * that avoids a scan over servers (exact for one server, as the presets
 * have). */
static double overflow_tokens(const sg_sim_llm *m, int64_t now_us) {
  double ws = 0;
  if (m->nservers == 1) {
    ws = working_set(&m->sv[0], now_us);
  } else {
    for (int i = 0; i < m->nservers && i < 16; i++)
      ws += working_set(&m->sv[i], now_us);
    if (m->nservers > 16) /* scaled from the first 16: O(1) per call */
      ws *= (double)m->nservers / 16.0;
  }
  double over = ws - (double)m->nservers * m->p->llm_kv_capacity_tokens;
  return over > 0 ? over : 0;
}

void sg_sim_llm_fork_prompt(sg_sim_llm *m, int sv, double prefix, double other,
                            int64_t now_us, double *cached, double *delay_s) {
  const sg_sim_params *p = m->p;
  double local, remote = 0;
  if (p->llm_kv_capacity_tokens <= 0) {
    /* The constant model. */
    local = prefix * (m->remote ? p->remote_cache_hit : p->local_cache_hit);
  } else {
    double ws = working_set(&m->sv[sv], now_us);
    double keep = ws > p->llm_kv_capacity_tokens ? p->llm_kv_capacity_tokens / ws : 1.0;
    local = prefix * keep;
    if (m->remote && prefix > local) {
      double over = overflow_tokens(m, now_us);
      double cap = remote_capacity_tokens(m);
      double held = over > 0 ? fmin(1.0, cap / over) : 1.0;
      remote = (prefix - local) * held;
    }
  }
  double miss = prefix - local - remote;
  if (miss < 0)
    miss = 0;
  double transfer_b = remote * p->kv_bytes_per_token;
  double transfer_s = p->kv_transfer_gb_s > 0 ? transfer_b / (p->kv_transfer_gb_s * 1e9) : 0;
  double prefill_s = (miss + other) / p->prefill_tok_s;
  m->st.local_hit_tokens += local;
  m->st.remote_hit_tokens += remote;
  m->st.miss_tokens += miss;
  m->st.transfer_bytes += transfer_b;
  m->st.transfer_s += transfer_s;
  m->st.prefill_s += prefill_s;
  if (p->llm_prefill_interference > 0) {
    server *s = &m->sv[sv];
    s->pf_load = prefill_load(m, s, now_us) + prefill_s / p->llm_prefill_window_s;
    s->pf_us = now_us;
  }
  *cached = local + remote;
  *delay_s = prefill_s + transfer_s;
}

void sg_sim_llm_device_busy(sg_sim_llm *m, int64_t now_us) {
  const sg_sim_params *p = m->p;
  if (m->remote && p->llm_kv_capacity_tokens > 0 && p->kv_remote_gb_per_device > 0) {
    /* The store yields: if it held more than what is left, it evicts. */
    double before = remote_capacity_tokens(m);
    m->busy_devices++;
    double after = remote_capacity_tokens(m);
    double held = fmin(before, overflow_tokens(m, now_us));
    if (held > after) {
      m->st.yields++;
      m->st.yield_bytes += (held - after) * p->kv_bytes_per_token;
    }
    return;
  }
  m->busy_devices++;
}

void sg_sim_llm_device_idle(sg_sim_llm *m) {
  assert(m->busy_devices > 0);
  m->busy_devices--;
}

void sg_sim_llm_stats_get(const sg_sim_llm *m, sg_sim_llm_stats *st) { *st = m->st; }
