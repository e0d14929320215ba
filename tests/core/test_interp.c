/* test_interp.c: the interpreter's deduplication (sg_interp.h), with the
 * real controller and scheduler and a runtime of counters: a kernel whose
 * evaluation is in flight is not submitted again, its copies get the
 * leader's result, a leader withdrawn at its iteration's end leaves nothing
 * for a later copy to join, and without ops.joined nothing is joined. */
#include "core/sg_interp.h"
#include "core/sg_search.h"
#include "core/sg_termination.h"

#include "sg_test.h"

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
} world;

static int64_t w_now(void *d) { return ++((world *)d)->now; }
static int w_gen_start(void *d, uint32_t w, const sg_ctl_action *a) {
  world *x = d;
  (void)w;
  if (a->u.start.kind == SG_GEN_MAIN && x->ngens < 16)
    x->gens[x->ngens++] = a->u.start.gen;
  return 0;
}
static int w_gen_cancel(void *d, uint32_t w, uint64_t gen, bool *was_main) {
  (void)d, (void)w, (void)gen, (void)was_main;
  return 0;
}
static int w_submit(void *d, uint32_t w, const sg_ctl_action *a, bool *answered,
                    bool *needs_compile) {
  (void)w, (void)a, (void)needs_compile;
  ((world *)d)->submits++;
  *answered = false;
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
  (void)d, (void)w, (void)a;
  SG_CHECK_MSG(false, "refused: %s", m);
  return 0;
}
static int w_iteration_end(void *d, uint32_t w, const sg_ctl_action *a, bool mc) {
  (void)w, (void)a, (void)mc;
  ((world *)d)->iteration_ends++;
  return 0;
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

/* One workflow: best-of-n:mains (mains generations an iteration), the
 * criterion term, two devices, two compile slots. */
static void world_init(world *x, const sg_interp_ops *ops, int mains, const char *term) {
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
  SG_CHECK_OK(sg_controller_new(&o, &x->ctl, &x->err), x->err);
  sg_sched_opts so;
  sg_sched_opts_default(&so);
  so.devices = 2;
  so.compile_slots = 2;
  SG_CHECK_OK(sg_scheduler_new(&so, &x->sched, &x->err), x->err);
  sg_interp_opts io = {.ops = ops, .data = x, .sched = x->sched, .n_workflows = 1,
                       .err = &x->err};
  SG_CHECK_OK(sg_interp_new(&io, &x->it, &x->err), x->err);
  sg_interp_set_controller(x->it, 0, x->ctl);
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

SG_TEST_MAIN(SG_TEST(test_copy_in_flight_joins_and_gets_the_result),
             SG_TEST(test_withdrawn_leader_leaves_nothing_to_join),
             SG_TEST(test_no_joined_op_no_joining))
