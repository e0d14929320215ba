/* sg_sim.c: the simulated runtime. See sg_sim.h for what it is; this file is
 * the event loop and the ops through which the action interpreter
 * (sg_interp.h, shared with `specgen run`) executes the core's actions
 * against the models (sg_sim_models.c; the state both share is in
 * sg_sim_priv.h). The configurations are in sg_sim_variant.c. Over 800
 * lines on purpose: the event handlers that feed the models' outcomes to
 * the core and the campaign's set-up and statistics are read together.
 *
 * Invariants (asserted): an event is processed at a time no earlier than the
 * previous one; a generation gets exactly one ending (finished, failed or
 * cancelled); a request's device run ends once per start. Stale events (for
 * a cancelled generation or an aborted request) are recognised by an epoch
 * that no longer matches, and dropped.
 */
#include "sim/sg_sim_priv.h"

#include "common/sg_alloc.h"
#include "sim/sg_sim_tasks.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t sim_s_to_us(double s) {
  double us = s * 1e6;
  if (us < 1)
    return 1;
  if (us > 9e18)
    return INT64_MAX / 4;
  return (int64_t)llround(us);
}

void sim_push(sim *s, int64_t t_us, int type, uint32_t owner, uint64_t id,
                 uint64_t epoch) {
  assert(t_us >= s->now_us);
  sg_sim_event ev = {.t_us = t_us, .type = type, .owner = owner, .id = id,
                     .epoch = epoch};
  /* Ticks (every tick_s), compilations (compile_s) and events at "now"
   * come in time order, each kind in a lane of its own (sg_sim_queue.h);
   * the heap keeps the rest. */
  switch (type) {
  case EV_TICK:
    sg_sim_queue_push_lane(&s->q, 0, ev);
    break;
  case EV_COMPILE_END:
    sg_sim_queue_push_lane(&s->q, 1, ev);
    break;
  case EV_EVAL_FAIL:
    sg_sim_queue_push_lane(&s->q, 2, ev);
    break;
  default:
    sg_sim_queue_push(&s->q, ev);
  }
}

/* Doubles workflow f's ring, keeping what the current iteration can reach.
 * Two ids in distinct slots mod n stay distinct mod 2n: no collisions. */
static void gens_grow(sim *s, sim_wf *f) {
  size_t n = f->ngens ? 2 * f->ngens : 64;
  if (n > s->res->gen_slots_max)
    s->res->gen_slots_max = n;
  /* aligned to the slots' cache lines (sim_gen) */
  sim_gen *v = sg_calloc_aligned(_Alignof(sim_gen), n * sizeof *v);
  for (size_t i = 0; i < f->ngens; i++) {
    sim_gen *g = &f->gens[i];
    if (g->used && g->id >= f->keep_from)
      v[g->id & (n - 1)] = *g;
    else
      free(g->text);
  }
  free(f->gens);
  f->gens = v;
  f->ngens = n;
}

sim_gen *sim_gen_get(sim *s, uint32_t w, uint64_t id, bool create) {
  sim_wf *f = &s->wf[w];
  if (id == 0 || id >= GEN_ID_MAX)
    return NULL;
  if (f->ngens == 0) {
    if (!create)
      return NULL;
    gens_grow(s, f);
  }
  sim_gen *g = &f->gens[id & (f->ngens - 1)];
  if (!create)
    return g->used && g->id == id ? g : NULL;
  while (g->used && g->id != id && g->id >= f->keep_from) {
    gens_grow(s, f);
    g = &f->gens[id & (f->ngens - 1)];
  }
  if (g->id != id) {
    /* an ended iteration's: nothing refers to it any more */
    free(g->text);
    memset(g, 0, sizeof *g);
    g->id = id;
  }
  return g;
}

/* The request table is a ring too: a slot is reused once its request is
 * no longer live (done, failed or aborted; events for it carry an epoch
 * and a lookup by a stale id finds nothing). */
static void reqs_grow(sim *s) {
  size_t n = s->nreqs ? 2 * s->nreqs : 1024;
  if (n > s->res->req_slots_max)
    s->res->req_slots_max = n;
  sim_req *v = sg_calloc(n, sizeof *v);
  for (size_t i = 0; i < s->nreqs; i++)
    if (s->reqs[i].live)
      v[s->reqs[i].id & (n - 1)] = s->reqs[i];
  free(s->reqs);
  s->reqs = v;
  s->nreqs = n;
}

sim_req *sim_req_get(sim *s, sg_req_id id, bool create) {
  if (id == 0 || id >= REQ_ID_MAX)
    return NULL;
  if (s->nreqs == 0) {
    if (!create)
      return NULL;
    reqs_grow(s);
  }
  sim_req *q = &s->reqs[id & (s->nreqs - 1)];
  if (!create)
    return q->id == id ? q : NULL;
  while (q->live && q->id != id) {
    reqs_grow(s);
    q = &s->reqs[id & (s->nreqs - 1)];
  }
  if (q->id != id) {
    memset(q, 0, sizeof *q);
    q->id = id;
  }
  return q;
}

/* ---- executing the core's actions (the interpreter's ops) ---- */

/* The interpreter's verdict after a call into it: its first error, if any
 * (already in s->err). */
static int it_rc(const sim *s) {
  return sg_interp_failed(s->it) ? (s->err->code < 0 ? s->err->code : SG_EIO) : 0;
}

static int ctl_call(sim *s, uint32_t w, const sg_ctl_event *ev) {
  sg_interp_event(s->it, w, ev);
  return it_rc(s);
}

static int64_t op_now_us(void *data) { return ((sim *)data)->now_us; }

static int op_gen_start(void *data, uint32_t w, const sg_ctl_action *a) {
  sim *s = data;
  if (s->rp)
    return simrp_gen_start(s, w, a);
  return a->u.start.kind == SG_GEN_MAIN ? sim_start_main(s, w, a) : sim_start_spec(s, w, a);
}

static int op_gen_cancel(void *data, uint32_t w, uint64_t gen, bool *was_main) {
  sim *s = data;
  if (s->rp) {
    simrp_gen_cancel(s, w, gen, was_main);
    return 0;
  }
  sim_gen *g = sim_gen_get(s, w, gen, false);
  if (g != NULL && g->epoch != 0) {
    s->res->gens_cancelled++;
    *was_main = g->kind == SG_GEN_MAIN;
    sim_end_gen(s, g, sim_tokens_so_far(s, g));
  }
  return 0;
}

static int op_submit(void *data, uint32_t w, const sg_ctl_action *a, bool *answered,
                     bool *needs_compile) {
  sim *s = data;
  sim_wf *f = &s->wf[w];
  if (sg_history_get(sg_controller_history(f->ctl), a->u.submit.candidate) == NULL)
    return sg_err_set(s->err, SG_EINVAL, "workflow %u: submit of unknown candidate %llu",
                      w, (unsigned long long)a->u.submit.candidate);
  if (a->u.submit.phase == SG_PHASE_VALIDATE)
    s->res->candidates++;
  *answered = false;
  *needs_compile = a->u.submit.phase == SG_PHASE_VALIDATE && s->p->compile_s > 0;
  return s->rp ? simrp_submit(s, w, a, answered) : 0;
}

/* Refused (full, or the iteration already ended): the candidate's
 * evaluation failed for infrastructure reasons. */
static int op_refused(void *data, uint32_t w, const sg_ctl_action *a, const char *why) {
  sim *s = data;
  (void)why;
  if (s->rp)
    simrp_refused(s, w, a);
  sim_push(s, s->now_us, EV_EVAL_FAIL, w, a->u.submit.candidate, (uint64_t)a->u.submit.phase);
  return 0;
}

static int op_submitted(void *data, uint32_t w, const sg_ctl_action *a, sg_req_id id) {
  sim *s = data;
  sim_req *q = sim_req_get(s, id, true);
  if (q == NULL)
    return sg_err_set(s->err, SG_ERANGE, "request id %llu out of range",
                      (unsigned long long)id);
  const sg_kernel *k = sg_history_get(sg_controller_history(s->wf[w].ctl),
                                      a->u.submit.candidate);
  q->workflow = w;
  q->candidate = a->u.submit.candidate;
  q->gen = k->gen;
  q->phase = a->u.submit.phase;
  q->epoch = 1;
  q->live = true;
  return s->rp ? simrp_submitted(s, w, a, id) : 0;
}

static int op_iteration_end(void *data, uint32_t w, const sg_ctl_action *a,
                            bool main_cancelled) {
  sim *s = data;
  sim_wf *f = &s->wf[w];
  s->res->iterations++;
  f->cur_iter = a->iteration + 1;
  if (f->ahead_gen != 0) { /* the next main, unless cancelled (a new one starts) */
    f->main_gen = f->ahead_gen;
    f->ahead_gen = 0;
  }
  if (s->rp)
    simrp_iteration_end(s, w, a, main_cancelled);
  if (a->u.end.reason == SG_REASON_EARLY) {
    s->res->criterion_accepts++;
    /* Early in the paper's sense: the reasoning was still running (the
     * controller cancels it just before ending the iteration). */
    if (main_cancelled)
      s->res->early_terminations++;
  }
  return 0;
}

static int op_workflow_done(void *data, uint32_t w, const sg_ctl_action *a) {
  sim *s = data;
  (void)a;
  sim_wf *f = &s->wf[w];
  f->done = true;
  f->done_us = s->now_us;
  s->res->workflows_done++;
  return 0;
}

static int op_decision(void *data, uint32_t w, const sg_ctl_action *a) {
  (void)data, (void)w, (void)a;
  return 0;
}

static int op_compile_start(void *data, const sg_sched_action *a) {
  sim *s = data;
  sim_req *q = sim_req_get(s, a->req, false);
  assert(q != NULL);
  q->epoch++;
  int64_t us = s->rp ? simrp_stage_us(s, a->req, true) : sim_s_to_us(s->p->compile_s);
  sim_push(s, s->now_us + us, EV_COMPILE_END, q->workflow, a->req, q->epoch);
  return 0;
}

static int op_device_start(void *data, const sg_sched_action *a) {
  sim *s = data;
  const sg_sim_params *p = s->p;
  sim_req *q = sim_req_get(s, a->req, false);
  assert(q != NULL && a->device >= 0 && a->device < p->devices);
  q->epoch++;
  double d;
  sim_wf *f = &s->wf[q->workflow];
  if (s->rp)
    d = (double)simrp_stage_us(s, a->req, false) / 1e6;
  else if (s->now_us >= s->dies_us[a->device])
    d = p->fault_infra_s;
  else if (a->phase == SG_PHASE_VALIDATE)
    d = sg_sim_rng_lognormal(&f->rng, p->val_mean_s, p->val_cv);
  else
    d = sg_sim_rng_lognormal(&f->rng, p->prof_mean_s, p->prof_cv);
  /* owner carries the device: its death decides an infra failure. */
  sim_push(s, s->now_us + sim_s_to_us(d), EV_DEVICE_END, (uint32_t)a->device, a->req, q->epoch);
  sg_sim_llm_device_busy(s->llm, s->now_us);
  s->running++;
  return 0;
}

static int op_abort(void *data, const sg_sched_action *a) {
  sim *s = data;
  sim_req *q = sim_req_get(s, a->req, false);
  if (q != NULL) {
    q->live = false;
    q->epoch++;
  }
  if (s->rp)
    simrp_abort(s, a->req);
  if (a->device >= 0) {
    sg_sim_llm_device_idle(s->llm); /* it was running */
    s->running--;
  }
  s->res->requests_aborted++;
  return 0;
}

static int op_give_up(void *data, const sg_sched_action *a) {
  sim *s = data;
  sim_req *q = sim_req_get(s, a->req, false);
  if (q != NULL && q->live) {
    q->live = false;
    q->epoch++;
    sim_push(s, s->now_us, EV_EVAL_FAIL, q->workflow, q->candidate, (uint64_t)q->phase);
  }
  s->res->requests_failed++;
  return 0;
}

static int op_device_dead(void *data, const sg_sched_action *a) {
  (void)a;
  ((sim *)data)->res->devices_retired++;
  return 0;
}

static int op_resplit(void *data, const sg_sched_action *a) {
  (void)a;
  ((sim *)data)->res->resplits++;
  return 0;
}

static const sg_interp_ops sim_ops = {
    .now_us = op_now_us,
    .gen_start = op_gen_start,
    .gen_cancel = op_gen_cancel,
    .submit = op_submit,
    .submitted = op_submitted,
    .refused = op_refused,
    .iteration_end = op_iteration_end,
    .workflow_done = op_workflow_done,
    .decision = op_decision,
    .compile_start = op_compile_start,
    .device_start = op_device_start,
    .abort = op_abort,
    .give_up = op_give_up,
    .device_dead = op_device_dead,
    .resplit = op_resplit,
};

static void eval_event(sim *s, sg_ctl_event *ev, uint64_t cand, sg_phase ph,
                       sg_eval_status st, double speedup, const char *msg) {
  memset(ev, 0, sizeof *ev);
  ev->type = SG_CEV_EVAL_DONE;
  ev->now_us = s->now_us;
  ev->u.eval.candidate = cand;
  ev->u.eval.phase = ph;
  ev->u.eval.status = st;
  ev->u.eval.speedup = speedup;
  ev->u.eval.message = msg;
  ev->u.eval.profile_text = NULL;
}

static const char answer_fmt[] =
    "Here is the kernel.\n```c\n/* simulated candidate: workflow %u, generation "
    "%llu */\nvoid sim_kernel(const float *x, float *y, int n) {\n"
    "  for (int i = 0; i < n; i++)\n    y[i] = x[i];\n}\n```\n";

/* Hands the controller the reasoning generated since the last delivery.
 * *gp is reloaded (the table may grow) and NULL if the generation was
 * cancelled meanwhile. */
static int deliver_text(sim *s, uint32_t w, uint64_t id, sim_gen **gp) {
  sim_gen *g = *gp;
  double frac = (double)(s->now_us - g->t0_us) /
                (double)(g->reason_end_us - g->t0_us);
  uint64_t upto = (uint64_t)(fmin(1.0, frac) * (double)g->reason_bytes);
  if (upto > g->sent_bytes) {
    sg_ctl_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = SG_CEV_GEN_CHUNK;
    ev.now_us = s->now_us;
    ev.u.chunk.gen = id;
    ev.u.chunk.reasoning = g->text + g->sent_bytes;
    ev.u.chunk.reasoning_len = (size_t)(upto - g->sent_bytes);
    ev.u.chunk.tokens = (uint64_t)llround((double)(upto - g->sent_bytes) / s->bpt);
    g->sent_bytes = upto;
    uint64_t epoch = g->epoch;
    int rc = ctl_call(s, w, &ev);
    if (rc < 0)
      return rc;
    g = sim_gen_get(s, w, id, false); /* the table may have grown */
    if (g == NULL || g->epoch != epoch)
      g = NULL;                   /* cancelled meanwhile */
  }
  *gp = g;
  return 0;
}

static int on_chunk(sim *s, const sg_sim_event *e) {
  sim_gen *g = sim_gen_get(s, e->owner, e->id, false);
  if (g == NULL || g->epoch != e->epoch || g->epoch == 0)
    return 0;
  int rc = deliver_text(s, e->owner, e->id, &g);
  if (rc < 0 || g == NULL || s->p->gen_chunk_s <= 0)
    return rc;
  int64_t next = s->now_us + sim_s_to_us(s->p->gen_chunk_s);
  if (next < g->reason_end_us)
    sim_push(s, next, EV_CHUNK, e->owner, e->id, g->epoch);
  else if (g->sent_bytes < g->reason_bytes && g->reason_end_us > s->now_us)
    sim_push(s, g->reason_end_us, EV_CHUNK, e->owner, e->id, g->epoch);
  return 0;
}

static int on_gen_end(sim *s, const sg_sim_event *e) {
  sim_gen *g = sim_gen_get(s, e->owner, e->id, false);
  if (g == NULL || g->epoch != e->epoch || g->epoch == 0)
    return 0;
  sg_ctl_event ev;
  memset(&ev, 0, sizeof ev);
  ev.now_us = s->now_us;
  double prompt = g->prompt_tokens, cached = g->cached_tokens;
  if (g->fails) {
    double done = sim_tokens_so_far(s, g);
    s->res->gens_failed++;
    sim_end_gen(s, g, done);
    ev.type = SG_CEV_GEN_FAILED;
    ev.u.failed.gen = e->id;
    ev.u.failed.error = SG_EHTTP;
    ev.u.failed.message = "simulated generation failure";
    ev.u.failed.usage.prompt_tokens = (uint64_t)llround(prompt);
    ev.u.failed.usage.cached_tokens = (uint64_t)llround(cached);
    ev.u.failed.usage.completion_tokens = (uint64_t)llround(done);
    return ctl_call(s, e->owner, &ev);
  }
  /* The rest of the reasoning, if the last chunk left some. */
  if (g->kind == SG_GEN_MAIN && g->sent_bytes < g->reason_bytes) {
    sg_ctl_event ch;
    memset(&ch, 0, sizeof ch);
    ch.type = SG_CEV_GEN_CHUNK;
    ch.now_us = s->now_us;
    ch.u.chunk.gen = e->id;
    ch.u.chunk.reasoning = g->text + g->sent_bytes;
    ch.u.chunk.reasoning_len = (size_t)(g->reason_bytes - g->sent_bytes);
    g->sent_bytes = g->reason_bytes;
    uint64_t epoch = g->epoch;
    int rc = ctl_call(s, e->owner, &ch);
    if (rc < 0)
      return rc;
    g = sim_gen_get(s, e->owner, e->id, false);
    if (g == NULL || g->epoch != epoch)
      return 0;
  }
  double completion = g->reason_tokens + g->answer_tokens;
  if (g->kind == SG_GEN_MAIN) {
    s->res->main_gen_s += (double)(s->now_us - g->t0_us) / 1e6;
    s->res->main_gens_completed++;
  }
  sim_end_gen(s, g, completion);
  char answer[512];
  int len = snprintf(answer, sizeof answer, answer_fmt, e->owner,
                     (unsigned long long)e->id);
  assert(len > 0 && (size_t)len < sizeof answer);
  ev.type = SG_CEV_GEN_FINISHED;
  ev.u.finished.gen = e->id;
  ev.u.finished.text = answer;
  ev.u.finished.len = (size_t)len;
  ev.u.finished.reason = SG_FINISH_STOP;
  ev.u.finished.usage.prompt_tokens = (uint64_t)llround(prompt);
  ev.u.finished.usage.cached_tokens = (uint64_t)llround(cached);
  ev.u.finished.usage.completion_tokens = (uint64_t)llround(completion);
  return ctl_call(s, e->owner, &ev);
}

/* The outcome of a finished evaluation, from the candidate's generation. */
static int deliver_eval(sim *s, sim_req *q) {
  sim_wf *f = &s->wf[q->workflow];
  sim_gen *g = sim_gen_get(s, q->workflow, q->gen, false);
  sg_ctl_event ev;
  if (g == NULL) {
    eval_event(s, &ev, q->candidate, q->phase, SG_EVAL_INFRA_ERROR, NAN,
               "simulated: unknown generation");
    return ctl_call(s, q->workflow, &ev);
  }
  double noise = exp(s->p->speed_noise_sigma * sg_sim_rng_normal(&f->rng));
  if (q->phase == SG_PHASE_VALIDATE) {
    if (g->kind == SG_GEN_MAIN) {
      s->res->main_validated++;
      s->res->main_valid += g->valid;
    } else {
      s->res->spec_validated++;
      s->res->spec_valid += g->valid;
    }
    if (g->valid) {
      s->res->validated_ok++;
      eval_event(s, &ev, q->candidate, q->phase, SG_EVAL_OK, g->speedup * noise, NULL);
    } else {
      eval_event(s, &ev, q->candidate, q->phase, g->fail_status, NAN,
                 "simulated: the kernel failed validation");
    }
  } else {
    s->res->profiling_feedback++;
    eval_event(s, &ev, q->candidate, q->phase, SG_EVAL_OK, g->speedup * noise, NULL);
  }
  return ctl_call(s, q->workflow, &ev);
}

static int on_compile_end(sim *s, const sg_sim_event *e) {
  sim_req *q = sim_req_get(s, e->id, false);
  if (q == NULL || !q->live || q->epoch != e->epoch)
    return 0;
  sim_gen *g = s->rp ? NULL : sim_gen_get(s, q->workflow, q->gen, false);
  bool ok = s->rp ? simrp_compile_ok(s, e->id)
                  : g == NULL || g->valid || g->fail_status != SG_EVAL_COMPILE_ERROR;
  int rc = sg_interp_compiled(s->it, e->id, ok, s->err);
  if (rc == 0)
    rc = it_rc(s);
  if (rc < 0 || ok)
    return rc;
  q->live = false;
  if (s->rp)
    return simrp_deliver(s, q, true);
  if (g != NULL && g->kind == SG_GEN_MAIN)
    s->res->main_validated++;
  else if (g != NULL)
    s->res->spec_validated++;
  sg_ctl_event ev;
  eval_event(s, &ev, q->candidate, q->phase, SG_EVAL_COMPILE_ERROR, NAN,
             "simulated: the kernel did not compile");
  return ctl_call(s, q->workflow, &ev);
}

static int on_device_end(sim *s, const sg_sim_event *e) {
  sim_req *q = sim_req_get(s, e->id, false);
  if (q == NULL || !q->live || q->epoch != e->epoch)
    return 0;
  bool infra = s->now_us >= s->dies_us[e->owner];
  if (infra)
    s->res->infra_failures++;
  sg_sim_llm_device_idle(s->llm);
  s->running--;
  int rc = sg_interp_device_done(s->it, e->id, infra, s->err);
  if (rc == 0)
    rc = it_rc(s);
  if (rc < 0 || infra)
    return rc; /* re-queued or failed by the scheduler */
  q->live = false;
  return s->rp ? simrp_deliver(s, q, false) : deliver_eval(s, q);
}

static int on_tick(sim *s, const sg_sim_event *e) {
  sim_wf *f = &s->wf[e->owner];
  if (f->done)
    return 0;
  if (s->p->gen_chunk_s <= 0 && f->main_gen != 0) {
    /* Event-driven streaming: the text so far, before the tick. */
    sim_gen *g = sim_gen_get(s, e->owner, f->main_gen, false);
    if (g != NULL && g->epoch != 0 && s->now_us < g->reason_end_us) {
      int rc = deliver_text(s, e->owner, f->main_gen, &g);
      if (rc < 0)
        return rc;
      if (f->done)
        return 0;
    }
  }
  sg_ctl_event ev;
  memset(&ev, 0, sizeof ev);
  ev.type = SG_CEV_TICK;
  ev.now_us = s->now_us;
  sg_scheduler_capacity(s->sched, &ev.u.tick.capacity);
  int rc = ctl_call(s, e->owner, &ev);
  if (rc < 0)
    return rc;
  if (!f->done && !(s->rp && simrp_ticks(s, UINT32_MAX)))
    sim_push(s, s->now_us + sim_s_to_us(s->p->knobs.tick), EV_TICK, e->owner, 0, 0);
  return 0;
}

/* ---- the campaign ---- */

/* One fork budget per LLM server (llm.server_streams): its streams less one
 * main per workflow it serves, shared by those workflows' controllers. */
static int fork_budgets(sim *s) {
  const sg_sim_params *p = s->p;
  if (s->rp != NULL && p->knobs.llm_streams <= 0 && s->v->speculate &&
      simrp_fork_caps_on(s)) {
    /* a replay's recorded caps, on one server, unbounded at first as live */
    s->budgets = sg_calloc(1, sizeof *s->budgets);
    s->budgets[0].cap = SG_LOAD_UNBOUNDED;
    return 0;
  }
  if (p->knobs.llm_streams <= 0 || !s->v->speculate)
    return 0;
  int nservers = sg_sim_llm_server(s->llm, (uint32_t)p->workflows - 1) + 1;
  s->budgets = sg_calloc((size_t)nservers, sizeof *s->budgets);
  for (int sv = 0; sv < nservers; sv++)
    s->budgets[sv].cap = p->knobs.llm_streams;
  for (int w = 0; w < p->workflows; w++)
    s->budgets[sg_sim_llm_server(s->llm, (uint32_t)w)].cap--;
  for (int sv = 0; sv < nservers; sv++)
    if (s->budgets[sv].cap < 1)
      return sg_err_set(s->err, SG_EINVAL,
                        "llm.server_streams %d leaves server %d no stream for forks "
                        "beside the main generations of its %d workflows",
                        p->knobs.llm_streams, sv,
                        p->knobs.llm_streams - s->budgets[sv].cap);
  return 0;
}

/* The core's knobs (config/sg_knobs.h) of this campaign: the parameters'
 * knobs (the rows' --set keys, every other knob at its default), the
 * policy switches from the configuration. */
static void sim_knobs(const sg_sim_params *p, const sg_sim_variant *v, sg_knobs *k) {
  *k = p->knobs;
  k->elastic = v->elastic;
  k->spec = v->speculate;
  k->fork_on_idle = true;
  /* no measured budget: a simulated stream's rate is fixed when it starts
   * (sg_sim_llm.h), so a fork never slows a main already decoding and the
   * estimate would find nothing (docs/core.md, "Fork budget") */
  k->fork_slowdown_max = 0;
  k->work_conserving = v->work_conserving;
  k->split_capacity = v->split_capacity;
  k->fork_gate = v->fork_gate ? p->knobs.fork_gate : 0;
  k->cutoff = v->cutoff ? p->knobs.cutoff : 0;
  k->cutoff_detach = v->cutoff_detach;
  k->decide_at_validation = v->at_validation;
  k->decide_with_siblings = v->siblings;
  k->next_ahead = v->ahead;
}

/* The scheduler's options: the campaign's; a replay's are the recorded
 * run's (its knobs on the defaults, as `specgen run` sets them). */
static void sched_opts(const sim *s, bool replay, sg_sched_opts *so) {
  const sg_sim_params *p = s->p;
  sg_sched_opts_default(so);
  so->devices = p->devices;
  so->compile_slots = p->compile_slots;
  if (!replay) {
    so->static_profile_devices = p->static_profile_devices;
    so->validate_lifo = s->v->lifo;
  }
  sg_knobs_land(&s->knobs, NULL, so);
  if (!replay) {
    so->max_infra_failures = p->max_infra_failures;
    so->max_retries = p->max_retries;
    so->max_queued = 1u << 20;
  }
}

static int setup(sim *s, const sg_knobs *knobs, const char *const *const *lang_entry) {
  const sg_sim_params *p = s->p;
  if (knobs != NULL)
    s->knobs = *knobs; /* a replay: the recorded run's, as it set them */
  else
    sim_knobs(p, s->v, &s->knobs);
  sg_search_registry_init(&s->sreg);
  sg_termination_registry_init(&s->treg);
  sg_sched_opts so;
  sched_opts(s, knobs != NULL, &so);
  int rc = sg_scheduler_new(&so, &s->sched, s->err);
  if (rc < 0)
    return rc;
  s->llm = sg_sim_llm_new(p, s->v->remote_cache);
  s->ops = sim_ops;
  if (s->rp)
    s->ops.joined = simrp_joined; /* real kernels: the same one joins */
  sg_interp_opts io = {.ops = &s->ops, .data = s, .sched = s->sched,
                       .n_workflows = (size_t)p->workflows, .err = s->err,
                       .trace = s->trace, .trace_data = s->trace_data};
  if ((rc = sg_interp_new(&io, &s->it, s->err)) < 0)
    return rc;
  if ((rc = fork_budgets(s)) < 0)
    return rc;
  s->dies_us = sg_calloc((size_t)p->devices, sizeof *s->dies_us);
  for (int d = 0; d < p->devices; d++) {
    sg_sim_rng r;
    sg_sim_rng_seed(&r, p->seed, RNG_DEVICE + (uint64_t)d);
    s->dies_us[d] = p->fault_device_mtbf_s > 0
                        ? sim_s_to_us(sg_sim_rng_exponential(&r, p->fault_device_mtbf_s))
                        : INT64_MAX;
  }
  s->wf = sg_calloc((size_t)p->workflows, sizeof *s->wf);
  for (int w = 0; w < p->workflows; w++) {
    sim_wf *f = &s->wf[w];
    sg_sim_rng task;
    sg_sim_rng_seed(&task, p->seed, RNG_TASK + (uint64_t)w * 7);
    f->threshold = sg_sim_rng_range(&task, p->valid_threshold_min, p->valid_threshold_max);
    if (p->valid_threshold_log && p->valid_threshold_min > 0)
      /* Log-uniform in the same range: the same draw, mapped. */
      f->threshold = p->valid_threshold_min *
                     pow(p->valid_threshold_max / p->valid_threshold_min,
                         (f->threshold - p->valid_threshold_min) /
                             fmax(1e-12, p->valid_threshold_max - p->valid_threshold_min));
    f->task_speed = p->speed_first * exp(p->speed_first_sigma * sg_sim_rng_normal(&task));
    f->no_prefix_p = p->valid_no_prefix_p;
    sg_sim_task t;
    if (sg_sim_task_get(p->task_table, w, &t)) {
      /* The paper's task (sg_sim_tasks.h); the draws above still happen,
       * so the other streams do not move. */
      f->task_speed = t.best_known / p->speed_ceiling;
      if (!t.no_prefix_valid)
        f->no_prefix_p = 0;
    }
    sg_sim_rng_seed(&f->rng, p->seed, RNG_WORKFLOW + (uint64_t)w);
    rc = sg_search_new(&s->sreg, p->search, p->seed + (uint64_t)w, &f->search, s->err);
    if (rc < 0)
      return rc; /* the message names the search */
    rc = sg_termination_new(&s->treg, p->termination, &f->term, s->err);
    if (rc < 0)
      return rc; /* the message names the criterion */
    sg_ctl_opts o;
    sg_ctl_opts_default(&o);
    o.search = f->search;
    o.termination = f->term;
    o.language = lang_entry ? lang_entry[0][w] : "c";
    o.entry = lang_entry ? lang_entry[1][w] : "sim_kernel";
    sg_knobs_land(&s->knobs, &o, NULL); /* the rows of config/sg_knobs.h */
    if (knobs == NULL)
      o.idle_min_new_bytes = (uint64_t)llround(p->idle_min_new_tokens * s->bpt);
    if (s->budgets != NULL)
      o.fork_budget = &s->budgets[sg_sim_llm_server(s->llm, (uint32_t)w)];
    /* A measured stream plants the triggers the scanner fired on at its
     * gap in real text (sg_sim_streams.h): each must fire here too, in a
     * text compressed to text.bytes_per_token, where planted sentences
     * can be adjacent. A few bytes of gap still make a block's fence one
     * trigger with the kernel it closes, as the real gap does. */
    if (s->streams != NULL)
      o.scanner.min_gap_bytes = 16;
    rc = sg_controller_new(&o, &f->ctl, s->err);
    if (rc < 0)
      return rc; /* the message starts with "controller:" */
    sg_interp_set_controller(s->it, (uint32_t)w, f->ctl);
  }
  return 0;
}

static void teardown(sim *s) {
  if (s->wf != NULL)
    for (int w = 0; w < s->p->workflows; w++) {
      sim_wf *f = &s->wf[w];
      sg_controller_free(f->ctl);
      sg_termination_free(f->term);
      sg_search_free(f->search);
      for (size_t i = 0; i < f->ngens; i++)
        free(f->gens[i].text);
      free(f->gens);
    }
  free(s->wf);
  free(s->reqs);
  free(s->dies_us);
  free(s->budgets);
  sg_scheduler_free(s->sched);
  sg_sim_llm_free(s->llm);
  sg_sim_queue_free(&s->q);
  sg_interp_free(s->it);
}

/* Device time since the last event (the state was constant meanwhile):
 * devices not running a request, while requests waited (the split kept
 * them from it) or while nothing waited (no work), and, until the first
 * workflow ends, busy and pool time. */
static void account_idle(sim *s, int64_t now_us) {
  sg_sim_result *r = s->res;
  double dt = (double)(now_us - s->idle_us) / 1e6;
  s->idle_us = now_us;
  if (dt <= 0)
    return;
  sg_sched_capacity c;
  sg_scheduler_capacity(s->sched, &c);
  double idle = (double)(s->p->devices - s->running) * dt;
  if (c.queued_validate + c.queued_profile > 0)
    r->idle_waiting_s += idle;
  else
    r->idle_no_work_s += idle;
  if (r->workflows_done == 0) {
    r->all_live_busy_s += (double)s->running * dt;
    r->all_live_pool_s += (double)s->p->devices * dt;
  }
}

/* A replay stopped where its record was interrupted: every workflow still
 * running ends there. */
static void interrupt(sim *s, int64_t stop_us) {
  s->now_us = stop_us;
  account_idle(s, stop_us);
  sg_scheduler_tick(s->sched, stop_us, NULL);
  for (int w = 0; w < s->p->workflows; w++)
    if (!s->wf[w].done)
      s->wf[w].done_us = stop_us;
  simrp_interrupt(s);
}

/* Starts the workflows not done, and their ticks. */
static int start_workflows(sim *s) {
  int rc = 0;
  for (int w = 0; rc == 0 && w < s->p->workflows; w++) {
    if (!s->wf[w].done) {
      sg_interp_start(s->it, (uint32_t)w);
      if (s->rp)
        sg_interp_drain(s->it);
      rc = it_rc(s);
    }
    if (rc == 0 && !(s->rp && simrp_ticks(s, (uint32_t)w)))
      sim_push(s, s->now_us + sim_s_to_us(s->p->knobs.tick), EV_TICK, (uint32_t)w, 0, 0);
  }
  return rc;
}

/* What a resumed run restores of a workflow (sg_run_resume.c): its
 * kernels with their results, the iterations it ended, its tokens. */
typedef struct wf_saved {
  bool done;
  int64_t done_us;
  sg_ctl_restored *k;
  size_t nk;
  uint32_t ended;
  sg_usage tokens;
} wf_saved;

static void wf_save(sim *s, int w, wf_saved *sv) {
  sv->done = s->wf[w].done;
  sv->done_us = s->wf[w].done_us;
  if (sv->done)
    return;
  const sg_history *h = sg_controller_history(s->wf[w].ctl);
  sv->k = sg_calloc(h->n ? h->n : 1, sizeof *sv->k);
  for (size_t i = 0; i < h->n; i++) {
    const sg_kernel *k = &h->v[i];
    if (k->source == NULL || k->source_len == 0)
      continue; /* the store keeps no such candidate to restore */
    sg_ctl_restored *r = &sv->k[sv->nk++];
    r->iteration = k->iteration;
    r->origin = k->origin;
    r->prefix_len = k->prefix_len;
    r->source = sg_strndup(k->source, k->source_len);
    r->source_len = k->source_len;
    r->validated = k->validated;
    r->validate_status = k->validate_status;
    r->validate_speedup = r->profile_speedup = k->speedup;
    r->validate_message = k->validate_message ? sg_strdup(k->validate_message) : NULL;
    r->profiled = k->profiled;
    r->profile_text = k->profile_text ? sg_strdup(k->profile_text) : NULL;
  }
  sg_ctl_stats cs;
  sg_controller_stats(s->wf[w].ctl, &cs);
  sv->ended = cs.iterations;
  sv->tokens = (sg_usage){cs.prompt_tokens, cs.completion_tokens, cs.cached_tokens};
}

static void wf_saved_free(wf_saved *sv) {
  for (size_t i = 0; i < sv->nk; i++) {
    free((char *)sv->k[i].source);
    free((char *)sv->k[i].validate_message);
    free((char *)sv->k[i].profile_text);
  }
  free(sv->k);
}

/* Restores sv into workflow w's fresh controller. */
static int wf_restore(sim *s, int w, const wf_saved *sv, int64_t wall_us) {
  int rc = 0;
  s->wf[w].done = sv->done;
  s->wf[w].done_us = sv->done_us;
  if (sv->done) {
    sg_interp_set_controller(s->it, (uint32_t)w, NULL);
    return 0;
  }
  for (size_t i = 0; i < sv->nk && rc == 0; i++)
    rc = sg_controller_restore_kernel(s->wf[w].ctl, &sv->k[i], s->err);
  if (rc == 0)
    rc = sg_controller_restore_progress(s->wf[w].ctl, sv->ended, wall_us, &sv->tokens,
                                        s->err);
  return rc;
}

/* A replay's record stopped at stop_us and resumed at resume_us (`specgen
 * run --resume`), as the live run was: what was in flight ends at the stop
 * (generations cancelled, evaluations aborted), nothing runs until the
 * resume, and there a new process begins: fresh controllers, scheduler and
 * interpreter, each unfinished workflow's controller restored with the
 * kernels and progress it had (sg_run_resume.c) and its open iteration
 * begun anew. */
static int resume(sim *s, const sg_knobs *knobs, const char *const *const *lang_entry,
                  int64_t stop_us, int64_t resume_us) {
  s->now_us = stop_us;
  account_idle(s, stop_us);
  sg_scheduler_tick(s->sched, stop_us, NULL);
  simrp_stop_for_resume(s);
  int nw = s->p->workflows;
  wf_saved *sv = sg_calloc((size_t)nw, sizeof *sv);
  for (int w = 0; w < nw; w++)
    wf_save(s, w, &sv[w]);
  teardown(s);
  s->wf = NULL;
  s->reqs = NULL;
  s->nreqs = 0;
  s->running = 0;
  s->budgets = NULL;
  s->dies_us = NULL;
  sg_sim_queue_init(&s->q);
  s->now_us = resume_us;
  int rc = setup(s, knobs, lang_entry);
  for (int w = 0; w < nw; w++) {
    if (rc == 0)
      rc = wf_restore(s, w, &sv[w], stop_us);
    wf_saved_free(&sv[w]);
  }
  free(sv);
  if (rc == 0) {
    account_idle(s, resume_us); /* the gap: nothing ran */
    rc = start_workflows(s);
  }
  return rc;
}

static void finish_stats(sim *s) {
  sg_sim_result *r = s->res;
  const sg_sim_params *p = s->p;
  int64_t end = 0;
  for (int w = 0; w < p->workflows; w++)
    if (s->wf[w].done_us > end)
      end = s->wf[w].done_us;
  r->e2e_s = (double)end / 1e6;
  double lsum = 0;
  for (int w = 0; w < p->workflows; w++)
    lsum += log(fmax(1e-6, (double)s->wf[w].done_us / 1e6));
  r->e2e_geomean_s = exp(lsum / p->workflows);
  sg_scheduler_tick(s->sched, end, NULL);
  sg_sched_stats st;
  sg_scheduler_stats(s->sched, &st);
  double pool = (double)p->devices * (double)end;
  if (pool > 0) {
    r->util_validate = (double)st.busy_us[SG_PHASE_VALIDATE] / pool;
    r->util_profile = (double)st.busy_us[SG_PHASE_PROFILE] / pool;
  }
  r->util_overall = r->util_validate + r->util_profile;
  if (pool > 0) {
    r->idle_waiting = r->idle_waiting_s * 1e6 / pool; /* pool: device-us */
    r->idle_no_work = r->idle_no_work_s * 1e6 / pool;
  }
  if (r->all_live_pool_s > 0)
    r->util_all_live = r->all_live_busy_s / r->all_live_pool_s;
  r->devices_died = 0;
  for (int d = 0; d < p->devices; d++)
    r->devices_died += s->dies_us[d] < end;
  double sum = 0, logsum = 0;
  for (int w = 0; w < p->workflows; w++) {
    sg_ctl_stats cs;
    sg_controller_stats(s->wf[w].ctl, &cs);
    r->controller_profiled += cs.profiled;
    r->controller_early += cs.early_terminations;
    r->forks_trigger += cs.forks_by_reason[SG_REASON_FORK_TRIGGER];
    r->forks_idle += cs.forks_by_reason[SG_REASON_FORK_IDLE];
    r->detached += cs.detached;
    r->detached_answers += cs.detached_answers;
    r->sibling_waits += cs.sibling_waits;
    r->ahead_started += cs.ahead_started;
    r->ahead_adopted += cs.ahead_adopted;
    r->ahead_stale += cs.ahead_stale;
    r->ahead_stale_items += cs.ahead_stale_items;
    const sg_history *h = sg_controller_history(s->wf[w].ctl);
    const sg_kernel *k = h->best_id ? sg_history_get(h, h->best_id) : NULL;
    /* A workflow that never profiled a kernel keeps the reference: 1.0
     * (and is counted, so the fallback is visible). */
    double best = 1.0;
    if (k != NULL && isfinite(k->speedup) && k->speedup > 0)
      best = k->speedup;
    else
      r->workflows_without_kernel++;
    sum += best;
    logsum += log(best);
  }
  r->best_speedup_mean = sum / p->workflows;
  r->best_speedup_geomean = exp(logsum / p->workflows);
  sg_sim_llm_stats ls;
  sg_sim_llm_stats_get(s->llm, &ls);
  r->cache_local_tokens = ls.local_hit_tokens;
  r->cache_remote_tokens = ls.remote_hit_tokens;
  r->cache_miss_tokens = ls.miss_tokens;
  r->remote_transfer_gb = ls.transfer_bytes / 1e9;
  r->remote_transfer_s = ls.transfer_s;
  r->remote_yields = ls.yields;
  r->llm_mean_streams = end > 0 ? ls.stream_s / ((double)end / 1e6) : 0;
}

int sg_sim_run(const sg_sim_params *p, const sg_sim_variant *v,
               sg_sim_result *out, sg_err *err) {
  return sg_sim_run_traced(p, v, NULL, NULL, out, err);
}

int sg_sim_run_traced(const sg_sim_params *p, const sg_sim_variant *v,
                      void (*trace)(void *data, const char *line), void *trace_data,
                      sg_sim_result *out, sg_err *err) {
  return sim_campaign(p, v, NULL, NULL, NULL, trace, trace_data, out, err);
}

/* Longer than 80 lines on purpose: the campaign's event loop and its
 * dispatch, read in one place. */
int sim_campaign(const sg_sim_params *p, const sg_sim_variant *v, sim_replay *rp,
                 const sg_knobs *knobs, const char *const *const *lang_entry,
                 void (*trace)(void *data, const char *line), void *trace_data,
                 sg_sim_result *out, sg_err *err) {
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%s", v->name);
  int rc = sg_sim_params_validate(p, err);
  if (rc < 0)
    return rc;
  sim s;
  memset(&s, 0, sizeof s);
  s.p = p;
  s.v = v;
  s.res = out;
  s.err = err;
  s.bpt = p->text_bytes_per_token;
  s.trace = trace;
  s.trace_data = trace_data;
  s.rp = rp;
  if (!sg_sim_streams_none(p->stream_profile)) {
    rc = sg_sim_streams_load(p->stream_profile, &s.streams_data, err);
    if (rc < 0)
      return rc;
    s.streams = &s.streams_data;
  }
  sg_sim_queue_init(&s.q);
  rc = setup(&s, knobs, lang_entry);
  if (rc == 0)
    rc = start_workflows(&s);
  /* A guard against a campaign that never ends: far beyond any plausible
   * length (every iteration 50 times its mean). */
  double guard_s = 50.0 * p->knobs.iterations *
                       (p->gen_mean_s + p->val_mean_s + p->prof_mean_s + p->compile_s +
                        p->knobs.tick) +
                   86400.0;
  int64_t guard_us = sim_s_to_us(guard_s);
  int64_t stop_us = rp ? simrp_stop_us(&s) : 0;
  sg_sim_event e;
  while (rc == 0 && out->workflows_done < (uint64_t)p->workflows) {
    bool popped = sg_sim_queue_pop(&s.q, &e);
    if (stop_us > 0 && (!popped || e.t_us >= stop_us)) {
      int64_t resume_us = simrp_resume_us(&s);
      if (resume_us > 0) { /* stopped there, resumed later */
        rc = resume(&s, knobs, lang_entry, stop_us, resume_us);
        stop_us = simrp_stop_us(&s);
        continue;
      }
      interrupt(&s, stop_us); /* the record ends there: nothing more after it */
      break;
    }
    if (!popped) {
      rc = sg_err_set(err, SG_ESTATE,
                      "the campaign stalled at t=%.1f s with %llu of %d workflows done",
                      (double)s.now_us / 1e6, (unsigned long long)out->workflows_done,
                      p->workflows);
      break;
    }
    assert(e.t_us >= s.now_us);
    s.now_us = e.t_us;
    if (rp)
      simrp_fork_caps(&s); /* the recorded caps due by now */
    if (s.now_us > guard_us) {
      rc = sg_err_set(err, SG_ETIMEDOUT, "virtual time passed the guard of %.0f s",
                      guard_s);
      break;
    }
    out->events++;
    account_idle(&s, s.now_us);
    sg_scheduler_tick(s.sched, s.now_us, NULL);
    switch (e.type) {
    case EV_CHUNK:
      rc = rp ? simrp_on_chunk(&s, &e) : on_chunk(&s, &e);
      break;
    case EV_GEN_END:
      rc = rp ? simrp_on_gen_end(&s, &e) : on_gen_end(&s, &e);
      break;
    case EV_COMPILE_END:
      rc = on_compile_end(&s, &e);
      break;
    case EV_DEVICE_END:
      rc = on_device_end(&s, &e);
      break;
    case EV_EVAL_FAIL: {
      sg_ctl_event ev;
      eval_event(&s, &ev, e.id, (sg_phase)e.epoch, SG_EVAL_INFRA_ERROR, NAN,
                 "simulated: no device could run it");
      rc = ctl_call(&s, e.owner, &ev);
      break;
    }
    case EV_TICK:
      rc = on_tick(&s, &e);
      break;
    default:
      assert(0 && "unknown event type");
    }
    if (rc == 0 && rp) { /* a replay's answers known at once wait there */
      sg_interp_drain(s.it);
      rc = it_rc(&s);
    }
  }
  if (rc == 0)
    finish_stats(&s);
  if (rc == 0 && rp)
    simrp_finish(&s);
  teardown(&s);
  return rc;
}
