/* test_interp.c: the action interpreter (sg_interp.h), with the real
 * controller and scheduler and a runtime of counters: every kind of action
 * of both reaches its op in order (the trace shows it), a cancelled main
 * marks its iteration's end, a submission the runtime answers or the
 * scheduler refuses never becomes a request, made-up events wait for the
 * drain and for holds, an op's or a controller's error is fatal (the first
 * wins, named by ops.describe) and stops everything after it; and the
 * deduplication: a kernel whose evaluation is in flight is not submitted
 * again, its copies get the leader's result, a leader withdrawn at its
 * iteration's end leaves nothing for a later copy to join, and without
 * ops.joined nothing is joined. */
#include "core/sg_interp.h"
#include "core/sg_search.h"
#include "core/sg_termination.h"

#include "sg_test.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define KERNEL_A "Here it is.\n```c\nvoid hinge(float *x) { x[0] = 1; }\n```\n"
/* A's kernel with line-end blanks and CRLF: the same kernel. */
#define KERNEL_A2 "Again.\n```c\r\nvoid hinge(float *x) { x[0] = 1; }   \r\n```\n"
#define KERNEL_B "Or this.\n```c\nvoid hinge(float *x) { x[0] = 2; }\n```\n"

#define MAX_REQ 64

typedef struct world {
  sg_termination_registry treg;
  sg_search_registry sreg;
  sg_termination *term;
  sg_search *search;
  sg_controller *ctl;
  sg_scheduler *sched;
  sg_interp *it;
  sg_err err;
  int64_t now;
  uint64_t gens[16];        /* started main generations, in order */
  int ngens;
  uint64_t req_cand[MAX_REQ]; /* request id -> candidate */
  sg_phase req_phase[MAX_REQ];
  int submits, joins, aborts, iteration_ends;
  uint64_t last_join_cand, last_join_leader;
  sg_req_id last_join_req;
  sg_phase last_join_phase;
  /* the other ops */
  int cancels, main_cancels, decisions, workflow_dones, compile_starts,
      device_starts, give_ups, device_deads, resplits, refusals, failed_calls;
  bool last_main_cancelled;   /* iteration_end's argument */
  char last_refusal[256];
  bool answer;                /* submit: answered by the runtime */
  bool answer_at_once;        /* ... with sg_interp_eval_done from the op */
  int fail_gen_start;         /* gen_start fails on this call (1-based) */
  int gen_start_calls;
  char trace[4096];           /* the trace, one line each */
} world;

static int64_t w_now(void *d) { return ++((world *)d)->now; }
static int w_gen_start(void *d, uint32_t w, const sg_ctl_action *a) {
  world *x = d;
  (void)w;
  if (++x->gen_start_calls == x->fail_gen_start)
    return sg_err_set(&x->err, SG_EIO, "gen_start %d failed", x->gen_start_calls);
  if (a->u.start.kind == SG_GEN_MAIN && x->ngens < 16)
    x->gens[x->ngens++] = a->u.start.gen;
  return 0;
}
static int w_gen_cancel(void *d, uint32_t w, uint64_t gen, bool *was_main) {
  world *x = d;
  (void)w;
  x->cancels++;
  for (int i = 0; i < x->ngens; i++)
    *was_main |= x->gens[i] == gen;
  x->main_cancels += *was_main;
  return 0;
}
static int w_submit(void *d, uint32_t w, const sg_ctl_action *a, bool *answered,
                    bool *needs_compile) {
  world *x = d;
  (void)needs_compile;
  x->submits++;
  *answered = x->answer;
  if (x->answer && x->answer_at_once) /* made up inside the core's call */
    sg_interp_eval_done(x->it, w, a->u.submit.candidate, a->u.submit.phase,
                        SG_EVAL_OK, 2.0, NULL, NULL);
  return 0;
}
static int w_joined(void *d, uint32_t w, const sg_ctl_action *a, sg_req_id leader,
                    uint64_t leader_cand) {
  world *x = d;
  (void)w;
  x->joins++;
  x->last_join_cand = a->u.submit.candidate;
  x->last_join_phase = a->u.submit.phase;
  x->last_join_req = leader;
  x->last_join_leader = leader_cand;
  return 0;
}
static int w_submitted(void *d, uint32_t w, const sg_ctl_action *a, sg_req_id id) {
  world *x = d;
  (void)w;
  SG_CHECK(id < MAX_REQ);
  x->req_cand[id] = a->u.submit.candidate;
  x->req_phase[id] = a->u.submit.phase;
  return 0;
}
static int w_refused(void *d, uint32_t w, const sg_ctl_action *a, const char *m) {
  world *x = d;
  (void)w, (void)a;
  x->refusals++;
  snprintf(x->last_refusal, sizeof x->last_refusal, "%s", m);
  return 0;
}
static int w_iteration_end(void *d, uint32_t w, const sg_ctl_action *a, bool mc) {
  world *x = d;
  (void)w, (void)a;
  x->iteration_ends++;
  x->last_main_cancelled = mc;
  return 0;
}
static int w_decision(void *d, uint32_t w, const sg_ctl_action *a) {
  (void)w, (void)a;
  ((world *)d)->decisions++;
  return 0;
}
static int w_workflow_done(void *d, uint32_t w, const sg_ctl_action *a) {
  (void)w, (void)a;
  ((world *)d)->workflow_dones++;
  return 0;
}
static int w_compile_start(void *d, const sg_sched_action *a) {
  (void)a;
  ((world *)d)->compile_starts++;
  return 0;
}
static int w_device_start(void *d, const sg_sched_action *a) {
  (void)a;
  ((world *)d)->device_starts++;
  return 0;
}
static int w_give_up(void *d, const sg_sched_action *a) {
  (void)a;
  ((world *)d)->give_ups++;
  return 0;
}
static int w_device_dead(void *d, const sg_sched_action *a) {
  (void)a;
  ((world *)d)->device_deads++;
  return 0;
}
static int w_resplit(void *d, const sg_sched_action *a) {
  (void)a;
  ((world *)d)->resplits++;
  return 0;
}
static void w_failed(void *d) { ((world *)d)->failed_calls++; }
static void w_describe(void *d, uint32_t w, char *buf, size_t size) {
  (void)d;
  snprintf(buf, size, "task t%u", (unsigned)w);
}
static void w_trace(void *d, const char *line) {
  world *x = d;
  size_t n = strlen(x->trace);
  snprintf(x->trace + n, sizeof x->trace - n, "%s\n", line);
}
static int w_noop_ctl(void *d, uint32_t w, const sg_ctl_action *a) {
  (void)d, (void)w, (void)a;
  return 0;
}
static int w_noop_sched(void *d, const sg_sched_action *a) {
  (void)d, (void)a;
  return 0;
}
static int w_abort(void *d, const sg_sched_action *a) {
  (void)a;
  ((world *)d)->aborts++;
  return 0;
}

static const sg_interp_ops ops_with_join = {
    .now_us = w_now, .gen_start = w_gen_start, .gen_cancel = w_gen_cancel,
    .submit = w_submit, .joined = w_joined, .submitted = w_submitted,
    .refused = w_refused, .iteration_end = w_iteration_end,
    .workflow_done = w_noop_ctl, .decision = w_noop_ctl,
    .compile_start = w_noop_sched, .device_start = w_noop_sched, .abort = w_abort,
    .give_up = w_noop_sched, .device_dead = w_noop_sched, .resplit = w_noop_sched};

/* Every op counted, failures and names reported. */
static const sg_interp_ops ops_all = {
    .now_us = w_now, .failed = w_failed, .describe = w_describe,
    .gen_start = w_gen_start, .gen_cancel = w_gen_cancel, .submit = w_submit,
    .joined = w_joined, .submitted = w_submitted, .refused = w_refused,
    .iteration_end = w_iteration_end, .workflow_done = w_workflow_done,
    .decision = w_decision, .compile_start = w_compile_start,
    .device_start = w_device_start, .abort = w_abort, .give_up = w_give_up,
    .device_dead = w_device_dead, .resplit = w_resplit};

/* The knobs a test turns before the world starts. */
typedef struct world_cfg {
  uint32_t max_iterations;   /* 0: the controller's default */
  int devices;               /* 0: 2 */
  int max_infra_failures;    /* 0: the scheduler's default */
  int max_retries;           /* -1: the scheduler's default */
  size_t max_queued;         /* 0: the scheduler's default */
  bool trace;
  bool no_start;             /* the test starts the workflow itself */
} world_cfg;

static void world_init_cfg(world *x, const sg_interp_ops *ops, int mains,
                           const char *term, const world_cfg *cfg);

/* One workflow: best-of-n:mains (mains generations an iteration), the
 * criterion term, two devices, two compile slots. */
static void world_init(world *x, const sg_interp_ops *ops, int mains, const char *term) {
  world_cfg cfg = {.max_retries = -1};
  world_init_cfg(x, ops, mains, term, &cfg);
}

static void world_init_cfg(world *x, const sg_interp_ops *ops, int mains,
                           const char *term, const world_cfg *cfg) {
  memset(x, 0, sizeof *x);
  sg_err_clear(&x->err);
  sg_termination_registry_init(&x->treg);
  sg_search_registry_init(&x->sreg);
  SG_CHECK_OK(sg_termination_new(&x->treg, term, &x->term, &x->err), x->err);
  char search[32];
  snprintf(search, sizeof search, "best-of-n:%d", mains);
  SG_CHECK_OK(sg_search_new(&x->sreg, search, 7, &x->search, &x->err), x->err);
  sg_ctl_opts o;
  sg_ctl_opts_default(&o);
  o.search = x->search;
  o.termination = x->term;
  o.language = "c";
  o.entry = "hinge";
  o.speculate = false;
  if (cfg->max_iterations > 0)
    o.max_iterations = cfg->max_iterations;
  SG_CHECK_OK(sg_controller_new(&o, &x->ctl, &x->err), x->err);
  sg_sched_opts so;
  sg_sched_opts_default(&so);
  so.devices = cfg->devices > 0 ? cfg->devices : 2;
  so.compile_slots = 2;
  if (cfg->max_infra_failures > 0)
    so.max_infra_failures = cfg->max_infra_failures;
  if (cfg->max_retries >= 0)
    so.max_retries = cfg->max_retries;
  if (cfg->max_queued > 0)
    so.max_queued = cfg->max_queued;
  SG_CHECK_OK(sg_scheduler_new(&so, &x->sched, &x->err), x->err);
  sg_interp_opts io = {.ops = ops, .data = x, .sched = x->sched, .n_workflows = 1,
                       .err = &x->err, .trace = cfg->trace ? w_trace : NULL,
                       .trace_data = x};
  SG_CHECK_OK(sg_interp_new(&io, &x->it, &x->err), x->err);
  sg_interp_set_controller(x->it, 0, x->ctl);
  if (cfg->no_start)
    return;
  SG_CHECK_OK(sg_interp_start(x->it, 0), x->err);
  SG_CHECK_EQ_INT(x->ngens, mains);
}

static void world_free(world *x) {
  sg_interp_free(x->it);
  sg_scheduler_free(x->sched);
  sg_controller_free(x->ctl);
  sg_termination_free(x->term);
  sg_search_free(x->search);
}

static void finish(world *x, uint64_t gen, const char *text) {
  sg_ctl_event e = {.type = SG_CEV_GEN_FINISHED, .now_us = ++x->now};
  e.u.finished.gen = gen;
  e.u.finished.text = text;
  e.u.finished.len = strlen(text);
  SG_CHECK_OK(sg_interp_event(x->it, 0, &e), x->err);
}

/* Request id's stages end ok (a compile first for a validation), then its
 * result is reported, as a runtime does. */
static void complete(world *x, sg_req_id id, double speedup) {
  sg_err e;
  sg_err_clear(&e);
  if (x->req_phase[id] == SG_PHASE_VALIDATE)
    SG_CHECK_OK(sg_interp_compiled(x->it, id, true, &e), e);
  SG_CHECK_OK(sg_interp_device_done(x->it, id, false, &e), e);
  sg_interp_eval_done(x->it, 0, x->req_cand[id], x->req_phase[id], SG_EVAL_OK, speedup,
                      NULL, x->req_phase[id] == SG_PHASE_PROFILE ? "profile" : NULL);
  SG_CHECK_OK(sg_interp_drain(x->it), x->err);
}

static uint64_t joined_count(const world *x) {
  sg_interp_stats st;
  sg_interp_stats_get(x->it, &st);
  return st.joined;
}

static void test_copy_in_flight_joins_and_gets_the_result(void) {
  world x;
  world_init(&x, &ops_with_join, 3, "none");
  finish(&x, x.gens[0], KERNEL_A);
  SG_CHECK_EQ_INT(x.submits, 1);
  sg_req_id ra = 1;
  SG_CHECK(x.req_cand[ra] != 0);
  /* The same kernel, written differently at line ends: joins request 1. */
  finish(&x, x.gens[1], KERNEL_A2);
  SG_CHECK_EQ_INT(x.submits, 1);
  SG_CHECK_EQ_INT(x.joins, 1);
  SG_CHECK_EQ_INT((int)x.last_join_req, (int)ra);
  SG_CHECK(x.last_join_leader == x.req_cand[ra]);
  SG_CHECK(x.last_join_phase == SG_PHASE_VALIDATE);
  uint64_t copy = x.last_join_cand;
  SG_CHECK(copy != x.req_cand[ra]);
  /* Another kernel is a request of its own. */
  finish(&x, x.gens[2], KERNEL_B);
  SG_CHECK_EQ_INT(x.submits, 2);
  SG_CHECK_EQ_INT((int)joined_count(&x), 1);
  /* A's validation ends: both copies got it, so both go on to profiling,
   * and the copy's profile joins the original's. */
  complete(&x, ra, 2.0);
  SG_CHECK_EQ_INT(x.submits, 3);
  SG_CHECK_EQ_INT(x.joins, 2);
  SG_CHECK(x.last_join_cand == copy && x.last_join_phase == SG_PHASE_PROFILE);
  sg_req_id rp = x.last_join_req;
  SG_CHECK(x.req_phase[rp] == SG_PHASE_PROFILE && x.req_cand[rp] == x.req_cand[ra]);
  /* The profile's result reaches both: with B's, the iteration (best-of-n
   * waits for every kernel) ends; had the copy not been answered it could
   * not. */
  complete(&x, rp, 2.0);
  SG_CHECK_EQ_INT(x.iteration_ends, 0);
  complete(&x, 2, 1.0);                       /* B validated */
  complete(&x, (sg_req_id)(x.submits), 1.0); /* B profiled */
  SG_CHECK_EQ_INT(x.iteration_ends, 1);
  SG_CHECK_EQ_INT((int)joined_count(&x), 2);
  SG_CHECK_EQ_INT(x.aborts, 0);
  world_free(&x);
}

/* A leader withdrawn at its iteration's end takes its followers along, and
 * the same kernel in the next iteration is evaluated anew (nothing was
 * learnt about it). */
static void test_withdrawn_leader_leaves_nothing_to_join(void) {
  world x;
  world_init(&x, &ops_with_join, 2, "first-valid");
  finish(&x, x.gens[0], KERNEL_A);
  finish(&x, x.gens[1], KERNEL_B);
  SG_CHECK_EQ_INT(x.submits, 2);
  complete(&x, 2, 3.0); /* B valid first, */
  SG_CHECK_EQ_INT(x.submits, 3);
  complete(&x, 3, 3.0); /* and profiled: the criterion ends the iteration, A withdrawn */
  SG_CHECK_EQ_INT(x.iteration_ends, 1);
  SG_CHECK_EQ_INT(x.aborts, 1);
  SG_CHECK_EQ_INT(x.ngens, 4);
  finish(&x, x.gens[2], KERNEL_A);
  SG_CHECK_EQ_INT(x.submits, 4);
  SG_CHECK_EQ_INT(x.joins, 0);
  world_free(&x);
}

/* Without ops.joined (the simulator) every submission reaches the
 * scheduler. */
static void test_no_joined_op_no_joining(void) {
  sg_interp_ops ops = ops_with_join;
  ops.joined = NULL;
  world x;
  world_init(&x, &ops, 2, "none");
  finish(&x, x.gens[0], KERNEL_A);
  finish(&x, x.gens[1], KERNEL_A);
  SG_CHECK_EQ_INT(x.submits, 2);
  SG_CHECK_EQ_INT(x.joins, 0);
  SG_CHECK_EQ_INT((int)joined_count(&x), 0);
  world_free(&x);
}


static uint64_t controller_calls(const world *x) {
  sg_interp_stats st;
  sg_interp_stats_get(x->it, &st);
  return st.controller_calls;
}

/* One iteration of the paper's loop through the interpreter: each action
 * of the controller and of the scheduler reaches its op, in the order the
 * trace records. */
static void test_each_action_reaches_its_op_in_order(void) {
  world x;
  world_cfg cfg = {.max_iterations = 1, .max_retries = -1, .trace = true};
  world_init_cfg(&x, &ops_all, 1, "first-valid", &cfg);
  finish(&x, x.gens[0], KERNEL_A);
  SG_CHECK_EQ_INT(x.submits, 1);
  SG_CHECK_EQ_INT(x.compile_starts, 1);   /* a validation compiles first */
  SG_CHECK_EQ_INT(x.device_starts, 0);
  complete(&x, 1, 2.0);                   /* compiled, run, valid: profiled */
  SG_CHECK_EQ_INT(x.submits, 2);
  SG_CHECK_EQ_INT(x.device_starts, 2);
  complete(&x, 2, 2.0);                   /* the criterion accepts it */
  SG_CHECK_EQ_INT(x.decisions, 1);
  SG_CHECK_EQ_INT(x.iteration_ends, 1);
  SG_CHECK(!x.last_main_cancelled);       /* the main had finished */
  SG_CHECK_EQ_INT(x.workflow_dones, 1);   /* its one iteration spent */
  SG_CHECK(sg_interp_done(x.it, 0));
  SG_CHECK_EQ_INT(x.cancels, 0);
  SG_CHECK_EQ_INT(x.aborts, 0);
  SG_CHECK_STR_EQ(x.trace,
                  "w0 start\n"
                  "w0 it0 start_gen main\n"
                  "w0 event gen_finished\n"
                  "w0 it0 submit_eval validate\n"
                  "sched start_compile \n"
                  "sched start_device validate\n"
                  "w0 event eval_done validate\n"
                  "w0 it0 submit_eval profile\n"
                  "sched start_device profile\n"
                  "w0 event eval_done profile\n"
                  "w0 it0 decision early\n"
                  "w0 it0 end_iteration early\n"
                  "w0 it1 workflow_done budget_iterations\n");
  /* A done workflow's events are not fed. */
  uint64_t calls = controller_calls(&x);
  sg_ctl_event e = {.type = SG_CEV_TICK, .now_us = ++x.now};
  SG_CHECK_OK(sg_interp_event(x.it, 0, &e), x.err);
  SG_CHECK(controller_calls(&x) == calls);
  SG_CHECK_EQ_INT(x.failed_calls, 0);
  world_free(&x);
}

/* A main generation cancelled while it still runs marks its iteration's
 * end (the paper's early termination); the next iteration starts clean. */
static void test_cancelled_main_marks_the_iteration_end(void) {
  world x;
  world_init(&x, &ops_all, 2, "first-valid");
  finish(&x, x.gens[0], KERNEL_A);
  complete(&x, 1, 2.0);
  complete(&x, 2, 2.0); /* accepted while main 2 still generates */
  SG_CHECK_EQ_INT(x.cancels, 1);
  SG_CHECK_EQ_INT(x.main_cancels, 1);
  SG_CHECK_EQ_INT(x.iteration_ends, 1);
  SG_CHECK(x.last_main_cancelled);
  SG_CHECK_EQ_INT(x.ngens, 4); /* the next iteration's two mains */
  sg_interp_gen_failed(x.it, 0, x.gens[2], SG_EIO, "gone");
  sg_interp_gen_failed(x.it, 0, x.gens[3], SG_EIO, "gone");
  SG_CHECK_OK(sg_interp_drain(x.it), x.err);
  SG_CHECK_EQ_INT(x.iteration_ends, 2); /* both failed: fallback */
  SG_CHECK(!x.last_main_cancelled);
  world_free(&x);
}

/* A submission the runtime answers from what it knows is no request; its
 * result, made up inside the core's call, waits for the drain. */
static void test_answered_submission_is_no_request(void) {
  world x;
  world_init(&x, &ops_all, 1, "none");
  x.answer = true;
  x.answer_at_once = true;
  uint64_t calls = controller_calls(&x);
  finish(&x, x.gens[0], KERNEL_A);
  SG_CHECK_EQ_INT(x.submits, 1);
  SG_CHECK(controller_calls(&x) == calls + 1); /* the result is not fed yet */
  sg_req_state st;
  SG_CHECK_EQ_INT(sg_scheduler_request_state(x.sched, 1, &st), SG_ENOENT);
  SG_CHECK_EQ_INT(x.compile_starts, 0);
  /* Validated: the profile is submitted and answered too, and the drain
   * feeds that result as well: profiled, the iteration ends. */
  SG_CHECK_OK(sg_interp_drain(x.it), x.err);
  SG_CHECK_EQ_INT(x.submits, 2);
  SG_CHECK_EQ_INT(x.iteration_ends, 1);
  SG_CHECK_EQ_INT(x.compile_starts + x.device_starts, 0);
  world_free(&x);
}

/* A submission the scheduler refuses (its queue is full) goes to
 * ops.refused with the scheduler's reason, and is not fatal. */
static void test_refused_submission_reaches_refused(void) {
  world x;
  world_cfg cfg = {.max_retries = -1, .max_queued = 1};
  world_init_cfg(&x, &ops_all, 2, "none", &cfg);
  finish(&x, x.gens[0], KERNEL_A);
  finish(&x, x.gens[1], KERNEL_B);
  SG_CHECK_EQ_INT(x.submits, 2);
  SG_CHECK_EQ_INT(x.refusals, 1);
  SG_CHECK_MSG(strstr(x.last_refusal, "cap") != NULL, "refusal: %s", x.last_refusal);
  SG_CHECK(!sg_interp_failed(x.it));
  world_free(&x);
}

/* Held, deferred events wait; the release feeds them. */
static void test_hold_defers_until_release(void) {
  world x;
  world_init(&x, &ops_all, 1, "none");
  finish(&x, x.gens[0], KERNEL_A);
  uint64_t calls = controller_calls(&x);
  sg_interp_hold(x.it);
  sg_interp_hold(x.it);
  sg_interp_eval_done(x.it, 0, 1, SG_PHASE_VALIDATE, SG_EVAL_COMPILE_ERROR, NAN,
                      "error: x", NULL);
  SG_CHECK_OK(sg_interp_drain(x.it), x.err);
  SG_CHECK_OK(sg_interp_release(x.it), x.err);
  SG_CHECK(controller_calls(&x) == calls); /* one hold is left */
  SG_CHECK_OK(sg_interp_release(x.it), x.err);
  SG_CHECK(controller_calls(&x) == calls + 1);
  SG_CHECK_EQ_INT(x.iteration_ends, 1); /* invalid: the fallback */
  world_free(&x);
}

/* The scheduler's device actions: a device that fails gives way (its
 * death, then the re-split of those left); a request with no device left
 * is given up. */
static void test_device_death_resplit_and_give_up(void) {
  world x;
  world_cfg cfg = {.devices = 3, .max_infra_failures = 1, .max_retries = 0};
  world_init_cfg(&x, &ops_all, 1, "none", &cfg);
  finish(&x, x.gens[0], KERNEL_A);
  sg_err e;
  sg_err_clear(&e);
  SG_CHECK_OK(sg_interp_compiled(x.it, 1, true, &e), e);
  SG_CHECK_EQ_INT(x.device_starts, 1);
  SG_CHECK_OK(sg_interp_device_done(x.it, 1, true, &e), e);
  SG_CHECK_EQ_INT(x.device_deads, 1);
  SG_CHECK_EQ_INT(x.resplits, 1);
  SG_CHECK_EQ_INT(x.give_ups, 1); /* no retries */
  world_free(&x);

  world_cfg one = {.devices = 1, .max_infra_failures = 1, .max_retries = 3};
  world_init_cfg(&x, &ops_all, 1, "none", &one);
  finish(&x, x.gens[0], KERNEL_A);
  SG_CHECK_OK(sg_interp_compiled(x.it, 1, true, &e), e);
  SG_CHECK_OK(sg_interp_device_done(x.it, 1, true, &e), e);
  SG_CHECK_EQ_INT(x.device_deads, 1);
  SG_CHECK_EQ_INT(x.resplits, 0); /* none left to split */
  SG_CHECK_EQ_INT(x.give_ups, 1);
  /* A stage's end the scheduler does not know is the caller's error. */
  SG_CHECK(sg_interp_compiled(x.it, 99, true, &e) < 0);
  SG_CHECK_EQ_INT(e.code, SG_ENOENT);
  SG_CHECK(!sg_interp_failed(x.it));
  world_free(&x);
}

/* An op that fails is fatal: told once, the first error kept, and no
 * event fed after it. */
static void test_failing_op_is_fatal_and_first_error_wins(void) {
  world x;
  world_cfg cfg = {.max_retries = -1, .no_start = true};
  world_init_cfg(&x, &ops_all, 2, "none", &cfg);
  x.fail_gen_start = 2;
  SG_CHECK(sg_interp_start(x.it, 0) == SG_EIO);
  SG_CHECK(sg_interp_failed(x.it));
  SG_CHECK_EQ_INT(x.failed_calls, 1);
  SG_CHECK_EQ_INT(x.gen_start_calls, 2); /* nothing after the failure */
  SG_CHECK_STR_EQ(x.err.msg, "gen_start 2 failed");
  sg_err later;
  sg_err_clear(&later);
  sg_err_set(&later, SG_EINVAL, "later");
  sg_interp_fail(x.it, &later);
  SG_CHECK_STR_EQ(x.err.msg, "gen_start 2 failed");
  SG_CHECK_EQ_INT(x.failed_calls, 1);
  uint64_t calls = controller_calls(&x);
  sg_ctl_event ev = {.type = SG_CEV_TICK, .now_us = ++x.now};
  SG_CHECK(sg_interp_event(x.it, 0, &ev) == SG_EIO);
  SG_CHECK(controller_calls(&x) == calls);
  world_free(&x);
}

/* A controller's error is fatal too, prefixed with what ops.describe calls
 * the workflow ("workflow W" without it). */
static void test_controller_error_named_by_describe(void) {
  for (int with = 0; with < 2; with++) {
    sg_interp_ops ops = ops_all;
    if (!with)
      ops.describe = NULL;
    world x;
    world_init(&x, &ops, 1, "none");
    sg_ctl_event ev = {.type = SG_CEV_EVAL_DONE, .now_us = ++x.now};
    ev.u.eval.phase = (sg_phase)7; /* malformed */
    SG_CHECK(sg_interp_event(x.it, 0, &ev) == SG_EINVAL);
    SG_CHECK(sg_interp_failed(x.it));
    const char *want = with ? "task t0: controller: eval event"
                            : "workflow 0: controller: eval event";
    SG_CHECK_MSG(strncmp(x.err.msg, want, strlen(want)) == 0, "error: %s", x.err.msg);
    world_free(&x);
  }
}

static void test_new_needs_ops_scheduler_and_error_buffer(void) {
  sg_err err;
  sg_err_clear(&err);
  sg_interp *it = (sg_interp *)1;
  sg_interp_opts io = {.ops = &ops_all};
  SG_CHECK(sg_interp_new(&io, &it, &err) == SG_EINVAL);
  SG_CHECK(it == NULL);
  SG_CHECK(strstr(err.msg, "required") != NULL);
}

SG_TEST_MAIN(SG_TEST(test_each_action_reaches_its_op_in_order),
             SG_TEST(test_cancelled_main_marks_the_iteration_end),
             SG_TEST(test_answered_submission_is_no_request),
             SG_TEST(test_refused_submission_reaches_refused),
             SG_TEST(test_hold_defers_until_release),
             SG_TEST(test_device_death_resplit_and_give_up),
             SG_TEST(test_failing_op_is_fatal_and_first_error_wins),
             SG_TEST(test_controller_error_named_by_describe),
             SG_TEST(test_new_needs_ops_scheduler_and_error_buffer),
             SG_TEST(test_copy_in_flight_joins_and_gets_the_result),
             SG_TEST(test_withdrawn_leader_leaves_nothing_to_join),
             SG_TEST(test_no_joined_op_no_joining))
