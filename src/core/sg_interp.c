/* sg_interp.c: the action interpreter (sg_interp.h).
 *
 * Invariants: a controller is never re-entered while its action list is
 * being executed (depth counts the core calls and holds on the stack; a
 * made-up event waits in the queue until depth is 0); action lists are
 * copied before they are executed, because executing one may call the
 * scheduler again (a stage that cannot start is a failure of that stage)
 * and so reuse the list.
 */
#include "core/sg_interp.h"

#include "common/sg_alloc.h"
#include "common/sg_hash.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An event made up by the runtime, waiting to be fed to a controller. */
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

/* An evaluation in flight that later submissions of the same kernel join:
 * its leader's request and candidate, the kernel's normalized text (to
 * compare in full, not trust the hash alone) and the followers waiting for
 * its result. At most one per live scheduler request. */
typedef struct inflight {
  uint32_t w, iteration;
  sg_phase phase;
  uint64_t key;            /* sg_fnv1a64 of norm */
  char *norm;
  size_t norm_len;
  sg_req_id req;
  uint64_t leader;
  uint64_t *followers;
  size_t nfollowers, cap;
} inflight;

typedef struct iwf {
  sg_controller *ctl;      /* NULL: done before this process started */
  bool done;
  bool main_cancelled;     /* this iteration cancelled a running main */
} iwf;

struct sg_interp {
  sg_interp_opts o;
  const sg_interp_ops *ops;
  iwf *wf;
  deferred *dq, *dq_tail;
  sg_ctl_actions cact;
  sg_sched_actions sact;
  int depth;
  bool failed;
  int64_t cpu_ns;
  uint64_t calls;
  inflight *fl;            /* evaluations in flight (only with ops.joined) */
  size_t nfl, capfl;
  uint64_t joined;
};

int sg_interp_new(const sg_interp_opts *o, sg_interp **out, sg_err *err) {
  *out = NULL;
  if (o->ops == NULL || o->sched == NULL || o->err == NULL || o->ops->now_us == NULL)
    return sg_err_set(err, SG_EINVAL, "interpreter: ops, scheduler and error buffer "
                      "are required");
  sg_interp *it = sg_calloc(1, sizeof *it);
  it->o = *o;
  it->ops = o->ops;
  it->wf = sg_calloc(o->n_workflows ? o->n_workflows : 1, sizeof *it->wf);
  sg_ctl_actions_init(&it->cact);
  sg_sched_actions_init(&it->sact);
  *out = it;
  return 0;
}

static void deferred_free(deferred *d) {
  free(d->message);
  free(d->profile_text);
  free(d);
}

void sg_interp_free(sg_interp *it) {
  if (it == NULL)
    return;
  while (it->dq) {
    deferred *d = it->dq;
    it->dq = d->next;
    deferred_free(d);
  }
  for (size_t i = 0; i < it->nfl; i++) {
    free(it->fl[i].norm);
    free(it->fl[i].followers);
  }
  free(it->fl);
  sg_ctl_actions_free(&it->cact);
  sg_sched_actions_free(&it->sact);
  free(it->wf);
  free(it);
}

void sg_interp_set_controller(sg_interp *it, uint32_t w, sg_controller *ctl) {
  assert(w < it->o.n_workflows);
  it->wf[w].ctl = ctl;
}

bool sg_interp_done(const sg_interp *it, uint32_t w) {
  return it->wf[w].done || it->wf[w].ctl == NULL;
}

void sg_interp_fail(sg_interp *it, const sg_err *e) {
  if (it->failed)
    return;
  it->failed = true;
  if (e != it->o.err)
    *it->o.err = *e;
  if (it->ops->failed)
    it->ops->failed(it->o.data);
}

bool sg_interp_failed(const sg_interp *it) { return it->failed; }

/* An op's result: < 0 means its detail is in the error buffer already. */
static int op_result(sg_interp *it, int rc) {
  if (rc < 0 && !it->failed)
    sg_interp_fail(it, it->o.err);
  return it->failed ? (it->o.err->code < 0 ? it->o.err->code : SG_EIO) : 0;
}

static int64_t now(sg_interp *it) { return it->ops->now_us(it->o.data); }

/* ---- evaluations in flight --------------------------------------------------- */

static void fl_remove(sg_interp *it, size_t i) {
  free(it->fl[i].norm);
  free(it->fl[i].followers);
  it->fl[i] = it->fl[--it->nfl];
}

/* The in-flight evaluation of this kernel, or -1. */
static ptrdiff_t fl_find(const sg_interp *it, uint32_t w, uint32_t iteration, sg_phase phase,
                         uint64_t key, const char *norm, size_t len) {
  for (size_t i = 0; i < it->nfl; i++) {
    const inflight *e = &it->fl[i];
    if (e->key == key && e->w == w && e->iteration == iteration && e->phase == phase &&
        e->norm_len == len && memcmp(e->norm, norm, len) == 0)
      return (ptrdiff_t)i;
  }
  return -1;
}

/* Takes norm. */
static void fl_add(sg_interp *it, uint32_t w, const sg_ctl_action *a, uint64_t key,
                   char *norm, size_t len, sg_req_id req) {
  if (it->nfl == it->capfl) {
    it->capfl = it->capfl ? 2 * it->capfl : 16;
    it->fl = sg_realloc(it->fl, it->capfl * sizeof *it->fl);
  }
  it->fl[it->nfl++] = (inflight){.w = w, .iteration = a->iteration,
                                 .phase = a->u.submit.phase, .key = key, .norm = norm,
                                 .norm_len = len, .req = req,
                                 .leader = a->u.submit.candidate};
}

static void fl_follow(inflight *e, uint64_t cand) {
  if (e->nfollowers == e->cap) {
    e->cap = e->cap ? 2 * e->cap : 4;
    e->followers = sg_realloc(e->followers, e->cap * sizeof *e->followers);
  }
  e->followers[e->nfollowers++] = cand;
}

/* The request was withdrawn: its followers, of the same ended iteration,
 * are dropped with it. */
static void fl_aborted(sg_interp *it, sg_req_id req) {
  for (size_t i = 0; i < it->nfl; i++)
    if (it->fl[i].req == req) {
      fl_remove(it, i);
      return;
    }
}

/* ---- the trace ---------------------------------------------------------------- */

static void trace(sg_interp *it, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void trace(sg_interp *it, const char *fmt, ...) {
  if (it->o.trace == NULL)
    return;
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  it->o.trace(it->o.trace_data, line);
}

static void trace_ctl(sg_interp *it, uint32_t w, const sg_ctl_action *a) {
  if (it->o.trace == NULL)
    return;
  const char *what = sg_ctl_action_type_name(a->type);
  switch (a->type) {
  case SG_CACT_START_GEN:
    trace(it, "w%" PRIu32 " it%" PRIu32 " %s %s", w, a->iteration, what,
          sg_gen_kind_name(a->u.start.kind));
    break;
  case SG_CACT_SUBMIT_EVAL:
    trace(it, "w%" PRIu32 " it%" PRIu32 " %s %s", w, a->iteration, what,
          sg_phase_name(a->u.submit.phase));
    break;
  case SG_CACT_END_ITERATION:
    trace(it, "w%" PRIu32 " it%" PRIu32 " %s %s", w, a->iteration, what,
          sg_ctl_reason_name(a->u.end.reason));
    break;
  case SG_CACT_WORKFLOW_DONE:
    trace(it, "w%" PRIu32 " it%" PRIu32 " %s %s", w, a->iteration, what,
          sg_ctl_reason_name(a->u.done.reason));
    break;
  case SG_CACT_DECISION:
    trace(it, "w%" PRIu32 " it%" PRIu32 " %s %s", w, a->iteration, what,
          sg_ctl_reason_name(a->u.decision.reason));
    break;
  default:
    trace(it, "w%" PRIu32 " it%" PRIu32 " %s", w, a->iteration, what);
    break;
  }
}

static const char *const sact_names[] = {"start_compile", "start_device", "abort",
                                         "fail", "device_dead", "resplit"};

/* ---- the scheduler's actions ------------------------------------------------ */

/* Action lists are copied before they are executed (see the top); most
 * hold a few actions, so the copy lives on the stack up to this many (a
 * call per event: a malloc and a free each was a few percent of a large
 * simulated campaign), and on the heap beyond. */
#define LOCAL_ACTIONS 8

static int apply_sched(sg_interp *it) {
  size_t n = it->sact.n;
  if (n == 0)
    return 0;
  sg_sched_action local[LOCAL_ACTIONS];
  sg_sched_action *acts = n <= LOCAL_ACTIONS ? local : sg_malloc(n * sizeof *acts);
  memcpy(acts, it->sact.v, n * sizeof *acts);
  const sg_interp_ops *ops = it->ops;
  void *d = it->o.data;
  for (size_t i = 0; i < n && !it->failed; i++) {
    const sg_sched_action *a = &acts[i];
    if (a->type == SG_SACT_RESPLIT)
      trace(it, "sched %s w%" PRIu32 " it%" PRIu32 " %dv/%dp", sact_names[a->type],
            a->workflow, a->iteration, a->validate_devices, a->profile_devices);
    else
      trace(it, "sched %s %s", sact_names[a->type],
            a->type == SG_SACT_START_DEVICE ? sg_phase_name(a->phase) : "");
    int rc = 0;
    switch (a->type) {
    case SG_SACT_START_COMPILE:
      rc = ops->compile_start(d, a);
      break;
    case SG_SACT_START_DEVICE:
      rc = ops->device_start(d, a);
      break;
    case SG_SACT_ABORT:
      fl_aborted(it, a->req);
      rc = ops->abort(d, a);
      break;
    case SG_SACT_FAIL:
      rc = ops->give_up(d, a);
      break;
    case SG_SACT_DEVICE_DEAD:
      rc = ops->device_dead(d, a);
      break;
    case SG_SACT_RESPLIT:
      rc = ops->resplit(d, a);
      break;
    }
    op_result(it, rc);
  }
  if (acts != local)
    free(acts);
  return op_result(it, 0);
}

/* Runs a scheduler call whose actions land in it->sact, then executes them;
 * a failed call is fatal. */
#define SCHED(it, call)                                                        \
  do {                                                                         \
    sg_err e_;                                                                 \
    sg_err_clear(&e_);                                                         \
    sg_sched_actions_clear(&(it)->sact);                                       \
    sg_err *err_ = &e_;                                                        \
    if ((call) < 0)                                                            \
      sg_interp_fail((it), &e_);                                               \
    else                                                                       \
      apply_sched(it);                                                         \
  } while (0)

int sg_interp_compiled(sg_interp *it, sg_req_id id, bool ok, sg_err *err) {
  sg_sched_actions_clear(&it->sact);
  int rc = sg_scheduler_compiled(it->o.sched, id, ok, now(it), &it->sact, err);
  if (rc < 0)
    return rc;
  apply_sched(it);
  return 0;
}

int sg_interp_device_done(sg_interp *it, sg_req_id id, bool infra_failure, sg_err *err) {
  sg_sched_actions_clear(&it->sact);
  int rc = sg_scheduler_device_done(it->o.sched, id, infra_failure, now(it), &it->sact, err);
  if (rc < 0)
    return rc;
  apply_sched(it);
  return 0;
}

/* ---- the controller's actions ------------------------------------------------ */

static void submit(sg_interp *it, uint32_t w, const sg_ctl_action *a) {
  char *norm = NULL;
  size_t len = 0;
  uint64_t key = 0;
  if (it->ops->joined != NULL && a->u.submit.source != NULL) {
    norm = sg_malloc(a->u.submit.source_len + 1);
    len = sg_source_normalize(a->u.submit.source, a->u.submit.source_len, norm);
    key = sg_fnv1a64(norm, len);
    ptrdiff_t i = fl_find(it, w, a->iteration, a->u.submit.phase, key, norm, len);
    if (i >= 0) {
      free(norm);
      trace(it, "w%" PRIu32 " it%" PRIu32 " joined the evaluation in flight", w,
            a->iteration);
      if (op_result(it, it->ops->joined(it->o.data, w, a, it->fl[i].req,
                                        it->fl[i].leader)) == 0) {
        fl_follow(&it->fl[i], a->u.submit.candidate);
        it->joined++;
      }
      return;
    }
  }
  bool answered = false, needs_compile = a->u.submit.phase == SG_PHASE_VALIDATE;
  if (op_result(it, it->ops->submit(it->o.data, w, a, &answered, &needs_compile)) < 0 ||
      answered) {
    if (answered)
      trace(it, "w%" PRIu32 " it%" PRIu32 " answered by the runtime", w, a->iteration);
    free(norm);
    return;
  }
  sg_sched_request sr = {.workflow = w,
                         .iteration = a->iteration,
                         .phase = a->u.submit.phase,
                         .candidate = a->u.submit.candidate,
                         .needs_compile = needs_compile};
  sg_req_id id = 0;
  sg_err e;
  sg_err_clear(&e);
  sg_sched_actions_clear(&it->sact);
  if (sg_scheduler_submit(it->o.sched, &sr, now(it), &id, &it->sact, &e) < 0) {
    free(norm);
    op_result(it, it->ops->refused(it->o.data, w, a, e.msg));
    return;
  }
  if (op_result(it, it->ops->submitted(it->o.data, w, a, id)) < 0) {
    free(norm);
    return;
  }
  /* In flight from now: before its stages start, since a stage that
   * cannot start ends it at once. */
  if (norm != NULL)
    fl_add(it, w, a, key, norm, len, id);
  apply_sched(it);
}

static void apply_ctl(sg_interp *it, uint32_t w) {
  size_t n = it->cact.n;
  if (n == 0)
    return;
  sg_ctl_action local[LOCAL_ACTIONS];
  sg_ctl_action *acts = n <= LOCAL_ACTIONS ? local : sg_malloc(n * sizeof *acts);
  memcpy(acts, it->cact.v, n * sizeof *acts);
  const sg_interp_ops *ops = it->ops;
  void *d = it->o.data;
  iwf *f = &it->wf[w];
  for (size_t i = 0; i < n && !it->failed; i++) {
    const sg_ctl_action *a = &acts[i];
    trace_ctl(it, w, a);
    switch (a->type) {
    case SG_CACT_START_GEN:
      op_result(it, ops->gen_start(d, w, a));
      break;
    case SG_CACT_CANCEL_GEN: {
      bool was_main = false;
      op_result(it, ops->gen_cancel(d, w, a->u.cancel.gen, &was_main));
      f->main_cancelled |= was_main && !a->u.cancel.ahead; /* not its iteration's */
      break;
    }
    case SG_CACT_SUBMIT_EVAL:
      submit(it, w, a);
      break;
    case SG_CACT_END_ITERATION: {
      bool mc = f->main_cancelled;
      f->main_cancelled = false;
      if (op_result(it, ops->iteration_end(d, w, a, mc)) == 0)
        SCHED(it, sg_scheduler_iteration_boundary(it->o.sched, w, a->iteration + 1,
                                                  now(it), &it->sact, err_));
      break;
    }
    case SG_CACT_WORKFLOW_DONE:
      f->done = true;
      if (op_result(it, ops->workflow_done(d, w, a)) == 0)
        SCHED(it, sg_scheduler_workflow_done(it->o.sched, w, now(it), &it->sact, err_));
      break;
    case SG_CACT_DECISION:
      op_result(it, ops->decision(d, w, a));
      break;
    default:
      break;
    }
  }
  if (acts != local)
    free(acts);
}

/* ---- feeding the controllers -------------------------------------------------- */

static const char *const cev_names[] = {"gen_started", "gen_chunk", "gen_finished",
                                        "gen_failed",  "eval_done", "tick"};
_Static_assert(sizeof cev_names / sizeof cev_names[0] == SG_CEV__COUNT,
               "a name for every event type");

int sg_interp_event(sg_interp *it, uint32_t w, const sg_ctl_event *ev) {
  assert(w < it->o.n_workflows);
  iwf *f = &it->wf[w];
  if (f->done || f->ctl == NULL || it->failed)
    return op_result(it, 0);
  if (ev->type != SG_CEV_GEN_CHUNK && ev->type != SG_CEV_TICK &&
      (size_t)ev->type < sizeof cev_names / sizeof cev_names[0])
    trace(it, "w%" PRIu32 " event %s%s", w, cev_names[ev->type],
          ev->type == SG_CEV_EVAL_DONE
              ? (ev->u.eval.phase == SG_PHASE_VALIDATE ? " validate" : " profile")
              : "");
  sg_sched_capacity cap;
  sg_scheduler_capacity(it->o.sched, &cap);
  sg_controller_set_capacity(f->ctl, &cap);
  sg_err e;
  sg_err_clear(&e);
  it->depth++;
  sg_ctl_actions_clear(&it->cact);
  int64_t c0 = it->ops->cpu_ns ? it->ops->cpu_ns(it->o.data) : 0;
  int rc = sg_controller_event(f->ctl, ev, &it->cact, &e);
  if (it->ops->cpu_ns)
    it->cpu_ns += it->ops->cpu_ns(it->o.data) - c0;
  it->calls++;
  if (rc < 0) {
    char who[128];
    if (it->ops->describe) {
      it->ops->describe(it->o.data, w, who, sizeof who);
      sg_err_prefix(&e, "%s", who);
    } else
      sg_err_prefix(&e, "workflow %" PRIu32, w);
    sg_interp_fail(it, &e);
  } else {
    apply_ctl(it, w);
  }
  it->depth--;
  return op_result(it, 0);
}

int sg_interp_start(sg_interp *it, uint32_t w) {
  assert(w < it->o.n_workflows);
  iwf *f = &it->wf[w];
  if (f->done || f->ctl == NULL || it->failed)
    return op_result(it, 0);
  trace(it, "w%" PRIu32 " start", w);
  sg_err e;
  sg_err_clear(&e);
  it->depth++;
  sg_ctl_actions_clear(&it->cact);
  if (sg_controller_start(f->ctl, now(it), &it->cact, &e) < 0)
    sg_interp_fail(it, &e);
  else
    apply_ctl(it, w);
  it->depth--;
  return op_result(it, 0);
}

/* ---- deferred events ------------------------------------------------------------ */

static void push(sg_interp *it, deferred *d) {
  if (it->dq_tail)
    it->dq_tail->next = d;
  else
    it->dq = d;
  it->dq_tail = d;
}

static void push_eval(sg_interp *it, uint32_t w, uint64_t cand, sg_phase phase,
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
  push(it, d);
}

void sg_interp_eval_done(sg_interp *it, uint32_t w, uint64_t cand, sg_phase phase,
                         sg_eval_status st, double speedup, const char *message,
                         const char *profile_text) {
  push_eval(it, w, cand, phase, st, speedup, message, profile_text);
  /* A leader's result is its followers' too, in the order they joined. */
  for (size_t i = 0; i < it->nfl; i++) {
    inflight *e = &it->fl[i];
    if (e->w != w || e->leader != cand || e->phase != phase)
      continue;
    for (size_t k = 0; k < e->nfollowers; k++)
      push_eval(it, w, e->followers[k], phase, st, speedup, message, profile_text);
    fl_remove(it, i);
    break;
  }
}

void sg_interp_gen_failed(sg_interp *it, uint32_t w, uint64_t gen, int error,
                          const char *message) {
  assert(gen > 0);
  deferred *d = sg_calloc(1, sizeof *d);
  d->w = w;
  d->gen = gen;
  d->gen_error = error;
  d->message = message ? sg_strdup(message) : NULL;
  push(it, d);
}

int sg_interp_drain(sg_interp *it) {
  if (it->depth > 0)
    return op_result(it, 0);
  while (it->dq && !it->failed) {
    deferred *d = it->dq;
    it->dq = d->next;
    if (it->dq == NULL)
      it->dq_tail = NULL;
    sg_ctl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.now_us = now(it);
    if (d->gen > 0) {
      ev.type = SG_CEV_GEN_FAILED;
      ev.u.failed.gen = d->gen;
      ev.u.failed.error = d->gen_error;
      ev.u.failed.message = d->message;
    } else {
      ev.type = SG_CEV_EVAL_DONE;
      ev.u.eval.candidate = d->cand;
      ev.u.eval.phase = d->phase;
      ev.u.eval.status = d->status;
      ev.u.eval.speedup = d->speedup;
      ev.u.eval.message = d->message;
      ev.u.eval.profile_text = d->profile_text;
    }
    sg_interp_event(it, d->w, &ev);
    deferred_free(d);
  }
  return op_result(it, 0);
}

void sg_interp_hold(sg_interp *it) { it->depth++; }

int sg_interp_release(sg_interp *it) {
  assert(it->depth > 0);
  it->depth--;
  return sg_interp_drain(it);
}

void sg_interp_stats_get(const sg_interp *it, sg_interp_stats *st) {
  st->controller_cpu_ns = it->cpu_ns;
  st->controller_calls = it->calls;
  st->joined = it->joined;
}
