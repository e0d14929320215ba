/* test_scheduler.c: Algorithm 2, rule by rule, from hand-built event
 * sequences: the re-split formula at its edges, LIFO validation and FIFO
 * profiling, fairness across workflows, the compile stage outside the device
 * lease, aborts at iteration boundaries, dead devices, capacity. */
#include "core/sg_scheduler.h"

#include "sg_test.h"

typedef struct fx {
  sg_scheduler *s;
  sg_sched_actions a;
  sg_err err;
  int64_t now;
} fx;

static void fx_init(fx *f, int devices, void (*tweak)(sg_sched_opts *)) {
  sg_sched_opts o;
  sg_sched_opts_default(&o);
  o.devices = devices;
  o.compile_slots = 2;
  if (tweak)
    tweak(&o);
  sg_err_clear(&f->err);
  SG_CHECK_OK(sg_scheduler_new(&o, &f->s, &f->err), f->err);
  sg_sched_actions_init(&f->a);
  f->now = 0;
}

static void fx_free(fx *f) {
  sg_scheduler_free(f->s);
  sg_sched_actions_free(&f->a);
}

/* Submits without compile; actions are cleared first. */
static sg_req_id sub(fx *f, uint32_t wf, uint32_t it, sg_phase p,
                     bool compile) {
  sg_sched_request r = {wf, it, p, 0, compile};
  sg_req_id id = 0;
  sg_sched_actions_clear(&f->a);
  SG_CHECK_OK(sg_scheduler_submit(f->s, &r, ++f->now, &id, &f->a, &f->err),
              f->err);
  return id;
}

static void done(fx *f, sg_req_id id) {
  sg_sched_actions_clear(&f->a);
  SG_CHECK_OK(sg_scheduler_device_done(f->s, id, false, ++f->now, &f->a,
                                       &f->err),
              f->err);
}

static void boundary(fx *f, uint32_t wf, uint32_t next) {
  sg_sched_actions_clear(&f->a);
  SG_CHECK_OK(sg_scheduler_iteration_boundary(f->s, wf, next, ++f->now,
                                              &f->a, &f->err),
              f->err);
}

/* The n-th action of a type in the last batch, or NULL. */
static const sg_sched_action *act(const fx *f, sg_sched_action_type t,
                                  int nth) {
  for (size_t i = 0; i < f->a.n; i++)
    if (f->a.v[i].type == t && nth-- == 0)
      return &f->a.v[i];
  return NULL;
}

static sg_req_state state(const fx *f, sg_req_id id) {
  sg_req_state st;
  SG_CHECK_EQ_INT(sg_scheduler_request_state(f->s, id, &st), 0);
  return st;
}

/* ---- the formula ---------------------------------------------------------- */

static void test_split_formula_edges(void) {
  struct {
    int g;
    size_t lv, lp;
    int want;
  } rows[] = {
      {1, 0, 0, 0},   {1, 5, 5, 0},   {1, 0, 9, 0},   /* G=1: shared */
      {2, 0, 0, 1},   {2, 9, 0, 1},   {2, 0, 9, 1},   /* G=2: always 1/1 */
      {3, 0, 0, 1},   {4, 0, 0, 2},   {5, 0, 0, 2},   /* even, odd to valid. */
      {8, 0, 0, 4},
      {8, 7, 0, 1},   /* Lp=0: max(1, 0) */
      {8, 0, 7, 7},   /* Lv=0: min(G-1, G) */
      {8, 1, 1, 4},   {8, 3, 1, 2},   {8, 1, 3, 6},
      {4, 7, 1, 1},   /* 0.5 -> rounds half up to 1 */
      {4, 5, 3, 2},   /* 1.5 -> 2 */
      {4, 3, 5, 3},   /* 2.5 -> 3 */
      {6, 9, 3, 2},   /* 1.5 -> 2 */
      {6, 7, 5, 3},   /* 2.5 -> 3 */
      {10, 13, 7, 4}, /* 3.5 -> 4 */
      {10, 67, 33, 3}, /* 3.3 -> 3 */
      {10, 63, 37, 4}, /* 3.7 -> 4 */
      {1000, 1000000, 1, 1}, {1000, 1, 1000000, 999},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    int got = sg_scheduler_split(rows[i].g, rows[i].lv, rows[i].lp);
    SG_CHECK_MSG(got == rows[i].want, "G=%d Lv=%zu Lp=%zu: got %d want %d",
                 rows[i].g, rows[i].lv, rows[i].lp, got, rows[i].want);
  }
}

static void test_bad_options_are_named(void) {
  sg_sched_opts o;
  sg_scheduler *s = NULL;
  sg_err err;
  sg_err_clear(&err);
  sg_sched_opts_default(&o);
  o.devices = 0;
  SG_CHECK_EQ_INT(sg_scheduler_new(&o, &s, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "devices");
  sg_sched_opts_default(&o);
  o.devices = 4;
  o.static_profile_devices = 4;
  SG_CHECK_EQ_INT(sg_scheduler_new(&o, &s, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "static_profile_devices");
  sg_sched_opts_default(&o);
  o.compile_slots = 0;
  SG_CHECK_EQ_INT(sg_scheduler_new(&o, &s, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "compile_slots");
  sg_sched_opts_default(&o);
  o.max_infra_failures = 0;
  SG_CHECK_EQ_INT(sg_scheduler_new(&o, &s, &err), SG_EINVAL);
  SG_CHECK(s == NULL);
}

/* ---- the split in a running pool ------------------------------------------- */

static int count_part(const fx *f, sg_phase p) {
  int n = 0;
  for (int d = 0; d < sg_scheduler_devices(f->s); d++)
    n += sg_scheduler_device_state(f->s, d) != SG_DEVICE_DEAD &&
         sg_scheduler_device_part(f->s, d) == p;
  return n;
}

static void test_initial_split_is_even(void) {
  fx f;
  fx_init(&f, 5, NULL);
  SG_CHECK_EQ_INT(count_part(&f, SG_PHASE_PROFILE), 2);
  SG_CHECK_EQ_INT(count_part(&f, SG_PHASE_VALIDATE), 3);
  fx_free(&f);
}

/* Peak queue lengths since the last re-split drive the next one. */
static void test_resplit_from_peak_queues(void) {
  fx f;
  fx_init(&f, 8, NULL); /* 4 validate, 4 profile */
  /* 12 validations: 4 run, 8 wait (the peak is counted before dispatch) */
  for (int i = 0; i < 12; i++)
    sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  sub(&f, 0, 0, SG_PHASE_PROFILE, false); /* runs at once: peak 1 */
  sg_sched_stats st;
  sg_scheduler_stats(f.s, &st);
  SG_CHECK_EQ_INT(st.peak_queued[SG_PHASE_VALIDATE], 8);
  SG_CHECK_EQ_INT(st.peak_queued[SG_PHASE_PROFILE], 1);
  boundary(&f, 0, 1);
  /* round(8 * 1 / 9) = 1 */
  int want = sg_scheduler_split(8, 8, 1);
  SG_CHECK_EQ_INT(want, 1);
  SG_CHECK_EQ_INT(count_part(&f, SG_PHASE_PROFILE), 1);
  SG_CHECK_EQ_INT(count_part(&f, SG_PHASE_VALIDATE), 7);
  const sg_sched_action *rs = act(&f, SG_SACT_RESPLIT, 0);
  SG_CHECK(rs != NULL);
  SG_CHECK_EQ_INT(rs->validate_devices, 7);
  SG_CHECK_EQ_INT(rs->profile_devices, 1);
  /* the next period saw nothing: an even split again */
  boundary(&f, 0, 2);
  SG_CHECK_EQ_INT(count_part(&f, SG_PHASE_PROFILE), 4);
  fx_free(&f);
}

/* A re-split is the pool's, but a run keeps it as a decision of a
 * workflow: the action names the workflow whose event caused it (and that
 * workflow's iteration), never a fixed workflow 0 that may have ended. */
static void test_resplit_names_the_live_workflow(void) {
  fx f;
  fx_init(&f, 8, NULL);
  boundary(&f, 0, 1);
  sg_sched_actions_clear(&f.a);
  SG_CHECK_OK(sg_scheduler_workflow_done(f.s, 0, ++f.now, &f.a, &f.err), f.err);
  for (int i = 0; i < 12; i++)
    sub(&f, 2, 4, SG_PHASE_VALIDATE, false);
  sub(&f, 2, 4, SG_PHASE_PROFILE, false);
  boundary(&f, 2, 5);
  const sg_sched_action *rs = act(&f, SG_SACT_RESPLIT, 0);
  SG_CHECK(rs != NULL);
  SG_CHECK_EQ_INT(rs->workflow, 2);
  SG_CHECK_EQ_INT(rs->iteration, 5);
  fx_free(&f);

  /* a device killed by a request's infrastructure failures: the re-split
   * names that request's workflow */
  fx_init(&f, 3, NULL);
  sg_req_id q = sub(&f, 5, 1, SG_PHASE_VALIDATE, false);
  const sg_sched_action *dead = NULL;
  for (int i = 0; i < 3 && dead == NULL; i++) {
    sg_sched_actions_clear(&f.a);
    SG_CHECK_OK(sg_scheduler_device_done(f.s, q, true, ++f.now, &f.a, &f.err), f.err);
    dead = act(&f, SG_SACT_DEVICE_DEAD, 0);
  }
  SG_CHECK(dead != NULL);
  rs = act(&f, SG_SACT_RESPLIT, 0);
  SG_CHECK(rs != NULL);
  SG_CHECK_EQ_INT(rs->workflow, 5);
  SG_CHECK_EQ_INT(rs->iteration, 1);
  fx_free(&f);
}

static void no_elastic(sg_sched_opts *o) {
  o->elastic = false;
  o->static_profile_devices = 1;
}

static void test_static_split_never_moves(void) {
  fx f;
  fx_init(&f, 4, no_elastic);
  SG_CHECK_EQ_INT(count_part(&f, SG_PHASE_PROFILE), 1);
  for (int i = 0; i < 10; i++)
    sub(&f, 0, 0, SG_PHASE_PROFILE, false);
  boundary(&f, 0, 1);
  SG_CHECK(act(&f, SG_SACT_RESPLIT, 0) == NULL);
  SG_CHECK_EQ_INT(count_part(&f, SG_PHASE_PROFILE), 1);
  fx_free(&f);
}

/* A busy device keeps its request through a re-split and joins its new part
 * when done. */
static void test_busy_device_switches_after_its_run(void) {
  fx f;
  fx_init(&f, 4, NULL); /* d0,d1 validate; d2,d3 profile */
  SG_CHECK(sg_scheduler_device_part(f.s, 1) == SG_PHASE_VALIDATE);
  sg_req_id w1a = sub(&f, 1, 0, SG_PHASE_VALIDATE, false);
  sg_req_id w1b = sub(&f, 1, 0, SG_PHASE_VALIDATE, false);
  SG_CHECK_EQ_INT(sg_scheduler_device_request(f.s, 1), w1b);
  for (int i = 0; i < 10; i++) /* workflow 0: a long profiling queue */
    sub(&f, 0, 0, SG_PHASE_PROFILE, false);
  boundary(&f, 0, 1); /* peaks Lv=1 (w1b), Lp=9: min(3, round(3.6)) = 3 */
  SG_CHECK_EQ_INT(count_part(&f, SG_PHASE_PROFILE), 3);
  /* both validation devices were busy: the highest moved, its run kept */
  SG_CHECK(sg_scheduler_device_part(f.s, 1) == SG_PHASE_PROFILE);
  SG_CHECK_EQ_INT(sg_scheduler_device_request(f.s, 1), w1b);
  SG_CHECK(state(&f, w1a) == SG_REQ_RUNNING);
  done(&f, w1b);
  /* now it serves profiling: a validation waits for d0 */
  sg_req_id v = sub(&f, 1, 0, SG_PHASE_VALIDATE, false);
  SG_CHECK(state(&f, v) == SG_REQ_DEVICE_WAIT);
  sg_req_id p = sub(&f, 1, 0, SG_PHASE_PROFILE, false);
  SG_CHECK(state(&f, p) == SG_REQ_RUNNING);
  done(&f, w1a);
  SG_CHECK_EQ_INT(sg_scheduler_device_request(f.s, 0), v);
  fx_free(&f);
}

/* ---- queue disciplines ----------------------------------------------------- */

static void test_validation_is_lifo_profiling_fifo(void) {
  fx f;
  fx_init(&f, 2, NULL); /* one device per part */
  sg_req_id v[4], p[4];
  for (int i = 0; i < 4; i++)
    v[i] = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  for (int i = 0; i < 4; i++)
    p[i] = sub(&f, 0, 0, SG_PHASE_PROFILE, false);
  /* v0 and p0 took the idle devices; then newest validation, oldest profile */
  sg_req_id want_v[] = {v[0], v[3], v[2], v[1]};
  sg_req_id want_p[] = {p[0], p[1], p[2], p[3]};
  for (int i = 0; i < 4; i++) {
    int dv = sg_scheduler_device_part(f.s, 0) == SG_PHASE_VALIDATE ? 0 : 1;
    int dp = 1 - dv;
    SG_CHECK_EQ_INT(sg_scheduler_device_request(f.s, dv), want_v[i]);
    SG_CHECK_EQ_INT(sg_scheduler_device_request(f.s, dp), want_p[i]);
    done(&f, want_v[i]);
    done(&f, want_p[i]);
  }
  fx_free(&f);
}

static void fifo_validation(sg_sched_opts *o) { o->validate_lifo = false; }

static void test_fifo_validation_option(void) {
  fx f;
  fx_init(&f, 2, fifo_validation);
  sg_req_id v[3];
  for (int i = 0; i < 3; i++)
    v[i] = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  for (int i = 0; i < 3; i++) {
    SG_CHECK_EQ_INT(sg_scheduler_device_request(f.s, 0), v[i]);
    done(&f, v[i]);
  }
  fx_free(&f);
}

/* Round-robin: a workflow that queued one request behind another's ten is
 * served second, not eleventh; with three workflows each is served once per
 * round. */
static void test_fairness_across_workflows(void) {
  fx f;
  fx_init(&f, 2, NULL);
  sg_req_id a[10];
  for (int i = 0; i < 10; i++)
    a[i] = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  sg_req_id b = sub(&f, 1, 0, SG_PHASE_VALIDATE, false);
  SG_CHECK_EQ_INT(sg_scheduler_device_request(f.s, 0), a[0]);
  done(&f, a[0]);
  SG_CHECK_EQ_INT(sg_scheduler_device_request(f.s, 0), b);
  fx_free(&f);

  fx_init(&f, 2, fifo_validation);
  /* three workflows with 3 requests each, all queued behind a blocker */
  sg_req_id blocker = sub(&f, 9, 0, SG_PHASE_VALIDATE, false);
  sg_req_id q[3][3];
  for (uint32_t w = 0; w < 3; w++)
    for (int i = 0; i < 3; i++)
      q[w][i] = sub(&f, w, 0, SG_PHASE_VALIDATE, false);
  done(&f, blocker);
  uint32_t order[9];
  for (int k = 0; k < 9; k++) {
    sg_req_id r = sg_scheduler_device_request(f.s, 0);
    int found = 0;
    for (uint32_t w = 0; w < 3; w++)
      for (int i = 0; i < 3; i++)
        if (q[w][i] == r) {
          order[k] = w;
          found = 1;
        }
    SG_CHECK(found);
    done(&f, r);
  }
  /* every window of 3 consecutive services holds each workflow once */
  for (int k = 0; k < 9; k += 3)
    SG_CHECK(order[k] != order[k + 1] && order[k] != order[k + 2] &&
             order[k + 1] != order[k + 2]);
  fx_free(&f);
}

/* ---- the compile stage ------------------------------------------------------ */

static void test_compile_never_holds_a_device(void) {
  fx f;
  fx_init(&f, 2, NULL); /* 2 compile slots */
  sg_req_id r[3];
  for (int i = 0; i < 3; i++)
    r[i] = sub(&f, 0, 0, SG_PHASE_VALIDATE, true);
  SG_CHECK(state(&f, r[0]) == SG_REQ_COMPILING);
  SG_CHECK(state(&f, r[1]) == SG_REQ_COMPILING);
  SG_CHECK(state(&f, r[2]) == SG_REQ_COMPILE_WAIT); /* slots full */
  SG_CHECK_EQ_INT(sg_scheduler_device_request(f.s, 0), 0);
  SG_CHECK_EQ_INT(sg_scheduler_device_request(f.s, 1), 0);
  sg_sched_actions_clear(&f.a);
  SG_CHECK_OK(sg_scheduler_compiled(f.s, r[1], true, ++f.now, &f.a, &f.err),
              f.err);
  /* r1 to the device, r2 into the freed slot */
  SG_CHECK(act(&f, SG_SACT_START_DEVICE, 0) != NULL);
  SG_CHECK_EQ_INT(act(&f, SG_SACT_START_DEVICE, 0)->req, r[1]);
  SG_CHECK_EQ_INT(act(&f, SG_SACT_START_COMPILE, 0)->req, r[2]);
  /* a failed compile ends the request without a device */
  sg_sched_actions_clear(&f.a);
  SG_CHECK_OK(sg_scheduler_compiled(f.s, r[0], false, ++f.now, &f.a, &f.err),
              f.err);
  SG_CHECK(state(&f, r[0]) == SG_REQ_DONE);
  SG_CHECK(act(&f, SG_SACT_START_DEVICE, 0) == NULL);
  /* compiled twice, or device_done while compiling: refused */
  SG_CHECK_EQ_INT(sg_scheduler_compiled(f.s, r[0], true, ++f.now, &f.a,
                                        &f.err),
                  SG_ESTATE);
  SG_CHECK_EQ_INT(sg_scheduler_device_done(f.s, r[2], false, ++f.now, &f.a,
                                           &f.err),
                  SG_ESTATE);
  SG_CHECK_EQ_INT(sg_scheduler_compiled(f.s, 999, true, ++f.now, &f.a,
                                        &f.err),
                  SG_ENOENT);
  fx_free(&f);
}

/* ---- iteration boundaries ----------------------------------------------------- */

static void test_boundary_aborts_only_that_workflow(void) {
  fx f;
  fx_init(&f, 2, NULL);
  sg_req_id run0 = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  sg_req_id q0 = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  sg_req_id c0 = sub(&f, 0, 0, SG_PHASE_PROFILE, true);
  sg_req_id q1 = sub(&f, 1, 0, SG_PHASE_VALIDATE, false);
  SG_CHECK(state(&f, c0) == SG_REQ_COMPILING);
  boundary(&f, 0, 1);
  SG_CHECK(state(&f, run0) == SG_REQ_ABORTED);
  SG_CHECK(state(&f, q0) == SG_REQ_ABORTED);
  SG_CHECK(state(&f, c0) == SG_REQ_ABORTED);
  /* workflow 1's request takes the freed device */
  SG_CHECK(state(&f, q1) == SG_REQ_RUNNING);
  int aborts = 0;
  for (size_t i = 0; i < f.a.n; i++) {
    const sg_sched_action *x = &f.a.v[i];
    if (x->type != SG_SACT_ABORT)
      continue;
    aborts++;
    SG_CHECK_EQ_INT(x->workflow, 0);
    if (x->req == run0)
      SG_CHECK(x->device >= 0 && !x->was_compiling);
    if (x->req == q0)
      SG_CHECK(x->device == -1 && !x->was_compiling);
    if (x->req == c0)
      SG_CHECK(x->device == -1 && x->was_compiling);
  }
  SG_CHECK_EQ_INT(aborts, 3);
  /* the abort comes before the new start on the same device */
  const sg_sched_action *ab = NULL, *st = act(&f, SG_SACT_START_DEVICE, 0);
  for (size_t i = 0; i < f.a.n; i++)
    if (f.a.v[i].type == SG_SACT_ABORT && f.a.v[i].req == run0)
      ab = &f.a.v[i];
  SG_CHECK(ab != NULL && st != NULL && ab < st && ab->device == st->device);
  /* results for aborted requests are refused, so the runtime drops them */
  SG_CHECK_EQ_INT(sg_scheduler_device_done(f.s, run0, false, ++f.now, &f.a,
                                           &f.err),
                  SG_ESTATE);
  fx_free(&f);
}

/* A boundary aborts the running requests of its workflow on any device,
 * and none of another workflow's, also on a device that earlier ran one of
 * its own (each device records whose request it runs now). */
static void test_boundary_aborts_running_by_workflow(void) {
  fx f;
  fx_init(&f, 6, NULL); /* 3 validation, 3 profiling devices */
  sg_req_id a0 = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  sg_req_id b0 = sub(&f, 1, 0, SG_PHASE_VALIDATE, false);
  sg_req_id a1 = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  sg_req_id p1 = sub(&f, 1, 0, SG_PHASE_PROFILE, false);
  SG_CHECK(state(&f, a0) == SG_REQ_RUNNING && state(&f, b0) == SG_REQ_RUNNING &&
           state(&f, a1) == SG_REQ_RUNNING && state(&f, p1) == SG_REQ_RUNNING);
  /* workflow 0's first device now runs workflow 1's request */
  done(&f, a0);
  sg_req_id b1 = sub(&f, 1, 0, SG_PHASE_VALIDATE, false);
  SG_CHECK(state(&f, b1) == SG_REQ_RUNNING);
  boundary(&f, 0, 1);
  SG_CHECK(state(&f, a0) == SG_REQ_DONE);
  SG_CHECK(state(&f, a1) == SG_REQ_ABORTED);
  SG_CHECK(state(&f, b0) == SG_REQ_RUNNING && state(&f, b1) == SG_REQ_RUNNING &&
           state(&f, p1) == SG_REQ_RUNNING);
  SG_CHECK_EQ_INT(act(&f, SG_SACT_ABORT, 0)->req, a1);
  SG_CHECK(act(&f, SG_SACT_ABORT, 1) == NULL);
  boundary(&f, 1, 1);
  SG_CHECK(state(&f, b0) == SG_REQ_ABORTED && state(&f, b1) == SG_REQ_ABORTED &&
           state(&f, p1) == SG_REQ_ABORTED);
  /* abort order: by device index */
  SG_CHECK_EQ_INT(act(&f, SG_SACT_ABORT, 0)->device < act(&f, SG_SACT_ABORT, 1)->device, 1);
  SG_CHECK_EQ_INT(act(&f, SG_SACT_ABORT, 1)->device < act(&f, SG_SACT_ABORT, 2)->device, 1);
  boundary(&f, 0, 2); /* nothing of its own left anywhere */
  SG_CHECK(act(&f, SG_SACT_ABORT, 0) == NULL);
  fx_free(&f);
}

static void test_ended_iteration_is_refused(void) {
  fx f;
  fx_init(&f, 2, NULL);
  sub(&f, 0, 3, SG_PHASE_VALIDATE, false); /* starts at iteration 3 */
  boundary(&f, 0, 4);
  sg_sched_request r = {0, 3, SG_PHASE_VALIDATE, 0, false};
  sg_req_id id;
  SG_CHECK_EQ_INT(sg_scheduler_submit(f.s, &r, ++f.now, &id, &f.a, &f.err),
                  SG_ESTATE);
  SG_CHECK_CONTAINS(f.err.msg, "iteration 3");
  r.iteration = 5; /* the future too: only the current iteration */
  SG_CHECK_EQ_INT(sg_scheduler_submit(f.s, &r, ++f.now, &id, &f.a, &f.err),
                  SG_ESTATE);
  SG_CHECK_EQ_INT(sg_scheduler_iteration_boundary(f.s, 0, 4, ++f.now, &f.a,
                                                  &f.err),
                  SG_ESTATE);
  /* a finished workflow takes nothing more */
  sg_sched_actions_clear(&f.a);
  SG_CHECK_OK(sg_scheduler_workflow_done(f.s, 0, ++f.now, &f.a, &f.err),
              f.err);
  r.iteration = 4;
  SG_CHECK_EQ_INT(sg_scheduler_submit(f.s, &r, ++f.now, &id, &f.a, &f.err),
                  SG_ESTATE);
  fx_free(&f);
}

/* A workflow that is done before it submitted anything (a resumed run
 * whose last iteration was interrupted: its budget is spent at start) is
 * not an error, and takes nothing afterwards. */
static void test_workflow_done_before_any_request(void) {
  fx f;
  fx_init(&f, 2, NULL);
  sg_sched_actions_clear(&f.a);
  SG_CHECK_OK(sg_scheduler_workflow_done(f.s, 0, ++f.now, &f.a, &f.err), f.err);
  SG_CHECK_EQ_INT((int)f.a.n, 0);
  SG_CHECK_OK(sg_scheduler_workflow_done(f.s, 0, ++f.now, &f.a, &f.err), f.err);
  sg_sched_request r = {0, 0, SG_PHASE_VALIDATE, 0, false};
  sg_req_id id;
  SG_CHECK_EQ_INT(sg_scheduler_submit(f.s, &r, ++f.now, &id, &f.a, &f.err), SG_ESTATE);
  /* the other workflows are served as before */
  sg_req_id b = sub(&f, 1, 0, SG_PHASE_VALIDATE, false);
  SG_CHECK(act(&f, SG_SACT_START_DEVICE, 0) != NULL);
  SG_CHECK(act(&f, SG_SACT_START_DEVICE, 0)->req == b);
  fx_free(&f);
}

/* ---- failures --------------------------------------------------------------- */

static void test_dead_device_taken_out_of_service(void) {
  fx f;
  fx_init(&f, 3, NULL); /* N = 3; d0,d1 validate, d2 profile */
  sg_req_id r = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  int d = -1;
  for (int i = 0; i < 3; i++)
    if (sg_scheduler_device_request(f.s, i) == r)
      d = i;
  SG_CHECK(d == 0);
  /* an infra failure: retried (on the same device: it is the first idle
   * validation device), the count grows; a success resets it */
  sg_sched_actions_clear(&f.a);
  SG_CHECK_OK(sg_scheduler_device_done(f.s, r, true, ++f.now, &f.a, &f.err),
              f.err);
  SG_CHECK(state(&f, r) == SG_REQ_RUNNING);
  done(&f, r);
  SG_CHECK(sg_scheduler_device_state(f.s, 0) == SG_DEVICE_IDLE);
  /* three in a row kill it; the request moves on, then fails after its
   * retries (max_retries=2) */
  sg_req_id q = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  SG_CHECK_EQ_INT(sg_scheduler_device_request(f.s, 0), q);
  for (int i = 0; i < 3; i++) {
    int on = -1;
    for (int k = 0; k < 3; k++)
      if (sg_scheduler_device_request(f.s, k) == q)
        on = k;
    SG_CHECK_MSG(on >= 0, "round %d: q not running", i);
    sg_sched_actions_clear(&f.a);
    SG_CHECK_OK(sg_scheduler_device_done(f.s, q, true, ++f.now, &f.a, &f.err),
                f.err);
  }
  SG_CHECK(state(&f, q) == SG_REQ_FAILED);
  SG_CHECK(act(&f, SG_SACT_FAIL, 0) != NULL);
  SG_CHECK_EQ_INT(act(&f, SG_SACT_FAIL, 0)->req, q);
  SG_CHECK(sg_scheduler_device_state(f.s, 0) == SG_DEVICE_DEAD);
  sg_sched_stats st;
  sg_scheduler_stats(f.s, &st);
  SG_CHECK_EQ_INT(st.dead_devices, 1);
  /* two devices left, one per part; nothing runs on the dead one again */
  SG_CHECK_EQ_INT(count_part(&f, SG_PHASE_PROFILE), 1);
  SG_CHECK_EQ_INT(count_part(&f, SG_PHASE_VALIDATE), 1);
  for (int i = 0; i < 5; i++) {
    sg_req_id x = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
    SG_CHECK_EQ_INT(sg_scheduler_device_request(f.s, 0), 0);
    done(&f, x);
  }
  fx_free(&f);
}

static void one_failure_kills(sg_sched_opts *o) {
  o->max_infra_failures = 1;
  o->max_retries = 5;
}

static void two_failures_kill(sg_sched_opts *o) {
  o->max_infra_failures = 2;
  o->max_retries = 10;
}

static sg_req_id infra(fx *f, sg_req_id id) {
  sg_sched_actions_clear(&f->a);
  SG_CHECK_OK(sg_scheduler_device_done(f->s, id, true, ++f->now, &f->a,
                                       &f->err),
              f->err);
  return id;
}

/* Only consecutive failures count: a success in between resets the count.
 * A retried request goes first in its (FIFO) queue: it waited already. */
static void test_failures_must_be_consecutive_and_retry_goes_first(void) {
  fx f;
  fx_init(&f, 2, two_failures_kill); /* d0 validate, d1 profile */
  sg_req_id a = sub(&f, 0, 0, SG_PHASE_PROFILE, false);
  sg_req_id b = sub(&f, 0, 0, SG_PHASE_PROFILE, false);
  sg_req_id c = sub(&f, 0, 0, SG_PHASE_PROFILE, false);
  SG_CHECK_EQ_INT(sg_scheduler_device_request(f.s, 1), a);
  infra(&f, a); /* d1: 1 failure; a goes before b and c */
  SG_CHECK_EQ_INT(sg_scheduler_device_request(f.s, 1), a);
  done(&f, a);  /* reset */
  SG_CHECK_EQ_INT(sg_scheduler_device_request(f.s, 1), b);
  infra(&f, b); /* 1 again, not 2 */
  SG_CHECK(sg_scheduler_device_state(f.s, 1) == SG_DEVICE_BUSY);
  SG_CHECK_EQ_INT(sg_scheduler_device_request(f.s, 1), b);
  infra(&f, b); /* 2 in a row: dead */
  SG_CHECK(sg_scheduler_device_state(f.s, 1) == SG_DEVICE_DEAD);
  /* one device left: it serves both parts, b (retried) before c */
  SG_CHECK_EQ_INT(sg_scheduler_device_request(f.s, 0), b);
  SG_CHECK(state(&f, c) == SG_REQ_DEVICE_WAIT);
  fx_free(&f);
}

static void test_no_device_left_fails_requests(void) {
  fx f;
  fx_init(&f, 1, one_failure_kills);
  sg_req_id a = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  sg_req_id b = sub(&f, 0, 0, SG_PHASE_PROFILE, false);
  sg_sched_actions_clear(&f.a);
  SG_CHECK_OK(sg_scheduler_device_done(f.s, a, true, ++f.now, &f.a, &f.err),
              f.err);
  SG_CHECK(act(&f, SG_SACT_DEVICE_DEAD, 0) != NULL);
  SG_CHECK(state(&f, a) == SG_REQ_FAILED);
  SG_CHECK(state(&f, b) == SG_REQ_FAILED);
  sg_req_id c = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  SG_CHECK(state(&f, c) == SG_REQ_FAILED);
  SG_CHECK(act(&f, SG_SACT_FAIL, 0) != NULL);
  fx_free(&f);
}

/* ---- one device, capacity, accounting ------------------------------------------ */

static void test_one_device_serves_both_profile_first(void) {
  fx f;
  fx_init(&f, 1, NULL);
  sg_req_id blocker = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  sg_req_id v = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  sg_req_id p = sub(&f, 0, 0, SG_PHASE_PROFILE, false);
  done(&f, blocker);
  SG_CHECK_EQ_INT(sg_scheduler_device_request(f.s, 0), p);
  done(&f, p);
  SG_CHECK_EQ_INT(sg_scheduler_device_request(f.s, 0), v);
  boundary(&f, 0, 1); /* no re-split with one device */
  SG_CHECK(sg_scheduler_device_part(f.s, 0) == SG_PHASE__COUNT);
  fx_free(&f);
}

static void test_capacity_counts_live_requests(void) {
  fx f;
  fx_init(&f, 4, NULL); /* 2 + 2 */
  sg_sched_capacity c;
  sg_scheduler_capacity(f.s, &c);
  SG_CHECK_EQ_INT(c.free_validate, 2);
  SG_CHECK_EQ_INT(c.free_profile, 2);
  SG_CHECK_EQ_INT(c.validate_devices, 2);
  sub(&f, 0, 0, SG_PHASE_VALIDATE, true); /* compiling counts: it will come */
  sg_scheduler_capacity(f.s, &c);
  SG_CHECK_EQ_INT(c.free_validate, 1);
  SG_CHECK_EQ_INT(c.queued_validate, 1);
  for (int i = 0; i < 4; i++)
    sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  sg_scheduler_capacity(f.s, &c);
  SG_CHECK_EQ_INT(c.free_validate, 0); /* never negative */
  SG_CHECK_EQ_INT(c.free_profile, 2);
  fx_free(&f);

  fx_init(&f, 1, NULL);
  sg_scheduler_capacity(f.s, &c);
  SG_CHECK_EQ_INT(c.free_validate, 1);
  SG_CHECK_EQ_INT(c.free_profile, 1);
  sub(&f, 0, 0, SG_PHASE_PROFILE, false);
  sg_scheduler_capacity(f.s, &c);
  SG_CHECK_EQ_INT(c.free_validate, 0); /* the shared device is taken */
  SG_CHECK_EQ_INT(c.free_profile, 0);
  fx_free(&f);
}

static void work_conserving(sg_sched_opts *o) { o->work_conserving = true; }

/* Work conserving, pools of two: with one validation and one profiling
 * device, two validations run at once (the profiling device takes the
 * second), and a profile waiting while both are busy goes to the first
 * device that frees, whichever its part. Without it the second validation
 * waits while the profiling device idles. Capacity counts the whole pool. */
static void test_work_conserving_pool_of_two(void) {
  fx f;
  fx_init(&f, 2, NULL);
  sg_req_id a = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  sg_req_id b = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  SG_CHECK_EQ_INT(state(&f, a), SG_REQ_RUNNING);
  SG_CHECK_EQ_INT(state(&f, b), SG_REQ_DEVICE_WAIT);
  fx_free(&f);

  fx_init(&f, 2, work_conserving);
  sg_sched_capacity c;
  sg_scheduler_capacity(f.s, &c);
  SG_CHECK_EQ_INT(c.free_validate, 2);
  SG_CHECK_EQ_INT(c.free_profile, 2);
  a = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  b = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  SG_CHECK_EQ_INT(state(&f, a), SG_REQ_RUNNING);
  SG_CHECK_EQ_INT(state(&f, b), SG_REQ_RUNNING);
  sg_scheduler_capacity(f.s, &c);
  SG_CHECK_EQ_INT(c.free_validate, 0);
  SG_CHECK_EQ_INT(c.free_profile, 0);
  sg_req_id p = sub(&f, 0, 0, SG_PHASE_PROFILE, false);
  SG_CHECK_EQ_INT(state(&f, p), SG_REQ_DEVICE_WAIT);
  done(&f, a); /* the validation device frees: it takes the profile */
  SG_CHECK_EQ_INT(state(&f, p), SG_REQ_RUNNING);
  const sg_sched_action *st = act(&f, SG_SACT_START_DEVICE, 0);
  SG_CHECK(st != NULL && st->phase == SG_PHASE_PROFILE);
  /* Its own part still comes first: a validation and a profile waiting,
   * the profiling device takes the profile. */
  done(&f, b);
  done(&f, p);
  sg_req_id v1 = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  sg_req_id v2 = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  sg_req_id v3 = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  sg_req_id p2 = sub(&f, 0, 0, SG_PHASE_PROFILE, false);
  SG_CHECK_EQ_INT(state(&f, v1), SG_REQ_RUNNING);
  SG_CHECK_EQ_INT(state(&f, v2), SG_REQ_RUNNING);
  int prof_dev = sg_scheduler_device_part(f.s, 0) == SG_PHASE_PROFILE ? 0 : 1;
  sg_req_id on_prof = sg_scheduler_device_request(f.s, prof_dev);
  done(&f, on_prof);
  SG_CHECK_EQ_INT(state(&f, p2), SG_REQ_RUNNING);
  SG_CHECK_EQ_INT(state(&f, v3), SG_REQ_DEVICE_WAIT);
  fx_free(&f);
}

static void work_conserving_split(sg_sched_opts *o) {
  o->work_conserving = true;
  o->split_capacity = true;
}

/* Split capacity: the devices still serve both parts (a second validation
 * runs on the profiling device), but the free capacity the controllers
 * see stays each part's own, so K is the paper's. */
static void test_work_conserving_split_capacity(void) {
  fx f;
  fx_init(&f, 2, work_conserving_split);
  sg_sched_capacity c;
  sg_scheduler_capacity(f.s, &c);
  SG_CHECK_EQ_INT(c.free_validate, 1);
  SG_CHECK_EQ_INT(c.free_profile, 1);
  sg_req_id a = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  sg_req_id b = sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  SG_CHECK_EQ_INT(state(&f, a), SG_REQ_RUNNING);
  SG_CHECK_EQ_INT(state(&f, b), SG_REQ_RUNNING);
  sg_scheduler_capacity(f.s, &c);
  SG_CHECK_EQ_INT(c.free_validate, 0);
  SG_CHECK_EQ_INT(c.free_profile, 1);
  fx_free(&f);
}

static void test_busy_time_accounting(void) {
  fx f;
  fx_init(&f, 2, NULL);
  sg_sched_request r = {0, 0, SG_PHASE_VALIDATE, 0, false};
  sg_req_id id;
  SG_CHECK_OK(sg_scheduler_submit(f.s, &r, 1000, &id, &f.a, &f.err), f.err);
  sg_scheduler_tick(f.s, 1500, NULL);
  sg_sched_stats st;
  sg_scheduler_stats(f.s, &st);
  SG_CHECK_EQ_INT(st.busy_us[SG_PHASE_VALIDATE], 500);
  SG_CHECK_OK(sg_scheduler_device_done(f.s, id, false, 3000, &f.a, &f.err),
              f.err);
  sg_scheduler_tick(f.s, 9000, NULL); /* idle time is not busy time */
  sg_scheduler_stats(f.s, &st);
  SG_CHECK_EQ_INT(st.busy_us[SG_PHASE_VALIDATE], 2000);
  SG_CHECK_EQ_INT(st.busy_us[SG_PHASE_PROFILE], 0);
  SG_CHECK_EQ_INT(st.started[SG_PHASE_VALIDATE], 1);
  SG_CHECK_EQ_INT(st.completed[SG_PHASE_VALIDATE], 1);
  fx_free(&f);
}

static void test_queue_cap(void) {
  fx f;
  sg_sched_opts o;
  sg_sched_opts_default(&o);
  o.max_queued = 3;
  sg_err_clear(&f.err);
  SG_CHECK_OK(sg_scheduler_new(&o, &f.s, &f.err), f.err);
  sg_sched_actions_init(&f.a);
  f.now = 0;
  for (int i = 0; i < 3; i++)
    sub(&f, 0, 0, SG_PHASE_VALIDATE, false);
  sg_sched_request r = {0, 0, SG_PHASE_VALIDATE, 0, false};
  sg_req_id id;
  SG_CHECK_EQ_INT(sg_scheduler_submit(f.s, &r, ++f.now, &id, &f.a, &f.err),
                  SG_EFULL);
  fx_free(&f);
}

static void test_actions_carry_the_candidate(void) {
  fx f;
  fx_init(&f, 2, NULL);
  sg_sched_request r = {3, 0, SG_PHASE_PROFILE, 77, true};
  sg_req_id id;
  sg_sched_actions_clear(&f.a);
  SG_CHECK_OK(sg_scheduler_submit(f.s, &r, ++f.now, &id, &f.a, &f.err),
              f.err);
  const sg_sched_action *c = act(&f, SG_SACT_START_COMPILE, 0);
  SG_CHECK(c != NULL);
  SG_CHECK_EQ_INT(c->candidate, 77);
  SG_CHECK_EQ_INT(c->workflow, 3);
  SG_CHECK(c->phase == SG_PHASE_PROFILE);
  sg_sched_request back;
  SG_CHECK_EQ_INT(sg_scheduler_request_info(f.s, id, &back), 0);
  SG_CHECK_EQ_INT(back.candidate, 77);
  SG_CHECK_EQ_INT(back.workflow, 3);
  SG_CHECK_EQ_INT(sg_scheduler_request_info(f.s, id + 1, &back), SG_ENOENT);
  fx_free(&f);
}

static void test_names(void) {
  SG_CHECK_STR_EQ(sg_phase_name(SG_PHASE_VALIDATE), "validate");
  SG_CHECK_STR_EQ(sg_phase_name(SG_PHASE_PROFILE), "profile");
  SG_CHECK_STR_EQ(sg_req_state_name(SG_REQ_DEVICE_WAIT), "device_wait");
  SG_CHECK_STR_EQ(sg_device_state_name(SG_DEVICE_DEAD), "dead");
  SG_CHECK_STR_EQ(sg_req_state_name(SG_REQ__COUNT), "unknown");
}

SG_TEST_MAIN(SG_TEST(test_split_formula_edges),
             SG_TEST(test_bad_options_are_named),
             SG_TEST(test_initial_split_is_even),
             SG_TEST(test_resplit_from_peak_queues),
             SG_TEST(test_resplit_names_the_live_workflow),
             SG_TEST(test_static_split_never_moves),
             SG_TEST(test_busy_device_switches_after_its_run),
             SG_TEST(test_validation_is_lifo_profiling_fifo),
             SG_TEST(test_fifo_validation_option),
             SG_TEST(test_fairness_across_workflows),
             SG_TEST(test_compile_never_holds_a_device),
             SG_TEST(test_boundary_aborts_only_that_workflow),
             SG_TEST(test_boundary_aborts_running_by_workflow),
             SG_TEST(test_ended_iteration_is_refused),
             SG_TEST(test_workflow_done_before_any_request),
             SG_TEST(test_dead_device_taken_out_of_service),
             SG_TEST(test_failures_must_be_consecutive_and_retry_goes_first),
             SG_TEST(test_no_device_left_fails_requests),
             SG_TEST(test_one_device_serves_both_profile_first),
             SG_TEST(test_capacity_counts_live_requests),
             SG_TEST(test_work_conserving_pool_of_two),
             SG_TEST(test_work_conserving_split_capacity),
             SG_TEST(test_busy_time_accounting),
             SG_TEST(test_queue_cap),
             SG_TEST(test_actions_carry_the_candidate),
             SG_TEST(test_names))
