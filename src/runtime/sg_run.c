/* sg_run.c: the run loop (sg_run.h).
 *
 * How it works. Everything happens on one libuv loop thread. Three kinds of
 * things arrive: LLM stream callbacks (reasoning and content deltas, the end
 * of a generation), worker pool results (a compile, a validation, a
 * profile), and ticks. Each is turned into an event for the pure core: the
 * workflow's controller (generations, candidates, iterations) or the shared
 * scheduler (compile slots and devices). Their actions are executed here, in
 * order: start or cancel a stream, record and submit a candidate, start a
 * compile or a device stage on the pool, abort one. Every fact is written to
 * the run store before the loop acts on it.
 *
 * Events this file makes up itself (a candidate already evaluated in this
 * run, a request the scheduler gave up, a submission refused) are not fed to
 * the controller from inside the action that caused them: they wait in a
 * deferred queue that is drained when the current callback's work is done,
 * so the core is never re-entered while its action list is being executed.
 *
 * A store failure stops the run (nothing may happen that is not recorded):
 * the loop is told to stop, the error is returned, the run stays resumable.
 */
#include "runtime/sg_gen_account.h"
#include "runtime/sg_run.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_clock.h"
#include "common/sg_file.h"
#include "core/sg_controller.h"
#include "core/sg_scheduler.h"
#include "core/sg_search.h"
#include "core/sg_termination.h"
#include "eval/sg_task.h"
#include "llm/sg_llm_client.h"
#include "llm/sg_llm_generate.h"
#include "llm/sg_llm_provider.h"
#include "llm/sg_llm_server.h"
#include "runtime/sg_feedback.h"
#include "runtime/sg_pool.h"
#include "runtime/sg_prompt.h"
#include "runtime/sg_search_exec.h"
#include "runtime/sg_store.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How often a progress event is emitted. */
#define PROGRESS_EVERY_US 2000000
/* How long closing the pool may take before workers are killed. */
#define POOL_CLOSE_S 5.0

typedef struct run run;

/* A generation the loop streams. */
typedef struct rgen {
  run *r;
  uint32_t w;
  uint64_t gen;            /* the controller's id */
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
  struct {
    uint64_t bytes;
    size_t nids;
  } *marks;
  size_t n_marks, cap_marks;
  struct rgen *next;
} rgen;

static void rgen_free(rgen *g) {
  free(g->prompt_ids);
  free(g->ids);
  free(g->marks);
  free(g);
}

/* A scheduler request, indexed by its id. */
typedef struct rreq {
  bool live;
  uint32_t w;
  uint64_t cand;           /* the controller's candidate id */
  sg_phase phase;
  int64_t eval_id;         /* in the store */
  int device;              /* while on a device, else -1 */
  int64_t device_start_us;
  char *last_infra;        /* why its latest attempt failed, if it did */
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
  char *task_ref;          /* what workers are told: a name or a directory */
  sg_search *search;
  sg_termination *term;
  sg_controller *ctl;      /* NULL for a workflow already done (resume) */
  int64_t store_id;
  int64_t iter_store_id;   /* the open iteration's, 0 when none */
  uint32_t iter_open;      /* the controller iteration it belongs to */
  sg_prompt_text prompts[SG_SEARCH_MAX_MAINS]; /* this iteration's, rendered */
  bool have_prompt[SG_SEARCH_MAX_MAINS];
  rgen *gens;
  idmap gen_store;         /* store generation id by controller generation id */
  idmap cand_store;        /* store candidate id by controller candidate id */
  bool done, failed;
  bool main_cancelled;     /* this iteration cancelled a running reasoning */
  uint64_t iter_kernels;   /* candidates this iteration produced */
  char *best_file;         /* the best kernel's file, once written */
  double best_speedup;     /* NAN until a profiled kernel */
  int live_main, live_spec, in_flight;
} wf;

/* An event the loop made up, waiting to be fed to a controller. */
typedef struct deferred {
  uint32_t w;
  uint64_t gen;            /* > 0: a generation that failed to start */
  int gen_error;
  uint64_t cand;
  sg_phase phase;
  sg_eval_status status;
  double speedup;
  char *message;
  char *profile_text;
  struct deferred *next;
} deferred;

struct run {
  const sg_run_config *cfg;
  const sg_run_observer *obs;
  uv_loop_t loop;
  sg_err *err;             /* the first fatal error */
  bool failed, stopping, interrupted, closing;
  char *dir;
  sg_store *store;
  int64_t run_id;
  int64_t t0_us;
  /* the model */
  sg_llm_server *server;
  char *base_url;
  const char *model;
  const sg_llm_provider *provider;
  sg_gen_account acct;     /* generations: outcomes, causes, estimates */
  sg_llm_client *client;
  /* the pool */
  char **devices;
  size_t ndevices;
  bool cpu_devices;
  char *build_cache;
  sg_pool *pool;
  sg_scheduler *sched;
  rreq *reqs;              /* by request id */
  size_t cap_reqs;
  /* decisions */
  sg_search_registry sreg;
  sg_termination_registry treg;
  sg_prompt_templates *templates;
  wf *wfs;
  size_t nwf;
  deferred *dq, *dq_tail;
  sg_ctl_actions cact;
  sg_sched_actions sact;
  int depth;               /* nesting of core dispatch */
  /* handles */
  uv_timer_t tick;
  uv_signal_t sigint, sigterm;
  int64_t last_progress_us;
  uint64_t gen_seq;
  int32_t *end_think;      /* token forks: the ids that close the reasoning; */
  size_t n_end_think;      /* NULL when forks go as chat continuations */
  int dead_devices;
  char *last_infra;        /* the latest infrastructure failure, for errors */
  /* what the decisions cost: CPU time inside the controllers, and the loop
   * thread's CPU time in all (client, store, pool, core) */
  int64_t controller_cpu_ns;
  uint64_t controller_calls;
  uint64_t generations;
};

static int64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- small things ------------------------------------------------------------ */

static int64_t now_us(void) { return (int64_t)(sg_clock_wall_s() * 1e6); }

static double t_of(const run *r, int64_t us) { return (double)(us - r->t0_us) / 1e6; }

/* Records the first fatal error and stops the loop's work. */
static void fail(run *r, const sg_err *e) {
  if (!r->failed) {
    r->failed = true;
    *r->err = *e;
  }
  r->stopping = true;
}

static void emit(run *r, const char *name, json_t *fields) {
  json_t *ev = json_object();
  json_object_set_new(ev, "event", json_string(name));
  json_object_set_new(ev, "t", json_real(t_of(r, now_us())));
  if (fields) {
    json_object_update(ev, fields);
    json_decref(fields);
  }
  if (r->obs && r->obs->on_event)
    r->obs->on_event(r->obs->data, ev);
  json_decref(ev);
}

static json_t *num_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static wf *wf_of(run *r, uint32_t w) { return &r->wfs[w]; }

static rreq *req_get(run *r, sg_req_id id, bool grow) {
  if (id >= r->cap_reqs) {
    if (!grow)
      return NULL;
    size_t old = r->cap_reqs, cap = old ? old : 64;
    while (cap <= id)
      cap *= 2;
    r->reqs = sg_realloc(r->reqs, cap * sizeof *r->reqs);
    memset(r->reqs + old, 0, (cap - old) * sizeof *r->reqs);
    r->cap_reqs = cap;
  }
  return &r->reqs[id];
}

static void idmap_set(idmap *m, uint64_t key, int64_t value) {
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

static int64_t idmap_get(const idmap *m, uint64_t key) {
  return key < m->cap ? m->v[key] : 0;
}

/* Pool tickets: the request id, with the low bit telling the compile stage
 * from the device stage, so a late reply of one is never taken for the
 * other. */
static uint64_t ticket_of(sg_req_id id, bool compile) { return (id << 1) | (compile ? 1 : 0); }

static const char *source_ext(const sg_task *t) {
  if (strcmp(t->language, "cuda") == 0)
    return "cu";
  if (strcmp(t->language, "python") == 0)
    return "py";
  return "c";
}

static void defer_push(run *r, deferred *d) {
  if (r->dq_tail)
    r->dq_tail->next = d;
  else
    r->dq = d;
  r->dq_tail = d;
}

static void defer_eval(run *r, uint32_t w, uint64_t cand, sg_phase phase,
                       sg_eval_status st, double speedup, const char *message,
                       const char *profile_text) {
  deferred *d = sg_calloc(1, sizeof *d);
  d->w = w;
  d->cand = cand;
  d->phase = phase;
  d->status = st;
  d->speedup = speedup;
  d->message = message ? sg_strdup(message) : NULL;
  d->profile_text = profile_text ? sg_strdup(profile_text) : NULL;
  defer_push(r, d);
}

/* ---- the store, with failures made fatal ------------------------------------ */

#define STORE(r, call)                                                         \
  do {                                                                         \
    sg_err e_;                                                                 \
    sg_err_clear(&e_);                                                         \
    sg_err *err = &e_;                                                         \
    if ((call) < 0)                                                            \
      fail((r), &e_);                                                          \
  } while (0)

static void record_decision(run *r, wf *f, const char *kind, json_t *detail) {
  int64_t id = 0;
  STORE(r, sg_store_decision_add(r->store, f->store_id, f->iter_store_id, kind,
                                 detail, now_us(), &id, err));
  json_decref(detail);
}

/* ---- controller dispatch ----------------------------------------------------- */

static void apply_ctl(run *r, uint32_t w);
static void apply_sched(run *r);
static void maybe_finish(run *r);
static void on_tick(uv_timer_t *t);

static void ctl_event(run *r, uint32_t w, sg_ctl_event *ev) {
  wf *f = wf_of(r, w);
  if (f->done || f->ctl == NULL || r->failed)
    return;
  sg_sched_capacity cap;
  sg_scheduler_capacity(r->sched, &cap);
  sg_controller_set_capacity(f->ctl, &cap);
  sg_err e;
  sg_err_clear(&e);
  r->depth++;
  sg_ctl_actions_clear(&r->cact);
  int64_t c0 = thread_cpu_ns();
  int rc = sg_controller_event(f->ctl, ev, &r->cact, &e);
  r->controller_cpu_ns += thread_cpu_ns() - c0;
  r->controller_calls++;
  if (rc < 0) {
    sg_err_prefix(&e, "task %s", f->task->name);
    fail(r, &e);
  } else {
    apply_ctl(r, w);
  }
  r->depth--;
}

static void eval_done_event(run *r, uint32_t w, uint64_t cand, sg_phase phase,
                            sg_eval_status st, double speedup,
                            const char *message, const char *profile_text) {
  sg_ctl_event ev;
  memset(&ev, 0, sizeof ev);
  ev.type = SG_CEV_EVAL_DONE;
  ev.now_us = now_us();
  ev.u.eval.candidate = cand;
  ev.u.eval.phase = phase;
  ev.u.eval.status = st;
  ev.u.eval.speedup = speedup;
  ev.u.eval.message = message;
  ev.u.eval.profile_text = profile_text;
  ctl_event(r, w, &ev);
}

/* Feeds the made-up events, in order, once no core call is on the stack. */
static void drain(run *r) {
  if (r->depth > 0)
    return;
  while (r->dq && !r->failed) {
    deferred *d = r->dq;
    r->dq = d->next;
    if (r->dq == NULL)
      r->dq_tail = NULL;
    if (d->gen > 0) {
      sg_ctl_event ev;
      memset(&ev, 0, sizeof ev);
      ev.type = SG_CEV_GEN_FAILED;
      ev.now_us = now_us();
      ev.u.failed.gen = d->gen;
      ev.u.failed.error = d->gen_error;
      ev.u.failed.message = d->message;
      ctl_event(r, d->w, &ev);
    } else {
      eval_done_event(r, d->w, d->cand, d->phase, d->status, d->speedup,
                      d->message, d->profile_text);
    }
    free(d->message);
    free(d->profile_text);
    free(d);
  }
  maybe_finish(r);
}

/* ---- generations ------------------------------------------------------------- */

static rgen *gen_find(wf *f, uint64_t gen) {
  for (rgen *g = f->gens; g; g = g->next)
    if (g->gen == gen)
      return g;
  return NULL;
}

static void gen_unlink(wf *f, rgen *g) {
  for (rgen **p = &f->gens; *p; p = &(*p)->next)
    if (*p == g) {
      *p = g->next;
      return;
    }
}

static void gen_counts(wf *f, rgen *g, int delta) {
  if (g->kind == SG_GEN_MAIN)
    f->live_main += delta;
  else
    f->live_spec += delta;
}

static sg_finish_reason finish_reason_of(const char *s) {
  if (s && strcmp(s, "stop") == 0)
    return SG_FINISH_STOP;
  if (s && strcmp(s, "length") == 0)
    return SG_FINISH_LENGTH;
  return SG_FINISH_OTHER;
}

static void gen_record_end(run *r, rgen *g, const sg_llm_usage *u, bool client_counted,
                           const char *finish, sg_store_gen_outcome outcome) {
  sg_gen_tokens t = sg_gen_tokens_of(&r->acct, u, client_counted, g->chunks, g->prompt_bytes);
  STORE(r, sg_store_generation_end(r->store, g->store_id, t.prompt, t.completion,
                                   t.cached, finish, outcome, now_us(), err));
  if (t.prompt_estimated || t.completion_estimated)
    STORE(r, sg_store_generation_estimated(r->store, g->store_id, t.prompt_estimated,
                                           t.completion_estimated, err));
}

static void on_delta(rgen *g, bool reasoning, const char *text, size_t len) {
  run *r = g->r;
  g->chunks++;
  if (reasoning)
    g->reasoning_bytes += len;
  sg_ctl_event ev;
  memset(&ev, 0, sizeof ev);
  ev.type = SG_CEV_GEN_CHUNK;
  ev.now_us = now_us();
  ev.u.chunk.gen = g->gen;
  if (reasoning) {
    ev.u.chunk.reasoning = text;
    ev.u.chunk.reasoning_len = len;
  } else {
    ev.u.chunk.content = text;
    ev.u.chunk.content_len = len;
  }
  ev.u.chunk.tokens = 1; /* vLLM and SGLang stream one token per chunk */
  ctl_event(r, g->w, &ev);
  drain(r);
}

static void on_reasoning(sg_llm_stream *s, void *data, const char *text, size_t len) {
  (void)s;
  on_delta(data, true, text, len);
}

static void on_content(sg_llm_stream *s, void *data, const char *text, size_t len) {
  (void)s;
  on_delta(data, false, text, len);
}

static void on_token_ids(sg_llm_stream *s, void *data, bool prompt, const int32_t *ids,
                         size_t n) {
  (void)s;
  rgen *g = data;
  if (prompt) {
    free(g->prompt_ids);
    g->prompt_ids = sg_malloc((n ? n : 1) * sizeof *ids);
    memcpy(g->prompt_ids, ids, n * sizeof *ids);
    g->n_prompt_ids = n;
    return;
  }
  /* The client delivers a chunk's ids after its text: a mark here is a
   * token boundary at the reasoning bytes received so far. */
  if (g->n_ids + n > g->cap_ids) {
    g->cap_ids = (g->n_ids + n) * 2;
    g->ids = sg_realloc(g->ids, g->cap_ids * sizeof *g->ids);
  }
  memcpy(g->ids + g->n_ids, ids, n * sizeof *ids);
  g->n_ids += n;
  if (g->n_marks == g->cap_marks) {
    g->cap_marks = g->cap_marks ? g->cap_marks * 2 : 256;
    g->marks = sg_realloc(g->marks, g->cap_marks * sizeof *g->marks);
  }
  g->marks[g->n_marks].bytes = g->reasoning_bytes;
  g->marks[g->n_marks].nids = g->n_ids;
  g->n_marks++;
}

/* The token prompt of a fork of m at prefix_len reasoning bytes: the
 * prompt, the ids of the chunks wholly before prefix_len, the ids that end
 * the reasoning; NULL when m has no ids to fork from. */
static int32_t *fork_ids(const run *r, const rgen *m, uint64_t prefix_len, size_t *n) {
  if (r->end_think == NULL || m == NULL || m->n_prompt_ids == 0)
    return NULL;
  size_t nids = 0;
  for (size_t i = 0; i < m->n_marks && m->marks[i].bytes <= prefix_len; i++)
    nids = m->marks[i].nids;
  if (nids == 0)
    return NULL;
  return sg_llm_fork_token_prompt(m->prompt_ids, m->n_prompt_ids, m->ids, nids,
                                  r->end_think, r->n_end_think, n);
}

static void on_usage(sg_llm_stream *s, void *data, const sg_llm_usage *u) {
  (void)s;
  rgen *g = data;
  g->usage = *u;
}

static sg_usage usage_of(const sg_llm_usage *u, uint64_t chunks) {
  sg_usage o = {0, chunks, 0};
  if (u->present) {
    o.prompt_tokens = (uint64_t)(u->prompt_tokens > 0 ? u->prompt_tokens : 0);
    o.completion_tokens = (uint64_t)(u->completion_tokens > 0 ? u->completion_tokens : 0);
    o.cached_tokens = (uint64_t)(u->cached_tokens > 0 ? u->cached_tokens : 0);
  }
  return o;
}

static void gen_ended(rgen *g, const sg_llm_result *res, bool ok) {
  run *r = g->r;
  wf *f = wf_of(r, g->w);
  g->stream = NULL; /* freed by the client after this callback */
  gen_unlink(f, g);
  gen_counts(f, g, -1);
  sg_llm_usage u = res->usage.present ? res->usage : g->usage;
  gen_record_end(r, g, &u, res->usage.present && res->usage_estimated, res->finish_reason,
                 ok ? SG_STORE_GEN_COMPLETED : SG_STORE_GEN_FAILED);
  if (ok) {
    sg_gen_account_completed(&r->acct);
  } else {
    /* Each distinct cause once, in plain words, where a person reads it. */
    const char *cause = sg_gen_account_failed(&r->acct, res->message);
    if (cause) {
      char msg[SG_GEN_CAUSE_BYTES + 300];
      snprintf(msg, sizeof msg, "generation failed: %s (model server %s)", cause,
               r->base_url);
      emit(r, "warning", json_pack("{s:s, s:s}", "task", f->task->name, "message", msg));
    }
  }
  emit(r, "generation",
       json_pack("{s:s, s:i, s:s, s:s, s:I, s:s?}", "task", f->task->name,
                 "iteration", (int)f->iter_open + 1, "kind", sg_gen_kind_name(g->kind),
                 "outcome", ok ? "completed" : "failed", "completion_tokens",
                 (json_int_t)(u.present ? u.completion_tokens : (int64_t)g->chunks),
                 "error", ok ? NULL : res->message));
  sg_ctl_event ev;
  memset(&ev, 0, sizeof ev);
  ev.now_us = now_us();
  if (ok) {
    ev.type = SG_CEV_GEN_FINISHED;
    ev.u.finished.gen = g->gen;
    ev.u.finished.text = NULL; /* the content came in chunks */
    ev.u.finished.reason = finish_reason_of(res->finish_reason);
    ev.u.finished.usage = usage_of(&u, g->chunks);
  } else {
    ev.type = SG_CEV_GEN_FAILED;
    ev.u.failed.gen = g->gen;
    ev.u.failed.error = res->code ? res->code : SG_EHTTP;
    ev.u.failed.message = res->message;
    ev.u.failed.usage = usage_of(&u, g->chunks);
  }
  uint32_t w = g->w;
  rgen_free(g);
  ctl_event(r, w, &ev);
  drain(r);
}

static void on_finish(sg_llm_stream *s, void *data, const sg_llm_result *res) {
  (void)s;
  gen_ended(data, res, true);
}

static void on_error(sg_llm_stream *s, void *data, const sg_llm_result *res) {
  (void)s;
  gen_ended(data, res, false);
}

/* The iteration the controller's action belongs to is open in the store. */
static void iteration_open(run *r, wf *f, uint32_t iteration) {
  if (f->iter_store_id != 0 && f->iter_open == iteration)
    return;
  assert(f->iter_store_id == 0);
  f->iter_open = iteration;
  STORE(r, sg_store_iteration_begin(r->store, f->store_id, (int64_t)iteration + 1,
                                    now_us(), &f->iter_store_id, err));
}

static void iteration_close(run *r, wf *f, const char *reason) {
  if (f->iter_store_id == 0)
    return;
  STORE(r, sg_store_iteration_end(r->store, f->iter_store_id, reason, now_us(), err));
  f->iter_store_id = 0;
  for (size_t i = 0; i < SG_SEARCH_MAX_MAINS; i++) {
    if (f->have_prompt[i])
      sg_prompt_text_free(&f->prompts[i]);
    f->have_prompt[i] = false;
  }
}

/* What the store keeps of a generation's prompt: the rendered messages, a
 * fork's reasoning prefix, and how many token ids a token fork sent. */
static char *prompt_record(const sg_prompt_text *pt, const char *prefix, size_t plen,
                           size_t n_token_ids) {
  json_t *j = json_pack("{s:s, s:s}", "system", pt->system, "user", pt->user);
  if (prefix)
    json_object_set_new(j, "reasoning_prefix", json_stringn(prefix, plen));
  if (n_token_ids)
    json_object_set_new(j, "token_ids", json_integer((json_int_t)n_token_ids));
  char *s = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  return s;
}

static void gen_start(run *r, uint32_t w, const sg_ctl_action *a) {
  wf *f = wf_of(r, w);
  sg_err e;
  sg_err_clear(&e);
  size_t pi = a->u.start.prompt_index;
  assert(pi < SG_SEARCH_MAX_MAINS);
  if (!f->have_prompt[pi]) {
    if (sg_prompt_render(r->templates, f->task, sg_controller_history(f->ctl),
                         a->u.start.prompt, a->iteration, &f->prompts[pi], &e) < 0) {
      sg_err_prefix(&e, "task %s: rendering the prompt", f->task->name);
      fail(r, &e);
      return;
    }
    f->have_prompt[pi] = true;
  }
  const sg_prompt_text *pt = &f->prompts[pi];
  bool spec = a->u.start.kind == SG_GEN_SPEC;
  rgen *parent = spec ? gen_find(f, a->u.start.parent_gen) : NULL;
  size_t n_fork_ids = 0;
  int32_t *fork_prompt = spec ? fork_ids(r, parent, a->u.start.prefix_len, &n_fork_ids) : NULL;
  char *prompt_json = prompt_record(pt, spec ? a->u.start.prefix : NULL,
                                    spec ? (size_t)a->u.start.prefix_len : 0, n_fork_ids);
  sg_store_generation sg = {
      .iteration_id = f->iter_store_id,
      .kind = spec ? SG_STORE_GEN_SPEC : SG_STORE_GEN_MAIN,
      .parent_id = parent ? parent->store_id : 0,
      .prefix_bytes = spec ? (int64_t)a->u.start.prefix_len : 0,
      .prompt = prompt_json,
      .started_us = now_us(),
  };
  int64_t store_id = 0;
  STORE(r, sg_store_generation_begin(r->store, &sg, &store_id, err));
  free(prompt_json);
  if (r->failed) {
    free(fork_prompt);
    return;
  }

  sg_llm_message msgs[3] = {
      {"system", pt->system, NULL, false},
      {"user", pt->user, NULL, false},
      {"assistant", "", NULL, true},
  };
  char *prefix = NULL;
  if (spec) {
    prefix = sg_strndup(a->u.start.prefix, (size_t)a->u.start.prefix_len);
    msgs[2].reasoning = prefix;
  }
  char rid[96];
  snprintf(rid, sizeof rid, "specgen-%lld-w%u-g%llu-%llu", (long long)r->run_id, w,
           (unsigned long long)a->u.start.gen, (unsigned long long)++r->gen_seq);
  sg_llm_request q;
  sg_llm_request_init(&q);
  q.base_url = r->base_url;
  q.model = r->model;
  q.endpoint = SG_LLM_ENDPOINT_CHAT;
  q.messages = msgs;
  q.n_messages = spec ? 3 : 2;
  q.max_tokens = r->cfg->max_tokens;
  q.temperature = r->cfg->temperature;
  q.no_think = !a->u.start.thinking;
  q.request_id = rid;
  q.provider = r->provider;
  q.deadline_s = r->cfg->gen_deadline;
  q.idle_timeout_s = r->cfg->idle_timeout;
  if (fork_prompt) {
    /* The exact tokens of the parent's prompt and reasoning, then the end of
     * thinking: the server's prefix cache serves all of it. */
    q.endpoint = SG_LLM_ENDPOINT_COMPLETIONS;
    q.messages = NULL;
    q.n_messages = 0;
    q.prompt_token_ids = fork_prompt;
    q.n_prompt_token_ids = n_fork_ids;
    q.no_think = false;
  } else if (!spec && r->end_think) {
    q.return_token_ids = true; /* what forks of it will send back */
  }
  /* The built-in model samples from the request's seed: one drawn from the
   * run's seed, the workflow and the generation makes a run repeatable in
   * what the model writes (its timing still varies). A real endpoint is
   * left to sample as it is configured. */
  char seed_json[64];
  if (r->server) {
    snprintf(seed_json, sizeof seed_json, "{\"seed\": %llu}",
             (unsigned long long)((r->cfg->seed * 1000003ull + w * 1009ull +
                                   a->u.start.gen) % 9007199254740991ull));
    q.extra_json = seed_json;
  }

  rgen *g = sg_calloc(1, sizeof *g);
  g->r = r;
  g->w = w;
  g->gen = a->u.start.gen;
  g->kind = a->u.start.kind;
  g->store_id = store_id;
  g->prompt_bytes = strlen(pt->system) + strlen(pt->user) +
                    (spec ? (size_t)a->u.start.prefix_len : 0);
  idmap_set(&f->gen_store, g->gen, store_id);
  sg_llm_callbacks cb = {g, on_reasoning, on_content, q.return_token_ids ? on_token_ids : NULL,
                         on_usage, on_finish, on_error};
  int rc = sg_llm_stream_start(r->client, &q, &cb, &g->stream, &e);
  free(prefix);
  free(fork_prompt);
  if (rc < 0) {
    /* The request cannot be expressed (a profile without prefix
     * continuation, say): a failed generation, recorded, and reported to
     * the controller after this action list, as a stream error would be. */
    gen_record_end(r, g, NULL, false, NULL, SG_STORE_GEN_FAILED);
    if (sg_gen_account_failed(&r->acct, e.msg))
      emit(r, "warning", json_pack("{s:s, s:s}", "task", f->task->name, "message", e.msg));
    deferred *d = sg_calloc(1, sizeof *d);
    d->w = w;
    d->gen = g->gen;
    d->gen_error = rc;
    d->message = sg_strdup(e.msg);
    defer_push(r, d);
    rgen_free(g);
    return;
  }
  g->next = f->gens;
  f->gens = g;
  gen_counts(f, g, 1);
  r->generations++;
  if (spec)
    emit(r, "fork", json_pack("{s:s, s:i, s:I}", "task", f->task->name, "iteration",
                              (int)a->iteration + 1, "prefix_bytes",
                              (json_int_t)a->u.start.prefix_len));
}

static void gen_cancel(run *r, uint32_t w, uint64_t gen) {
  wf *f = wf_of(r, w);
  rgen *g = gen_find(f, gen);
  if (g == NULL)
    return;
  if (g->stream)
    sg_llm_stream_cancel(g->stream);
  g->stream = NULL;
  gen_unlink(f, g);
  gen_counts(f, g, -1);
  f->main_cancelled |= g->kind == SG_GEN_MAIN;
  gen_record_end(r, g, &g->usage, false, "cancelled", SG_STORE_GEN_CANCELLED);
  rgen_free(g);
}

/* ---- evaluations ------------------------------------------------------------- */

static sg_store_phase store_phase(sg_phase p) {
  return p == SG_PHASE_VALIDATE ? SG_STORE_VALIDATE : SG_STORE_PROFILE;
}

/* Feedback texts for the controller (and so the prompts). */
static void feedback_of(const sg_eval_result *res, sg_phase phase, char **message,
                        char **profile_text) {
  *message = NULL;
  *profile_text = NULL;
  if (phase == SG_PHASE_VALIDATE || res->status != SG_EVAL_OK)
    *message = sg_feedback_validation(res);
  else
    *profile_text = sg_feedback_profile(res);
}

static void eval_event_of(run *r, uint32_t w, uint64_t cand, sg_phase phase,
                          const sg_eval_result *res) {
  wf *f = wf_of(r, w);
  char *msg, *prof;
  feedback_of(res, phase, &msg, &prof);
  defer_eval(r, w, cand, phase, res->status, res->speedup, msg, prof);
  free(msg);
  free(prof);
  emit(r, "evaluation",
       json_pack("{s:s, s:I, s:s, s:s, s:o}", "task", f->task->name, "candidate",
                 (json_int_t)cand, "phase", sg_phase_name(phase), "status",
                 sg_eval_status_name(res->status), "speedup", num_or_null(res->speedup)));
}

static void submit_eval(run *r, uint32_t w, const sg_ctl_action *a) {
  wf *f = wf_of(r, w);
  uint64_t cand = a->u.submit.candidate;
  sg_phase phase = a->u.submit.phase;
  int64_t cid = idmap_get(&f->cand_store, cand);
  bool is_new = false;
  if (cid == 0) {
    const sg_kernel *k = sg_history_get(sg_controller_history(f->ctl), cand);
    assert(k != NULL);
    STORE(r, sg_store_candidate_add(r->store, idmap_get(&f->gen_store, k->gen),
                                    a->u.submit.source, now_us(), &cid, &is_new, err));
    if (r->failed)
      return;
    idmap_set(&f->cand_store, cand, cid);
    f->iter_kernels++;
    emit(r, "candidate", json_pack("{s:s, s:I, s:s, s:b}", "task", f->task->name,
                                   "candidate", (json_int_t)cand, "origin",
                                   sg_gen_kind_name(k->origin), "duplicate", !is_new));
  }
  if (!is_new) {
    /* Evaluated before in this run (or before a resume): never again. */
    sg_eval_result prev;
    sg_eval_result_init(&prev);
    bool found = false;
    STORE(r, sg_store_eval_lookup(r->store, cid, store_phase(phase), &prev, NULL,
                                  &found, err));
    if (found) {
      eval_event_of(r, w, cand, phase, &prev);
      sg_eval_result_free(&prev);
      return;
    }
    sg_eval_result_free(&prev);
  }
  int64_t eval_id = 0;
  STORE(r, sg_store_eval_queue(r->store, cid, store_phase(phase), now_us(), &eval_id, err));
  if (r->failed)
    return;
  sg_sched_request sr = {.workflow = w,
                         .iteration = a->iteration,
                         .phase = phase,
                         .candidate = cand,
                         .needs_compile = phase == SG_PHASE_VALIDATE};
  sg_req_id id = 0;
  sg_err e;
  sg_err_clear(&e);
  sg_sched_actions_clear(&r->sact);
  if (sg_scheduler_submit(r->sched, &sr, now_us(), &id, &r->sact, &e) < 0) {
    sg_eval_result res;
    sg_eval_result_init(&res);
    res.status = SG_EVAL_INFRA_ERROR;
    res.message = sg_asprintf("specgen could not evaluate: %s", e.msg);
    STORE(r, sg_store_eval_finish(r->store, eval_id, &res, now_us(), err));
    eval_event_of(r, w, cand, phase, &res);
    sg_eval_result_free(&res);
    return;
  }
  rreq *q = req_get(r, id, true);
  memset(q, 0, sizeof *q);
  q->live = true;
  q->w = w;
  q->cand = cand;
  q->phase = phase;
  q->eval_id = eval_id;
  q->device = -1;
  f->in_flight++;
  apply_sched(r);
}

static const char *kernel_source(run *r, const rreq *q, size_t *len) {
  const sg_kernel *k = sg_history_get(sg_controller_history(wf_of(r, q->w)->ctl), q->cand);
  assert(k && k->source);
  *len = k->source_len;
  return k->source;
}

static int pool_send(run *r, sg_req_id id, rreq *q, bool compile, int device,
                     sg_err *err) {
  wf *f = wf_of(r, q->w);
  sg_pool_request pr;
  memset(&pr, 0, sizeof pr);
  pr.ticket = ticket_of(id, compile);
  pr.kind = compile ? SG_POOL_COMPILE
            /* The cpu evaluator has no hardware counters: its profile is a
             * second, independent timing run (docs/usage.md). */
            : (q->phase == SG_PHASE_PROFILE && strcmp(f->task->evaluator, "cpu") != 0)
                ? SG_POOL_PROFILE
                : SG_POOL_VALIDATE;
  pr.slot = device;
  pr.task = f->task_ref;
  pr.source = kernel_source(r, q, &pr.source_len);
  pr.seed = r->cfg->seed + id;
  pr.trials = r->cfg->trials;
  pr.runs = r->cfg->runs;
  pr.warmups = r->cfg->warmups;
  pr.timeout_s = r->cfg->eval_timeout;
  return sg_pool_submit(r->pool, &pr, err);
}

static void device_interval(run *r, rreq *q) {
  if (q->device < 0)
    return;
  int64_t id = 0;
  int64_t end = now_us();
  STORE(r, sg_store_device_interval_add(r->store, r->devices[q->device],
                                        store_phase(q->phase), q->eval_id,
                                        q->device_start_us,
                                        end > q->device_start_us ? end : q->device_start_us,
                                        &id, err));
  q->device = -1;
}

static void req_end(run *r, rreq *q) {
  if (!q->live)
    return;
  q->live = false;
  free(q->last_infra);
  q->last_infra = NULL;
  wf_of(r, q->w)->in_flight--;
}

static void finish_own(run *r, rreq *q, sg_eval_status st, const char *msg) {
  sg_eval_result res;
  sg_eval_result_init(&res);
  res.status = st;
  res.message = sg_strdup(msg);
  STORE(r, sg_store_eval_finish(r->store, q->eval_id, &res, now_us(), err));
  if (st != SG_EVAL_ABORTED)
    eval_event_of(r, q->w, q->cand, q->phase, &res);
  sg_eval_result_free(&res);
}

/* The pool refused a stage (its worker slot was given up, or the pool is
 * closing): to the scheduler, an infrastructure failure of that stage. */
static void pool_refused(run *r, sg_req_id id, rreq *q, bool compile, const sg_err *why) {
  emit(r, "warning", json_pack("{s:s, s:s}", "task", wf_of(r, q->w)->task->name,
                               "message", why->msg));
  sg_err e;
  sg_err_clear(&e);
  sg_sched_actions_clear(&r->sact);
  if (compile) {
    if (sg_scheduler_compiled(r->sched, id, false, now_us(), &r->sact, &e) == 0) {
      char *msg = sg_asprintf("specgen could not evaluate: %s", why->msg);
      finish_own(r, q, SG_EVAL_INFRA_ERROR, msg);
      free(msg);
      req_end(r, q);
    }
  } else {
    device_interval(r, q);
    sg_scheduler_device_done(r->sched, id, true, now_us(), &r->sact, &e);
  }
  apply_sched(r);
}

static void apply_sched(run *r) {
  size_t n = r->sact.n;
  if (n == 0)
    return;
  sg_sched_action *acts = sg_malloc(n * sizeof *acts);
  memcpy(acts, r->sact.v, n * sizeof *acts);
  for (size_t i = 0; i < n && !r->failed; i++) {
    const sg_sched_action *a = &acts[i];
    rreq *q = a->req ? req_get(r, a->req, false) : NULL;
    sg_err e;
    sg_err_clear(&e);
    switch (a->type) {
    case SG_SACT_START_COMPILE:
      assert(q && q->live);
      if (pool_send(r, a->req, q, true, -1, &e) < 0)
        pool_refused(r, a->req, q, true, &e);
      break;
    case SG_SACT_START_DEVICE:
      assert(q && q->live && a->device >= 0);
      q->device = a->device;
      q->device_start_us = now_us();
      STORE(r, sg_store_eval_start(r->store, q->eval_id, r->devices[a->device],
                                   q->device_start_us, err));
      if (pool_send(r, a->req, q, false, a->device, &e) < 0)
        pool_refused(r, a->req, q, false, &e);
      break;
    case SG_SACT_ABORT:
      if (q == NULL || !q->live)
        break;
      sg_pool_abort(r->pool, ticket_of(a->req, a->was_compiling));
      device_interval(r, q);
      finish_own(r, q, SG_EVAL_ABORTED, "withdrawn: its iteration ended first");
      req_end(r, q);
      break;
    case SG_SACT_FAIL:
      if (q == NULL || !q->live)
        break;
    {
      device_interval(r, q);
      char *msg = sg_asprintf("specgen could not evaluate: the request failed on every "
                              "device tried; the last failure: %s",
                              q->last_infra ? q->last_infra : "none reported");
      finish_own(r, q, SG_EVAL_INFRA_ERROR, msg);
      free(msg);
      req_end(r, q);
      break;
    }
    case SG_SACT_DEVICE_DEAD:
      emit(r, "warning", json_pack("{s:s, s:s}", "device", r->devices[a->device],
                                   "message", "device taken out of service after "
                                              "repeated infrastructure failures"));
      if (++r->dead_devices >= (int)r->ndevices) {
        /* Nothing can be evaluated any more: stop rather than generate for
         * nothing. The run stays resumable once the devices are fixed. */
        sg_err e2;
        sg_err_set(&e2, SG_EIO, "every device is out of service after repeated "
                   "infrastructure failures; the last: %s",
                   r->last_infra ? r->last_infra : "none reported");
        fail(r, &e2);
      }
      break;
    case SG_SACT_RESPLIT:
      for (size_t k = 0; k < r->nwf; k++)
        if (!r->wfs[k].done && r->wfs[k].store_id && a->workflow == k) {
          record_decision(r, &r->wfs[k], "reallocate",
                          json_pack("{s:i, s:i}", "validate_devices",
                                    a->validate_devices, "profile_devices",
                                    a->profile_devices));
        }
      break;
    }
  }
  free(acts);
}

/* ---- pool callbacks ---------------------------------------------------------- */

static void on_pool_result(sg_pool *p, void *data, uint64_t ticket,
                           const sg_eval_result *res) {
  (void)p;
  run *r = data;
  sg_req_id id = ticket >> 1;
  bool compile = ticket & 1;
  rreq *q = req_get(r, id, false);
  if (q == NULL || !q->live || r->failed)
    return;
  sg_err e;
  sg_err_clear(&e);
  sg_sched_actions_clear(&r->sact);
  r->depth++;
  if (compile) {
    bool ok = res->status == SG_EVAL_OK;
    if (sg_scheduler_compiled(r->sched, id, ok, now_us(), &r->sact, &e) == 0) {
      if (!ok) {
        STORE(r, sg_store_eval_finish(r->store, q->eval_id, res, now_us(), err));
        eval_event_of(r, q->w, q->cand, q->phase, res);
        req_end(r, q);
      }
      apply_sched(r);
    }
  } else {
    bool infra = res->status == SG_EVAL_INFRA_ERROR;
    device_interval(r, q);
    if (sg_scheduler_device_done(r->sched, id, infra, now_us(), &r->sact, &e) == 0) {
      if (!infra) {
        sg_eval_result copy = *res;
        char *prof = NULL;
        if (q->phase == SG_PHASE_PROFILE && res->profile_text == NULL &&
            res->status == SG_EVAL_OK)
          copy.profile_text = prof = sg_asprintf(
              "cpu timing profile: candidate median %.3f ms, reference %.3f ms "
              "(no hardware counters on the cpu evaluator)",
              res->cand_ms, res->ref_ms);
        STORE(r, sg_store_eval_finish(r->store, q->eval_id, &copy, now_us(), err));
        eval_event_of(r, q->w, q->cand, q->phase, &copy);
        free(prof);
        req_end(r, q);
      } else {
        free(q->last_infra);
        q->last_infra = sg_strdup(res->message ? res->message : "no message");
        free(r->last_infra);
        r->last_infra = sg_strdup(q->last_infra);
        emit(r, "warning", json_pack("{s:s, s:s?}", "task", wf_of(r, q->w)->task->name,
                                     "message", res->message));
      }
      apply_sched(r);
    }
  }
  r->depth--;
  drain(r);
}

static void on_pool_worker(sg_pool *p, void *data, int slot, const char *what,
                           const char *message) {
  (void)p;
  run *r = data;
  const char *dev = slot >= 0 && (size_t)slot < r->ndevices ? r->devices[slot] : "compile";
  emit(r, "worker", json_pack("{s:s, s:s, s:s?}", "device", dev, "what", what,
                              "message", message));
}

/* ---- controller actions ------------------------------------------------------ */

/* The workflow's best kernel: the fastest that passed validation (its latest
 * measured speedup, the profile's when it has one), so the file on disk is
 * the kernel the summary's best_speedup speaks of. 0 when none passed. */
static uint64_t best_kernel(const sg_history *h) {
  uint64_t best = 0;
  double sp = -1;
  for (size_t i = 0; i < h->n; i++) {
    const sg_kernel *k = &h->v[i];
    if (k->validated && k->validate_status == SG_EVAL_OK && k->source &&
        isfinite(k->speedup) && k->speedup > sp) {
      sp = k->speedup;
      best = k->id;
    }
  }
  return best;
}

/* Writes best/<task>.<ext> when the best kernel changed. */
static void write_best(run *r, wf *f) {
  const sg_history *h = sg_controller_history(f->ctl);
  uint64_t id = best_kernel(h);
  const sg_kernel *k = id ? sg_history_get(h, id) : NULL;
  if (k == NULL || (f->best_file && k->speedup == f->best_speedup))
    return;
  sg_err e;
  sg_err_clear(&e);
  char *dir = sg_asprintf("%s/best", r->dir);
  char *path = sg_asprintf("%s/%s.%s", dir, f->task->name, source_ext(f->task));
  if (sg_mkdir_p(dir, &e) < 0 || sg_file_write(path, k->source, k->source_len, &e) < 0) {
    fail(r, &e);
    free(path);
  } else {
    free(f->best_file);
    f->best_file = path;
    f->best_speedup = k->speedup;
  }
  free(dir);
}

static void apply_ctl(run *r, uint32_t w) {
  wf *f = wf_of(r, w);
  size_t n = r->cact.n;
  if (n == 0)
    return;
  sg_ctl_action *acts = sg_malloc(n * sizeof *acts);
  memcpy(acts, r->cact.v, n * sizeof *acts);
  sg_err e;
  sg_err_clear(&e);
  for (size_t i = 0; i < n && !r->failed; i++) {
    const sg_ctl_action *a = &acts[i];
    switch (a->type) {
    case SG_CACT_START_GEN:
      iteration_open(r, f, a->iteration);
      if (!r->failed)
        gen_start(r, w, a);
      break;
    case SG_CACT_CANCEL_GEN:
      gen_cancel(r, w, a->u.cancel.gen);
      break;
    case SG_CACT_SUBMIT_EVAL:
      submit_eval(r, w, a);
      break;
    case SG_CACT_END_ITERATION: {
      const sg_kernel *b = a->u.end.best_kernel
                               ? sg_history_get(sg_controller_history(f->ctl),
                                                a->u.end.best_kernel)
                               : NULL;
      /* The paper's early termination cuts a reasoning short; a kernel the
       * criterion accepts after the reasoning ended is "accepted". */
      const char *reason = sg_ctl_reason_name(a->u.end.reason);
      if (a->u.end.reason == SG_REASON_EARLY && !f->main_cancelled)
        reason = "accepted";
      reason = sg_gen_iteration_reason(reason, f->iter_kernels);
      f->iter_kernels = 0;
      iteration_close(r, f, reason);
      f->main_cancelled = false;
      write_best(r, f);
      emit(r, "iteration_end",
           json_pack("{s:s, s:i, s:s, s:o, s:o}", "task", f->task->name, "iteration",
                     (int)a->iteration + 1, "reason", reason, "iteration_best",
                     num_or_null(b ? b->speedup : NAN), "best_speedup",
                     num_or_null(f->best_speedup)));
      sg_sched_actions_clear(&r->sact);
      if (sg_scheduler_iteration_boundary(r->sched, w, a->iteration + 1, now_us(),
                                          &r->sact, &e) < 0)
        fail(r, &e);
      else
        apply_sched(r);
      break;
    }
    case SG_CACT_WORKFLOW_DONE: {
      iteration_close(r, f, sg_ctl_reason_name(a->u.done.reason));
      f->done = true;
      write_best(r, f);
      bool failed = a->u.done.reason == SG_REASON_SEARCH_FAILED;
      f->failed = failed;
      STORE(r, sg_store_workflow_set_state(r->store, f->store_id,
                                           failed ? SG_STORE_WF_FAILED : SG_STORE_WF_DONE,
                                           now_us(), err));
      sg_sched_actions_clear(&r->sact);
      if (sg_scheduler_workflow_done(r->sched, w, now_us(), &r->sact, &e) < 0)
        fail(r, &e);
      else
        apply_sched(r);
      emit(r, "workflow_done",
           json_pack("{s:s, s:s, s:o, s:s?}", "task", f->task->name, "reason",
                     sg_ctl_reason_name(a->u.done.reason), "best_speedup",
                     num_or_null(f->best_speedup), "best_file", f->best_file));
      break;
    }
    case SG_CACT_DECISION: {
      json_t *d = json_pack("{s:I, s:I, s:i}", "generation", (json_int_t)a->u.decision.gen,
                            "prefix_bytes", (json_int_t)a->u.decision.prefix_len, "k",
                            a->u.decision.k);
      if (a->u.decision.trigger >= 0)
        json_object_set_new(d, "trigger",
                            json_string(sg_trigger_class_name(a->u.decision.trigger)));
      if (a->u.decision.reason == SG_REASON_EARLY) {
        json_object_set_new(d, "candidate", json_integer((json_int_t)a->u.decision.candidate));
        json_object_set_new(d, "speedup", num_or_null(a->u.decision.speedup));
        json_object_set_new(d, "history_mean", num_or_null(a->u.decision.threshold_mean));
        json_object_set_new(d, "history_best", num_or_null(a->u.decision.threshold_best));
      }
      record_decision(r, f, sg_ctl_reason_name(a->u.decision.reason), d);
      break;
    }
    default:
      break;
    }
  }
  free(acts);
}

/* ---- ticks, progress, signals, the end ---------------------------------------- */

static bool all_done(const run *r) {
  for (size_t i = 0; i < r->nwf; i++)
    if (!r->wfs[i].done)
      return false;
  return true;
}

/* Once every workflow is done (or the run must stop), the tick timer fires
 * at once and closes everything from outside any client or pool callback. */
static void maybe_finish(run *r) {
  if ((r->stopping || all_done(r)) && uv_is_active((uv_handle_t *)&r->tick) &&
      !r->closing) {
    r->closing = true;
    uv_timer_start(&r->tick, on_tick, 0, 0);
  }
}

static json_t *progress_json(run *r) {
  sg_sched_stats ss;
  sg_scheduler_stats(r->sched, &ss);
  double pool_s = (double)r->ndevices * t_of(r, now_us());
  json_t *wfs = json_array();
  for (size_t i = 0; i < r->nwf; i++) {
    wf *f = &r->wfs[i];
    sg_ctl_stats st;
    memset(&st, 0, sizeof st);
    if (f->ctl)
      sg_controller_stats(f->ctl, &st);
    json_array_append_new(
        wfs, json_pack("{s:s, s:i, s:b, s:o, s:i, s:i, s:i, s:I, s:I}", "task",
                       f->task->name, "iteration", f->ctl ? (int)sg_controller_iteration(f->ctl) + 1 : 0,
                       "done", f->done, "best_speedup", num_or_null(f->best_speedup),
                       "main_live", f->live_main, "spec_live", f->live_spec,
                       "evaluations_in_flight", f->in_flight, "forks", (json_int_t)st.forks,
                       "early_terminations", (json_int_t)st.early_terminations));
  }
  double uv = pool_s > 0 ? (double)ss.busy_us[SG_PHASE_VALIDATE] / 1e6 / pool_s : 0;
  double up = pool_s > 0 ? (double)ss.busy_us[SG_PHASE_PROFILE] / 1e6 / pool_s : 0;
  return json_pack("{s:o, s:{s:f, s:f, s:f}}", "workflows", wfs, "utilization",
                   "validation", uv, "profiling", up, "overall", uv + up);
}

static void shutdown_all(run *r) {
  uv_timer_stop(&r->tick);
  uv_close((uv_handle_t *)&r->tick, NULL);
  uv_close((uv_handle_t *)&r->sigint, NULL);
  uv_close((uv_handle_t *)&r->sigterm, NULL);
  for (size_t i = 0; i < r->nwf; i++) {
    wf *f = &r->wfs[i];
    while (f->gens)
      gen_cancel(r, (uint32_t)i, f->gens->gen);
  }
  sg_pool_close(r->pool, POOL_CLOSE_S);
  r->pool = NULL;
  sg_llm_client_destroy(r->client);
  r->client = NULL;
}

static void on_tick(uv_timer_t *t) {
  run *r = t->data;
  if (r->closing) {
    shutdown_all(r);
    return;
  }
  int64_t now = now_us();
  sg_scheduler_tick(r->sched, now, NULL);
  for (size_t i = 0; i < r->nwf && !r->failed; i++) {
    wf *f = &r->wfs[i];
    if (f->done || f->ctl == NULL)
      continue;
    sg_ctl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = SG_CEV_TICK;
    ev.now_us = now;
    sg_scheduler_capacity(r->sched, &ev.u.tick.capacity);
    ctl_event(r, (uint32_t)i, &ev);
  }
  drain(r);
  if (now - r->last_progress_us >= PROGRESS_EVERY_US) {
    r->last_progress_us = now;
    emit(r, "progress", progress_json(r));
  }
}

static void on_signal(uv_signal_t *h, int signum) {
  run *r = h->data;
  r->interrupted = true;
  r->stopping = true;
  emit(r, "warning",
       json_pack("{s:s}", "message",
                 signum == SIGINT
                     ? "interrupted: stopping; the run can be resumed with --resume "
                       "(press Ctrl-C again to stop at once)"
                     : "terminated: stopping; the run can be resumed with --resume"));
  /* A second signal takes the default action: the store loses nothing. */
  uv_signal_stop(&r->sigint);
  uv_signal_stop(&r->sigterm);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  maybe_finish(r);
}

/* ---- setting up ------------------------------------------------------------- */

static char *self_exe(void) {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0)
    return NULL;
  buf[n] = '\0';
  return sg_strdup(buf);
}

static char *default_out_dir(void) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  char name[64];
  strftime(name, sizeof name, "runs/%Y%m%d-%H%M%S", &tm);
  return sg_strdup(name);
}

static bool is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* What workers are told: the name a user gave for a built-in task, the
 * absolute directory for a task given as a directory. */
static char *task_ref(const char *given, const sg_task *t) {
  return is_dir(given) ? sg_strdup(t->dir) : sg_strdup(given);
}

static int load_workflows(run *r, sg_err *err) {
  const sg_run_config *cfg = r->cfg;
  r->nwf = cfg->n_task;
  r->wfs = sg_calloc(r->nwf, sizeof *r->wfs);
  for (size_t i = 0; i < r->nwf; i++) {
    wf *f = &r->wfs[i];
    f->idx = (uint32_t)i;
    f->best_speedup = NAN;
    /* A bare name on cuda devices means the cuda (else kernelbench) task of
     * that name, as `specgen eval --device cuda:N` takes it. */
    char *name = NULL;
    if (!r->cpu_devices && strchr(cfg->task[i], '/') == NULL && !is_dir(cfg->task[i])) {
      static const char *const kinds[] = {"cuda", "kernelbench"};
      for (size_t k = 0; k < 2 && name == NULL; k++) {
        char *q = sg_asprintf("%s/%s", kinds[k], cfg->task[i]);
        sg_err e;
        if (sg_task_load(q, &f->task, &e) == 0)
          name = q;
        else
          free(q);
      }
    }
    int rc = name ? 0 : sg_task_load(cfg->task[i], &f->task, err);
    if (rc < 0)
      return sg_err_prefix(err, "--task %s", cfg->task[i]);
    bool cpu_task = strcmp(f->task->evaluator, "cpu") == 0;
    if (cpu_task != r->cpu_devices)
      return sg_err_set(err, SG_EINVAL,
                        "--task %s: its evaluator (%s) runs on %s devices, but "
                        "--devices is %s",
                        cfg->task[i], f->task->evaluator, cpu_task ? "cpu" : "cuda",
                        cfg->devices);
    for (size_t j = 0; j < i; j++)
      if (strcmp(r->wfs[j].task->dir, f->task->dir) == 0)
        return sg_err_set(err, SG_EINVAL, "--task %s: given twice", cfg->task[i]);
    f->task_ref = name ? name : task_ref(cfg->task[i], f->task);
    if ((rc = sg_search_new(&r->sreg, cfg->search, cfg->seed + i, &f->search, err)) < 0)
      return sg_err_prefix(err, "--search %s", cfg->search);
    if ((rc = sg_termination_new(&r->treg, cfg->termination, &f->term, err)) < 0)
      return sg_err_prefix(err, "--termination %s", cfg->termination);
    sg_ctl_opts o;
    sg_ctl_opts_default(&o);
    o.search = f->search;
    o.termination = f->term;
    o.language = f->task->language;
    o.entry = f->task->entry;
    o.speculate = cfg->spec;
    o.fork_on_idle = cfg->fork_on_idle;
    o.max_forks_per_iteration = cfg->max_forks;
    o.max_live_forks = cfg->max_live_forks;
    o.max_iterations = (uint32_t)cfg->iterations;
    o.max_wall_us = (int64_t)(cfg->time_budget * 1e6);
    o.max_tokens = cfg->token_budget;
    if ((rc = sg_controller_new(&o, &f->ctl, err)) < 0)
      return sg_err_prefix(err, "task %s", f->task->name);
  }
  return 0;
}

static char *feedback_text(const sg_eval_result *res, sg_phase phase) {
  char *msg, *prof;
  feedback_of(res, phase, &msg, &prof);
  return msg ? msg : prof;
}

/* Restores one stored, unfinished workflow into its fresh controller. */
static int resume_workflow(run *r, wf *f, const json_t *sw, sg_err *err) {
  int64_t now = now_us();
  const json_t *open = json_object_get(sw, "open_iteration");
  const json_t *v;
  size_t i;
  json_array_foreach(json_object_get(sw, "open_generations"), i, v) {
    int rc = sg_store_generation_end(r->store, json_integer_value(v), 0, 0, 0,
                                     "interrupted", SG_STORE_GEN_CANCELLED, now, err);
    if (rc < 0)
      return rc;
  }
  json_array_foreach(json_object_get(sw, "pending_evaluations"), i, v) {
    sg_eval_result res;
    sg_eval_result_init(&res);
    res.status = SG_EVAL_ABORTED;
    res.message = sg_strdup("interrupted: the run stopped before this evaluation "
                            "ended; the resumed run does not redo it");
    int rc = sg_store_eval_finish(r->store, json_integer_value(json_object_get(v, "id")),
                                  &res, now, err);
    sg_eval_result_free(&res);
    if (rc < 0)
      return rc;
  }
  if (json_is_object(open)) {
    int rc = sg_store_iteration_end(r->store, json_integer_value(json_object_get(open, "id")),
                                    "interrupted", now, err);
    if (rc < 0)
      return rc;
  }
  int64_t ended = json_integer_value(json_object_get(sw, "next_iteration")) - 1;
  if (ended < 0)
    ended = 0;

  json_t *cands = NULL;
  int rc = sg_store_workflow_candidates_json(r->store, f->store_id, &cands, err);
  if (rc < 0)
    return rc;
  json_array_foreach(cands, i, v) {
    int64_t cid = json_integer_value(json_object_get(v, "candidate_id"));
    const char *src = json_string_value(json_object_get(v, "source"));
    sg_ctl_restored k;
    memset(&k, 0, sizeof k);
    k.iteration = (uint32_t)(json_integer_value(json_object_get(v, "iteration")) - 1);
    k.origin = strcmp(json_string_value(json_object_get(v, "kind")), "spec") == 0
                   ? SG_GEN_SPEC
                   : SG_GEN_MAIN;
    k.prefix_len = (uint64_t)json_integer_value(json_object_get(v, "prefix_bytes"));
    k.source = src;
    k.source_len = src ? strlen(src) : 0;
    k.validate_speedup = k.profile_speedup = NAN;
    sg_eval_result vres, pres;
    sg_eval_result_init(&vres);
    sg_eval_result_init(&pres);
    bool vfound = false, pfound = false;
    char *vtext = NULL, *ptext = NULL;
    rc = sg_store_eval_lookup(r->store, cid, SG_STORE_VALIDATE, &vres, NULL, &vfound, err);
    if (rc == 0)
      rc = sg_store_eval_lookup(r->store, cid, SG_STORE_PROFILE, &pres, NULL, &pfound, err);
    if (rc == 0 && vfound) {
      k.validated = true;
      vtext = feedback_text(&vres, SG_PHASE_VALIDATE);
      k.validate_status = vres.status;
      k.validate_speedup = vres.speedup;
      k.validate_message = vtext;
    }
    if (rc == 0 && pfound && pres.status == SG_EVAL_OK) {
      k.profiled = true;
      ptext = feedback_text(&pres, SG_PHASE_PROFILE);
      k.profile_speedup = pres.speedup;
      k.profile_text = ptext;
    }
    if (rc == 0 && k.source_len > 0)
      rc = sg_controller_restore_kernel(f->ctl, &k, err);
    if (rc == 0)
      idmap_set(&f->cand_store, sg_controller_history(f->ctl)->n, cid);
    free(vtext);
    free(ptext);
    sg_eval_result_free(&vres);
    sg_eval_result_free(&pres);
    if (rc < 0) {
      json_decref(cands);
      return rc;
    }
  }
  json_decref(cands);
  uint64_t best = best_kernel(sg_controller_history(f->ctl));
  if (best) {
    f->best_speedup = sg_history_get(sg_controller_history(f->ctl), best)->speedup;
    char *path = sg_asprintf("%s/best/%s.%s", r->dir, f->task->name, source_ext(f->task));
    if (access(path, R_OK) == 0)
      f->best_file = path;
    else
      free(path);
  }

  json_t *u = NULL;
  if ((rc = sg_store_workflow_usage_json(r->store, f->store_id, &u, err)) < 0)
    return rc;
  sg_usage tokens = {(uint64_t)json_integer_value(json_object_get(u, "prompt")),
                     (uint64_t)json_integer_value(json_object_get(u, "completion")),
                     (uint64_t)json_integer_value(json_object_get(u, "cached"))};
  int64_t last = json_integer_value(json_object_get(u, "last_us"));
  json_decref(u);
  int64_t started = json_integer_value(json_object_get(sw, "started_us"));
  return sg_controller_restore_progress(f->ctl, (uint32_t)ended,
                                        last > started ? last - started : 0, &tokens, err);
}

static int begin_or_resume(run *r, sg_err *err) {
  const sg_run_config *cfg = r->cfg;
  if (cfg->resume == NULL) {
    json_t *c = sg_run_config_to_json(cfg);
    json_object_set_new(c, "out", json_string(r->dir));
    r->t0_us = now_us();
    int rc = sg_store_run_begin(r->store, c, (int)r->ndevices, r->t0_us, &r->run_id, err);
    json_decref(c);
    if (rc < 0)
      return rc;
    for (size_t i = 0; i < r->nwf; i++) {
      wf *f = &r->wfs[i];
      sg_store_workflow sw = {f->task->name, cfg->iterations, cfg->time_budget,
                              (int64_t)cfg->token_budget, r->t0_us};
      if ((rc = sg_store_workflow_add(r->store, &sw, &f->store_id, err)) < 0)
        return rc;
    }
    return 0;
  }
  json_t *res = NULL;
  int rc = sg_store_resume_json(r->store, &res, err);
  if (rc < 0)
    return rc;
  const json_t *run = json_object_get(res, "run");
  const json_t *sws = json_object_get(res, "workflows");
  if (!json_is_object(run))
    rc = sg_err_set(err, SG_ESTATE, "%s: no run to resume", r->dir);
  else if (!json_is_null(json_object_get(run, "ended_us")))
    rc = sg_err_set(err, SG_ESTATE,
                    "%s: this run has finished; `specgen show %s` prints its summary",
                    r->dir, r->dir);
  else if (json_array_size(sws) != r->nwf)
    rc = sg_err_set(err, SG_ESTATE, "%s: the store holds %zu workflows, the "
                    "configuration %zu tasks", r->dir, json_array_size(sws), r->nwf);
  if (rc == 0) {
    r->run_id = json_integer_value(json_object_get(run, "id"));
    r->t0_us = json_integer_value(json_object_get(run, "started_us"));
  }
  for (size_t i = 0; rc == 0 && i < r->nwf; i++) {
    wf *f = &r->wfs[i];
    const json_t *sw = json_array_get(sws, i);
    f->store_id = json_integer_value(json_object_get(sw, "id"));
    const char *task = json_string_value(json_object_get(sw, "task"));
    if (task == NULL || strcmp(task, f->task->name) != 0) {
      rc = sg_err_set(err, SG_ESTATE, "%s: workflow %zu is task %s, the "
                      "configuration says %s", r->dir, i + 1, task ? task : "?",
                      f->task->name);
      break;
    }
    if (strcmp(json_string_value(json_object_get(sw, "state")), "running") != 0) {
      f->done = true;
      char *path = sg_asprintf("%s/best/%s.%s", r->dir, f->task->name, source_ext(f->task));
      if (access(path, R_OK) == 0)
        f->best_file = path;
      else
        free(path);
      continue;
    }
    rc = resume_workflow(r, f, sw, err);
    if (rc < 0)
      sg_err_prefix(err, "%s: resuming task %s", r->dir, f->task->name);
  }
  json_decref(res);
  return rc;
}

static int start_model(run *r, sg_err *err) {
  const sg_run_config *cfg = r->cfg;
  if (cfg->llm) {
    r->base_url = sg_strdup(cfg->llm);
    r->model = cfg->model;
    return sg_llm_provider_lookup(cfg->profile, &r->provider, err);
  }
  sg_llm_server_opts so;
  sg_llm_server_opts_init(&so);
  so.seed = cfg->seed;
  so.tokens_per_s = cfg->server_speed;
  if (cfg->server_fault) {
    int rc = sg_llm_fault_parse(cfg->server_fault, &so.fault, err);
    if (rc < 0)
      return sg_err_prefix(err, "--server-fault");
  }
  int rc = sg_llm_server_start(&so, &r->server, err);
  if (rc < 0)
    return sg_err_prefix(err, "starting the built-in test server");
  r->base_url = sg_asprintf("http://127.0.0.1:%d", sg_llm_server_port(r->server));
  r->model = "specgen-test";
  r->provider = sg_llm_provider_get("vllm");
  return 0;
}

static int start_pool(run *r, const char *program, sg_err *err) {
  /* Absolute: workers evaluate in scratch directories of their own. */
  char *abs = realpath(r->dir, NULL);
  if (abs == NULL)
    return sg_err_set(err, SG_EIO, "%s: %s", r->dir, strerror(errno));
  r->build_cache = sg_asprintf("%s/build-cache", abs);
  free(abs);
  int rc = sg_mkdir_p(r->build_cache, err);
  if (rc < 0)
    return rc;
  char *log = sg_asprintf("%s/workers.log", r->dir);
  sg_pool_opts po;
  sg_pool_opts_default(&po);
  po.program = program;
  po.devices = (const char *const *)r->devices;
  po.n_devices = r->ndevices;
  po.compile_workers = r->cfg->compile_workers;
  po.build_cache = r->build_cache;
  po.log_path = log;
  po.hang_grace_s = r->cfg->hang_grace;
  sg_pool_callbacks cb = {r, NULL, on_pool_result, on_pool_worker};
  rc = sg_pool_new(&r->loop, &po, &cb, &r->pool, err);
  free(log);
  return rc;
}

static json_t *summary_of(run *r, sg_err *err) {
  json_t *s = NULL;
  if (sg_store_summary_json(r->store, &s, err) < 0)
    return NULL;
  json_object_set_new(s, "dir", json_string(r->dir));
  json_object_set_new(s, "interrupted", json_boolean(r->interrupted));
  json_t *wfs = json_object_get(s, "workflows");
  for (size_t i = 0; i < json_array_size(wfs) && i < r->nwf; i++) {
    json_t *w = json_array_get(wfs, i);
    json_object_set_new(w, "best_file", r->wfs[i].best_file
                                            ? json_string(r->wfs[i].best_file)
                                            : json_null());
    sg_ctl_stats st;
    memset(&st, 0, sizeof st);
    if (r->wfs[i].ctl) {
      sg_controller_stats(r->wfs[i].ctl, &st);
      json_object_set_new(w, "criterion_accepts", json_integer(st.criterion_accepts));
    }
  }
  /* This process's share only (a resumed run counts from the resume). */
  double loop_s = (double)thread_cpu_ns() / 1e9;
  json_object_set_new(
      s, "overhead",
      json_pack("{s:f, s:I, s:I, s:f, s:f}", "controller_cpu_s",
                (double)r->controller_cpu_ns / 1e9, "controller_calls",
                (json_int_t)r->controller_calls, "generations", (json_int_t)r->generations,
                "controller_cpu_us_per_generation",
                r->generations ? (double)r->controller_cpu_ns / 1e3 / (double)r->generations
                               : 0.0,
                "loop_thread_cpu_s", loop_s));
  return s;
}

static void free_run(run *r) {
  for (size_t i = 0; i < r->nwf; i++) {
    wf *f = &r->wfs[i];
    while (f->gens) {
      rgen *g = f->gens;
      f->gens = g->next;
      rgen_free(g);
    }
    for (size_t k = 0; k < SG_SEARCH_MAX_MAINS; k++)
      if (f->have_prompt[k])
        sg_prompt_text_free(&f->prompts[k]);
    sg_controller_free(f->ctl);
    sg_search_free(f->search);
    sg_termination_free(f->term);
    sg_task_free(f->task);
    free(f->task_ref);
    free(f->gen_store.v);
    free(f->cand_store.v);
    free(f->best_file);
  }
  free(r->wfs);
  while (r->dq) {
    deferred *d = r->dq;
    r->dq = d->next;
    free(d->message);
    free(d->profile_text);
    free(d);
  }
  for (size_t i = 0; i < r->ndevices; i++)
    free(r->devices[i]);
  free(r->devices);
  for (size_t i = 0; i < r->cap_reqs; i++)
    free(r->reqs[i].last_infra);
  free(r->reqs);
  free(r->last_infra);
  sg_ctl_actions_free(&r->cact);
  sg_sched_actions_free(&r->sact);
  sg_scheduler_free(r->sched);
  sg_prompt_templates_free(r->templates);
  sg_store_close(r->store);
  sg_llm_server_stop(r->server);
  free(r->base_url);
  free(r->build_cache);
  free(r->end_think);
}

void sg_run_outcome_free(sg_run_outcome *o) {
  free(o->dir);
  free(o->no_generation);
  json_decref(o->summary);
  memset(o, 0, sizeof *o);
}

int sg_run_execute(const sg_run_config *cfg, const char *program,
                   const sg_run_observer *obs, sg_run_outcome *out, sg_err *err) {
  memset(out, 0, sizeof *out);
  int rc = sg_run_config_check(cfg, err);
  if (rc < 0)
    return rc;
  run rs;
  memset(&rs, 0, sizeof rs);
  run *r = &rs;
  r->cfg = cfg;
  r->obs = obs;
  r->err = err;
  sg_ctl_actions_init(&r->cact);
  sg_sched_actions_init(&r->sact);
  sg_search_registry_init(&r->sreg);
  sg_termination_registry_init(&r->treg);
  char *exe = program ? sg_strdup(program) : self_exe();
  char *token_warning = NULL;
  bool loop_ready = false;
  if (exe == NULL) {
    rc = sg_err_set(err, SG_EIO, "cannot find the specgen program for the workers");
    goto out;
  }
  if ((rc = sg_search_register(&r->sreg, &sg_search_exec_ops, err)) < 0)
    goto out;
  if ((rc = sg_run_devices_parse(cfg->devices, &r->devices, &r->ndevices, err)) < 0) {
    sg_err_prefix(err, "--devices");
    goto out;
  }
  r->cpu_devices = strncmp(r->devices[0], "cpu:", 4) == 0;
  r->dir = cfg->resume ? sg_strdup(cfg->resume)
                       : cfg->out ? sg_strdup(cfg->out) : default_out_dir();
  out->dir = sg_strdup(r->dir);
  if (cfg->resume && access(cfg->resume, F_OK) != 0) {
    rc = sg_err_set(err, SG_ENOENT, "--resume %s: no such directory", cfg->resume);
    goto out;
  }
  if ((rc = load_workflows(r, err)) < 0)
    goto out;
  if ((rc = sg_prompt_templates_load(cfg->prompts, &r->templates, err)) < 0) {
    sg_err_prefix(err, "--prompts");
    goto out;
  }
  sg_sched_opts so;
  sg_sched_opts_default(&so);
  so.devices = (int)r->ndevices;
  so.compile_slots = cfg->compile_workers;
  so.elastic = cfg->elastic;
  if ((rc = sg_scheduler_new(&so, &r->sched, err)) < 0)
    goto out;
  if ((rc = sg_store_open(r->dir, &r->store, err)) < 0)
    goto out;
  if ((rc = begin_or_resume(r, err)) < 0)
    goto out;
  if ((rc = start_model(r, err)) < 0)
    goto out;
  uv_loop_init(&r->loop);
  loop_ready = true;
  sg_llm_client_opts co;
  sg_llm_client_opts_init(&co);
  co.api_key_env = cfg->llm ? cfg->api_key_env : "";
  co.seed = cfg->seed;
  if ((rc = sg_llm_client_new(&r->loop, &co, &r->client, err)) < 0)
    goto out;
  if (cfg->spec && cfg->token_forks && r->provider && r->provider->token_ids) {
    /* Once, before the loop: the ids that end a reasoning, from the
     * server's own tokenizer. Without them forks go as chat continuations. */
    sg_err te;
    sg_err_clear(&te);
    if (sg_llm_tokenize(r->base_url, r->model, r->provider->think_close, NULL, 0, false,
                        &co, 10.0, &r->end_think, &r->n_end_think, &te) < 0 ||
        r->n_end_think == 0) {
      free(r->end_think);
      r->end_think = NULL;
      token_warning = sg_asprintf("token forks are off: the server's /tokenize "
                                  "failed (%s); forks continue the reasoning as chat",
                                  te.msg);
    }
  }
  if ((rc = start_pool(r, exe, err)) < 0)
    goto out;

  emit(r, "run_start",
       json_pack("{s:s, s:s, s:b, s:s, s:s, s:b, s:b, s:i, s:s}", "dir", r->dir, "llm",
                 cfg->llm ? cfg->llm : r->base_url, "built_in_model", cfg->llm == NULL,
                 "model", r->model,
                 "devices", cfg->devices, "spec", cfg->spec, "resumed", cfg->resume != NULL,
                 "tasks", (int)r->nwf, "search", cfg->search));
  if (token_warning)
    emit(r, "warning", json_pack("{s:s}", "message", token_warning));
  if (cfg->spec && r->provider && r->provider->cancel == SG_LLM_CANCEL_NONE) {
    char w[512];
    sg_gen_cancel_warning(r->provider->server, r->provider->name, w, sizeof w);
    emit(r, "warning", json_pack("{s:s}", "message", w));
  }
  uv_timer_init(&r->loop, &r->tick);
  r->tick.data = r;
  uv_signal_init(&r->loop, &r->sigint);
  uv_signal_init(&r->loop, &r->sigterm);
  r->sigint.data = r->sigterm.data = r;
  uv_signal_start(&r->sigint, on_signal, SIGINT);
  uv_signal_start(&r->sigterm, on_signal, SIGTERM);
  uint64_t tick_ms = (uint64_t)(cfg->tick * 1000);
  uv_timer_start(&r->tick, on_tick, tick_ms ? tick_ms : 1, tick_ms ? tick_ms : 1);
  r->last_progress_us = now_us();
  out->started = true;

  for (size_t i = 0; i < r->nwf && !r->failed; i++) {
    wf *f = &r->wfs[i];
    if (f->done)
      continue;
    emit(r, "workflow_start", json_pack("{s:s, s:s, s:i}", "task", f->task->name,
                                        "evaluator", f->task->evaluator, "iteration",
                                        (int)sg_controller_iteration(f->ctl) + 1));
    sg_err e;
    sg_err_clear(&e);
    r->depth++;
    sg_ctl_actions_clear(&r->cact);
    if (sg_controller_start(f->ctl, now_us(), &r->cact, &e) < 0)
      fail(r, &e);
    else
      apply_ctl(r, (uint32_t)i);
    r->depth--;
  }
  drain(r);
  maybe_finish(r);
  uv_run(&r->loop, UV_RUN_DEFAULT);

  if (!r->failed && !r->interrupted) {
    sg_err e;
    sg_err_clear(&e);
    if (sg_store_run_end(r->store, now_us(), &e) < 0)
      fail(r, &e);
  }
  {
    sg_err e;
    sg_err_clear(&e);
    json_t *s = summary_of(r, &e);
    if (s) {
      json_object_set_new(s, "generations", sg_gen_account_json(&r->acct));
      char *text = json_dumps(s, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
      char *path = sg_asprintf("%s/summary.json", r->dir);
      size_t len = strlen(text);
      text = sg_realloc(text, len + 2);
      text[len] = '\n';
      text[len + 1] = '\0';
      if (sg_file_write(path, text, len + 1, &e) < 0)
        fail(r, &e);
      free(path);
      free(text);
      out->summary = s;
      emit(r, "run_end", json_pack("{s:O, s:b}", "summary", s, "interrupted",
                                   r->interrupted));
    } else if (!r->failed) {
      fail(r, &e);
    }
  }
  out->interrupted = r->interrupted;
  for (size_t i = 0; i < r->nwf; i++)
    out->failed_workflows += r->wfs[i].failed;
  {
    char why[SG_GEN_CAUSE_BYTES + 64];
    if (!r->failed && sg_gen_account_nothing_generated(&r->acct, why, sizeof why))
      out->no_generation = sg_strdup(why);
  }
  rc = r->failed ? (err->code ? err->code : SG_EIO) : 0;
  if (rc > 0)
    rc = -rc;

out:
  if (r->pool || r->client) {
    sg_pool_close(r->pool, 0);
    sg_llm_client_destroy(r->client);
    r->pool = NULL;
    r->client = NULL;
  }
  if (loop_ready) {
    if (!uv_is_closing((uv_handle_t *)&r->tick) && r->tick.loop) {
      uv_close((uv_handle_t *)&r->tick, NULL);
      uv_close((uv_handle_t *)&r->sigint, NULL);
      uv_close((uv_handle_t *)&r->sigterm, NULL);
    }
    uv_run(&r->loop, UV_RUN_DEFAULT);
    uv_loop_close(&r->loop);
  }
  if (r->build_cache) {
    sg_err e;
    sg_rm_rf(r->build_cache, &e);
  }
  free_run(r);
  free(exe);
  free(token_warning);
  free(r->dir);
  return rc;
}

/* ---- reading a run ------------------------------------------------------------ */

/* Opens the store of an existing run (sg_store_open would create one). */
static int open_run(const char *dir, sg_store **s, sg_err *err) {
  char *db = sg_asprintf("%s/%s", dir, SG_STORE_FILE);
  bool there = access(db, R_OK) == 0;
  free(db);
  if (!there)
    return sg_err_set(err, SG_ENOENT, "%s: no run here (no %s)", dir, SG_STORE_FILE);
  return sg_store_open(dir, s, err);
}

int sg_run_load_config(const char *dir, sg_run_config *c, sg_err *err) {
  sg_store *s = NULL;
  int rc = open_run(dir, &s, err);
  if (rc < 0)
    return rc;
  json_t *res = NULL;
  rc = sg_store_resume_json(s, &res, err);
  if (rc == 0) {
    const json_t *cfg = json_object_get(json_object_get(res, "run"), "config");
    if (!json_is_object(cfg))
      rc = sg_err_set(err, SG_ESTATE, "%s: the store holds no run configuration", dir);
    else
      rc = sg_run_config_from_json(c, cfg, err);
  }
  json_decref(res);
  sg_store_close(s);
  return rc;
}

int sg_run_show(const char *dir, json_t **out, sg_err *err) {
  *out = NULL;
  sg_store *s = NULL;
  int rc = open_run(dir, &s, err);
  if (rc < 0)
    return rc;
  json_t *sum = NULL, *res = NULL;
  rc = sg_store_summary_json(s, &sum, err);
  if (rc == 0)
    rc = sg_store_resume_json(s, &res, err);
  if (rc == 0) {
    const json_t *run = json_object_get(res, "run");
    bool ended = !json_is_null(json_object_get(run, "ended_us"));
    json_object_set_new(sum, "dir", json_string(dir));
    json_object_set_new(sum, "state", json_string(ended ? "done" : "unfinished"));
    json_t *wfs = json_object_get(sum, "workflows");
    const json_t *sws = json_object_get(res, "workflows");
    for (size_t i = 0; i < json_array_size(wfs); i++) {
      json_t *w = json_array_get(wfs, i);
      const json_t *sw = json_array_get(sws, i);
      json_object_set(w, "state", json_object_get(sw, "state"));
      const char *task = json_string_value(json_object_get(w, "task"));
      json_t *best = json_null();
      static const char *const exts[] = {"c", "cu", "py"};
      for (size_t k = 0; task && k < 3; k++) {
        char *p = sg_asprintf("%s/best/%s.%s", dir, task, exts[k]);
        if (access(p, R_OK) == 0) {
          json_decref(best);
          best = json_string(p);
        }
        free(p);
      }
      json_object_set_new(w, "best_file", best);
    }
    *out = sum;
    sum = NULL;
  }
  json_decref(sum);
  json_decref(res);
  sg_store_close(s);
  return rc;
}
