/* test_core_props.c: properties of the decision core over many seeds.
 *
 * A tiny random driver plays the world for several controllers sharing one
 * scheduler: generations stream random reasoning (some of it triggers) and
 * end with a kernel, with no kernel, or fail; compiles and device runs end
 * at random, some with infra failures that kill devices. Every event the
 * driver makes is legal (it only advances what the core started). After
 * every step it checks:
 *   - no candidate is submitted twice for the same phase;
 *   - no device runs two requests; the driver's view and the scheduler's agree;
 *   - no request is started (compile or device) for an ended iteration;
 *   - every cancel names a generation that is still running;
 * and at the end: every workflow finished, within its budgets, with none of
 * its generations still running (a main a cutoff detached included). The
 * options beyond the paper (cutoff, detached mains, fork gate, deciding at
 * validation, waiting for a fork's siblings there, the next iteration's
 * main started ahead) are drawn too, and the driver must reach the
 * detached, the waiting and the adopted and dropped ahead paths.
 * Also here: the sources and headers of src/core include only the core,
 * src/common's pure parts and standard C headers.
 */
#include "common/sg_hash.h"
#include "common/sg_rng.h"
#include "core/sg_controller.h"
#include "core/sg_scheduler.h"

#include "sg_test.h"

#include <dirent.h>

#define MAX_WF 4
#define MAX_GENS 4096
#define MAX_REQS 65536
#define MAX_CANDS 4096
#define MAX_EVENTS 4096

typedef struct rng {
  uint64_t s;
} rng;

static uint64_t rnd(rng *r) { return sg_splitmix64(&r->s); }
static int below(rng *r, int n) { return (int)(rnd(r) % (uint64_t)n); }
static bool chance(rng *r, int percent) { return below(r, 100) < percent; }

typedef struct wgen {
  int wf;
  uint64_t id;
  sg_gen_kind kind;
  int chunks_left;
  int fate; /* 0 kernel, 1 no kernel, 2 fails */
  bool live;
} wgen;

typedef struct wreq {
  int wf;
  uint64_t cand;
  sg_phase phase;
  uint32_t iteration;
  int where; /* 0 queued/none, 1 compiling, 2 running */
  int device;
} wreq;

typedef struct qev {
  int wf;
  sg_ctl_event ev;
} qev;

typedef struct world {
  rng r;
  int nwf;
  sg_termination_registry treg;
  sg_search_registry sreg;
  sg_termination *term[MAX_WF];
  sg_search *search[MAX_WF];
  sg_controller *c[MAX_WF];
  sg_ctl_opts opts[MAX_WF];
  sg_scheduler *s;
  int devices;
  int64_t now;
  wgen gens[MAX_GENS];
  int ngens;
  wreq reqs[MAX_REQS + 1];
  sg_req_id dev_busy[64];
  uint8_t submitted[MAX_WF][MAX_CANDS]; /* bit per phase */
  qev q[MAX_EVENTS];
  int qhead, qtail;
  sg_ctl_actions ca;
  sg_sched_actions sa;
  uint32_t iter[MAX_WF];  /* each workflow's iteration, as announced */
  bool done[MAX_WF];
  int fault_gen, fault_infra, fault_compile; /* percent */
  uint64_t steps, forks, early, dead, aborted;
  uint64_t cutoffs, detached, detached_answers, sibling_waits, ahead_started, ahead_adopted;
  uint64_t resplits, resplits_after_first_done;
  uint64_t trace; /* a hash of every action, in order */
} world;

static void mix(world *w, uint64_t x) {
  w->trace = sg_fnv1a64_update(w->trace, &x, sizeof x);
}

static const char *const reasoning_pool[] = {
    "First I think about the problem in general terms here.\n",
    "Let me implement the kernel now.\n",
    "I will use a tile size of 32x32 for the shared memory blocks.\n",
    "Each thread computes one output element, with 256 threads per block.\n",
    "Hmm, wait, that is not right. Let me reconsider the indexing.\n",
    "```c\nvoid hinge(float *x) { x[0] = 2; }\n```\n",
    "Here is the plan: unroll the inner loop by four.\n",
    "The reduction is the bottleneck, so ",
};
#define CODE "```c\nvoid hinge(float *x) { x[0] = 1; }\n```\n"

static void push_event(world *w, int wf, const sg_ctl_event *ev) {
  SG_CHECK(w->qtail - w->qhead < MAX_EVENTS);
  w->q[w->qtail % MAX_EVENTS].wf = wf;
  w->q[w->qtail % MAX_EVENTS].ev = *ev;
  w->qtail++;
}

static wgen *find_gen(world *w, int wf, uint64_t id) {
  for (int i = 0; i < w->ngens; i++)
    if (w->gens[i].wf == wf && w->gens[i].id == id && w->gens[i].live)
      return &w->gens[i];
  return NULL;
}

static void run_sched_actions(world *w);

static void sched_submit(world *w, int wf, const sg_ctl_action *a) {
  uint64_t cand = a->u.submit.candidate;
  SG_CHECK(cand >= 1 && cand < MAX_CANDS);
  uint8_t bit = (uint8_t)(1u << a->u.submit.phase);
  SG_CHECK_MSG(!(w->submitted[wf][cand] & bit),
               "workflow %d: candidate %llu submitted twice for %s", wf,
               (unsigned long long)cand, sg_phase_name(a->u.submit.phase));
  w->submitted[wf][cand] |= bit;
  SG_CHECK(a->u.submit.source != NULL && a->u.submit.source_len > 0);
  sg_sched_request rq = {(uint32_t)wf, a->iteration, a->u.submit.phase, cand,
                         a->u.submit.phase == SG_PHASE_VALIDATE};
  sg_req_id id;
  sg_err err;
  sg_err_clear(&err);
  sg_sched_actions_clear(&w->sa);
  SG_CHECK_OK(sg_scheduler_submit(w->s, &rq, w->now, &id, &w->sa, &err), err);
  SG_CHECK(id >= 1 && id <= MAX_REQS);
  w->reqs[id] = (wreq){wf, cand, a->u.submit.phase, a->iteration, 0, -1};
  run_sched_actions(w);
}

static void check_budgets(world *w, int wf, const sg_ctl_action *a) {
  sg_ctl_stats st;
  sg_controller_stats(w->c[wf], &st);
  const sg_ctl_opts *o = &w->opts[wf];
  SG_CHECK(o->max_iterations == 0 || st.iterations <= o->max_iterations);
  if (o->max_wall_us > 0)
    SG_CHECK_MSG(st.end_us - st.start_us <= o->max_wall_us + 1000,
                 "workflow %d ran %lld us past a %lld us budget", wf,
                 (long long)(st.end_us - st.start_us),
                 (long long)o->max_wall_us);
  if (a->u.done.reason == SG_REASON_BUDGET_ITERATIONS)
    SG_CHECK_EQ_INT(st.iterations, o->max_iterations);
}

static void run_ctl_actions(world *w, int wf, sg_ctl_actions *acts) {
  /* a copy: the batch stays stable while its actions run */
  size_t n = acts->n;
  sg_ctl_action *v = malloc(n * sizeof *v + 1);
  if (n > 0)
    memcpy(v, acts->v, n * sizeof *v);
  for (size_t i = 0; i < n; i++) {
    const sg_ctl_action *a = &v[i];
    sg_err err;
    sg_err_clear(&err);
    mix(w, (uint64_t)wf << 32 | (uint64_t)a->type << 16 | a->iteration);
    mix(w, a->type == SG_CACT_START_GEN     ? a->u.start.gen ^ a->u.start.prefix_len
           : a->type == SG_CACT_SUBMIT_EVAL ? a->u.submit.candidate
           : a->type == SG_CACT_CANCEL_GEN  ? a->u.cancel.gen
                                            : 0);
    switch (a->type) {
    case SG_CACT_START_GEN: {
      SG_CHECK(w->ngens < MAX_GENS);
      if (a->u.start.kind == SG_GEN_SPEC) {
        SG_CHECK(!a->u.start.thinking && a->u.start.prefix_len > 0);
        SG_CHECK(a->u.start.prefix != NULL);
        w->forks++;
      }
      wgen *g = &w->gens[w->ngens++];
      g->wf = wf;
      g->id = a->u.start.gen;
      g->kind = a->u.start.kind;
      g->chunks_left = 1 + below(&w->r, 8);
      int f = below(&w->r, 100);
      g->fate = f < w->fault_gen ? 2 : f < w->fault_gen + 25 ? 1 : 0;
      g->live = true;
      break;
    }
    case SG_CACT_CANCEL_GEN: {
      wgen *g = find_gen(w, wf, a->u.cancel.gen);
      SG_CHECK_MSG(g != NULL, "cancel of a generation not running");
      g->live = false;
      break;
    }
    case SG_CACT_SUBMIT_EVAL:
      sched_submit(w, wf, a);
      break;
    case SG_CACT_END_ITERATION:
      if (a->u.end.reason == SG_REASON_EARLY)
        w->early++;
      w->cutoffs += a->u.end.reason == SG_REASON_CUTOFF;
      sg_sched_actions_clear(&w->sa);
      SG_CHECK_OK(sg_scheduler_iteration_boundary(
                      w->s, (uint32_t)wf, a->iteration + 1, w->now, &w->sa,
                      &err),
                  err);
      run_sched_actions(w);
      SG_CHECK_EQ_INT(a->iteration, w->iter[wf]);
      w->iter[wf] = a->iteration + 1;
      /* nothing of the ended iteration is left in flight */
      for (sg_req_id id = 1; id <= MAX_REQS; id++) {
        const wreq *r = &w->reqs[id];
        if (r->cand == 0)
          break; /* ids are dense: past the last request */
        if (r->wf == wf && r->iteration == a->iteration && r->where != 0)
          SG_FAIL("request %llu of an ended iteration still in flight",
                  (unsigned long long)id);
      }
      break;
    case SG_CACT_WORKFLOW_DONE:
      check_budgets(w, wf, a);
      w->done[wf] = true;
      sg_sched_actions_clear(&w->sa);
      SG_CHECK_OK(sg_scheduler_workflow_done(w->s, (uint32_t)wf, w->now,
                                             &w->sa, &err),
                  err);
      run_sched_actions(w);
      break;
    case SG_CACT_DECISION:
      if (a->u.decision.reason == SG_REASON_FORK_TRIGGER ||
          a->u.decision.reason == SG_REASON_FORK_IDLE)
        SG_CHECK(a->u.decision.k >= 1 && a->u.decision.prefix_len > 0);
      break;
    default:
      SG_FAIL("unknown controller action %d", (int)a->type);
    }
  }
  free(v);
}

/* A request may start only in its workflow's current iteration, as the
 * runtime knows it: the last END_ITERATION executed. */
static void check_current(world *w, const sg_sched_action *a) {
  int wf = (int)a->workflow;
  SG_CHECK(!w->done[wf]);
  SG_CHECK_MSG(a->iteration == w->iter[wf],
               "request %llu of iteration %u started in iteration %u",
               (unsigned long long)a->req, a->iteration, w->iter[wf]);
}

static void run_sched_actions(world *w) {
  size_t n = w->sa.n;
  sg_sched_action *v = malloc(n * sizeof *v + 1);
  if (n > 0)
    memcpy(v, w->sa.v, n * sizeof *v);
  for (size_t i = 0; i < n; i++) {
    const sg_sched_action *a = &v[i];
    wreq *r = a->req ? &w->reqs[a->req] : NULL;
    mix(w, (uint64_t)a->type << 48 ^ a->req << 8 ^ (uint64_t)(a->device + 1));
    switch (a->type) {
    case SG_SACT_START_COMPILE:
      check_current(w, a);
      SG_CHECK(r->where == 0);
      r->where = 1;
      break;
    case SG_SACT_START_DEVICE:
      check_current(w, a);
      SG_CHECK(a->device >= 0 && a->device < w->devices);
      SG_CHECK_MSG(w->dev_busy[a->device] == 0,
                   "device %d given request %llu while running %llu",
                   a->device, (unsigned long long)a->req,
                   (unsigned long long)w->dev_busy[a->device]);
      SG_CHECK(r->where == 0);
      w->dev_busy[a->device] = a->req;
      r->where = 2;
      r->device = a->device;
      break;
    case SG_SACT_ABORT:
      w->aborted++;
      if (r->where == 2) {
        SG_CHECK_EQ_INT(a->device, r->device);
        w->dev_busy[r->device] = 0;
      }
      SG_CHECK(a->was_compiling == (r->where == 1));
      r->where = 0;
      r->device = -1;
      break;
    case SG_SACT_FAIL: {
      SG_CHECK(r->where == 0);
      sg_ctl_event e = {.type = SG_CEV_EVAL_DONE, .now_us = w->now};
      e.u.eval.candidate = r->cand;
      e.u.eval.phase = r->phase;
      e.u.eval.status = SG_EVAL_INFRA_ERROR;
      e.u.eval.speedup = NAN;
      push_event(w, r->wf, &e);
      break;
    }
    case SG_SACT_DEVICE_DEAD:
      w->dead++;
      break;
    case SG_SACT_RESPLIT:
      SG_CHECK(a->validate_devices >= 1 && a->profile_devices >= 1);
      /* kept under the workflow that caused it: one still live */
      SG_CHECK((int)a->workflow < w->nwf);
      SG_CHECK_MSG(!w->done[a->workflow], "a re-split names workflow %u, which is done",
                   a->workflow);
      w->resplits++;
      if (w->done[0])
        w->resplits_after_first_done++;
      break;
    }
  }
  free(v);
}

static void deliver(world *w) {
  while (w->qhead < w->qtail) {
    qev e = w->q[w->qhead % MAX_EVENTS];
    w->qhead++;
    sg_controller *c = w->c[e.wf];
    sg_sched_capacity cap;
    sg_scheduler_capacity(w->s, &cap);
    sg_controller_set_capacity(c, &cap);
    sg_err err;
    sg_err_clear(&err);
    sg_ctl_actions_clear(&w->ca);
    SG_CHECK_OK(sg_controller_event(c, &e.ev, &w->ca, &err), err);
    sg_ctl_actions mine = w->ca; /* run_ctl_actions copies the batch */
    run_ctl_actions(w, e.wf, &mine);
  }
}

/* One random step of the world. */
static void step(world *w) {
  w->now += 1 + below(&w->r, 1000);
  sg_scheduler_tick(w->s, w->now, NULL);
  int what = below(&w->r, 10);
  sg_err err;
  sg_err_clear(&err);
  if (what < 5) { /* a generation streams or ends */
    int live[MAX_GENS], n = 0;
    for (int i = 0; i < w->ngens; i++)
      if (w->gens[i].live)
        live[n++] = i;
    if (n > 0) {
      wgen *g = &w->gens[live[below(&w->r, n)]];
      sg_ctl_event e = {.now_us = w->now};
      if (g->chunks_left > 0) {
        g->chunks_left--;
        const char *t = reasoning_pool[below(
            &w->r, (int)(sizeof reasoning_pool / sizeof reasoning_pool[0]))];
        e.type = SG_CEV_GEN_CHUNK;
        e.u.chunk.gen = g->id;
        if (g->kind == SG_GEN_MAIN) {
          e.u.chunk.reasoning = t;
          e.u.chunk.reasoning_len = strlen(t);
        } else {
          e.u.chunk.content = "thinking aloud ";
          e.u.chunk.content_len = 15;
        }
        e.u.chunk.tokens = 1 + (uint64_t)below(&w->r, 40);
      } else if (g->fate == 2) {
        g->live = false;
        e.type = SG_CEV_GEN_FAILED;
        e.u.failed.gen = g->id;
        e.u.failed.error = SG_ECONN;
        e.u.failed.usage.prompt_tokens = 50;
      } else {
        g->live = false;
        e.type = SG_CEV_GEN_FINISHED;
        e.u.finished.gen = g->id;
        e.u.finished.text = g->fate == 0 ? CODE : "I give up.";
        e.u.finished.len = strlen(e.u.finished.text);
        e.u.finished.usage.prompt_tokens = 100;
        e.u.finished.usage.completion_tokens = 1 + (uint64_t)below(&w->r, 300);
      }
      push_event(w, g->wf, &e);
    }
  } else if (what < 7) { /* a compile ends */
    sg_req_id ids[64];
    int n = 0;
    for (sg_req_id id = 1; id <= MAX_REQS && n < 64; id++) {
      if (w->reqs[id].cand == 0)
        break;
      if (w->reqs[id].where == 1)
        ids[n++] = id;
    }
    if (n > 0) {
      sg_req_id id = ids[below(&w->r, n)];
      wreq *r = &w->reqs[id];
      bool ok = !chance(&w->r, w->fault_compile);
      r->where = 0;
      sg_sched_actions_clear(&w->sa);
      SG_CHECK_OK(sg_scheduler_compiled(w->s, id, ok, w->now, &w->sa, &err),
                  err);
      if (!ok) {
        sg_ctl_event e = {.type = SG_CEV_EVAL_DONE, .now_us = w->now};
        e.u.eval.candidate = r->cand;
        e.u.eval.phase = r->phase;
        e.u.eval.status = SG_EVAL_COMPILE_ERROR;
        e.u.eval.speedup = NAN;
        e.u.eval.message = "error: expected ';'";
        push_event(w, r->wf, &e);
      }
      run_sched_actions(w);
    }
  } else if (what < 9) { /* a device run ends */
    int busy[64], n = 0;
    for (int d = 0; d < w->devices; d++)
      if (w->dev_busy[d] != 0)
        busy[n++] = d;
    if (n > 0) {
      int d = busy[below(&w->r, n)];
      sg_req_id id = w->dev_busy[d];
      wreq *r = &w->reqs[id];
      bool infra = chance(&w->r, w->fault_infra);
      w->dev_busy[d] = 0;
      r->where = 0;
      r->device = -1;
      sg_sched_actions_clear(&w->sa);
      SG_CHECK_OK(sg_scheduler_device_done(w->s, id, infra, w->now, &w->sa,
                                           &err),
                  err);
      if (!infra) {
        sg_ctl_event e = {.type = SG_CEV_EVAL_DONE, .now_us = w->now};
        e.u.eval.candidate = r->cand;
        e.u.eval.phase = r->phase;
        bool valid = r->phase == SG_PHASE_PROFILE || chance(&w->r, 60);
        e.u.eval.status = valid ? SG_EVAL_OK : SG_EVAL_NUMERICAL_ERROR;
        e.u.eval.speedup = valid ? 0.2 + (double)below(&w->r, 300) / 100.0
                                 : NAN;
        push_event(w, r->wf, &e);
      }
      run_sched_actions(w);
    }
  } /* else: only time passes */
  deliver(w);
  /* a tick for every controller, every step (so budgets are seen late by
   * at most one step) */
  sg_sched_capacity cap;
  sg_scheduler_capacity(w->s, &cap);
  for (int wf = 0; wf < w->nwf; wf++) {
    sg_ctl_event e = {.type = SG_CEV_TICK, .now_us = w->now};
    e.u.tick.capacity = cap;
    push_event(w, wf, &e);
  }
  deliver(w);
  /* the driver's view of the devices is the scheduler's */
  for (int d = 0; d < w->devices; d++)
    SG_CHECK_EQ_INT(sg_scheduler_device_request(w->s, d), w->dev_busy[d]);
  w->steps++;
}

static bool all_done(const world *w) {
  for (int wf = 0; wf < w->nwf; wf++)
    if (sg_controller_state(w->c[wf]) != SG_CTL_DONE)
      return false;
  return true;
}

static const char *const criteria[] = {"first-valid", "hist-avg", "hist-best",
                                       "none"};

static void run_seed(uint64_t seed, int fault_gen, int fault_infra,
                     int max_devices, world *w) {
  memset(w, 0, sizeof *w);
  w->r.s = seed;
  w->fault_gen = fault_gen;
  w->fault_infra = fault_infra;
  w->fault_compile = 10;
  w->nwf = 1 + below(&w->r, MAX_WF);
  sg_err err;
  sg_err_clear(&err);
  sg_sched_opts so;
  sg_sched_opts_default(&so);
  w->devices = so.devices = 1 + below(&w->r, max_devices);
  so.compile_slots = 1 + below(&w->r, 3);
  so.elastic = chance(&w->r, 70);
  so.validate_lifo = chance(&w->r, 70);
  so.max_infra_failures = 1 + below(&w->r, 3);
  so.max_retries = below(&w->r, 3);
  SG_CHECK_OK(sg_scheduler_new(&so, &w->s, &err), err);
  sg_termination_registry_init(&w->treg);
  sg_search_registry_init(&w->sreg);
  for (int wf = 0; wf < w->nwf; wf++) {
    SG_CHECK_OK(sg_termination_new(&w->treg, criteria[below(&w->r, 4)],
                                   &w->term[wf], &err),
                err);
    bool refine = chance(&w->r, 70);
    SG_CHECK_OK(sg_search_new(&w->sreg, refine ? "refine" : "best-of-n:2", seed,
                              &w->search[wf], &err),
                err);
    sg_ctl_opts *o = &w->opts[wf];
    sg_ctl_opts_default(o);
    o->search = w->search[wf];
    o->termination = w->term[wf];
    o->language = "c";
    o->entry = "hinge";
    o->speculate = chance(&w->r, 85);
    o->idle_min_new_bytes = (uint64_t)below(&w->r, 200);
    o->max_live_forks = 1 + below(&w->r, 6);
    o->max_forks_per_iteration = 1 + below(&w->r, 12);
    o->max_iterations = 1 + (uint32_t)below(&w->r, 4);
    if (chance(&w->r, 30))
      o->max_wall_us = 20000 + below(&w->r, 200000);
    if (chance(&w->r, 30))
      o->max_tokens = 200 + (uint64_t)below(&w->r, 3000);
    o->scanner.min_gap_bytes = (uint64_t)below(&w->r, 100);
    /* the policies beyond the paper, drawn last (the draws above are the
     * earlier versions' own) */
    if (chance(&w->r, 40)) {
      o->cutoff = 0.05 * (1 + below(&w->r, 30));
      o->cutoff_detach = chance(&w->r, 60);
      /* long enough for SG_CTL_GATE_WINDOW forks to validate */
      o->max_iterations = 10 + (uint32_t)below(&w->r, 20);
    }
    if (chance(&w->r, 30))
      o->fork_gate = 0.1 * (1 + below(&w->r, 10));
    if (chance(&w->r, 30)) {
      o->decide_at_validation = 1 + 0.25 * below(&w->r, 5);
      o->decide_with_siblings = chance(&w->r, 50);
    }
    o->next_ahead = refine && chance(&w->r, 40);
    SG_CHECK_OK(sg_controller_new(o, &w->c[wf], &err), err);
  }
  sg_ctl_actions_init(&w->ca);
  sg_sched_actions_init(&w->sa);
  for (int wf = 0; wf < w->nwf; wf++) {
    sg_ctl_actions_clear(&w->ca);
    SG_CHECK_OK(sg_controller_start(w->c[wf], w->now, &w->ca, &err), err);
    sg_ctl_actions mine = w->ca;
    run_ctl_actions(w, wf, &mine);
  }
  for (int i = 0; i < 200000 && !all_done(w); i++)
    step(w);
  SG_CHECK_MSG(all_done(w), "seed %llu: not done after %llu steps",
               (unsigned long long)seed, (unsigned long long)w->steps);
  /* every request ended: nothing left on a device or compiling */
  for (int d = 0; d < w->devices; d++)
    SG_CHECK_EQ_INT(w->dev_busy[d], 0);
  for (int wf = 0; wf < w->nwf; wf++) {
    sg_ctl_stats st;
    sg_controller_stats(w->c[wf], &st);
    w->detached += st.detached;
    w->detached_answers += st.detached_answers;
    w->sibling_waits += st.sibling_waits;
    w->ahead_started += st.ahead_started;
    w->ahead_adopted += st.ahead_adopted;
    /* a detached main never outlives its workflow */
    for (int i = 0; i < w->ngens; i++)
      SG_CHECK_MSG(w->gens[i].wf != wf || !w->gens[i].live,
                   "seed %llu: generation %llu of a finished workflow still runs",
                   (unsigned long long)seed, (unsigned long long)w->gens[i].id);
    sg_controller_free(w->c[wf]);
    sg_termination_free(w->term[wf]);
    sg_search_free(w->search[wf]);
  }
  sg_scheduler_free(w->s);
  sg_ctl_actions_free(&w->ca);
  sg_sched_actions_free(&w->sa);
}

static world the_world; /* large: keep it off the stack */

static void test_props_many_seeds(void) {
  uint64_t forks = 0, early = 0, late_resplits = 0, cutoffs = 0, detached = 0,
           answers = 0, waits = 0, ahead = 0, adopted = 0;
  for (uint64_t seed = 1; seed <= 300; seed++) {
    run_seed(seed, 5, 2, 8, &the_world);
    forks += the_world.forks;
    early += the_world.early;
    late_resplits += the_world.resplits_after_first_done;
    cutoffs += the_world.cutoffs;
    detached += the_world.detached;
    answers += the_world.detached_answers;
    waits += the_world.sibling_waits;
    ahead += the_world.ahead_started;
    adopted += the_world.ahead_adopted;
  }
  SG_CHECK_MSG(cutoffs >= 5 && detached >= 3 && answers >= 1,
               "%llu cutoffs, %llu detached, %llu answered", (unsigned long long)cutoffs,
               (unsigned long long)detached, (unsigned long long)answers);
  SG_CHECK_MSG(waits >= 3, "%llu waits for siblings", (unsigned long long)waits);
  SG_CHECK_MSG(adopted >= 100 && ahead > adopted + 50, "%llu mains started ahead, %llu adopted",
               (unsigned long long)ahead, (unsigned long long)adopted);
  /* the driver reaches the interesting paths, or it proves nothing */
  SG_CHECK(forks > 100);
  SG_CHECK(early > 10);
  SG_CHECK(late_resplits > 0); /* re-splits after workflow 0 ended */
}

static void test_props_with_faults(void) {
  uint64_t dead = 0, aborted = 0;
  for (uint64_t seed = 1000; seed < 1200; seed++) {
    run_seed(seed, 30, 35, 6, &the_world);
    dead += the_world.dead;
    aborted += the_world.aborted;
  }
  SG_CHECK(dead > 20);
  SG_CHECK(aborted > 20);
}

/* The core draws no randomness and reads no clock: the same seed gives the
 * same actions, in the same order. */
static void test_props_deterministic(void) {
  for (uint64_t seed = 77; seed < 97; seed++) {
    run_seed(seed, 20, 20, 8, &the_world);
    uint64_t first = the_world.trace, steps = the_world.steps;
    run_seed(seed, 20, 20, 8, &the_world);
    SG_CHECK_MSG(the_world.trace == first && the_world.steps == steps,
                 "seed %llu: two runs differ", (unsigned long long)seed);
    SG_CHECK(first != 0);
  }
}

static void test_props_one_device(void) {
  for (uint64_t seed = 5000; seed < 5100; seed++)
    run_seed(seed, 10, 5, 1, &the_world);
}

/* src/core is pure: its sources and headers include only the core, the
 * parts of src/common without I/O or clocks, and standard C headers that do
 * no I/O of their own (<stdio.h> for snprintf; <pthread.h>: pthread_once
 * builds an immutable shared table). Nothing from eval/, llm/, runtime/ or
 * any library; core_links_alone checks the link. */
static bool include_allowed(const char *line) {
  static const char *const allowed[] = {
      "\"core/",         "\"common/sg_alloc.h\"", "\"common/sg_buf.h\"",
      "\"common/sg_error.h\"", "\"common/sg_hash.h\"", "\"common/sg_rng.h\"",
      "<assert.h>", "<ctype.h>", "<errno.h>",
      "<float.h>",  "<inttypes.h>", "<limits.h>", "<math.h>", "<stdarg.h>",
      "<stdbool.h>", "<stddef.h>", "<stdint.h>", "<stdio.h>", "<stdlib.h>",
      "<string.h>", "<pthread.h>"};
  const char *p = line + strlen("#include");
  while (*p == ' ')
    p++;
  for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
    if (strncmp(p, allowed[i], strlen(allowed[i])) == 0)
      return true;
  return false;
}

static void test_core_includes_only_the_core(void) {
  /* the rule itself, on lines it must refuse and accept */
  SG_CHECK(!include_allowed("#include \"eval/sg_eval.h\""));
  SG_CHECK(!include_allowed("#include <jansson.h>"));
  SG_CHECK(!include_allowed("#include <time.h>"));
  SG_CHECK(!include_allowed("#include \"common/sg_clock.h\""));
  SG_CHECK(include_allowed("#include \"core/sg_outcome.h\""));
  /* the pure shared pieces, so that none is copied into the core */
  SG_CHECK(include_allowed("#include \"common/sg_hash.h\""));
  SG_CHECK(include_allowed("#include \"common/sg_rng.h\""));
  SG_CHECK(include_allowed("#include <stdint.h>"));
  const char *dir = SG_SOURCE_ROOT "/src/core";
  DIR *d = opendir(dir);
  SG_CHECK(d != NULL);
  int checked_c = 0, checked_h = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    bool is_c = n > 2 && strcmp(e->d_name + n - 2, ".c") == 0;
    bool is_h = n > 2 && strcmp(e->d_name + n - 2, ".h") == 0;
    if (!is_c && !is_h)
      continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    SG_CHECK(f != NULL);
    char line[1024];
    while (fgets(line, sizeof line, f) != NULL) {
      if (strncmp(line, "#include", 8) != 0)
        continue;
      line[strcspn(line, "\n")] = '\0';
      SG_CHECK_MSG(include_allowed(line), "src/core/%s: %s: not allowed in the core",
                   e->d_name, line);
    }
    fclose(f);
    checked_c += is_c;
    checked_h += is_h;
  }
  closedir(d);
  SG_CHECK(checked_c >= 4 && checked_h >= 4);
}

SG_TEST_MAIN(SG_TEST(test_props_many_seeds), SG_TEST(test_props_with_faults),
             SG_TEST(test_props_one_device),
             SG_TEST(test_props_deterministic),
             SG_TEST(test_core_includes_only_the_core))
