/* sg_run_eval.c: the run loop's evaluations (sg_run_priv.h): a submitted
 * candidate is recorded, queued in the store and handed to the scheduler; the
 * scheduler's actions become compile and device stages on the worker pool;
 * pool results become scheduler calls and, once a stage is final, controller
 * events (deferred: never fed from inside an action list). A candidate
 * evaluated before in this run is answered from the store.
 */
#include "run/sg_run_priv.h"

#include "common/sg_file.h"
#include "run/sg_feedback.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

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

/* ---- evaluations ------------------------------------------------------------- */

static sg_store_phase store_phase(sg_phase p) {
  return p == SG_PHASE_VALIDATE ? SG_STORE_VALIDATE : SG_STORE_PROFILE;
}

/* Feedback texts for the controller (and so the prompts). */
void sg_run_feedback_of(const sg_eval_result *res, sg_phase phase, char **message,
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
  sg_run_feedback_of(res, phase, &msg, &prof);
  sg_interp_eval_done(r->it, w, cand, phase, res->status, res->speedup, msg, prof);
  free(msg);
  free(prof);
  sg_run_emit(r, "evaluation",
       json_pack("{s:s, s:I, s:s, s:s, s:o}", "task", f->task->name, "candidate",
                 (json_int_t)cand, "phase", sg_phase_name(phase), "status",
                 sg_eval_status_name(res->status), "speedup", num_or_null(res->speedup)));
}

/* The candidate's store id, recorded at its first submission (*is_new: the
 * workflow held no copy of its kernel before). */
static int64_t record_candidate(run *r, uint32_t w, const sg_ctl_action *a, bool *is_new) {
  wf *f = wf_of(r, w);
  uint64_t cand = a->u.submit.candidate;
  int64_t cid = idmap_get(&f->cand_store, cand);
  *is_new = false;
  if (cid != 0)
    return cid;
  const sg_kernel *k = sg_history_get(sg_controller_history(f->ctl), cand);
  assert(k != NULL);
  STORE(r, sg_store_candidate_add(r->store, idmap_get(&f->gen_store, k->gen),
                                  a->u.submit.source, now_us(), &cid, is_new, err));
  if (r->failed)
    return 0;
  idmap_set(&f->cand_store, cand, cid);
  /* A copy of an earlier kernel is still a kernel of this iteration. */
  f->iter_kernels++;
  sg_run_emit(r, "candidate", json_pack("{s:s, s:I, s:s, s:b}", "task", f->task->name,
                                        "candidate", (json_int_t)cand, "origin",
                                        sg_gen_kind_name(k->origin), "duplicate", !*is_new));
  return cid;
}

/* An evaluation of candidate cand not run because the same kernel's was in
 * flight or stored: a decision row (the store's count, and the kernel an
 * iteration saw) and an event (its result comes as the other's). */
static void record_dedup(run *r, uint32_t w, uint64_t cand, int64_t cid, sg_phase phase,
                         const char *how, int64_t eval_id) {
  wf *f = wf_of(r, w);
  sg_run_record_decision(r, f, "deduplicated",
                         json_pack("{s:I, s:s, s:s, s:I}", "candidate_id", (json_int_t)cid,
                                   "phase", sg_phase_name(phase), "joined", how,
                                   "evaluation_id", (json_int_t)eval_id));
  sg_run_emit(r, "deduplicated",
              json_pack("{s:s, s:I, s:s, s:s, s:I}", "task", f->task->name, "candidate",
                        (json_int_t)cand, "phase", sg_phase_name(phase), "joined", how,
                        "evaluation_id", (json_int_t)eval_id));
}

/* A replay with recorded evaluations (replay-evals): a kernel the recorded
 * run evaluated goes through the scheduler as any other (compile slot,
 * device), but no worker runs it: its device is held for the recorded
 * time (divided by replay-speed) and the recorded result comes back. */
typedef struct rp_eval {
  uv_timer_t t;
  run *r;
  uint64_t ticket;
  sg_eval_result res;
  struct rp_eval *next;
} rp_eval;

static void on_pool_result(sg_pool *p, void *data, uint64_t ticket, const sg_eval_result *res);

static void rp_closed(uv_handle_t *h) {
  rp_eval *e = h->data;
  sg_eval_result_free(&e->res);
  free(e);
}

static void rp_unlink(run *r, rp_eval *e) {
  for (rp_eval **p = &r->rp_evals; *p; p = &(*p)->next)
    if (*p == e) {
      *p = e->next;
      break;
    }
  uv_timer_stop(&e->t);
  uv_close((uv_handle_t *)&e->t, rp_closed);
}

static void rp_fire(uv_timer_t *t) {
  rp_eval *e = t->data;
  run *r = e->r;
  sg_eval_result res = e->res; /* borrowed until the close callback */
  uint64_t ticket = e->ticket;
  rp_unlink(r, e);
  on_pool_result(NULL, r, ticket, &res);
}

/* The recorded result for this kernel, if the recorded run has one: kept in
 * r->submit_rec for op_submitted. */
static void rp_lookup(run *r, wf *f, const char *source, sg_phase phase) {
  sg_eval_result *rec = sg_malloc(sizeof *rec);
  sg_eval_result_init(rec);
  bool found = false;
  int64_t us = 0;
  STORE(r, sg_store_eval_lookup_source(r->replay_store, f->task->name, source,
                                       store_phase(phase), rec, &us, NULL, &found, err));
  if (!found) {
    sg_run_replay_drop(&rec);
    return;
  }
  r->submit_rec = rec;
  r->submit_rec_us = us;
}

/* Instead of a worker: the stage's recorded outcome on a timer. */
static void rp_send(run *r, rreq *q, uint64_t ticket, bool compile) {
  rp_eval *e = sg_calloc(1, sizeof *e);
  e->r = r;
  e->ticket = ticket;
  sg_eval_result_init(&e->res);
  double speed = r->cfg->replay_speed;
  int64_t us = compile ? (int64_t)(q->rec->compile_s * 1e6) : q->rec_device_us;
  if (compile) {
    /* The compile stage passes unless the kernel did not compile. */
    e->res.status = q->rec->status == SG_EVAL_COMPILE_ERROR ? SG_EVAL_COMPILE_ERROR
                                                             : SG_EVAL_OK;
    e->res.message = q->rec->message ? sg_strdup(q->rec->message) : NULL;
    e->res.compile_s = q->rec->compile_s;
    if (e->res.status == SG_EVAL_COMPILE_ERROR) {
      sg_eval_result_free(&e->res);
      e->res = *q->rec;
      sg_eval_result_init(q->rec); /* moved */
    }
  } else {
    e->res = *q->rec;
    sg_eval_result_init(q->rec);
  }
  uv_timer_init(&r->loop, &e->t);
  e->t.data = e;
  e->next = r->rp_evals;
  r->rp_evals = e;
  uv_timer_start(&e->t, rp_fire, speed > 0 ? (uint64_t)((double)us / 1e3 / speed) : 0, 0);
  if (!compile || e->res.status == SG_EVAL_COMPILE_ERROR) /* the outcome's stage */
    r->replayed_evals++;
}

/* A withdrawn request's recorded outcome never comes. */
static bool rp_abort(run *r, uint64_t ticket) {
  for (rp_eval *e = r->rp_evals; e; e = e->next)
    if (e->ticket == ticket) {
      rp_unlink(r, e);
      return true;
    }
  return false;
}

void sg_run_replay_drop(sg_eval_result **rec) {
  if (*rec) {
    sg_eval_result_free(*rec);
    free(*rec);
    *rec = NULL;
  }
}

void sg_run_replay_close(run *r) {
  while (r->rp_evals)
    rp_unlink(r, r->rp_evals);
}

/* SUBMIT_EVAL, before the scheduler: the candidate is recorded (once), a
 * result known from before answers it, else its evaluation is queued in the
 * store (r->submit_eval_id until the scheduler has answered). */
static int op_submit(void *data, uint32_t w, const sg_ctl_action *a, bool *answered,
                     bool *needs_compile) {
  run *r = data;
  uint64_t cand = a->u.submit.candidate;
  sg_phase phase = a->u.submit.phase;
  *needs_compile = phase == SG_PHASE_VALIDATE;
  *answered = true; /* until it is queued */
  bool is_new = false;
  int64_t cid = record_candidate(r, w, a, &is_new);
  if (r->failed)
    return 0;
  if (!is_new) {
    /* Evaluated before in this run (or before a resume): never again. */
    sg_eval_result prev;
    sg_eval_result_init(&prev);
    bool found = false;
    int64_t prev_id = 0;
    STORE(r, sg_store_eval_lookup(r->store, cid, store_phase(phase), &prev, &prev_id,
                                  &found, err));
    if (found) {
      record_dedup(r, w, cand, cid, phase, "stored", prev_id);
      eval_event_of(r, w, cand, phase, &prev);
      sg_eval_result_free(&prev);
      return 0;
    }
    sg_eval_result_free(&prev);
  }
  if (r->replay_store)
    rp_lookup(r, wf_of(r, w), a->u.submit.source, phase);
  r->submit_eval_id = 0;
  STORE(r, sg_store_eval_queue(r->store, cid, store_phase(phase), now_us(),
                               &r->submit_eval_id, err));
  *answered = r->failed;
  return 0;
}

/* The same kernel's evaluation is in flight (request leader): the
 * interpreter delivers its result here too; only the record is ours. */
static int op_joined(void *data, uint32_t w, const sg_ctl_action *a, sg_req_id leader,
                     uint64_t leader_cand) {
  run *r = data;
  (void)leader_cand;
  bool is_new = false;
  int64_t cid = record_candidate(r, w, a, &is_new);
  if (r->failed)
    return 0;
  assert(!is_new); /* the leader recorded the same kernel */
  const rreq *q = req_get(r, leader, false);
  record_dedup(r, w, a->u.submit.candidate, cid, a->u.submit.phase, "in_flight",
               q && q->live ? q->eval_id : 0);
  return 0;
}

/* The scheduler refused the submission: the evaluation failed. */
static int op_refused(void *data, uint32_t w, const sg_ctl_action *a, const char *why) {
  run *r = data;
  sg_run_replay_drop(&r->submit_rec); /* it will not be submitted */
  sg_eval_result res;
  sg_eval_result_init(&res);
  res.status = SG_EVAL_INFRA_ERROR;
  res.message = sg_asprintf("specgen could not evaluate: %s", why);
  STORE(r, sg_store_eval_finish(r->store, r->submit_eval_id, &res, now_us(), err));
  eval_event_of(r, w, a->u.submit.candidate, a->u.submit.phase, &res);
  sg_eval_result_free(&res);
  return 0;
}

static int op_submitted(void *data, uint32_t w, const sg_ctl_action *a, sg_req_id id) {
  run *r = data;
  rreq *q = req_get(r, id, true);
  memset(q, 0, sizeof *q);
  q->live = true;
  q->w = w;
  q->cand = a->u.submit.candidate;
  q->phase = a->u.submit.phase;
  q->eval_id = r->submit_eval_id;
  q->device = -1;
  q->rec = r->submit_rec; /* replay-evals: moved */
  q->rec_device_us = r->submit_rec_us;
  r->submit_rec = NULL;
  wf_of(r, w)->in_flight++;
  return 0;
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
            /* An evaluator without hardware counters profiles by a second,
             * independent timing run (docs/usage.md). */
            : (q->phase == SG_PHASE_PROFILE && f->ev->profiling == SG_PROFILE_COUNTERS)
                ? SG_POOL_PROFILE
                : SG_POOL_VALIDATE;
  pr.slot = device;
  pr.task = f->task_ref;
  pr.task_files = f->task_files;
  pr.source = kernel_source(r, q, &pr.source_len);
  pr.seed = r->cfg->seed + id;
  pr.trials = r->cfg->trials;
  pr.runs = r->cfg->runs;
  pr.warmups = r->cfg->warmups;
  pr.eval_timeout = r->cfg->knobs.eval_timeout;
  if (q->rec) {
    rp_send(r, q, pr.ticket, compile);
    return 0;
  }
  return sg_pool_submit(r->pool, &pr, err);
}

/* The device time a stage held: for a remote slot only from when a worker
 * host took it (time waiting in Redis for a host, or for one that is gone,
 * is no device's busy time), none when no host did. */
static void device_interval(run *r, rreq *q) {
  if (q->device < 0)
    return;
  int64_t start = q->device_start_us;
  bool remote = sg_pool_device_remote(r->devices[q->device]);
  if (remote)
    start = q->remote_start_us;
  int64_t id = 0;
  int64_t end = now_us();
  if (!remote || start > 0)
    STORE(r, sg_store_device_interval_add(r->store, r->devices[q->device],
                                          store_phase(q->phase), q->eval_id, start,
                                          end > start ? end : start, &id, err));
  q->device = -1;
  q->remote_start_us = 0;
}

void sg_run_eval_close_intervals(run *r) {
  for (size_t id = 0; id < r->cap_reqs; id++)
    if (r->reqs[id].live)
      device_interval(r, &r->reqs[id]);
}

static void req_end(run *r, rreq *q) {
  if (!q->live)
    return;
  q->live = false;
  sg_run_replay_drop(&q->rec);
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
  sg_run_emit(r, "warning", json_pack("{s:s, s:s}", "task", wf_of(r, q->w)->task->name,
                               "message", why->msg));
  sg_err e;
  sg_err_clear(&e);
  if (compile) {
    if (sg_interp_compiled(r->it, id, false, &e) == 0) {
      char *msg = sg_asprintf("specgen could not evaluate: %s", why->msg);
      finish_own(r, q, SG_EVAL_INFRA_ERROR, msg);
      free(msg);
      req_end(r, q);
    }
  } else {
    device_interval(r, q);
    sg_interp_device_done(r->it, id, true, &e);
  }
}

/* ---- the scheduler's actions (the interpreter's ops) ------------------------- */

static int op_compile_start(void *data, const sg_sched_action *a) {
  run *r = data;
  rreq *q = req_get(r, a->req, false);
  assert(q && q->live);
  sg_err e;
  sg_err_clear(&e);
  if (pool_send(r, a->req, q, true, -1, &e) < 0)
    pool_refused(r, a->req, q, true, &e);
  return 0;
}

static int op_device_start(void *data, const sg_sched_action *a) {
  run *r = data;
  rreq *q = req_get(r, a->req, false);
  assert(q && q->live && a->device >= 0);
  q->device = a->device;
  q->device_start_us = now_us();
  q->remote_start_us = 0;
  STORE(r, sg_store_eval_start(r->store, q->eval_id, r->devices[a->device],
                               q->device_start_us, err));
  sg_err e;
  sg_err_clear(&e);
  if (pool_send(r, a->req, q, false, a->device, &e) < 0)
    pool_refused(r, a->req, q, false, &e);
  return 0;
}

static int op_abort(void *data, const sg_sched_action *a) {
  run *r = data;
  rreq *q = req_get(r, a->req, false);
  if (q == NULL || !q->live)
    return 0;
  if (!rp_abort(r, ticket_of(a->req, a->was_compiling)))
    sg_pool_abort(r->pool, ticket_of(a->req, a->was_compiling));
  device_interval(r, q);
  finish_own(r, q, SG_EVAL_ABORTED, "withdrawn: its iteration ended first");
  req_end(r, q);
  return 0;
}

static int op_give_up(void *data, const sg_sched_action *a) {
  run *r = data;
  rreq *q = req_get(r, a->req, false);
  if (q == NULL || !q->live)
    return 0;
  device_interval(r, q);
  char *msg = sg_asprintf("specgen could not evaluate: the request failed on every "
                          "device tried; the last failure: %s",
                          q->last_infra ? q->last_infra : "none reported");
  finish_own(r, q, SG_EVAL_INFRA_ERROR, msg);
  free(msg);
  req_end(r, q);
  return 0;
}

static int op_device_dead(void *data, const sg_sched_action *a) {
  run *r = data;
  sg_run_emit(r, "warning", json_pack("{s:s, s:s}", "device", r->devices[a->device],
                                      "message", "device taken out of service after "
                                                 "repeated infrastructure failures"));
  /* for good: the pool restarts its worker no more (a remote slot's proxy
   * ends), so nothing is started, logged or waited for on it again */
  sg_pool_retire(r->pool, a->device, "repeated infrastructure failures");
  if (++r->dead_devices >= (int)r->ndevices) {
    /* Nothing can be evaluated any more: stop rather than generate for
     * nothing. The run stays resumable once the devices are fixed. */
    sg_err e2;
    sg_err_set(&e2, SG_EIO, "every device is out of service after repeated "
               "infrastructure failures; the last: %s",
               r->last_infra ? r->last_infra : "none reported");
    sg_run_fail(r, &e2);
  }
  return 0;
}

/* The re-split is the pool's; it is kept under the workflow whose event
 * caused it (the scheduler names that one, live at that moment). */
static int op_resplit(void *data, const sg_sched_action *a) {
  run *r = data;
  if (a->workflow < r->nwf && r->wfs[a->workflow].store_id)
    sg_run_record_decision(r, &r->wfs[a->workflow], "reallocate",
                           json_pack("{s:i, s:i, s:i}", "validate_devices",
                                     a->validate_devices, "profile_devices",
                                     a->profile_devices, "iteration",
                                     (int)a->iteration + 1));
  return 0;
}

void sg_run_eval_ops(sg_interp_ops *ops) {
  ops->submit = op_submit;
  ops->joined = op_joined;
  ops->submitted = op_submitted;
  ops->refused = op_refused;
  ops->compile_start = op_compile_start;
  ops->device_start = op_device_start;
  ops->abort = op_abort;
  ops->give_up = op_give_up;
  ops->device_dead = op_device_dead;
  ops->resplit = op_resplit;
}

/* ---- pool callbacks ---------------------------------------------------------- */

/* A stage's result: the scheduler is told (and its actions executed), then
 * a final result is recorded and reported to the controller (deferred: the
 * hold keeps it from being fed inside the scheduler's actions). */
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
  sg_interp_hold(r->it);
  if (compile) {
    bool ok = res->status == SG_EVAL_OK;
    if (sg_interp_compiled(r->it, id, ok, &e) == 0 && !ok) {
      STORE(r, sg_store_eval_finish(r->store, q->eval_id, res, now_us(), err));
      eval_event_of(r, q->w, q->cand, q->phase, res);
      req_end(r, q);
    }
  } else if (res->status == SG_EVAL_INFRA_ERROR) {
    /* Before the scheduler: a request it gives up names this failure. */
    free(q->last_infra);
    q->last_infra = sg_strdup(res->message ? res->message : "no message");
    free(r->last_infra);
    r->last_infra = sg_strdup(q->last_infra);
    sg_run_emit(r, "warning", json_pack("{s:s, s:s?}", "task", wf_of(r, q->w)->task->name,
                                        "message", res->message));
    device_interval(r, q);
    sg_interp_device_done(r->it, id, true, &e);
  } else {
    device_interval(r, q);
    if (sg_interp_device_done(r->it, id, false, &e) == 0) {
      sg_eval_result copy = *res;
      char *prof = NULL;
      if (q->phase == SG_PHASE_PROFILE && res->profile_text == NULL &&
          res->status == SG_EVAL_OK)
        copy.profile_text = prof = sg_asprintf(
            "%s timing profile: candidate median %.3f ms, reference %.3f ms "
            "(no hardware counters on the %s evaluator)",
            wf_of(r, q->w)->ev->name, res->cand_ms, res->ref_ms, wf_of(r, q->w)->ev->name);
      STORE(r, sg_store_eval_finish(r->store, q->eval_id, &copy, now_us(), err));
      eval_event_of(r, q->w, q->cand, q->phase, &copy);
      free(prof);
      req_end(r, q);
    }
  }
  sg_interp_release(r->it);
  sg_run_drain(r);
}

static void on_pool_started(sg_pool *p, void *data, uint64_t ticket) {
  (void)p;
  run *r = data;
  rreq *q = req_get(r, ticket >> 1, false);
  if (q && q->live && !(ticket & 1) && q->device >= 0 && !q->remote_start_us)
    q->remote_start_us = now_us();
}

static void on_pool_worker(sg_pool *p, void *data, int slot, const char *what,
                           const char *message) {
  (void)p;
  run *r = data;
  const char *dev = slot >= 0 && (size_t)slot < r->ndevices ? r->devices[slot] : "compile";
  sg_run_emit(r, "worker", json_pack("{s:s, s:s, s:s?}", "device", dev, "what", what,
                              "message", message));
}

int sg_run_start_pool(run *r, const char *program, sg_err *err) {
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
  const char *env[] = {r->remote_env, r->remote_url_env};
  if (r->remote_env && r->remote_url_env) {
    po.remote_env = env;
    po.n_remote_env = 2;
  }
  sg_pool_callbacks cb = {r, on_pool_started, on_pool_result, on_pool_worker,
                          sg_run_kv_on_device};
  rc = sg_pool_new(&r->loop, &po, &cb, &r->pool, err);
  free(log);
  return rc;
}
