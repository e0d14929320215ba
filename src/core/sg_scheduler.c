/* sg_scheduler.c: the elastic device scheduler (Algorithm 2 of the SpecGen
 * paper), a pure state machine over requests and devices. This file holds
 * the requests and the events; the queues are in sg_scheduler_queues.c,
 * the devices and their split in sg_scheduler_devices.c, the shared state
 * in sg_scheduler_priv.h.
 *
 * How it works. Every request lives in a table indexed by its id (ids are
 * dense and never reused, so a stale id from the runtime is recognised by its
 * state). A waiting request sits in one of four queues per workflow: (compile
 * | device) x (validate | profile). An iteration boundary empties the
 * workflow's queues; a request that leaves a queue another way (failed when
 * no device is left) stays in it until it reaches an end, where the pick
 * drops it, so a pick skips each dead entry once. After every
 * event, dispatch() fills free compile slots and idle devices: a queue is
 * chosen round-robin across workflows, and within a workflow the validation
 * queue pops its newest entry (LIFO: the latest fork saw the longest
 * reasoning prefix, so it is the likeliest to pass; the paper's priority
 * queue) and the profiling queue its oldest (FIFO).
 *
 * The split: each live device has a part (the phase it serves next). A
 * re-split changes the parts of as few devices as possible, preferring idle
 * ones; a busy device finishes its request first. With one live device the
 * device serves both phases, profiling first (a profile can end the
 * iteration; a validation only leads to a profile).
 *
 * Never: hold a device while compiling, run two requests on one device,
 * start a request of an ended iteration. These are asserted.
 *
 * Cost. Every call is O(1) or O((D + W) / 64) for D devices and W workflows,
 * never a scan over all devices or workflows per event (a campaign of a
 * thousand of each runs millions of events): busy time is integrated from
 * the running counts as time advances, the live and per-part device counts
 * are kept, idle devices of each part and workflows with a non-empty queue
 * are bitmaps whose lowest set bit is found a word at a time (the same
 * order a scan by index would give), and a workflow id maps to its record
 * through a table. An iteration boundary reads the device array once
 * (each device records its request's workflow), touching no request but
 * the workflow's own.
 */
#include "core/sg_scheduler_priv.h"

#include "common/sg_alloc.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

const char *sg_phase_name(sg_phase p) {
  static const char *const names[SG_PHASE__COUNT] = {"validate", "profile"};
  return (unsigned)p < SG_PHASE__COUNT ? names[p] : "unknown";
}

const char *sg_req_state_name(sg_req_state s) {
  static const char *const names[SG_REQ__COUNT] = {
      "compile_wait", "compiling", "device_wait", "running",
      "done",         "aborted",   "failed"};
  return (unsigned)s < SG_REQ__COUNT ? names[s] : "unknown";
}

const char *sg_device_state_name(sg_device_state s) {
  static const char *const names[SG_DEVICE__COUNT] = {"idle", "busy", "dead"};
  return (unsigned)s < SG_DEVICE__COUNT ? names[s] : "unknown";
}

void sg_sched_opts_default(sg_sched_opts *o) {
  memset(o, 0, sizeof *o);
  o->devices = 1;
  o->compile_slots = 1;
  o->elastic = true;
  o->static_profile_devices = -1;
  o->validate_lifo = true;
  o->max_infra_failures = 3;
  o->max_retries = 2;
  o->max_queued = 4096;
}

void sg_sched_actions_init(sg_sched_actions *a) { memset(a, 0, sizeof *a); }
void sg_sched_actions_clear(sg_sched_actions *a) { a->n = 0; }
void sg_sched_actions_free(sg_sched_actions *a) {
  free(a->v);
  memset(a, 0, sizeof *a);
}

/* ---- state setters (docs/style.md rule 13: one door per state machine) -- */

static bool req_live(sg_req_state st) {
  return st == SG_REQ_COMPILE_WAIT || st == SG_REQ_COMPILING ||
         st == SG_REQ_DEVICE_WAIT || st == SG_REQ_RUNNING;
}

static bool req_waiting(sg_req_state st) {
  return st == SG_REQ_COMPILE_WAIT || st == SG_REQ_COMPILING ||
         st == SG_REQ_DEVICE_WAIT;
}

static bool req_transition_ok(sg_req_state from, sg_req_state to) {
  switch (to) {
  case SG_REQ_COMPILE_WAIT:
    return false; /* only the initial state */
  case SG_REQ_COMPILING:
    return from == SG_REQ_COMPILE_WAIT;
  case SG_REQ_DEVICE_WAIT:
    return from == SG_REQ_COMPILING || from == SG_REQ_RUNNING;
  case SG_REQ_RUNNING:
    return from == SG_REQ_DEVICE_WAIT;
  case SG_REQ_DONE:
    return from == SG_REQ_RUNNING || from == SG_REQ_COMPILING;
  case SG_REQ_ABORTED:
  case SG_REQ_FAILED:
    return req_live(from);
  default:
    return false;
  }
}

/* Moves r to state `to`, keeping the live/waiting/running counts true. */
static void req_set_state(sg_scheduler *s, req *r, sg_req_state to) {
  sg_req_state from = r->state;
  assert(req_transition_ok(from, to));
  sg_phase p = r->r.phase;
  if (req_waiting(from))
    s->waiting[p]--;
  if (from == SG_REQ_RUNNING)
    s->running[p]--;
  if (req_waiting(to))
    s->waiting[p]++;
  if (to == SG_REQ_RUNNING)
    s->running[p]++;
  if (req_live(from) && !req_live(to))
    s->live--;
  assert(s->nstate[from][p] > 0);
  s->nstate[from][p]--;
  s->nstate[to][p]++;
  r->state = to;
}

/* ---- helpers ------------------------------------------------------------- */

void sched_emit(sg_sched_actions *out, const sg_sched_action *a) {
  if (out->n == out->cap) {
    out->cap = out->cap ? out->cap * 2 : 16;
    out->v = sg_realloc(out->v, out->cap * sizeof *out->v);
  }
  out->v[out->n++] = *a;
}

static void emit_req(sg_sched_actions *out, sg_sched_action_type type,
                     const req *r, int device, bool was_compiling) {
  sg_sched_action a;
  memset(&a, 0, sizeof a);
  a.type = type;
  a.req = r->id;
  a.workflow = r->r.workflow;
  a.iteration = r->r.iteration;
  a.phase = r->r.phase;
  a.device = device;
  a.was_compiling = was_compiling;
  a.candidate = r->r.candidate;
  sched_emit(out, &a);
}

/* Advances the clock. Busy device time is the integral of the running
 * counts (a running request holds exactly one device), so it is added
 * here, before any state changes at the new time. */
static void set_now(sg_scheduler *s, int64_t now_us) {
  assert(now_us >= s->now); /* time never runs backwards */
  int64_t dt = now_us - s->now;
  for (int p = 0; p < SG_PHASE__COUNT; p++)
    s->st.busy_us[p] += dt * (int64_t)s->running[p];
  s->now = now_us;
}

static void sample_peaks(sg_scheduler *s) {
  for (int p = 0; p < SG_PHASE__COUNT; p++)
    if (s->waiting[p] > s->st.peak_queued[p])
      s->st.peak_queued[p] = s->waiting[p];
}

static void fail_req(sg_scheduler *s, req *r, sg_sched_actions *out) {
  req_set_state(s, r, SG_REQ_FAILED);
  s->st.failed++;
  emit_req(out, SG_SACT_FAIL, r, -1, false);
}

/* With no device left in service nothing waiting for one can ever run. */
static void fail_stranded(sg_scheduler *s, sg_sched_actions *out) {
  if (live_devices(s) > 0)
    return;
  for (size_t i = 0; i < s->nreqs; i++)
    if (s->reqs[i].state == SG_REQ_DEVICE_WAIT)
      fail_req(s, &s->reqs[i], out);
}

static void start_on_device(sg_scheduler *s, int d, req *r,
                            sg_sched_actions *out) {
  device *dv = &s->dev[d];
  assert(dv->state == SG_DEVICE_IDLE && dv->req == 0);
  workflow *w = sched_find_wf(s, r->r.workflow);
  assert(w != NULL && !w->done && r->r.iteration == w->iteration);
  sched_device_set_state(s, d, SG_DEVICE_BUSY);
  dv->req = r->id;
  dv->workflow = r->r.workflow;
  r->device = d;
  req_set_state(s, r, SG_REQ_RUNNING);
  s->st.started[r->r.phase]++;
  emit_req(out, SG_SACT_START_DEVICE, r, d, false);
}

/* Fills free compile slots and idle devices. */
static void dispatch(sg_scheduler *s, sg_sched_actions *out) {
  sample_peaks(s);
  for (int slot = 0; slot < s->o.compile_slots; slot++) {
    if (s->slots[slot] != 0)
      continue;
    req *r = sched_pick(s, STAGE_COMPILE, SG_PHASE_PROFILE);
    if (r == NULL)
      r = sched_pick(s, STAGE_COMPILE, SG_PHASE_VALIDATE);
    if (r == NULL)
      break;
    s->slots[slot] = r->id;
    r->slot = slot;
    req_set_state(s, r, SG_REQ_COMPILING);
    emit_req(out, SG_SACT_START_COMPILE, r, -1, false);
  }
  /* Idle devices in index order, each taking from its part's queue. The
   * two parts' queues are independent, so serving one part's devices
   * after the other's gives what one pass over all devices would. */
  for (int part = 0; part < NPARTS; part++) {
    size_t d = 0;
    while ((d = sg_bitset_next(&s->idle[part], d)) != SIZE_MAX) {
      req *r;
      if (part == PART_SHARED) {
        r = sched_pick(s, STAGE_DEVICE, SG_PHASE_PROFILE);
        if (r == NULL)
          r = sched_pick(s, STAGE_DEVICE, SG_PHASE_VALIDATE);
      } else {
        r = sched_pick(s, STAGE_DEVICE, (sg_phase)part);
      }
      if (r == NULL)
        break; /* this part's queue is empty: so for its later devices */
      start_on_device(s, (int)d, r, out);
      d++;
    }
  }  /* Work conserving: devices still idle have nothing of their own part
   * waiting; they take the other part's requests (profiling first, as a
   * shared device does: a profile can end an iteration). */
  if (!s->o.work_conserving)
    return;
  static const int order[2] = {SG_PHASE_VALIDATE, SG_PHASE_PROFILE};
  for (int i = 0; i < 2; i++) {
    int part = order[i];
    sg_phase other = part == SG_PHASE_VALIDATE ? SG_PHASE_PROFILE : SG_PHASE_VALIDATE;
    size_t d = 0;
    while ((d = sg_bitset_next(&s->idle[part], d)) != SIZE_MAX) {
      req *r = sched_pick(s, STAGE_DEVICE, other);
      if (r == NULL)
        break;
      start_on_device(s, (int)d, r, out);
      d++;
    }
  }
}

/* ---- public API ---------------------------------------------------------- */

int sg_scheduler_new(const sg_sched_opts *opts, sg_scheduler **out,
                     sg_err *err) {
  *out = NULL;
  if (opts->devices < 1 || opts->devices > 4096)
    return sg_err_set(err, SG_EINVAL, "scheduler: devices must be 1..4096, "
                      "got %d", opts->devices);
  if (opts->compile_slots < 1 || opts->compile_slots > 4096)
    return sg_err_set(err, SG_EINVAL, "scheduler: compile_slots must be "
                      "1..4096, got %d", opts->compile_slots);
  if (opts->static_profile_devices != -1 &&
      (opts->static_profile_devices < 0 ||
       (opts->devices >= 2 && (opts->static_profile_devices < 1 ||
                               opts->static_profile_devices >=
                                   opts->devices))))
    return sg_err_set(err, SG_EINVAL, "scheduler: static_profile_devices "
                      "must be -1 or 1..devices-1, got %d",
                      opts->static_profile_devices);
  if (opts->max_infra_failures < 1)
    return sg_err_set(err, SG_EINVAL, "scheduler: max_infra_failures must be "
                      ">= 1, got %d", opts->max_infra_failures);
  if (opts->max_retries < 0)
    return sg_err_set(err, SG_EINVAL, "scheduler: max_retries must be >= 0, "
                      "got %d", opts->max_retries);
  if (opts->max_queued < 1)
    return sg_err_set(err, SG_EINVAL, "scheduler: max_queued must be >= 1");
  sg_scheduler *s = sg_calloc(1, sizeof *s);
  s->o = *opts;
  s->dev = sg_calloc((size_t)opts->devices, sizeof *s->dev);
  s->slots = sg_calloc((size_t)opts->compile_slots, sizeof *s->slots);
  s->nlive = opts->devices;
  s->npart[SG_PHASE_VALIDATE] = opts->devices;
  for (int d = 0; d < opts->devices; d++) {
    s->dev[d].part = SG_PHASE_VALIDATE;
    sg_bitset_set(&s->idle[SG_PHASE_VALIDATE], (size_t)d);
  }
  for (int st = 0; st < STAGE__COUNT; st++)
    for (int p = 0; p < SG_PHASE__COUNT; p++)
      s->rr[st][p] = (size_t)-1; /* none yet: the first pick starts at 0 */
  s->prof_target = opts->static_profile_devices >= 0
                       ? opts->static_profile_devices
                       : sg_scheduler_split(opts->devices, 0, 0);
  sched_assign_parts(s);
  *out = s;
  return 0;
}

void sg_scheduler_free(sg_scheduler *s) {
  if (s == NULL)
    return;
  for (size_t i = 0; i < s->nwf; i++)
    for (int st = 0; st < STAGE__COUNT; st++)
      for (int p = 0; p < SG_PHASE__COUNT; p++)
        sched_dq_free(&s->wf[i].q[st][p]);
  free(s->wf);
  free(s->reqs);
  free(s->dev);
  free(s->slots);
  for (int p = 0; p < NPARTS; p++)
    sg_bitset_free(&s->idle[p]);
  for (int st = 0; st < STAGE__COUNT; st++)
    for (int p = 0; p < SG_PHASE__COUNT; p++)
      sg_bitset_free(&s->nonempty[st][p]);
  free(s->wf_index);
  free(s);
}

int sg_scheduler_submit(sg_scheduler *s, const sg_sched_request *rq,
                        int64_t now_us, sg_req_id *id, sg_sched_actions *out,
                        sg_err *err) {
  *id = 0;
  if ((unsigned)rq->phase >= SG_PHASE__COUNT)
    return sg_err_set(err, SG_EINVAL, "scheduler: bad phase %d",
                      (int)rq->phase);
  set_now(s, now_us);
  workflow *w = sched_find_wf(s, rq->workflow);
  if (w == NULL)
    w = sched_add_wf(s, rq->workflow, rq->iteration);
  if (w->done)
    return sg_err_set(err, SG_ESTATE, "scheduler: workflow %u is done",
                      rq->workflow);
  if (rq->iteration != w->iteration)
    return sg_err_set(err, SG_ESTATE,
                      "scheduler: workflow %u: submit for iteration %u, "
                      "current is %u",
                      rq->workflow, rq->iteration, w->iteration);
  if (s->live >= s->o.max_queued)
    return sg_err_set(err, SG_EFULL, "scheduler: %zu requests live (cap)",
                      s->live);
  if (s->nreqs == s->capreqs) {
    s->capreqs = s->capreqs ? s->capreqs * 2 : 64;
    s->reqs = sg_realloc(s->reqs, s->capreqs * sizeof *s->reqs);
  }
  req *r = &s->reqs[s->nreqs++];
  memset(r, 0, sizeof *r);
  r->id = (sg_req_id)s->nreqs;
  r->r = *rq;
  r->device = -1;
  r->slot = -1;
  r->state = rq->needs_compile ? SG_REQ_COMPILE_WAIT : SG_REQ_DEVICE_WAIT;
  s->live++;
  s->waiting[rq->phase]++;
  s->nstate[r->state][rq->phase]++;
  *id = r->id;
  if (!rq->needs_compile && live_devices(s) == 0) {
    fail_req(s, r, out);
    return 0;
  }
  sched_enqueue(s, r, rq->needs_compile ? STAGE_COMPILE : STAGE_DEVICE, false);
  dispatch(s, out);
  return 0;
}

int sg_scheduler_compiled(sg_scheduler *s, sg_req_id id, bool ok,
                          int64_t now_us, sg_sched_actions *out, sg_err *err) {
  req *r = get_req(s, id);
  if (r == NULL)
    return sg_err_set(err, SG_ENOENT, "scheduler: no request %llu",
                      (unsigned long long)id);
  if (r->state != SG_REQ_COMPILING)
    return sg_err_set(err, SG_ESTATE, "scheduler: request %llu is %s, not "
                      "compiling", (unsigned long long)id,
                      sg_req_state_name(r->state));
  set_now(s, now_us);
  assert(s->slots[r->slot] == id);
  s->slots[r->slot] = 0;
  r->slot = -1;
  if (!ok) {
    req_set_state(s, r, SG_REQ_DONE);
    s->st.completed[r->r.phase]++;
  } else if (live_devices(s) == 0) {
    req_set_state(s, r, SG_REQ_DEVICE_WAIT);
    fail_req(s, r, out);
  } else {
    req_set_state(s, r, SG_REQ_DEVICE_WAIT);
    sched_enqueue(s, r, STAGE_DEVICE, false);
  }
  dispatch(s, out);
  return 0;
}

int sg_scheduler_device_done(sg_scheduler *s, sg_req_id id, bool infra_failure,
                             int64_t now_us, sg_sched_actions *out,
                             sg_err *err) {
  req *r = get_req(s, id);
  if (r == NULL)
    return sg_err_set(err, SG_ENOENT, "scheduler: no request %llu",
                      (unsigned long long)id);
  if (r->state != SG_REQ_RUNNING)
    return sg_err_set(err, SG_ESTATE, "scheduler: request %llu is %s, not "
                      "running", (unsigned long long)id,
                      sg_req_state_name(r->state));
  set_now(s, now_us);
  int d = r->device;
  device *dv = &s->dev[d];
  assert(dv->state == SG_DEVICE_BUSY && dv->req == id);
  dv->req = 0;
  r->device = -1;
  sched_device_set_state(s, d, SG_DEVICE_IDLE);
  if (!infra_failure) {
    dv->failures = 0;
    req_set_state(s, r, SG_REQ_DONE);
    s->st.completed[r->r.phase]++;
    dispatch(s, out);
    return 0;
  }
  s->st.infra_failures++;
  if (++dv->failures >= s->o.max_infra_failures) {
    sched_device_set_state(s, d, SG_DEVICE_DEAD);
    s->st.dead_devices++;
    sg_sched_action a;
    memset(&a, 0, sizeof a);
    a.type = SG_SACT_DEVICE_DEAD;
    a.device = d;
    sched_emit(out, &a);
    sched_assign_parts(s);
    if (live_devices(s) > 0)
      sched_emit_resplit(s, r->r.workflow, r->r.iteration, out);
  }
  req_set_state(s, r, SG_REQ_DEVICE_WAIT);
  if (++r->retries > s->o.max_retries || live_devices(s) == 0) {
    fail_req(s, r, out);
  } else {
    sched_enqueue(s, r, STAGE_DEVICE, true); /* retried next: it waited already */
  }
  fail_stranded(s, out);
  dispatch(s, out);
  return 0;
}

static void abort_one(sg_scheduler *s, req *r, sg_sched_actions *out) {
  int device = -1;
  bool was_compiling = false;
  if (r->state == SG_REQ_RUNNING) {
    device = r->device;
    s->dev[device].req = 0;
    sched_device_set_state(s, device, SG_DEVICE_IDLE);
    r->device = -1;
  } else if (r->state == SG_REQ_COMPILING) {
    was_compiling = true;
    s->slots[r->slot] = 0;
    r->slot = -1;
  }
  req_set_state(s, r, SG_REQ_ABORTED);
  s->st.aborted++;
  emit_req(out, SG_SACT_ABORT, r, device, was_compiling);
}

/* Aborts every live request of w: running ones (by device), compiling ones
 * (by slot), then queued ones, each queue oldest first. Cost: the devices,
 * the slots and w's own queues, never the whole request table. */
static void abort_workflow(sg_scheduler *s, workflow *w,
                           sg_sched_actions *out) {
  for (int d = 0; d < s->o.devices; d++) {
    if (s->dev[d].req == 0 || s->dev[d].workflow != w->id)
      continue; /* a sequential read of the devices, no request touched */
    req *r = get_req(s, s->dev[d].req);
    assert(r != NULL && r->r.workflow == w->id);
    abort_one(s, r, out);
  }
  for (int i = 0; i < s->o.compile_slots; i++) {
    req *r = get_req(s, s->slots[i]);
    if (r != NULL && r->r.workflow == w->id)
      abort_one(s, r, out);
  }
  for (int st = 0; st < STAGE__COUNT; st++)
    for (int p = 0; p < SG_PHASE__COUNT; p++) {
      deque *q = &w->q[st][p];
      for (size_t i = q->head; i < q->tail; i++) {
        req *r = get_req(s, q->v[i]);
        if (r->state == (st == STAGE_COMPILE ? SG_REQ_COMPILE_WAIT
                                             : SG_REQ_DEVICE_WAIT))
          abort_one(s, r, out);
      }
      q->head = q->tail = 0;
      sg_bitset_clear(&s->nonempty[st][p], (size_t)(w - s->wf));
    }
}

int sg_scheduler_iteration_boundary(sg_scheduler *s, uint32_t workflow_id,
                                    uint32_t next_iteration, int64_t now_us,
                                    sg_sched_actions *out, sg_err *err) {
  set_now(s, now_us);
  workflow *w = sched_find_wf(s, workflow_id);
  bool fresh = w == NULL;
  if (fresh)
    w = sched_add_wf(s, workflow_id, next_iteration);
  if (w->done)
    return sg_err_set(err, SG_ESTATE, "scheduler: workflow %u is done",
                      workflow_id);
  if (!fresh && next_iteration <= w->iteration)
    return sg_err_set(err, SG_ESTATE,
                      "scheduler: workflow %u: boundary to iteration %u, "
                      "current is %u",
                      workflow_id, next_iteration, w->iteration);
  sample_peaks(s);
  abort_workflow(s, w, out);
  w->iteration = next_iteration;
  /* Algorithm 2: re-split from the peak queue lengths since the last one. */
  if (s->o.elastic) {
    int g = live_devices(s);
    if (g >= 2) {
      int target = sg_scheduler_split(g, s->st.peak_queued[SG_PHASE_VALIDATE],
                                      s->st.peak_queued[SG_PHASE_PROFILE]);
      s->st.resplits++;
      if (target != s->prof_target) {
        s->prof_target = target;
        sched_assign_parts(s);
        sched_emit_resplit(s, workflow_id, next_iteration, out);
      }
    }
    for (int p = 0; p < SG_PHASE__COUNT; p++)
      s->st.peak_queued[p] = s->waiting[p];
  }
  dispatch(s, out);
  return 0;
}

int sg_scheduler_workflow_done(sg_scheduler *s, uint32_t workflow_id,
                               int64_t now_us, sg_sched_actions *out,
                               sg_err *err) {
  set_now(s, now_us);
  (void)err;
  workflow *w = sched_find_wf(s, workflow_id);
  /* Done before it submitted anything (a resumed workflow whose budget was
   * spent at start): known from now on, as done. */
  if (w == NULL)
    w = sched_add_wf(s, workflow_id, 0);
  if (w->done)
    return 0;
  abort_workflow(s, w, out);
  w->done = true;
  dispatch(s, out);
  return 0;
}

void sg_scheduler_tick(sg_scheduler *s, int64_t now_us,
                       sg_sched_actions *out) {
  (void)out;
  set_now(s, now_us);
}

void sg_scheduler_stats(const sg_scheduler *s, sg_sched_stats *st) {
  *st = s->st;
}

int sg_scheduler_request_state(const sg_scheduler *s, sg_req_id id,
                               sg_req_state *state) {
  const req *r = get_req(s, id);
  if (r == NULL)
    return SG_ENOENT;
  *state = r->state;
  return 0;
}

int sg_scheduler_request_info(const sg_scheduler *s, sg_req_id id,
                              sg_sched_request *out) {
  const req *r = get_req(s, id);
  if (r == NULL)
    return SG_ENOENT;
  *out = r->r;
  return 0;
}
