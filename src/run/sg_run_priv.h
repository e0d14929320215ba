/* sg_run_priv.h: what the files of the run loop share (sg_run.c and its
 * parts: sg_run_gen.c, sg_run_eval.c, sg_run_resume.c, sg_run_setup.c).
 * Not a public header: only src/run/sg_run*.c include it.
 *
 * One `run` holds a run's whole state; every function here takes it and is
 * called on the loop thread only.
 */
#ifndef SG_RUN_PRIV_H
#define SG_RUN_PRIV_H

#include "run/sg_gen_account.h"
#include "run/sg_run.h"

#include "common/sg_alloc.h"
#include "common/sg_clock.h"
#include "common/sg_error.h"
#include "core/sg_controller.h"
#include "core/sg_interp.h"
#include "core/sg_scheduler.h"
#include "core/sg_server_load.h"
#include "core/sg_search.h"
#include "core/sg_termination.h"
#include "eval/sg_eval.h"
#include "eval/sg_task.h"
#include "llm/sg_llm_client.h"
#include "llm/sg_llm_provider.h"
#include "pool/sg_pool.h"
#include "run/sg_prompt.h"
#include "store/sg_store.h"
#include "store/sg_replay.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <uv.h>

typedef struct run run;

/* A generation the loop streams. */
typedef struct rgen {
  run *r;
  uint32_t w;
  uint64_t gen;            /* the controller's id */
  uint32_t iteration;      /* the one it started in (a main a cutoff
                              detached ends in a later one) */
  sg_gen_kind kind;
  int64_t store_id;
  sg_llm_stream *stream;   /* NULL once ended */
  uint64_t chunks;         /* deltas received: a token estimate */
  size_t prompt_bytes;     /* what was sent: a token estimate */
  sg_llm_usage usage;      /* the latest the server sent */
  /* main, with token forks: the prompt's and the completion's token ids,
   * and after each chunk (reasoning bytes so far, completion ids so far),
   * so a fork at a byte offset takes the ids of whole chunks before it */
  int32_t *prompt_ids;
  size_t n_prompt_ids;
  int32_t *ids;
  size_t n_ids, cap_ids;
  uint64_t reasoning_bytes;
  uint64_t content_bytes;
  sg_buf think;            /* prompted reasoning, main: its thinking text,
                              the answer when the model never closes
                              </think> (sg_run_gen.c) */
  struct {
    uint64_t bytes;
    size_t nids;
  } *marks;
  size_t n_marks, cap_marks;
  /* a main: what START_GEN asked, to send it again; retry_at_us: when, for
   * a main the model server failed before it streamed anything (0: not
   * waiting; its store row then is ended, failed) */
  bool thinking;
  size_t prompt_index;
  int64_t retry_at_us;
  int retries;
  /* its record (sg_replay.h): the request, then each chunk as it arrives */
  json_t *rec;
  json_t *rec_chunks; /* borrowed from rec */
  int64_t rec_t0_us;
  /* for the server's load (sg_run_load.c): its last chunk's time (0: none
   * yet) and the most streams (mains and forks) live since */
  int64_t last_chunk_us;
  int streams_max;
  struct rgen *next;
} rgen;

/* The most thinking text a prompted main keeps (as the controller keeps). */
#define SG_PROMPTED_THINK_MAX ((size_t)1 << 20)

/* A scheduler request, indexed by its id. */
typedef struct rreq {
  bool live;
  uint32_t w;
  uint64_t cand;           /* the controller's candidate id */
  sg_phase phase;
  int64_t eval_id;         /* in the store */
  int device;              /* while on a device, else -1 */
  int64_t device_start_us;
  /* a remote slot's worker host took it ("started"; 0: not yet): its busy
   * time runs from here, not from the hand-over to the slot proxy */
  int64_t remote_start_us;
  char *last_infra;        /* why its latest attempt failed, if it did */
  sg_eval_result *rec;     /* replay-evals: the recorded result it gets */
  int64_t rec_device_us;   /* ... after holding its device this long */
} rreq;

/* Store ids by the controller's ids (which count from 1, densely). */
typedef struct idmap {
  int64_t *v;
  size_t cap;
} idmap;

/* One task's workflow. */
typedef struct wf {
  uint32_t idx;
  sg_task *task;
  const sg_evaluator *ev;  /* the task's evaluator */
  char *task_ref;          /* what workers are told: a name or a directory */
  json_t *task_files;      /* and, for a task given as a path, its files */
  sg_search *search;
  sg_termination *term;
  sg_controller *ctl;      /* NULL for a workflow already done (resume) */
  int64_t store_id;
  int64_t iter_store_id;   /* the open iteration's, 0 when none */
  uint32_t iter_open;      /* the controller iteration it belongs to */
  sg_prompt_text prompts[SG_SEARCH_MAX_MAINS]; /* this iteration's, rendered */
  bool have_prompt[SG_SEARCH_MAX_MAINS];
  /* next-ahead: the next iteration, opened in the store by the main
   * generation started ahead for it (0: none), and that main's prompt;
   * they become the iteration's when this one closes. */
  int64_t ahead_iter_store_id;
  uint32_t ahead_iter;
  sg_prompt_text ahead_prompt;
  bool have_ahead_prompt;
  rgen *gens;
  rgen *ending;            /* the generation whose end the controller is
                              told of, unlinked from gens but not yet
                              freed: the answer at the length cap it may
                              start continues it (its parent) */
  idmap gen_store;         /* store generation id by controller generation id */
  idmap cand_store;        /* store candidate id by controller candidate id */
  bool done, failed;
  char *best_file;         /* the best kernel's file, once written */
  double best_speedup;     /* NAN until a kernel passed */
  bool best_validated;     /* no profile measured it: the validation's figure */
  int64_t best_candidate;  /* its store id, 0 until then */
  int live_main, live_spec, in_flight;
  uint64_t iter_kernels;   /* candidates this iteration produced */
} wf;

/* A run's whole state. Its fields are grouped by the file that owns them,
 * the one that sets them; the other parts only read them, and the
 * teardown (close_all in sg_run.c, sg_run_free in sg_run_setup.c)
 * releases them all. The wfs[] and reqs[] elements' own fields are
 * written by each part that acts on them. */
struct run {
  /* sg_run.c: the loop, its handles and how it stops, and what prepare()
   * opens: the store, the record, the client, the scheduler, the
   * interpreter, the devices (sg_run_remote.c appends the --remote
   * slots) and the ids that close a reasoning */
  const sg_run_config *cfg;
  const sg_run_observer *obs;
  const sg_run_server *server; /* the caller's, without llm (sg_run.h) */
  uv_loop_t loop;
  bool loop_ready;         /* loop initialized: to be closed */
  sg_err *err;             /* the first fatal error */
  bool failed, stopping, interrupted, closing;
  char *dir;
  sg_store *store;
  sg_replay_log *llm_log;  /* the record of the model's answers */
  sg_llm_client *client;
  char **devices;
  size_t ndevices;
  const char *device_kind; /* "cpu", "cuda" (sg_eval_device_kind) */
  sg_scheduler *sched;
  sg_search_registry sreg;
  sg_termination_registry treg;
  sg_prompt_templates *templates;
  sg_interp *it;           /* executes the core's actions (sg_interp.h) */
  int32_t *end_think;      /* token forks: the ids that close the reasoning; */
  size_t n_end_think;      /* NULL when forks go as chat continuations */
  uv_timer_t tick;
  uv_signal_t sigint, sigterm;
  int64_t last_progress_us;

  /* sg_run_setup.c: the workflows and the model */
  wf *wfs;
  size_t nwf;
  sg_fork_budget fork_budget; /* the server's, shared by every workflow's
                              controller (has_budget) */
  bool has_budget;
  /* sg_run_load.c: the server's load, which sets the budget's cap */
  sg_server_load load;
  bool load_on;            /* fork-slowdown-max > 0, forks on */
  bool server_up;          /* the caller's server started: to be stopped */
  char *base_url;
  const char *model;
  const sg_llm_provider *provider;
  bool prompted;           /* reasoning: prompted (the model is asked to
                              think in <think> tags) */
  sg_store *replay_store;  /* replay-evals: the recorded run's store */
  size_t replay_resumes;   /* a replay: the record's stops and resumes
                              (sg_replay_resumes), run straight through */

  /* sg_run_resume.c: the run's first records, or those restored */
  int64_t run_id;
  int64_t t0_us;

  /* sg_run_gen.c: generations and token forks */
  sg_gen_account acct;     /* generations: outcomes, causes, estimates */
  uint64_t gen_seq;
  bool warned_unclosed;    /* prompted: said once that a model left its
                              <think> block open */
  int64_t outage_since_us; /* the model server's first failure since a
                              generation last completed (0: none) */
  bool outage_warned;      /* the waiting was said, this outage */
  const char *cut_cause;   /* why the model server failed the generation
                              the controller is told of now
                              (sg_gen_endpoint_cause; a main sent again
                              records it), NULL: none */
  char cut_message[SG_GEN_CAUSE_BYTES]; /* ... and its message */
  bool restart_warned;     /* a main sent again after waits was said */
  /* what the decisions cost: CPU time inside the controllers, and the loop
   * thread's CPU time in all (client, store, pool, core) */
  uint64_t generations;

  /* sg_run_eval.c: evaluations on the pool (sg_run.c closes the pool) */
  sg_pool *pool;
  char *build_cache;
  rreq *reqs;              /* by request id */
  size_t cap_reqs;
  int64_t submit_eval_id;  /* the store's id of the evaluation being submitted */
  int dead_devices;
  char *last_infra;        /* the latest infrastructure failure, for errors */
  uint64_t replayed_evals; /* replay-evals: evaluations answered from the
                              recorded run's store */
  sg_eval_result *submit_rec; /* op_submit's recorded result, for op_submitted */
  int64_t submit_rec_us;
  struct rp_eval *rp_evals;   /* recorded results on their timers */

  /* sg_run_remote.c: --remote */
  char *remote_env;        /* "SPECGEN_REDIS_RUN=ID" for the slot proxies of
                              --remote; NULL: none */
  char *remote_url_env;    /* "SPECGEN_REDIS_URL=..." for them only */

  /* sg_run_kv.c: --kv-store */
  struct sg_kvstore *kv;   /* NULL: none */
  json_t *kv_stats;        /* its counters, taken when it closed */
};

/* ---- small things (inline: every part uses them) ---------------------------- */

static inline int64_t now_us(void) { return (int64_t)(sg_clock_wall_s() * 1e6); }

static inline double t_of(const run *r, int64_t us) { return (double)(us - r->t0_us) / 1e6; }

static inline json_t *num_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }
/* The phase that measured a workflow's best figure (sg_store.h,
 * SG_STORE_FIGURES_SQL), as the events name it; null before any. */
static inline json_t *best_kind(const wf *f) {
  return !isfinite(f->best_speedup) ? json_null()
         : json_string(f->best_validated ? "validate" : "profile");
}

static inline wf *wf_of(run *r, uint32_t w) { return &r->wfs[w]; }

static inline void idmap_set(idmap *m, uint64_t key, int64_t value) {
  if (key >= m->cap) {
    size_t old = m->cap, cap = old ? old : 64;
    while (cap <= key)
      cap *= 2;
    m->v = sg_realloc(m->v, cap * sizeof *m->v);
    memset(m->v + old, 0, (cap - old) * sizeof *m->v);
    m->cap = cap;
  }
  m->v[key] = value;
}

static inline int64_t idmap_get(const idmap *m, uint64_t key) {
  return key < m->cap ? m->v[key] : 0;
}

/* Pool tickets: the request id, with the low bit telling the compile stage
 * from the device stage, so a late reply of one is never taken for the
 * other. */
static inline uint64_t ticket_of(sg_req_id id, bool compile) { return (id << 1) | (compile ? 1 : 0); }

/* ---- the store, with failures made fatal ------------------------------------ */

#define STORE(r, call)                                                         \
  do {                                                                         \
    sg_err e_;                                                                 \
    sg_err_clear(&e_);                                                         \
    sg_err *err = &e_;                                                         \
    if ((call) < 0)                                                            \
      sg_run_fail((r), &e_);                                                          \
  } while (0)

/* ---- sg_run.c: the loop ----------------------------------------------------- */

int64_t sg_run_thread_cpu_ns(void);
/* Records the first fatal error and stops the loop's work. */
void sg_run_fail(run *r, const sg_err *e);
/* One event to the observer (fields is consumed). */
void sg_run_emit(run *r, const char *name, json_t *fields);
/* Feeds the made-up events, in order, once no core call is on the stack. */
void sg_run_drain(run *r);
void sg_run_record_decision(run *r, wf *f, const char *kind, json_t *detail);

/* ---- sg_run_gen.c: generations and token forks ------------------------------ */

void sg_run_gen_free(rgen *g);
/* The interpreter's ops for generations: gen_start, gen_cancel. */
void sg_run_gen_ops(sg_interp_ops *ops);
void sg_run_gen_cancel(run *r, uint32_t w, uint64_t gen);
/* Sends again the main generations whose wait after a failure of the model
 * server is over (each tick). */
void sg_run_gen_retry_due(run *r, int64_t now);
/* The iteration the controller's action belongs to is open in the store. */
void sg_run_iteration_open(run *r, wf *f, uint32_t iteration);
void sg_run_iteration_close(run *r, wf *f, const char *reason);

/* ---- sg_run_eval.c: evaluations on the pool --------------------------------- */

/* Feedback texts for the controller (and so the prompts). */
/* replay-evals: the recorded outcomes still on their timers are dropped;
 * a recorded result not handed on is freed (and *rec set NULL). */
void sg_run_replay_close(run *r);
void sg_run_replay_drop(sg_eval_result **rec);
void sg_run_feedback_of(const sg_eval_result *res, sg_phase phase, char **message,
                        char **profile_text);
/* The interpreter's ops for evaluations: submit, submitted, refused and
 * the scheduler's actions. */
void sg_run_eval_ops(sg_interp_ops *ops);
int sg_run_start_pool(run *r, const char *program, sg_err *err);
/* A stop: the device time of the evaluations still on a device is recorded
 * up to now, so the summary's utilization counts it as progress did. */
void sg_run_eval_close_intervals(run *r);
/* Appends the --remote device slots to the run's devices (sg_run_remote.c). */
int sg_run_remote_devices(run *r, sg_err *err);
/* After the loop (the slot proxies have exited): the run's keys out of
 * Redis. */
int sg_run_remote_cleanup(run *r, sg_err *err);
/* sg_run_kv.c: the KV store of --kv-store (docs/kvstore.md). start does
 * nothing without it; close keeps its counters for report, which adds them
 * to the summary and writes kv_store.json. */
int sg_run_kv_start(run *r, sg_err *err);
void sg_run_kv_on_device(sg_pool *p, void *data, int slot, bool busy);
void sg_run_kv_close(run *r);
void sg_run_kv_report(run *r, json_t *summary);

/* ---- sg_run_resume.c: a new run's records, or a stored run restored ---------- */

int sg_run_begin_or_resume(run *r, sg_err *err);

/* ---- sg_run_load.c: the fork budget measured ------------------------------- */

/* The budget of --llm-streams and fork-slowdown-max (none without either,
 * or without forks); SG_EINVAL when the streams leave none for forks. */
int sg_run_load_setup(run *r, sg_err *err);
/* A chunk of g arrived (a main or a fork: its gap since its last one is
 * measured, with the most streams live in it, at the mains live now). */
void sg_run_load_chunk(run *r, rgen *g);
/* A stream started (a main or a fork, linked): every stream's gap now has
 * it live. */
void sg_run_load_stream_started(run *r);
/* What was measured, as the summary's "fork_budget" (with its line). */
void sg_run_load_report(run *r, json_t *summary);

/* ---- sg_run_setup.c: setting up, the best kernels, the summary, tearing down - */

const char *sg_run_source_ext(const sg_task *t);
int sg_run_write_best(run *r, wf *f, bool write, sg_err *err);
int sg_run_load_workflows(run *r, sg_err *err);
int sg_run_start_model(run *r, sg_err *err);
/* An endpoint given with --llm streams a short answer (the stream probe of
 * `specgen llm check`), else SG_EINVAL saying why: checked before the run
 * starts. Nothing for the caller's server. */
int sg_run_check_model(run *r, const sg_llm_client_opts *client, sg_err *err);
json_t *sg_run_summary(run *r, sg_err *err);
void sg_run_free(run *r);

#endif
