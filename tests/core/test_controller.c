/* test_controller.c: Algorithm 1, rule by rule, from hand-built event
 * sequences: forks on each trigger class and on idle devices, K at its
 * edges, never twice from one prefix, validate-then-profile, every
 * termination criterion (a plugin too), cancellation on early termination,
 * the main generation as fallback, budgets, stale events. */
#include "core/sg_controller.h"

#include "sg_test.h"

#include <math.h>
#include <time.h>

#define CODE "Here it is.\n```c\nvoid hinge(float *x) { x[0] = 1; }\n```\n"
#define PHRASE "Let me implement the kernel now.\n"
#define DESIGN "I will use a tile size of 32x32 for the shared memory blocks.\n"
#define FILLER "First I think about the problem in general terms here.\n"

typedef struct fx {
  sg_termination_registry treg;
  sg_search_registry sreg;
  sg_termination *term;
  sg_search *search;
  sg_controller *c;
  sg_ctl_actions a;
  sg_err err;
  int64_t now;
  uint64_t main_gen;
} fx;

typedef void (*tweak_fn)(sg_ctl_opts *);

static int ratio_init(void **st, const char *arg, sg_err *err) {
  double *r = malloc(sizeof *r);
  if (arg == NULL || sscanf(arg, "%lf", r) != 1) {
    free(r);
    return sg_err_set(err, SG_EINVAL, "bad ratio");
  }
  *st = r;
  return 0;
}
static bool ratio_decide(void *st, const sg_termination_history *h,
                         double speedup) {
  return speedup > h->best * *(double *)st;
}
static const sg_termination_plugin ratio_plugin = {"above-ratio", ratio_init,
                                                   ratio_decide, free};

static const sg_ctl_action *act(const fx *f, sg_ctl_action_type t, int nth) {
  for (size_t i = 0; i < f->a.n; i++)
    if (f->a.v[i].type == t && nth-- == 0)
      return &f->a.v[i];
  return NULL;
}

static int count(const fx *f, sg_ctl_action_type t) {
  int n = 0;
  for (size_t i = 0; i < f->a.n; i++)
    n += f->a.v[i].type == t;
  return n;
}

static void fx_init3(fx *f, const char *term, const char *search,
                     tweak_fn tweak) {
  memset(f, 0, sizeof *f);
  sg_err_clear(&f->err);
  sg_termination_registry_init(&f->treg);
  SG_CHECK_OK(sg_termination_register(&f->treg, &ratio_plugin, &f->err),
              f->err);
  sg_search_registry_init(&f->sreg);
  SG_CHECK_OK(sg_termination_new(&f->treg, term, &f->term, &f->err), f->err);
  SG_CHECK_OK(sg_search_new(&f->sreg, search, 7, &f->search, &f->err),
              f->err);
  sg_ctl_opts o;
  sg_ctl_opts_default(&o);
  o.search = f->search;
  o.termination = f->term;
  o.language = "c";
  o.entry = "hinge";
  o.scanner.min_gap_bytes = 0;
  o.idle_min_new_bytes = 16;
  if (tweak)
    tweak(&o);
  SG_CHECK_OK(sg_controller_new(&o, &f->c, &f->err), f->err);
  sg_ctl_actions_init(&f->a);
  f->now = 1000;
  SG_CHECK_OK(sg_controller_start(f->c, f->now, &f->a, &f->err), f->err);
  const sg_ctl_action *s = act(f, SG_CACT_START_GEN, 0);
  SG_CHECK(s != NULL);
  f->main_gen = s->u.start.gen;
}

/* Options for a controller built by hand (not started): a criterion and
 * the refine search, freed with bare_free. */
typedef struct bare {
  sg_termination_registry treg;
  sg_search_registry sreg;
  sg_termination *term;
  sg_search *search;
  sg_ctl_opts o;
  sg_err err;
} bare;

static void bare_init(bare *b, const char *term) {
  memset(b, 0, sizeof *b);
  sg_err_clear(&b->err);
  sg_termination_registry_init(&b->treg);
  sg_search_registry_init(&b->sreg);
  SG_CHECK_OK(sg_termination_new(&b->treg, term, &b->term, &b->err), b->err);
  SG_CHECK_OK(sg_search_new(&b->sreg, "refine", 7, &b->search, &b->err), b->err);
  sg_ctl_opts_default(&b->o);
  b->o.search = b->search;
  b->o.termination = b->term;
  b->o.language = "c";
  b->o.entry = "hinge";
}

static void bare_free(bare *b) {
  sg_termination_free(b->term);
  sg_search_free(b->search);
}

static void fx_init(fx *f, const char *term, tweak_fn tweak) {
  fx_init3(f, term, "refine", tweak);
}

static void fx_free(fx *f) {
  sg_controller_free(f->c);
  sg_termination_free(f->term);
  sg_search_free(f->search);
  sg_ctl_actions_free(&f->a);
}

static int ev(fx *f, sg_ctl_event *e) {
  e->now_us = ++f->now;
  sg_ctl_actions_clear(&f->a);
  return sg_controller_event(f->c, e, &f->a, &f->err);
}

static void set_cap(fx *f, int fv, int fp) {
  sg_sched_capacity cap = {0};
  cap.free_validate = fv;
  cap.free_profile = fp;
  sg_controller_set_capacity(f->c, &cap);
}

static void chunk(fx *f, uint64_t gen, const char *reasoning,
                  const char *content, uint64_t tokens) {
  sg_ctl_event e = {.type = SG_CEV_GEN_CHUNK};
  e.u.chunk.gen = gen;
  e.u.chunk.reasoning = reasoning;
  e.u.chunk.reasoning_len = reasoning ? strlen(reasoning) : 0;
  e.u.chunk.content = content;
  e.u.chunk.content_len = content ? strlen(content) : 0;
  e.u.chunk.tokens = tokens;
  SG_CHECK_OK(ev(f, &e), f->err);
}

static void finish(fx *f, uint64_t gen, const char *text) {
  sg_ctl_event e = {.type = SG_CEV_GEN_FINISHED};
  e.u.finished.gen = gen;
  e.u.finished.text = text;
  e.u.finished.len = text ? strlen(text) : 0;
  e.u.finished.usage.prompt_tokens = 10;
  e.u.finished.usage.completion_tokens = 20;
  SG_CHECK_OK(ev(f, &e), f->err);
}

static void fail_gen(fx *f, uint64_t gen) {
  sg_ctl_event e = {.type = SG_CEV_GEN_FAILED};
  e.u.failed.gen = gen;
  e.u.failed.error = SG_EHTTP;
  SG_CHECK_OK(ev(f, &e), f->err);
}

static void eval(fx *f, uint64_t cand, sg_phase phase, sg_eval_status st,
                 double speedup) {
  sg_ctl_event e = {.type = SG_CEV_EVAL_DONE};
  e.u.eval.candidate = cand;
  e.u.eval.phase = phase;
  e.u.eval.status = st;
  e.u.eval.speedup = speedup;
  e.u.eval.message = st == SG_EVAL_OK ? NULL : "wrong at index 3";
  e.u.eval.profile_text = phase == SG_PHASE_PROFILE ? "memory-bound" : NULL;
  SG_CHECK_OK(ev(f, &e), f->err);
}

static void tick(fx *f, int fv, int fp) {
  sg_ctl_event e = {.type = SG_CEV_TICK};
  e.u.tick.capacity.free_validate = fv;
  e.u.tick.capacity.free_profile = fp;
  SG_CHECK_OK(ev(f, &e), f->err);
}

/* The candidate submitted in the last batch (nth SUBMIT_EVAL), or 0. */
static uint64_t submitted(const fx *f, sg_phase phase) {
  for (size_t i = 0; i < f->a.n; i++)
    if (f->a.v[i].type == SG_CACT_SUBMIT_EVAL &&
        f->a.v[i].u.submit.phase == phase)
      return f->a.v[i].u.submit.candidate;
  return 0;
}

/* Forks once from text (which must trigger); returns the fork's id. */
static uint64_t fork_on(fx *f, const char *text) {
  set_cap(f, 1, 1);
  chunk(f, f->main_gen, text, NULL, 5);
  const sg_ctl_action *s = act(f, SG_CACT_START_GEN, 0);
  SG_CHECK(s != NULL && s->u.start.kind == SG_GEN_SPEC);
  return s->u.start.gen;
}

/* Runs a spec generation to a profiled candidate with this speedup. */
static uint64_t spec_to_profile(fx *f, uint64_t gen, double speedup) {
  finish(f, gen, CODE);
  uint64_t cand = submitted(f, SG_PHASE_VALIDATE);
  SG_CHECK(cand != 0);
  eval(f, cand, SG_PHASE_VALIDATE, SG_EVAL_OK, speedup);
  SG_CHECK_EQ_INT(submitted(f, SG_PHASE_PROFILE), cand);
  eval(f, cand, SG_PHASE_PROFILE, SG_EVAL_OK, speedup);
  return cand;
}

/* ---- start ---------------------------------------------------------------- */

static void test_start_issues_main_generation(void) {
  fx f;
  fx_init(&f, "hist-avg", NULL);
  /* fx_init's batch: one main generation with thinking, the task alone */
  SG_CHECK_EQ_INT(f.a.n, 1);
  const sg_ctl_action *s = act(&f, SG_CACT_START_GEN, 0);
  SG_CHECK(s->u.start.kind == SG_GEN_MAIN && s->u.start.thinking);
  SG_CHECK_EQ_INT(s->u.start.prompt->base_kernel, 0);
  SG_CHECK_EQ_INT(s->iteration, 0);
  SG_CHECK(sg_controller_state(f.c) == SG_CTL_GENERATING);
  sg_ctl_actions_clear(&f.a);
  SG_CHECK_EQ_INT(sg_controller_start(f.c, 5, &f.a, &f.err), SG_ESTATE);
  fx_free(&f);
}

static void test_event_before_start_refused(void) {
  sg_termination_registry treg;
  sg_search_registry sreg;
  sg_termination_registry_init(&treg);
  sg_search_registry_init(&sreg);
  sg_termination *t;
  sg_search *s;
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_termination_new(&treg, "none", &t, &err), err);
  SG_CHECK_OK(sg_search_new(&sreg, "refine", 1, &s, &err), err);
  sg_ctl_opts o;
  sg_ctl_opts_default(&o);
  sg_controller *c;
  SG_CHECK_EQ_INT(sg_controller_new(&o, &c, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "search");
  o.search = s;
  SG_CHECK_EQ_INT(sg_controller_new(&o, &c, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "termination");
  o.termination = t;
  SG_CHECK_EQ_INT(sg_controller_new(&o, &c, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "language");
  o.language = "c";
  SG_CHECK_OK(sg_controller_new(&o, &c, &err), err);
  sg_ctl_actions a;
  sg_ctl_actions_init(&a);
  sg_ctl_event e = {.type = SG_CEV_TICK};
  SG_CHECK_EQ_INT(sg_controller_event(c, &e, &a, &err), SG_ESTATE);
  SG_CHECK(sg_controller_state(c) == SG_CTL_NEW);
  sg_controller_free(c);
  sg_termination_free(t);
  sg_search_free(s);
  sg_ctl_actions_free(&a);
}

/* ---- forks ---------------------------------------------------------------------- */

static void test_fork_on_each_trigger_class(void) {
  struct {
    const char *text;
    sg_trigger_class cls;
  } rows[] = {
      {DESIGN, SG_TRIGGER_DESIGN},
      {"```cuda\n__global__ void k(float *x) { x[0] = 1.0f; }\n```\n",
       SG_TRIGGER_FENCE},
      {"Consider __global__ void k2(float *y, int n) { if (n) { y[0] = 2.0f; "
       "} } as",
       SG_TRIGGER_KERNEL},
      {PHRASE, SG_TRIGGER_PHRASE},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    fx f;
    fx_init(&f, "hist-avg", NULL);
    set_cap(&f, 2, 3);
    chunk(&f, f.main_gen, FILLER, NULL, 1);
    SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 0);
    chunk(&f, f.main_gen, rows[i].text, NULL, 1);
    const sg_ctl_action *d = act(&f, SG_CACT_DECISION, 0);
    SG_CHECK_MSG(d != NULL, "row %zu: no fork", i);
    SG_CHECK(d->u.decision.reason == SG_REASON_FORK_TRIGGER);
    SG_CHECK_MSG(d->u.decision.trigger == (int)rows[i].cls,
                 "row %zu: trigger %d", i, d->u.decision.trigger);
    SG_CHECK_EQ_INT(d->u.decision.k, 2);
    SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 2);
    for (int k = 0; k < 2; k++) {
      const sg_ctl_action *s = act(&f, SG_CACT_START_GEN, k);
      SG_CHECK(s->u.start.kind == SG_GEN_SPEC && !s->u.start.thinking);
      SG_CHECK_EQ_INT(s->u.start.parent_gen, f.main_gen);
      SG_CHECK_EQ_INT(s->u.start.prefix_len, d->u.decision.prefix_len);
      SG_CHECK(s->u.start.prefix_len > strlen(FILLER));
      SG_CHECK(s->u.start.prefix_len <= strlen(FILLER) + strlen(rows[i].text));
      SG_CHECK(memcmp(s->u.start.prefix, FILLER, strlen(FILLER)) == 0);
      SG_CHECK(s->u.start.prompt != NULL);
    }
    sg_ctl_stats st;
    sg_controller_stats(f.c, &st);
    SG_CHECK_EQ_INT(st.forks_by_trigger[rows[i].cls], 2);
    SG_CHECK_EQ_INT(st.forks_by_reason[SG_REASON_FORK_TRIGGER], 2);
    fx_free(&f);
  }
}

static int max_live_3(void) { return 3; }
static void live3(sg_ctl_opts *o) { o->max_live_forks = max_live_3(); }
static void per_iter5(sg_ctl_opts *o) { o->max_forks_per_iteration = 5; }

/* K = max(1, min(free validate, free profile)), then the fork caps. */
static void test_k_formula_edges(void) {
  struct {
    int fv, fp;
    tweak_fn tweak;
    int want;
  } rows[] = {
      {0, 0, NULL, 1}, {3, 0, NULL, 1}, {0, 3, NULL, 1}, {2, 5, NULL, 2},
      {5, 2, NULL, 2}, {4, 4, NULL, 4}, {1, 1, NULL, 1},
      {8, 8, live3, 3}, /* max_live_forks */
      {8, 8, per_iter5, 5},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    fx f;
    fx_init(&f, "hist-avg", rows[i].tweak);
    set_cap(&f, rows[i].fv, rows[i].fp);
    chunk(&f, f.main_gen, PHRASE, NULL, 1);
    SG_CHECK_MSG(count(&f, SG_CACT_START_GEN) == rows[i].want,
                 "row %zu: %d forks, want %d", i,
                 count(&f, SG_CACT_START_GEN), rows[i].want);
    fx_free(&f);
  }
  /* the caps hold across forks: 3 live at most, and 5 per iteration */
  fx f;
  fx_init(&f, "hist-avg", live3);
  set_cap(&f, 2, 2);
  chunk(&f, f.main_gen, PHRASE, NULL, 1);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 2);
  chunk(&f, f.main_gen, DESIGN, NULL, 1);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 1);
  chunk(&f, f.main_gen, "Now let me write the code.\n", NULL, 1);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 0);
  fx_free(&f);
  fx_init(&f, "hist-avg", per_iter5);
  set_cap(&f, 3, 3);
  chunk(&f, f.main_gen, PHRASE, NULL, 1);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 3);
  chunk(&f, f.main_gen, DESIGN, NULL, 1);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 2);
  fx_free(&f);
}

/* One budget shared by two workflows on one LLM server (fork_budget): K is
 * cut to the streams the server has left, a fork that finishes or fails
 * gives its stream back, the forks an ended iteration cancels give theirs
 * back, and a controller freed mid-iteration returns what it held. */
static sg_fork_budget server_budget;
static void on_server(sg_ctl_opts *o) { o->fork_budget = &server_budget; }

static void test_fork_budget_shared_by_a_server(void) {
  server_budget = (sg_fork_budget){.cap = 3};
  fx a, b;
  fx_init(&a, "hist-avg", on_server);
  fx_init(&b, "hist-avg", on_server);
  set_cap(&a, 8, 8);
  set_cap(&b, 8, 8);
  chunk(&a, a.main_gen, PHRASE, NULL, 1);
  SG_CHECK_EQ_INT(count(&a, SG_CACT_START_GEN), 3); /* not the pool's 8 */
  SG_CHECK_EQ_INT(server_budget.used, 3);
  uint64_t fa[3];
  for (int i = 0; i < 3; i++)
    fa[i] = act(&a, SG_CACT_START_GEN, i)->u.start.gen;
  chunk(&b, b.main_gen, PHRASE, NULL, 1);
  SG_CHECK_EQ_INT(count(&b, SG_CACT_START_GEN), 0); /* the server is full */
  finish(&a, fa[0], CODE);
  SG_CHECK_EQ_INT(server_budget.used, 2);
  chunk(&b, b.main_gen, DESIGN, NULL, 1);
  SG_CHECK_EQ_INT(count(&b, SG_CACT_START_GEN), 1);
  SG_CHECK_EQ_INT(server_budget.used, 3);
  fail_gen(&a, fa[1]);
  SG_CHECK_EQ_INT(server_budget.used, 2);
  /* a's main answers; its kernel fails validation: the iteration falls
   * back, ends, and cancels a's last fork */
  finish(&a, a.main_gen, CODE);
  uint64_t cand = submitted(&a, SG_PHASE_VALIDATE);
  SG_CHECK(cand != 0);
  eval(&a, cand, SG_PHASE_VALIDATE, SG_EVAL_COMPILE_ERROR, NAN);
  SG_CHECK_EQ_INT(count(&a, SG_CACT_END_ITERATION), 1);
  SG_CHECK_EQ_INT(server_budget.used, 1); /* b's fork */
  fx_free(&b); /* freed with its fork generating */
  SG_CHECK_EQ_INT(server_budget.used, 0);
  fx_free(&a);
  /* a budget that leaves no stream for forks is refused */
  sg_fork_budget none = {.cap = 0};
  sg_ctl_opts o;
  sg_ctl_opts_default(&o);
  o.search = (sg_search *)1;
  o.termination = (const sg_termination *)1;
  o.language = "c";
  o.fork_budget = &none;
  sg_controller *c = NULL;
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_EQ_INT(sg_controller_new(&o, &c, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "fork_budget");
  SG_CHECK(c == NULL);
}

/* A cap the runtime lowered after the controllers were made (the server's
 * measured load, sg_server_load.h): 0 starts no fork, and what the cap kept
 * from starting is counted in `withheld`, once per main and reasoning
 * growth of idle_min_new_bytes (ticks retry often); a cap below the forks
 * already live starts none (K is never negative); raised again, forks
 * start. */
static void on_server_512(sg_ctl_opts *o) {
  o->fork_budget = &server_budget;
  o->idle_min_new_bytes = 512;
}

static void test_fork_budget_lowered_withholds(void) {
  server_budget = (sg_fork_budget){.cap = 3};
  fx a;
  fx_init(&a, "hist-avg", on_server_512);
  set_cap(&a, 8, 8);
  server_budget.cap = 0;
  chunk(&a, a.main_gen, PHRASE, NULL, 1);
  SG_CHECK_EQ_INT(count(&a, SG_CACT_START_GEN), 0);
  SG_CHECK_EQ_INT((int)server_budget.withheld, 8);
  chunk(&a, a.main_gen, DESIGN, NULL, 1); /* a few bytes more: not again */
  SG_CHECK_EQ_INT(count(&a, SG_CACT_START_GEN), 0);
  SG_CHECK_EQ_INT((int)server_budget.withheld, 8);
  for (int i = 0; i < 20; i++) /* 600 bytes more */
    chunk(&a, a.main_gen, "The rows are read once per pass.\n", NULL, 1);
  chunk(&a, a.main_gen, "Now let me write the code.\n", NULL, 1);
  SG_CHECK_EQ_INT(count(&a, SG_CACT_START_GEN), 0);
  SG_CHECK_EQ_INT((int)server_budget.withheld, 16);
  server_budget.cap = 3; /* the load passed */
  chunk(&a, a.main_gen, "We use blocks of 64 rows.\n", NULL, 1);
  SG_CHECK_EQ_INT(count(&a, SG_CACT_START_GEN), 3);
  SG_CHECK_EQ_INT(server_budget.used, 3);
  server_budget.cap = 1; /* below the forks live */
  for (int i = 0; i < 20; i++)
    chunk(&a, a.main_gen, "The rows are read once per pass.\n", NULL, 1);
  chunk(&a, a.main_gen, "We use blocks of 128 rows.\n", NULL, 1);
  SG_CHECK_EQ_INT(count(&a, SG_CACT_START_GEN), 0);
  SG_CHECK_EQ_INT(server_budget.used, 3);
  fx_free(&a);
  SG_CHECK_EQ_INT(server_budget.used, 0);
}

static void test_fork_on_idle_devices(void) {
  fx f;
  fx_init(&f, "hist-avg", NULL);
  chunk(&f, f.main_gen, FILLER, NULL, 1); /* no trigger in it */
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 0);
  tick(&f, 0, 4); /* validation busy: no fork */
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 0);
  tick(&f, 2, 3);
  const sg_ctl_action *d = act(&f, SG_CACT_DECISION, 0);
  SG_CHECK(d != NULL && d->u.decision.reason == SG_REASON_FORK_IDLE);
  SG_CHECK_EQ_INT(d->u.decision.trigger, -1);
  SG_CHECK_EQ_INT(d->u.decision.prefix_len, strlen(FILLER));
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 2);
  fx_free(&f);
}

static void idle_any_growth(sg_ctl_opts *o) { o->idle_min_new_bytes = 0; }

static void test_never_twice_from_same_prefix(void) {
  fx f;
  fx_init(&f, "hist-avg", NULL); /* idle_min_new_bytes = 16 */
  set_cap(&f, 1, 1);
  chunk(&f, f.main_gen, PHRASE, NULL, 1);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 1);
  uint64_t p1 = act(&f, SG_CACT_DECISION, 0)->u.decision.prefix_len;
  tick(&f, 4, 4); /* idle, but nothing new since the trigger */
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 0);
  chunk(&f, f.main_gen, "ok", NULL, 1); /* 2 new bytes < 16 */
  tick(&f, 4, 4);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 0);
  chunk(&f, f.main_gen, " and now some more thinking.", NULL, 1);
  tick(&f, 1, 1);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 1);
  uint64_t p2 = act(&f, SG_CACT_DECISION, 0)->u.decision.prefix_len;
  SG_CHECK(p2 > p1);
  tick(&f, 1, 1);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 0);
  fx_free(&f);
  /* with no growth threshold at all, the prefix rule alone holds */
  fx_init(&f, "hist-avg", idle_any_growth);
  set_cap(&f, 1, 1);
  chunk(&f, f.main_gen, PHRASE, NULL, 1);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 1);
  for (int i = 0; i < 3; i++) {
    tick(&f, 4, 4);
    SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 0);
  }
  chunk(&f, f.main_gen, "x", NULL, 1);
  tick(&f, 4, 4);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 4);
  SG_CHECK_EQ_INT(act(&f, SG_CACT_DECISION, 0)->u.decision.prefix_len,
                  strlen(PHRASE) + 1);
  tick(&f, 4, 4);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 0);
  fx_free(&f);
}

static void gate08(sg_ctl_opts *o) { o->fork_gate = 0.8; }

/* Forks gated by expected value: once a fork from a prefix of L bytes has
 * validated, a later iteration does not fork from a prefix shorter than
 * 0.8 L (those have not given valid kernels), and does from a longer one.
 * Before any valid fork nothing is gated; with the gate off, the short
 * prefix forks. */
static void gate_case(double gate, bool expect_short_fork) {
  fx f;
  fx_init(&f, "first-valid", gate > 0 ? gate08 : NULL);
  uint64_t g = fork_on(&f, FILLER FILLER FILLER PHRASE); /* ungated: none valid yet */
  spec_to_profile(&f, g, 2.0);
  const sg_ctl_action *end = act(&f, SG_CACT_END_ITERATION, 0);
  SG_CHECK(end != NULL && end->u.end.reason == SG_REASON_EARLY);
  const sg_ctl_action *s = act(&f, SG_CACT_START_GEN, 0);
  SG_CHECK(s != NULL && s->u.start.kind == SG_GEN_MAIN);
  f.main_gen = s->u.start.gen;
  set_cap(&f, 1, 1);
  chunk(&f, f.main_gen, PHRASE, NULL, 5); /* a trigger, at a short prefix */
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), expect_short_fork ? 1 : 0);
  chunk(&f, f.main_gen, FILLER FILLER FILLER, NULL, 5);
  tick(&f, 4, 4); /* past 0.8 of the valid prefix now: an idle fork */
  SG_CHECK(count(&f, SG_CACT_START_GEN) >= 1);
  fx_free(&f);
}

static void test_fork_gate_by_expected_value(void) {
  gate_case(0.8, false);
  gate_case(0, true);
}

static void cutoff13(sg_ctl_opts *o) { o->cutoff = 1.3; }

/* The adaptive cutoff: after SG_CTL_GATE_WINDOW valid forks (each from a
 * prefix of L bytes), an iteration whose reasoning passes 1.3 L with
 * nothing valid and nothing in flight ends with reason cutoff, cancelling
 * its main generation; short of 1.3 L, or with a fork still writing, it
 * does not. */
/* SG_CTL_GATE_WINDOW iterations, each ended by a valid fork from a prefix
 * of len(FILLER PHRASE) bytes: the cutoff has learned its window. */
static void learn_cutoff_window(fx *f) {
  for (int i = 0; i < SG_CTL_GATE_WINDOW; i++) {
    tick(f, 0, 0);
    SG_CHECK_EQ_INT(count(f, SG_CACT_END_ITERATION), 0); /* not yet learned */
    uint64_t g = fork_on(f, FILLER PHRASE);
    spec_to_profile(f, g, 2.0);
    SG_CHECK(act(f, SG_CACT_END_ITERATION, 0) != NULL);
    f->main_gen = act(f, SG_CACT_START_GEN, 0)->u.start.gen;
  }
}

static void test_cutoff_ends_hopeless_iterations(void) {
  fx f;
  fx_init(&f, "first-valid", cutoff13);
  learn_cutoff_window(&f);
  chunk(&f, f.main_gen, FILLER FILLER, NULL, 5); /* short of 1.3 x the prefix */
  tick(&f, 0, 0);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_END_ITERATION), 0);
  uint64_t g = fork_on(&f, PHRASE); /* now past it, but a fork writes */
  tick(&f, 0, 0);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_END_ITERATION), 0);
  finish(&f, g, CODE);
  uint64_t cand = submitted(&f, SG_PHASE_VALIDATE);
  tick(&f, 0, 0); /* its candidate is being validated */
  SG_CHECK_EQ_INT(count(&f, SG_CACT_END_ITERATION), 0);
  eval(&f, cand, SG_PHASE_VALIDATE, SG_EVAL_NUMERICAL_ERROR, NAN);
  tick(&f, 0, 0);
  const sg_ctl_action *end = act(&f, SG_CACT_END_ITERATION, 0);
  SG_CHECK(end != NULL && end->u.end.reason == SG_REASON_CUTOFF);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_CANCEL_GEN), 1);
  SG_CHECK_STR_EQ(sg_ctl_reason_name(SG_REASON_CUTOFF), "cutoff");
  fx_free(&f);
}

static void cutoff_detach(sg_ctl_opts *o) {
  o->cutoff = 1.3;
  o->cutoff_detach = true;
  o->max_iterations = 20;
}

/* Reasoning past the cutoff, then a tick: the iteration ends (cutoff). */
static void cut_off(fx *f) {
  chunk(f, f->main_gen, FILLER FILLER FILLER FILLER, NULL, 5);
  tick(f, 0, 0);
  const sg_ctl_action *end = act(f, SG_CACT_END_ITERATION, 0);
  SG_CHECK(end != NULL && end->u.end.reason == SG_REASON_CUTOFF);
}

/* cutoff_detach: the main generation a cutoff ends goes on, detached. The
 * next iteration starts at once; the detached main forks nothing, its
 * answer's kernel joins the iteration running when it arrives (and may end
 * it); a second cutoff while one runs cancels as before; the workflow's
 * end cancels it; a detached main that fails leaves nothing behind. */
static void test_cutoff_detach_keeps_the_main_answer(void) {
  fx f;
  fx_init(&f, "first-valid", cutoff_detach);
  learn_cutoff_window(&f);
  uint64_t old = f.main_gen;
  uint32_t it = sg_controller_iteration(f.c);
  cut_off(&f);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_CANCEL_GEN), 0); /* detached, not cancelled */
  const sg_ctl_action *s = act(&f, SG_CACT_START_GEN, 0);
  SG_CHECK(s != NULL && s->u.start.kind == SG_GEN_MAIN && s->u.start.gen != old);
  f.main_gen = s->u.start.gen;
  SG_CHECK_EQ_INT(sg_controller_iteration(f.c), it + 1);
  sg_ctl_stats st;
  sg_controller_stats(f.c, &st);
  SG_CHECK_EQ_INT(st.detached, 1);
  SG_CHECK_EQ_INT(st.early_terminations, SG_CTL_GATE_WINDOW); /* a cutoff is not early */
  /* its reasoning forks nothing, even with devices free; its answer streams */
  set_cap(&f, 4, 4);
  chunk(&f, old, FILLER PHRASE PHRASE, "Here it is.\n```c\nvoid hinge(float *x) ", 5);
  tick(&f, 4, 4);
  for (size_t i = 0; i < f.a.n; i++)
    SG_CHECK(f.a.v[i].type != SG_CACT_START_GEN || f.a.v[i].u.start.parent_gen != old);
  chunk(&f, old, NULL, "{ x[0] = 1; }\n```\n", 5);
  finish(&f, old, NULL); /* the answer from its streamed content */
  uint64_t cand = submitted(&f, SG_PHASE_VALIDATE);
  SG_CHECK(cand != 0);
  const sg_kernel *k = sg_history_get(sg_controller_history(f.c), cand);
  SG_CHECK(k != NULL && k->origin == SG_GEN_MAIN && k->gen == old);
  SG_CHECK_EQ_INT(k->iteration, it + 1); /* the iteration running now */
  sg_controller_stats(f.c, &st);
  SG_CHECK_EQ_INT(st.detached_answers, 1);
  finish(&f, old, CODE); /* once only */
  SG_CHECK_EQ_INT(f.a.n, 0);
  /* valid and accepted: it ends the current iteration like any kernel */
  eval(&f, cand, SG_PHASE_VALIDATE, SG_EVAL_OK, 3.0);
  eval(&f, cand, SG_PHASE_PROFILE, SG_EVAL_OK, 3.0);
  const sg_ctl_action *end = act(&f, SG_CACT_END_ITERATION, 0);
  SG_CHECK(end != NULL && end->u.end.reason == SG_REASON_EARLY &&
           end->u.end.best_kernel == cand);
  f.main_gen = act(&f, SG_CACT_START_GEN, 0)->u.start.gen;

  /* two cutoffs while the first still runs: the second main is cancelled */
  uint64_t first = f.main_gen;
  cut_off(&f);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_CANCEL_GEN), 0);
  f.main_gen = act(&f, SG_CACT_START_GEN, 0)->u.start.gen;
  uint64_t second = f.main_gen;
  cut_off(&f);
  const sg_ctl_action *c = act(&f, SG_CACT_CANCEL_GEN, 0);
  SG_CHECK(c != NULL && c->u.cancel.gen == second && count(&f, SG_CACT_CANCEL_GEN) == 1);
  f.main_gen = act(&f, SG_CACT_START_GEN, 0)->u.start.gen;
  /* the detached one fails: nothing follows, later events for it are
   * ignored, and the next cutoff detaches again */
  fail_gen(&f, first);
  SG_CHECK_EQ_INT(f.a.n, 0);
  finish(&f, first, CODE);
  SG_CHECK_EQ_INT(f.a.n, 0);
  uint64_t third = f.main_gen;
  cut_off(&f);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_CANCEL_GEN), 0);
  sg_controller_stats(f.c, &st);
  SG_CHECK_EQ_INT(st.detached, 3);
  SG_CHECK_EQ_INT(st.detached_answers, 1);
  /* the workflow's end cancels the detached main before WORKFLOW_DONE */
  f.main_gen = act(&f, SG_CACT_START_GEN, 0)->u.start.gen;
  sg_ctl_event e = {.type = SG_CEV_GEN_FAILED};
  e.u.failed.gen = f.main_gen;
  e.u.failed.error = SG_EHTTP;
  while (sg_controller_state(f.c) != SG_CTL_DONE) {
    SG_CHECK_OK(ev(&f, &e), f.err); /* each main fails: fallback, next */
    const sg_ctl_action *n = act(&f, SG_CACT_START_GEN, 0);
    if (n != NULL)
      e.u.failed.gen = n->u.start.gen;
  }
  const sg_ctl_action *cancel = act(&f, SG_CACT_CANCEL_GEN, 0);
  SG_CHECK(cancel != NULL && cancel->u.cancel.gen == third);
  SG_CHECK(cancel < act(&f, SG_CACT_WORKFLOW_DONE, 0));
  fx_free(&f);
}

static void cutoff_detach_last(sg_ctl_opts *o) {
  cutoff_detach(o);
  o->max_iterations = SG_CTL_GATE_WINDOW + 1;
}

/* A cutoff in the workflow's last iteration cancels its main: no
 * iteration follows to take the answer. */
static void test_cutoff_detach_not_in_the_last_iteration(void) {
  fx f;
  fx_init(&f, "first-valid", cutoff_detach_last);
  learn_cutoff_window(&f);
  uint64_t last = f.main_gen;
  cut_off(&f);
  const sg_ctl_action *c = act(&f, SG_CACT_CANCEL_GEN, 0);
  SG_CHECK(c != NULL && c->u.cancel.gen == last);
  SG_CHECK(c < act(&f, SG_CACT_END_ITERATION, 0));
  SG_CHECK(act(&f, SG_CACT_WORKFLOW_DONE, 0) != NULL);
  sg_ctl_stats st;
  sg_controller_stats(f.c, &st);
  SG_CHECK_EQ_INT(st.detached, 0);
  fx_free(&f);
}

static void vd_off(sg_ctl_opts *o) { o->decide_at_validation = 0; }
static void vd1(sg_ctl_opts *o) { o->decide_at_validation = 1; }
static void vd2(sg_ctl_opts *o) { o->decide_at_validation = 2; }

static void ahead10(sg_ctl_opts *o) {
  o->next_ahead = true;
  o->max_iterations = 10;
}

/* The first START_GEN of this kind in the last batch, or NULL. */
static const sg_ctl_action *started(const fx *f, sg_gen_kind kind) {
  for (size_t i = 0; i < f->a.n; i++)
    if (f->a.v[i].type == SG_CACT_START_GEN && f->a.v[i].u.start.kind == kind)
      return &f->a.v[i];
  return NULL;
}

/* A fork from a fresh trigger writes a kernel: its candidate goes to
 * validation (and, with next_ahead, the next main may start). */
static uint64_t fork_submitted(fx *f, const char *text) {
  uint64_t g = fork_on(f, text);
  finish(f, g, CODE);
  uint64_t cand = submitted(f, SG_PHASE_VALIDATE);
  SG_CHECK(cand != 0);
  return cand;
}

/* next_ahead: the first candidate of an iteration sent to validation,
 * once a best kernel exists, starts the next iteration's main (START_GEN
 * main with the next iteration's number), once; it forks nothing while ahead, and forks
 * started after it are still found by id. The iteration ends: if the best
 * kernel changed, it is cancelled (flagged as ahead) and a new main
 * starts; if not, it is the next iteration's main with no START_GEN, and
 * forks at once from the trigger its text held. */
static void test_next_ahead(void) {
  fx f;
  fx_init(&f, "first-valid", ahead10);
  /* no best kernel yet: the first one accepted will be, so none starts */
  uint64_t c0 = fork_submitted(&f, PHRASE);
  SG_CHECK(started(&f, SG_GEN_MAIN) == NULL);
  eval(&f, c0, SG_PHASE_VALIDATE, SG_EVAL_OK, 1.0);
  eval(&f, c0, SG_PHASE_PROFILE, SG_EVAL_OK, 1.0);
  f.main_gen = started(&f, SG_GEN_MAIN)->u.start.gen;
  uint64_t c1 = fork_submitted(&f, PHRASE);
  const sg_ctl_action *s = started(&f, SG_GEN_MAIN);
  SG_CHECK(s != NULL && s->iteration == 2 && s->u.start.thinking && s->u.start.prompt != NULL);
  SG_CHECK_EQ_INT(s->u.start.prompt->base_kernel, c0); /* the best so far */
  uint64_t a1 = s->u.start.gen;
  SG_CHECK_EQ_INT(sg_controller_iteration(f.c), 1);
  set_cap(&f, 4, 4);
  chunk(&f, a1, DESIGN, NULL, 5); /* a trigger, but no fork while ahead */
  tick(&f, 4, 4);
  for (size_t i = 0; i < f.a.n; i++)
    SG_CHECK(f.a.v[i].type != SG_CACT_START_GEN || f.a.v[i].u.start.parent_gen != a1);
  eval(&f, c1, SG_PHASE_VALIDATE, SG_EVAL_COMPILE_ERROR, NAN); /* the iteration goes on */
  SG_CHECK_EQ_INT(count(&f, SG_CACT_END_ITERATION), 0);
  uint64_t c2 = fork_submitted(&f, FILLER DESIGN); /* a fork after the ahead main's id */
  SG_CHECK(started(&f, SG_GEN_MAIN) == NULL); /* one ahead at a time */
  eval(&f, c2, SG_PHASE_VALIDATE, SG_EVAL_OK, 2.0);
  eval(&f, c2, SG_PHASE_PROFILE, SG_EVAL_OK, 2.0);
  /* accepted, a new best: the main started ahead refines the wrong one */
  const sg_ctl_action *end = act(&f, SG_CACT_END_ITERATION, 0);
  const sg_ctl_action *cancel = NULL;
  for (int i = 0; (cancel = act(&f, SG_CACT_CANCEL_GEN, i)) != NULL; i++)
    if (cancel->u.cancel.gen == a1)
      break;
  SG_CHECK(end != NULL && cancel != NULL && cancel->u.cancel.ahead && cancel > end);
  for (int i = 0; act(&f, SG_CACT_CANCEL_GEN, i) != NULL; i++)
    SG_CHECK(act(&f, SG_CACT_CANCEL_GEN, i)->u.cancel.ahead ==
             (act(&f, SG_CACT_CANCEL_GEN, i)->u.cancel.gen == a1));
  s = started(&f, SG_GEN_MAIN);
  SG_CHECK(s != NULL && s->iteration == 2 && s->u.start.gen != a1 &&
           s->u.start.prompt->base_kernel == c2);
  f.main_gen = s->u.start.gen;
  chunk(&f, a1, FILLER, NULL, 5); /* the cancelled one's events are ignored */
  finish(&f, a1, CODE);
  SG_CHECK_EQ_INT(f.a.n, 0);

  /* iteration 2: ahead on the best (c2); the accepted kernel is slower,
   * so the best stands and the ahead main is adopted */
  uint64_t c3 = fork_submitted(&f, PHRASE);
  s = started(&f, SG_GEN_MAIN);
  SG_CHECK(s != NULL && s->iteration == 3 && s->u.start.prompt->base_kernel == c2);
  uint64_t a2 = s->u.start.gen;
  chunk(&f, a2, FILLER DESIGN, NULL, 5);
  eval(&f, c3, SG_PHASE_VALIDATE, SG_EVAL_OK, 1.0);
  eval(&f, c3, SG_PHASE_PROFILE, SG_EVAL_OK, 1.0);
  end = act(&f, SG_CACT_END_ITERATION, 0);
  SG_CHECK(end != NULL && end->u.end.reason == SG_REASON_EARLY);
  SG_CHECK(started(&f, SG_GEN_MAIN) == NULL);
  for (int i = 0; act(&f, SG_CACT_CANCEL_GEN, i) != NULL; i++)
    SG_CHECK(act(&f, SG_CACT_CANCEL_GEN, i)->u.cancel.gen != a2);
  const sg_ctl_action *fk = started(&f, SG_GEN_SPEC);
  SG_CHECK(fk != NULL && fk->u.start.parent_gen == a2 && fk > end &&
           fk->u.start.prefix_len == strlen(FILLER DESIGN) && fk->iteration == 3);
  SG_CHECK_EQ_INT(sg_controller_iteration(f.c), 3);
  sg_ctl_stats st;
  sg_controller_stats(f.c, &st);
  SG_CHECK_EQ_INT(st.ahead_started, 2);
  SG_CHECK_EQ_INT(st.ahead_adopted, 1);
  /* c3 is no failure and not the best: the prompt it was started on is
   * the one the iteration's own start gives, it lacks nothing */
  SG_CHECK_EQ_INT(st.ahead_stale, 0);
  /* it is this iteration's main now: its text forks, its answer is a main's */
  f.main_gen = a2;
  uint64_t fk2 = fork_on(&f, PHRASE);
  SG_CHECK(fk2 != 0);
  finish(&f, a2, CODE);
  uint64_t c4 = submitted(&f, SG_PHASE_VALIDATE);
  const sg_kernel *k = sg_history_get(sg_controller_history(f.c), c4);
  SG_CHECK(k != NULL && k->origin == SG_GEN_MAIN && k->gen == a2 && k->iteration == 3);
  uint64_t a3 = started(&f, SG_GEN_MAIN)->u.start.gen;

  /* the main started ahead finishes before its iteration: its answer is
   * that iteration's candidate when it is adopted */
  chunk(&f, a3, FILLER, NULL, 5);
  finish(&f, a3, CODE);
  SG_CHECK_EQ_INT(f.a.n, 0);
  eval(&f, c4, SG_PHASE_VALIDATE, SG_EVAL_OK, 1.5);
  eval(&f, c4, SG_PHASE_PROFILE, SG_EVAL_OK, 1.5);
  SG_CHECK_EQ_INT(sg_controller_iteration(f.c), 4);
  uint64_t c5 = submitted(&f, SG_PHASE_VALIDATE);
  k = sg_history_get(sg_controller_history(f.c), c5);
  SG_CHECK(k != NULL && k->gen == a3 && k->iteration == 4 && k->origin == SG_GEN_MAIN);
  SG_CHECK(sg_controller_state(f.c) == SG_CTL_FALLBACK); /* its main is done */

  /* one that fails while ahead: the next iteration starts a new main */
  uint64_t a4 = started(&f, SG_GEN_MAIN)->u.start.gen; /* started by c5's submission */
  fail_gen(&f, a4);
  SG_CHECK_EQ_INT(f.a.n, 0);
  eval(&f, c5, SG_PHASE_VALIDATE, SG_EVAL_OK, 1.2);
  eval(&f, c5, SG_PHASE_PROFILE, SG_EVAL_OK, 1.2);
  s = started(&f, SG_GEN_MAIN);
  SG_CHECK(s != NULL && s->iteration == 5 && s->u.start.gen != a4);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_CANCEL_GEN), 0);
  f.main_gen = s->u.start.gen;

  /* mains that fail end their iterations; the one started ahead is
   * adopted in turn, then each iteration starts its own */
  fork_submitted(&f, PHRASE);
  uint64_t cur = f.main_gen, a5 = started(&f, SG_GEN_MAIN)->u.start.gen;
  sg_ctl_event e = {.type = SG_CEV_GEN_FAILED};
  e.u.failed.error = SG_EHTTP;
  while (sg_controller_state(f.c) != SG_CTL_DONE) {
    e.u.failed.gen = cur;
    SG_CHECK_OK(ev(&f, &e), f.err);
    const sg_ctl_action *n = started(&f, SG_GEN_MAIN);
    cur = n != NULL ? n->u.start.gen : a5;
  }
  sg_controller_stats(f.c, &st);
  SG_CHECK_EQ_INT(st.iterations, 10);
  SG_CHECK_EQ_INT(st.ahead_adopted, 3);
  fx_free(&f);
}

/* No main starts ahead of an iteration that will not run, and the option
 * needs the refine search. */
static void ahead_last(sg_ctl_opts *o) {
  o->next_ahead = true;
  o->max_iterations = 2;
}

static void ahead_tokens(sg_ctl_opts *o) {
  ahead10(o);
  o->max_tokens = 1000;
}

static void test_next_ahead_limits(void) {
  fx f;
  fx_init(&f, "first-valid", ahead_last);
  uint64_t first = fork_submitted(&f, PHRASE);
  eval(&f, first, SG_PHASE_VALIDATE, SG_EVAL_OK, 1.0);
  eval(&f, first, SG_PHASE_PROFILE, SG_EVAL_OK, 1.0);
  f.main_gen = started(&f, SG_GEN_MAIN)->u.start.gen; /* the last iteration */
  fork_submitted(&f, PHRASE);
  SG_CHECK(started(&f, SG_GEN_MAIN) == NULL);
  fx_free(&f);

  /* a budget spent: the workflow's end cancels it (flagged as ahead)
   * before WORKFLOW_DONE; its tokens count */
  fx_init(&f, "first-valid", ahead_tokens);
  uint64_t c0 = fork_submitted(&f, PHRASE); /* a best kernel first */
  eval(&f, c0, SG_PHASE_VALIDATE, SG_EVAL_OK, 1.0);
  eval(&f, c0, SG_PHASE_PROFILE, SG_EVAL_OK, 1.0);
  f.main_gen = started(&f, SG_GEN_MAIN)->u.start.gen;
  fork_submitted(&f, PHRASE);
  const sg_ctl_action *s = started(&f, SG_GEN_MAIN);
  SG_CHECK(s != NULL);
  uint64_t a = s->u.start.gen;
  chunk(&f, a, FILLER, NULL, 2000);
  const sg_ctl_action *cancel = NULL;
  for (int i = 0; (cancel = act(&f, SG_CACT_CANCEL_GEN, i)) != NULL; i++)
    if (cancel->u.cancel.gen == a)
      break;
  const sg_ctl_action *done = act(&f, SG_CACT_WORKFLOW_DONE, 0);
  SG_CHECK(cancel != NULL && cancel->u.cancel.ahead && done != NULL && cancel < done);
  SG_CHECK(done->u.done.reason == SG_REASON_BUDGET_TOKENS);
  fx_free(&f);

  sg_termination_registry treg;
  sg_search_registry sreg;
  sg_termination *term;
  sg_search *search;
  sg_err err;
  sg_err_clear(&err);
  sg_termination_registry_init(&treg);
  sg_search_registry_init(&sreg);
  SG_CHECK_OK(sg_termination_new(&treg, "first-valid", &term, &err), err);
  SG_CHECK_OK(sg_search_new(&sreg, "best-of-n:2", 7, &search, &err), err);
  sg_ctl_opts o;
  sg_ctl_opts_default(&o);
  o.search = search;
  o.termination = term;
  o.language = "c";
  o.next_ahead = true;
  sg_controller *c = NULL;
  SG_CHECK_EQ_INT(sg_controller_new(&o, &c, &err), SG_EINVAL);
  SG_CHECK(strstr(err.msg, "next_ahead") != NULL && strstr(err.msg, "refine") != NULL);
  SG_CHECK(c == NULL);
  sg_termination_free(term);
  sg_search_free(search);
}

/* Runs a fork from a fresh trigger to its validation at this speedup. */
static uint64_t fork_validated(fx *f, double speedup) {
  uint64_t g = fork_on(f, PHRASE);
  finish(f, g, CODE);
  uint64_t cand = submitted(f, SG_PHASE_VALIDATE);
  SG_CHECK(cand != 0);
  eval(f, cand, SG_PHASE_VALIDATE, SG_EVAL_OK, speedup);
  return cand;
}

/* Deciding at validation (hist-avg): a kernel whose validation speedup /
 * M beats the history's mean ends the iteration as it validates, with no
 * profile; it joins the history with that speedup as its measurement.
 * With the margin M = 2 a 1.5x against a mean of 1.0 is not enough there,
 * so it is profiled and the criterion decides on the profile, as with the
 * option off; a validation without a speedup never decides. */
static void test_decide_at_validation(void) {
  fx f;
  fx_init(&f, "hist-avg", vd1);
  uint64_t c1 = fork_validated(&f, 2.0);
  SG_CHECK_EQ_INT(submitted(&f, SG_PHASE_PROFILE), 0);
  const sg_ctl_action *d = act(&f, SG_CACT_DECISION, 0);
  SG_CHECK(d != NULL && d->u.decision.reason == SG_REASON_EARLY);
  SG_CHECK_EQ_INT(d->u.decision.candidate, c1);
  SG_CHECK(d->u.decision.speedup == 2.0 && d->u.decision.threshold_mean == 0);
  const sg_ctl_action *end = act(&f, SG_CACT_END_ITERATION, 0);
  SG_CHECK(end != NULL && end->u.end.reason == SG_REASON_EARLY);
  SG_CHECK_EQ_INT(end->u.end.best_kernel, c1);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_CANCEL_GEN), 1); /* the main generation */
  const sg_history *h = sg_controller_history(f.c);
  SG_CHECK(sg_history_get(h, c1)->profiled && h->best_id == c1);
  SG_CHECK(h->speedups.n == 2 && h->speedups.best == 2.0);
  sg_ctl_stats st;
  sg_controller_stats(f.c, &st);
  SG_CHECK(st.validation_accepts == 1 && st.criterion_accepts == 1 &&
           st.profiled == 0);
  f.main_gen = act(&f, SG_CACT_START_GEN, 0)->u.start.gen;
  fork_validated(&f, 1.5); /* 1.5 > mean {0, 2} = 1.0 */
  SG_CHECK(act(&f, SG_CACT_END_ITERATION, 0) != NULL);
  fx_free(&f);

  fx_init(&f, "hist-avg", vd2);
  fork_validated(&f, 2.0); /* 2.0 / 2 > 0: accepted */
  SG_CHECK(act(&f, SG_CACT_END_ITERATION, 0) != NULL);
  f.main_gen = act(&f, SG_CACT_START_GEN, 0)->u.start.gen;
  uint64_t c2 = fork_validated(&f, 1.5); /* 0.75 < 1.0: profile it */
  SG_CHECK_EQ_INT(submitted(&f, SG_PHASE_PROFILE), c2);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_END_ITERATION), 0);
  eval(&f, c2, SG_PHASE_PROFILE, SG_EVAL_OK, 1.5);
  SG_CHECK(act(&f, SG_CACT_END_ITERATION, 0) != NULL);
  f.main_gen = act(&f, SG_CACT_START_GEN, 0)->u.start.gen;
  uint64_t c3 = fork_validated(&f, NAN); /* nothing measured */
  SG_CHECK_EQ_INT(submitted(&f, SG_PHASE_PROFILE), c3);
  fx_free(&f);

  fx_init(&f, "hist-avg", vd_off);
  uint64_t c4 = fork_validated(&f, 2.0);
  SG_CHECK_EQ_INT(submitted(&f, SG_PHASE_PROFILE), c4);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_END_ITERATION), 0);
  fx_free(&f);

  bare b;
  bare_init(&b, "hist-avg");
  b.o.decide_at_validation = 0.5; /* a margin below 1 would lower the bar */
  sg_controller *c = NULL;
  SG_CHECK_EQ_INT(sg_controller_new(&b.o, &c, &b.err), SG_EINVAL);
  bare_free(&b);
}

static void vd_siblings(sg_ctl_opts *o) {
  o->decide_at_validation = 1;
  o->decide_with_siblings = true;
}

/* Forks three siblings from one trigger; their ids in g[0..3). */
static void fork_three(fx *f, uint64_t g[3]) {
  set_cap(f, 3, 3);
  chunk(f, f->main_gen, PHRASE, NULL, 5);
  SG_CHECK_EQ_INT(count(f, SG_CACT_START_GEN), 3);
  for (int i = 0; i < 3; i++) {
    const sg_ctl_action *s = act(f, SG_CACT_START_GEN, i);
    SG_CHECK(s != NULL && s->u.start.kind == SG_GEN_SPEC);
    g[i] = s ? s->u.start.gen : 0;
  }
}

/* A fork's answer; returns the candidate submitted for validation. */
static uint64_t answer(fx *f, uint64_t gen) {
  finish(f, gen, CODE);
  return submitted(f, SG_PHASE_VALIDATE);
}

/* decide_with_siblings: a fork's kernel accepted at validation waits for
 * its siblings (still generating, or validating); each that validates
 * with a speedup joins the history at it, unprofiled; once none is
 * pending, the fastest is accepted. Siblings that fail, write no kernel
 * or fail validation only end the wait. A kernel of the main generation
 * meanwhile is profiled, not accepted at validation, and may end the
 * iteration on its profile as usual. Off, the first is accepted at once;
 * without decide_at_validation the option is refused. */
static void test_decide_with_siblings(void) {
  fx f;
  fx_init(&f, "hist-avg", vd_siblings);
  uint64_t g[3];
  fork_three(&f, g);
  uint64_t c1 = answer(&f, g[0]), c2 = answer(&f, g[1]);
  eval(&f, c1, SG_PHASE_VALIDATE, SG_EVAL_OK, 2.0); /* passes: waits for c2, g[2] */
  SG_CHECK_EQ_INT(count(&f, SG_CACT_END_ITERATION), 0);
  SG_CHECK_EQ_INT(submitted(&f, SG_PHASE_PROFILE), 0);
  eval(&f, c2, SG_PHASE_VALIDATE, SG_EVAL_OK, 3.0);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_END_ITERATION), 0); /* g[2] still writes */
  SG_CHECK_EQ_INT(submitted(&f, SG_PHASE_PROFILE), 0);
  fail_gen(&f, g[2]);
  const sg_ctl_action *d = act(&f, SG_CACT_DECISION, 0);
  SG_CHECK(d != NULL && d->u.decision.reason == SG_REASON_EARLY);
  SG_CHECK_EQ_INT(d->u.decision.candidate, c2);
  SG_CHECK(d->u.decision.speedup == 3.0);
  const sg_ctl_action *end = act(&f, SG_CACT_END_ITERATION, 0);
  SG_CHECK(end != NULL && end->u.end.reason == SG_REASON_EARLY);
  SG_CHECK_EQ_INT(end->u.end.best_kernel, c2);
  const sg_history *h = sg_controller_history(f.c);
  SG_CHECK(sg_history_get(h, c1)->profiled && sg_history_get(h, c1)->speedup == 2.0);
  SG_CHECK(sg_history_get(h, c2)->profiled && h->best_id == c2);
  sg_ctl_stats st;
  sg_controller_stats(f.c, &st);
  SG_CHECK(st.validation_accepts == 1 && st.criterion_accepts == 1 && st.profiled == 0);
  SG_CHECK_EQ_INT(st.sibling_waits, 1);

  /* the next iteration: siblings that give nothing end the wait, and the
   * main's kernel meanwhile goes to its profile */
  f.main_gen = act(&f, SG_CACT_START_GEN, 0)->u.start.gen;
  fork_three(&f, g);
  c1 = answer(&f, g[0]);
  eval(&f, c1, SG_PHASE_VALIDATE, SG_EVAL_OK, 4.0); /* > mean {0, 2, 3} */
  finish(&f, f.main_gen, CODE);
  uint64_t cm = submitted(&f, SG_PHASE_VALIDATE);
  SG_CHECK(cm != 0);
  eval(&f, cm, SG_PHASE_VALIDATE, SG_EVAL_OK, 9.0);
  SG_CHECK_EQ_INT(submitted(&f, SG_PHASE_PROFILE), cm); /* not accepted here */
  SG_CHECK_EQ_INT(count(&f, SG_CACT_END_ITERATION), 0);
  finish(&f, g[1], "no kernel in this answer");
  SG_CHECK_EQ_INT(count(&f, SG_CACT_END_ITERATION), 0);
  uint64_t c3 = answer(&f, g[2]);
  eval(&f, c3, SG_PHASE_VALIDATE, SG_EVAL_NUMERICAL_ERROR, NAN);
  d = act(&f, SG_CACT_DECISION, 0);
  SG_CHECK(d != NULL && d->u.decision.candidate == c1);
  SG_CHECK(act(&f, SG_CACT_END_ITERATION, 0) != NULL);
  f.main_gen = act(&f, SG_CACT_START_GEN, 0)->u.start.gen;
  eval(&f, cm, SG_PHASE_PROFILE, SG_EVAL_OK, 9.0); /* dropped at the boundary */
  SG_CHECK_EQ_INT(count(&f, SG_CACT_END_ITERATION), 0);

  /* a profile that passes while one waits ends the iteration with it */
  fork_three(&f, g);
  c1 = answer(&f, g[0]);
  eval(&f, c1, SG_PHASE_VALIDATE, SG_EVAL_OK, 5.0);
  finish(&f, f.main_gen, CODE);
  cm = submitted(&f, SG_PHASE_VALIDATE);
  eval(&f, cm, SG_PHASE_VALIDATE, SG_EVAL_OK, 8.0);
  eval(&f, cm, SG_PHASE_PROFILE, SG_EVAL_OK, 8.0);
  d = act(&f, SG_CACT_DECISION, 0);
  SG_CHECK(d != NULL && d->u.decision.candidate == cm);
  end = act(&f, SG_CACT_END_ITERATION, 0);
  SG_CHECK(end != NULL && end->u.end.best_kernel == cm);
  fx_free(&f);

  fx_init(&f, "hist-avg", vd1); /* off: the first is accepted at once */
  fork_three(&f, g);
  c1 = answer(&f, g[0]);
  eval(&f, c1, SG_PHASE_VALIDATE, SG_EVAL_OK, 2.0);
  d = act(&f, SG_CACT_DECISION, 0);
  SG_CHECK(d != NULL && d->u.decision.candidate == c1);
  SG_CHECK(act(&f, SG_CACT_END_ITERATION, 0) != NULL);
  fx_free(&f);

  bare b;
  bare_init(&b, "hist-avg");
  b.o.decide_with_siblings = true;
  sg_controller *c = NULL;
  SG_CHECK_EQ_INT(sg_controller_new(&b.o, &c, &b.err), SG_EINVAL);
  SG_CHECK_CONTAINS(b.err.msg, "decide_with_siblings");
  bare_free(&b);
}

/* A resumed workflow under decide_at_validation and the cutoff: a kernel
 * accepted at validation (validated ok, never profiled) comes back with
 * its validation speedup in the criterion's history and as the best
 * kernel; without that flag a validated, unprofiled kernel stays out of
 * it (it was dropped); restored valid forks refill the window the cutoff
 * learns from, so it acts in the first resumed iteration. */
static void test_restore_after_decide_at_validation(void) {
  bare b;
  bare_init(&b, "hist-avg");
  b.o.decide_at_validation = 1;
  b.o.cutoff = 1.3;
  b.o.max_iterations = 20;
  sg_err err = b.err;
  sg_controller *c = NULL;
  SG_CHECK_OK(sg_controller_new(&b.o, &c, &err), err);
  const char *src = "void hinge(float *x) { x[0] = 1; }";
  for (int i = 0; i < SG_CTL_GATE_WINDOW; i++) {
    sg_ctl_restored k = {.iteration = (uint32_t)i, .origin = SG_GEN_SPEC,
                         .prefix_len = strlen(FILLER PHRASE), .source = src,
                         .source_len = strlen(src), .validated = true,
                         .validate_status = SG_EVAL_OK,
                         .validate_speedup = i == 3 ? 3.0 : 1.0 + i * 0.1,
                         .accepted_at_validation = i == 3,
                         .profile_speedup = NAN};
    SG_CHECK_OK(sg_controller_restore_kernel(c, &k, &err), err);
  }
  SG_CHECK_OK(sg_controller_restore_progress(c, SG_CTL_GATE_WINDOW, 0, NULL, &err), err);
  const sg_history *h = sg_controller_history(c);
  SG_CHECK_EQ_INT(h->best_id, 4);
  SG_CHECK(h->speedups.n == 2 && h->speedups.best == 3.0);
  sg_ctl_actions a;
  sg_ctl_actions_init(&a);
  SG_CHECK_OK(sg_controller_start(c, 1000, &a, &err), err);
  uint64_t main_gen = a.v[0].u.start.gen;
  sg_ctl_event e = {.type = SG_CEV_GEN_CHUNK, .now_us = 1001};
  e.u.chunk.gen = main_gen;
  e.u.chunk.reasoning = FILLER FILLER FILLER; /* past 1.3 x the prefixes */
  e.u.chunk.reasoning_len = strlen(e.u.chunk.reasoning);
  sg_ctl_actions_clear(&a);
  SG_CHECK_OK(sg_controller_event(c, &e, &a, &err), err);
  sg_ctl_event t = {.type = SG_CEV_TICK, .now_us = 1002};
  sg_ctl_actions_clear(&a);
  SG_CHECK_OK(sg_controller_event(c, &t, &a, &err), err);
  bool cut = false;
  for (size_t i = 0; i < a.n; i++)
    cut |= a.v[i].type == SG_CACT_END_ITERATION &&
           a.v[i].u.end.reason == SG_REASON_CUTOFF;
  SG_CHECK(cut);
  sg_ctl_actions_free(&a);
  sg_controller_free(c);
  bare_free(&b);
}

/* A resumed answer at the length cap is restored as one: its prefix is all
 * its main's reasoning, not a fork's, so it stays out of the fork gate's
 * window (a restored valid fork at that prefix gates a short fork). */
static void restored_gate_case(bool answer, bool expect_short_fork) {
  bare b;
  bare_init(&b, "none");
  b.o.fork_gate = 0.8;
  b.o.scanner.min_gap_bytes = 0;
  sg_err err = b.err;
  sg_controller *c = NULL;
  SG_CHECK_OK(sg_controller_new(&b.o, &c, &err), err);
  const char *src = "void hinge(float *x) { x[0] = 1; }";
  sg_ctl_restored k = {.iteration = 0, .origin = SG_GEN_SPEC, .answer = answer,
                       .prefix_len = strlen(FILLER FILLER FILLER PHRASE), .source = src,
                       .source_len = strlen(src), .validated = true,
                       .validate_status = SG_EVAL_OK, .validate_speedup = 1.0,
                       .profile_speedup = NAN};
  SG_CHECK_OK(sg_controller_restore_kernel(c, &k, &err), err);
  SG_CHECK(sg_controller_history(c)->v[0].answer == answer);
  SG_CHECK_OK(sg_controller_restore_progress(c, 1, 0, NULL, &err), err);
  sg_ctl_actions a;
  sg_ctl_actions_init(&a);
  SG_CHECK_OK(sg_controller_start(c, 1000, &a, &err), err);
  sg_sched_capacity cap = {.free_validate = 1, .free_profile = 1};
  sg_controller_set_capacity(c, &cap);
  sg_ctl_event e = {.type = SG_CEV_GEN_CHUNK, .now_us = 1001};
  e.u.chunk.gen = a.v[0].u.start.gen;
  e.u.chunk.reasoning = PHRASE; /* a trigger, at a short prefix */
  e.u.chunk.reasoning_len = strlen(PHRASE);
  sg_ctl_actions_clear(&a);
  SG_CHECK_OK(sg_controller_event(c, &e, &a, &err), err);
  int forks = 0;
  for (size_t i = 0; i < a.n; i++)
    forks += a.v[i].type == SG_CACT_START_GEN && a.v[i].u.start.kind == SG_GEN_SPEC;
  SG_CHECK_MSG(forks == (expect_short_fork ? 1 : 0), "answer %d: %d forks", answer, forks);
  sg_ctl_actions_free(&a);
  sg_controller_free(c);
  bare_free(&b);
}

static void test_restored_answer_stays_out_of_the_fork_gate(void) {
  restored_gate_case(true, true);
  restored_gate_case(false, false);
}

static void no_fork_cap(sg_ctl_opts *o) {
  o->max_live_forks = 100000;
  o->max_forks_per_iteration = 100000;
}

enum { MANY_FORKS = 600 };
static void live_many(sg_ctl_opts *o) {
  o->max_live_forks = MANY_FORKS;
  o->max_forks_per_iteration = 100000;
}

/* Hundreds of forks from one decision (K is the pool's free capacity, no
 * cap in Algorithm 1): every fork's events reach it by id in any order,
 * each candidate records its own generation, the live-fork count that caps
 * the next decision follows the forks that ended, and a second ending of
 * a fork, an unknown id and the forks of an ended iteration are ignored. */
static void test_many_forks_by_id(void) {
  enum { K = MANY_FORKS };
  fx f;
  fx_init(&f, "hist-avg", live_many);
  set_cap(&f, K, K);
  chunk(&f, f.main_gen, PHRASE, NULL, 1);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), K);
  static uint64_t ids[K];
  for (int i = 0; i < K; i++) {
    const sg_ctl_action *s = act(&f, SG_CACT_START_GEN, i);
    SG_CHECK(s->u.start.kind == SG_GEN_SPEC && s->u.start.parent_gen == f.main_gen);
    ids[i] = s->u.start.gen;
  }
  /* Newest first, every third one finishes; every seventh from the
   * oldest fails. */
  int ended = 0;
  uint64_t first_cand = 0;
  for (int i = K - 1; i >= 0; i -= 3) {
    finish(&f, ids[i], CODE);
    uint64_t cand = submitted(&f, SG_PHASE_VALIDATE);
    SG_CHECK_MSG(cand != 0, "fork %d gave no candidate", i);
    const sg_kernel *k = sg_history_get(sg_controller_history(f.c), cand);
    SG_CHECK(k != NULL && k->gen == ids[i] && k->origin == SG_GEN_SPEC);
    if (first_cand == 0)
      first_cand = cand;
    finish(&f, ids[i], CODE); /* a second ending: ignored */
    SG_CHECK_EQ_INT(f.a.n, 0);
    ended++;
  }
  for (int i = 1; i < K; i += 7)
    if ((K - 1 - i) % 3 != 0) {
      fail_gen(&f, ids[i]);
      ended++;
    }
  finish(&f, ids[K - 1] + 1000, CODE); /* never started: ignored */
  SG_CHECK_EQ_INT(f.a.n, 0);
  /* The live cap is K: the next decision forks exactly the room left. */
  set_cap(&f, K, K);
  chunk(&f, f.main_gen, DESIGN, NULL, 1);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), ended);
  /* A profiled fork ends the iteration (hist-avg over {0}); then the old
   * forks' events are stale. */
  eval(&f, first_cand, SG_PHASE_VALIDATE, SG_EVAL_OK, 2.0);
  eval(&f, first_cand, SG_PHASE_PROFILE, SG_EVAL_OK, 2.0);
  const sg_ctl_action *end = act(&f, SG_CACT_END_ITERATION, 0);
  SG_CHECK(end != NULL && end->u.end.reason == SG_REASON_EARLY);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_CANCEL_GEN), 1 + K);
  f.main_gen = act(&f, SG_CACT_START_GEN, 0)->u.start.gen;
  SG_CHECK(f.main_gen > ids[K - 1]);
  finish(&f, ids[3], CODE);
  SG_CHECK_EQ_INT(f.a.n, 0);
  /* The new iteration forks against an empty live count. */
  set_cap(&f, 5, 5);
  chunk(&f, f.main_gen, PHRASE, NULL, 1);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 5);
  fx_free(&f);
}

static double cpu_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds to fork n generations at once and finish them all. */
static double fork_and_finish_s(int n) {
  fx f;
  fx_init(&f, "hist-avg", no_fork_cap);
  double t0 = cpu_now_s();
  set_cap(&f, n, n);
  chunk(&f, f.main_gen, PHRASE, NULL, 1);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), n);
  uint64_t first = act(&f, SG_CACT_START_GEN, 0)->u.start.gen;
  for (int i = n - 1; i >= 0; i--)
    finish(&f, first + (uint64_t)i, CODE);
  double t = cpu_now_s() - t0;
  fx_free(&f);
  return t;
}

/* A fork's events cost the same however many forks the iteration holds: a
 * decision of 20,000 forks and their endings cost about 10x one of 2,000
 * (linear), far from the 100x of a scan per event (a ratio, never an
 * absolute time; the best of three runs of each). */
static void test_fork_cost_linear_in_forks(void) {
  double small = 1e9, big = 1e9;
  for (int r = 0; r < 3; r++) {
    small = fmin(small, fork_and_finish_s(2000));
    big = fmin(big, fork_and_finish_s(20000));
  }
  SG_CHECK_MSG(big < 35 * fmax(small, 1e-4), "2,000 forks: %.4f s, 20,000: %.4f s",
               small, big);
}

static void no_spec(sg_ctl_opts *o) { o->speculate = false; }

static void test_speculation_off_is_the_baseline(void) {
  fx f;
  fx_init(&f, "hist-avg", no_spec);
  chunk(&f, f.main_gen, PHRASE, NULL, 1);
  chunk(&f, f.main_gen, DESIGN, NULL, 1);
  tick(&f, 4, 4);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 0);
  finish(&f, f.main_gen, CODE);
  SG_CHECK(submitted(&f, SG_PHASE_VALIDATE) != 0);
  fx_free(&f);
}

/* ---- evaluation and termination ------------------------------------------------ */

static void test_early_termination_cancels_main_and_forks(void) {
  fx f;
  fx_init(&f, "hist-avg", NULL);
  set_cap(&f, 3, 3);
  chunk(&f, f.main_gen, PHRASE, NULL, 1);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 3);
  uint64_t g1 = act(&f, SG_CACT_START_GEN, 0)->u.start.gen;
  uint64_t g2 = act(&f, SG_CACT_START_GEN, 1)->u.start.gen;
  uint64_t g3 = act(&f, SG_CACT_START_GEN, 2)->u.start.gen;
  /* g2: validated, waiting for its profile; g3 still generating */
  finish(&f, g2, CODE);
  uint64_t c2 = submitted(&f, SG_PHASE_VALIDATE);
  eval(&f, c2, SG_PHASE_VALIDATE, SG_EVAL_OK, 1.1);
  SG_CHECK_EQ_INT(submitted(&f, SG_PHASE_PROFILE), c2);
  /* g1 wins: 1.5 > mean {0} */
  finish(&f, g1, CODE);
  uint64_t c1 = submitted(&f, SG_PHASE_VALIDATE);
  eval(&f, c1, SG_PHASE_VALIDATE, SG_EVAL_OK, 1.5);
  eval(&f, c1, SG_PHASE_PROFILE, SG_EVAL_OK, 1.5);
  const sg_ctl_action *d = act(&f, SG_CACT_DECISION, 0);
  SG_CHECK(d != NULL && d->u.decision.reason == SG_REASON_EARLY);
  SG_CHECK_EQ_INT(d->u.decision.candidate, c1);
  SG_CHECK_NEAR(d->u.decision.speedup, 1.5, 0);
  SG_CHECK_NEAR(d->u.decision.threshold_mean, 0.0, 0);
  SG_CHECK_EQ_INT(d->u.decision.gen, g1);
  /* the main generation and g3 are cancelled, before END_ITERATION */
  SG_CHECK_EQ_INT(count(&f, SG_CACT_CANCEL_GEN), 2);
  bool main_cancelled = false, g3_cancelled = false;
  for (int i = 0; i < 2; i++) {
    uint64_t g = act(&f, SG_CACT_CANCEL_GEN, i)->u.cancel.gen;
    main_cancelled |= g == f.main_gen;
    g3_cancelled |= g == g3;
  }
  SG_CHECK(main_cancelled && g3_cancelled);
  const sg_ctl_action *end = act(&f, SG_CACT_END_ITERATION, 0);
  SG_CHECK(end != NULL && end->u.end.reason == SG_REASON_EARLY);
  SG_CHECK_EQ_INT(end->u.end.best_kernel, c1);
  SG_CHECK_EQ_INT(end->iteration, 0);
  SG_CHECK(act(&f, SG_CACT_CANCEL_GEN, 1) < end);
  /* the next iteration starts at once and refines the winner */
  const sg_ctl_action *next = act(&f, SG_CACT_START_GEN, 0);
  SG_CHECK(next != NULL && next > end);
  SG_CHECK(next->u.start.kind == SG_GEN_MAIN);
  SG_CHECK_EQ_INT(next->iteration, 1);
  SG_CHECK_EQ_INT(next->u.start.prompt->base_kernel, c1);
  SG_CHECK_EQ_INT(sg_controller_iteration(f.c), 1);
  /* c2's pending profile was dropped: its result is ignored */
  uint64_t new_main = next->u.start.gen;
  eval(&f, c2, SG_PHASE_PROFILE, SG_EVAL_OK, 9.0);
  SG_CHECK_EQ_INT(f.a.n, 0);
  SG_CHECK(sg_controller_history(f.c)->v[c2 - 1].dropped);
  SG_CHECK(!sg_controller_history(f.c)->v[c2 - 1].profiled);
  /* and so are events of the cancelled generations */
  finish(&f, g3, CODE);
  chunk(&f, f.main_gen, PHRASE, NULL, 1);
  SG_CHECK_EQ_INT(f.a.n, 0);
  (void)new_main;
  sg_ctl_stats st;
  sg_controller_stats(f.c, &st);
  SG_CHECK_EQ_INT(st.early_terminations, 1);
  SG_CHECK_EQ_INT(st.criterion_accepts, 1);
  SG_CHECK_EQ_INT(st.iterations, 1);
  fx_free(&f);
}

/* The criterion accepting the main generation's own kernel ends the
 * iteration with reason early, but cuts no reasoning short: it is not an
 * early termination in the paper's sense. */
static void test_accepting_the_main_kernel_is_not_early(void) {
  fx f;
  fx_init(&f, "hist-avg", no_spec);
  finish(&f, f.main_gen, CODE);
  uint64_t cm = submitted(&f, SG_PHASE_VALIDATE);
  eval(&f, cm, SG_PHASE_VALIDATE, SG_EVAL_OK, 2.0);
  eval(&f, cm, SG_PHASE_PROFILE, SG_EVAL_OK, 2.0);
  const sg_ctl_action *end = act(&f, SG_CACT_END_ITERATION, 0);
  SG_CHECK(end != NULL && end->u.end.reason == SG_REASON_EARLY);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_CANCEL_GEN), 0);
  sg_ctl_stats st;
  sg_controller_stats(f.c, &st);
  SG_CHECK_EQ_INT(st.criterion_accepts, 1);
  SG_CHECK_EQ_INT(st.early_terminations, 0);
  fx_free(&f);
}

static void test_fallback_to_main_generation(void) {
  fx f;
  fx_init(&f, "none", NULL);
  uint64_t g = fork_on(&f, PHRASE);
  spec_to_profile(&f, g, 3.0); /* "none" never stops early */
  SG_CHECK_EQ_INT(count(&f, SG_CACT_END_ITERATION), 0);
  fork_on(&f, DESIGN); /* a second fork, still running at the end */
  /* the main generation finishes: no more forks from it */
  finish(&f, f.main_gen, CODE);
  SG_CHECK(sg_controller_state(f.c) == SG_CTL_FALLBACK); /* its main is done */
  uint64_t cm = submitted(&f, SG_PHASE_VALIDATE);
  SG_CHECK(cm != 0);
  tick(&f, 4, 4);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 0);
  eval(&f, cm, SG_PHASE_VALIDATE, SG_EVAL_OK, 1.0);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_END_ITERATION), 0); /* profile pending */
  eval(&f, cm, SG_PHASE_PROFILE, SG_EVAL_OK, 1.0);
  const sg_ctl_action *end = act(&f, SG_CACT_END_ITERATION, 0);
  SG_CHECK(end != NULL && end->u.end.reason == SG_REASON_FALLBACK);
  /* the iteration's best is the fork's 3.0, not the main's 1.0 */
  SG_CHECK(end->u.end.best_kernel != cm);
  SG_CHECK_NEAR(sg_history_get(sg_controller_history(f.c),
                               end->u.end.best_kernel)->speedup, 3.0, 0);
  /* the still-running second fork was cancelled */
  SG_CHECK_EQ_INT(count(&f, SG_CACT_CANCEL_GEN), 1);
  SG_CHECK(sg_controller_state(f.c) == SG_CTL_GENERATING);
  fx_free(&f);
}

/* With refine, an iteration's end frees the texts of the earlier
 * iterations' kernels that refine can no longer show (a long campaign
 * kept every fork's text); the best keeps its own, and every record stays. */
static void test_history_compacted_at_iteration_ends(void) {
  fx f;
  fx_init(&f, "none", NULL);
  static const double speed[] = {1.0, 0.5, 0.4};
  for (int it = 0; it < 3; it++) {
    finish(&f, f.main_gen, CODE);
    uint64_t cm = submitted(&f, SG_PHASE_VALIDATE);
    SG_CHECK(cm == (uint64_t)it + 1);
    eval(&f, cm, SG_PHASE_VALIDATE, SG_EVAL_OK, speed[it]);
    eval(&f, cm, SG_PHASE_PROFILE, SG_EVAL_OK, speed[it]);
    SG_CHECK_EQ_INT(count(&f, SG_CACT_END_ITERATION), 1);
    f.main_gen = act(&f, SG_CACT_START_GEN, 0)->u.start.gen;
  }
  const sg_history *h = sg_controller_history(f.c);
  SG_CHECK(h->best_id == 1 && !h->v[0].compacted && h->v[0].source != NULL);
  SG_CHECK(h->v[1].compacted && h->v[1].source == NULL); /* iteration 1 */
  SG_CHECK_NEAR(h->v[1].speedup, 0.5, 0);
  SG_CHECK(!h->v[2].compacted && h->v[2].source != NULL); /* the last: not yet */
  fx_free(&f);
}

/* Each way a main generation resolves ends the iteration by fallback. */
static void test_fallback_when_main_has_no_kernel(void) {
  for (int mode = 0; mode < 4; mode++) {
    fx f;
    fx_init(&f, "none", NULL);
    if (mode == 0) {
      finish(&f, f.main_gen, "I could not do it.");
    } else if (mode == 1) {
      fail_gen(&f, f.main_gen);
    } else {
      finish(&f, f.main_gen, CODE);
      uint64_t cm = submitted(&f, SG_PHASE_VALIDATE);
      eval(&f, cm, SG_PHASE_VALIDATE,
           mode == 2 ? SG_EVAL_COMPILE_ERROR : SG_EVAL_OK, NAN);
      if (mode == 3) /* valid, but its profile failed */
        eval(&f, cm, SG_PHASE_PROFILE, SG_EVAL_TIMEOUT, NAN);
    }
    const sg_ctl_action *end = act(&f, SG_CACT_END_ITERATION, 0);
    SG_CHECK_MSG(end != NULL, "mode %d: iteration did not end", mode);
    SG_CHECK(end->u.end.reason == SG_REASON_FALLBACK);
    SG_CHECK_EQ_INT(end->u.end.best_kernel, 0);
    /* the failure is fed back in the next prompt */
    const sg_ctl_action *next = act(&f, SG_CACT_START_GEN, 0);
    SG_CHECK(next != NULL);
    if (mode == 0 || mode == 2) {
      SG_CHECK_EQ_INT(next->u.start.prompt->n_items, 1);
      SG_CHECK(next->u.start.prompt->items[0].kind == SG_ITEM_FAILURE);
    }
    fx_free(&f);
  }
}

/* The same events under every criterion: iteration 0 ends with a main
 * kernel at 2.0 (history {0, 2}: mean 1, best 2); in iteration 1 a fork's
 * kernel at 1.5 ends it early or not. */
static void test_each_termination_criterion(void) {
  struct {
    const char *spec;
    bool early;
  } rows[] = {{"first-valid", true},      {"hist-avg", true},
              {"hist-best", false},       {"none", false},
              {"above-ratio:0.7", true},  /* 1.5 > 1.4 */
              {"above-ratio:0.8", false}}; /* 1.5 < 1.6 */
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    fx f;
    fx_init(&f, rows[i].spec, NULL);
    finish(&f, f.main_gen, CODE);
    uint64_t cm = submitted(&f, SG_PHASE_VALIDATE);
    eval(&f, cm, SG_PHASE_VALIDATE, SG_EVAL_OK, 2.0);
    eval(&f, cm, SG_PHASE_PROFILE, SG_EVAL_OK, 2.0);
    SG_CHECK_EQ_INT(count(&f, SG_CACT_END_ITERATION), 1);
    f.main_gen = act(&f, SG_CACT_START_GEN, 0)->u.start.gen;
    uint64_t g = fork_on(&f, PHRASE);
    spec_to_profile(&f, g, 1.5);
    const sg_ctl_action *end = act(&f, SG_CACT_END_ITERATION, 0);
    SG_CHECK_MSG((end != NULL) == rows[i].early, "%s: ended=%d",
                 rows[i].spec, end != NULL);
    if (end != NULL)
      SG_CHECK(end->u.end.reason == SG_REASON_EARLY);
    fx_free(&f);
  }
}

static void test_first_valid_takes_a_slow_kernel(void) {
  fx f;
  fx_init(&f, "first-valid", NULL);
  uint64_t g = fork_on(&f, PHRASE);
  spec_to_profile(&f, g, 0.2);
  SG_CHECK(act(&f, SG_CACT_END_ITERATION, 0) != NULL);
  fx_free(&f);
  fx_init(&f, "hist-avg", NULL); /* 0.0 is not above the mean of {0} */
  g = fork_on(&f, PHRASE);
  spec_to_profile(&f, g, 0.0);
  SG_CHECK(act(&f, SG_CACT_END_ITERATION, 0) == NULL);
  fx_free(&f);
}

/* ---- budgets ---------------------------------------------------------------------- */

static void two_iterations(sg_ctl_opts *o) { o->max_iterations = 2; }
static void wall_1ms(sg_ctl_opts *o) { o->max_wall_us = 1000; }
static void tokens_100(sg_ctl_opts *o) { o->max_tokens = 100; }

static void test_iteration_budget(void) {
  fx f;
  fx_init(&f, "none", two_iterations);
  fail_gen(&f, f.main_gen);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_WORKFLOW_DONE), 0);
  f.main_gen = act(&f, SG_CACT_START_GEN, 0)->u.start.gen;
  finish(&f, f.main_gen, "nothing");
  const sg_ctl_action *done = act(&f, SG_CACT_WORKFLOW_DONE, 0);
  SG_CHECK(done != NULL);
  SG_CHECK(done->u.done.reason == SG_REASON_BUDGET_ITERATIONS);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 0);
  SG_CHECK(act(&f, SG_CACT_END_ITERATION, 0) < done);
  SG_CHECK(sg_controller_state(f.c) == SG_CTL_DONE);
  tick(&f, 4, 4); /* ignored after DONE */
  SG_CHECK_EQ_INT(f.a.n, 0);
  fx_free(&f);
}

static void test_wall_budget_ends_mid_iteration(void) {
  fx f;
  fx_init(&f, "none", wall_1ms); /* started at 1000 us */
  uint64_t g = fork_on(&f, PHRASE);
  (void)g;
  f.now = 1998;
  tick(&f, 0, 0); /* at 1999: 999 us spent */
  SG_CHECK_EQ_INT(f.a.n, 0);
  tick(&f, 0, 0); /* at 2000: spent */
  SG_CHECK_EQ_INT(count(&f, SG_CACT_CANCEL_GEN), 2);
  const sg_ctl_action *end = act(&f, SG_CACT_END_ITERATION, 0);
  SG_CHECK(end != NULL && end->u.end.reason == SG_REASON_BUDGET_WALL);
  const sg_ctl_action *done = act(&f, SG_CACT_WORKFLOW_DONE, 0);
  SG_CHECK(done != NULL && done->u.done.reason == SG_REASON_BUDGET_WALL);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 0);
  sg_ctl_stats st;
  sg_controller_stats(f.c, &st);
  SG_CHECK_EQ_INT(st.end_us, 2000);
  fx_free(&f);
}

static void test_token_budget(void) {
  fx f;
  fx_init(&f, "none", tokens_100);
  chunk(&f, f.main_gen, FILLER, NULL, 60);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_WORKFLOW_DONE), 0);
  chunk(&f, f.main_gen, FILLER, NULL, 40);
  const sg_ctl_action *done = act(&f, SG_CACT_WORKFLOW_DONE, 0);
  SG_CHECK(done != NULL && done->u.done.reason == SG_REASON_BUDGET_TOKENS);
  fx_free(&f);
  /* final usage replaces the chunk counts: 90 counted, usage says 30 */
  fx_init(&f, "none", tokens_100);
  chunk(&f, f.main_gen, FILLER, NULL, 90);
  finish(&f, f.main_gen, "no code"); /* usage 10 + 20 */
  SG_CHECK_EQ_INT(count(&f, SG_CACT_WORKFLOW_DONE), 0);
  sg_ctl_stats st;
  sg_controller_stats(f.c, &st);
  SG_CHECK_EQ_INT(st.prompt_tokens, 10);
  SG_CHECK_EQ_INT(st.completion_tokens, 20);
  fx_free(&f);
}

/* ---- best-of-n, stale and malformed events ----------------------------------- */

static void test_best_of_n_waits_for_every_main(void) {
  fx f;
  fx_init3(&f, "none", "best-of-n:3", NULL);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 3);
  uint64_t m[3];
  for (int i = 0; i < 3; i++) {
    const sg_ctl_action *s = act(&f, SG_CACT_START_GEN, i);
    SG_CHECK(s->u.start.kind == SG_GEN_MAIN);
    SG_CHECK_EQ_INT(s->u.start.prompt_index, i);
    m[i] = s->u.start.gen;
  }
  finish(&f, m[0], "none");
  fail_gen(&f, m[1]);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_END_ITERATION), 0);
  SG_CHECK(sg_controller_state(f.c) == SG_CTL_GENERATING);
  finish(&f, m[2], "none");
  SG_CHECK_EQ_INT(count(&f, SG_CACT_END_ITERATION), 1);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 3);
  fx_free(&f);
}

static void test_stale_and_malformed_events(void) {
  fx f;
  fx_init(&f, "hist-avg", NULL);
  chunk(&f, 999, PHRASE, NULL, 1); /* unknown generation: ignored */
  SG_CHECK_EQ_INT(f.a.n, 0);
  eval(&f, 42, SG_PHASE_VALIDATE, SG_EVAL_OK, 1.0); /* unknown candidate */
  SG_CHECK_EQ_INT(f.a.n, 0);
  finish(&f, f.main_gen, CODE);
  uint64_t cm = submitted(&f, SG_PHASE_VALIDATE);
  eval(&f, cm, SG_PHASE_PROFILE, SG_EVAL_OK, 1.0); /* wrong phase: ignored */
  SG_CHECK_EQ_INT(f.a.n, 0);
  finish(&f, f.main_gen, CODE); /* finished twice: ignored */
  SG_CHECK_EQ_INT(f.a.n, 0);
  sg_ctl_event e = {.type = SG_CEV_EVAL_DONE};
  e.u.eval.candidate = cm;
  e.u.eval.phase = (sg_phase)7;
  SG_CHECK_EQ_INT(ev(&f, &e), SG_EINVAL);
  e.type = (sg_ctl_event_type)99;
  SG_CHECK_EQ_INT(ev(&f, &e), SG_EINVAL);
  eval(&f, cm, SG_PHASE_VALIDATE, SG_EVAL_OK, 1.0);
  eval(&f, cm, SG_PHASE_VALIDATE, SG_EVAL_OK, 1.0); /* duplicate: ignored */
  SG_CHECK_EQ_INT(f.a.n, 0);
  fx_free(&f);
}

/* The content streamed in chunks is the answer when finished has no text. */
static void test_answer_from_streamed_content(void) {
  fx f;
  fx_init(&f, "hist-avg", NULL);
  const char *code = CODE;
  size_t half = strlen(code) / 2;
  char a[256], b[256];
  memcpy(a, code, half);
  a[half] = '\0';
  strcpy(b, code + half);
  chunk(&f, f.main_gen, NULL, a, 1);
  chunk(&f, f.main_gen, NULL, b, 1);
  finish(&f, f.main_gen, NULL);
  uint64_t cm = submitted(&f, SG_PHASE_VALIDATE);
  SG_CHECK(cm != 0);
  const sg_ctl_action *s = act(&f, SG_CACT_SUBMIT_EVAL, 0);
  SG_CHECK_CONTAINS(s->u.submit.source, "void hinge(float *x)");
  SG_CHECK_EQ_INT(s->u.submit.source_len, strlen(s->u.submit.source));
  fx_free(&f);
}

/* A kernel that #defines a parameter of its entry is submitted, kept and
 * shown without that line (core/sg_tidy.h), whatever the history reads. */
static void test_shadowing_define_taken_out(void) {
  fx f;
  fx_init(&f, "hist-avg", NULL);
  finish(&f, f.main_gen,
         "```c\n#define n 8\nvoid hinge(float *x, int n) { x[0] = n; }\n```\n");
  SG_CHECK(submitted(&f, SG_PHASE_VALIDATE) != 0);
  const sg_ctl_action *s = act(&f, SG_CACT_SUBMIT_EVAL, 0);
  SG_CHECK(strstr(s->u.submit.source, "#define n 8") == NULL);
  SG_CHECK_CONTAINS(s->u.submit.source, "took out a #define of n here");
  SG_CHECK_CONTAINS(s->u.submit.source, "void hinge(float *x, int n) { x[0] = n; }");
  SG_CHECK_EQ_INT(s->u.submit.source_len, strlen(s->u.submit.source));
  const sg_kernel *k = sg_history_get(sg_controller_history(f.c), s->u.submit.candidate);
  SG_CHECK(k != NULL && strcmp(k->source, s->u.submit.source) == 0);
  fx_free(&f);
}

static void text_1k(sg_ctl_opts *o) { o->max_text_bytes = 1024; }

/* Reasoning beyond max_text_bytes is not kept: a fork's prefix never goes
 * past the kept text, and once at the cap no prefix is longer, so no more
 * forks from that generation. */
static void test_prefix_never_past_kept_text(void) {
  fx f;
  fx_init(&f, "hist-avg", text_1k);
  set_cap(&f, 1, 1);
  char big[1500];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  for (size_t i = 60; i < sizeof big - 1; i += 60)
    big[i] = ' ';
  big[sizeof big - 3] = '.'; /* the next sentence starts fresh */
  big[sizeof big - 2] = '\n';
  chunk(&f, f.main_gen, big, NULL, 1);
  chunk(&f, f.main_gen, PHRASE, NULL, 1); /* its trigger lies past 1024 */
  const sg_ctl_action *s = act(&f, SG_CACT_START_GEN, 0);
  SG_CHECK(s != NULL);
  SG_CHECK_EQ_INT(s->u.start.prefix_len, 1024);
  chunk(&f, f.main_gen, DESIGN, NULL, 1);
  tick(&f, 4, 4);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 0);
  fx_free(&f);
}

static void test_names(void) {
  SG_CHECK_STR_EQ(sg_ctl_state_name(SG_CTL_FALLBACK), "fallback");
  SG_CHECK_STR_EQ(sg_ctl_reason_name(SG_REASON_FORK_IDLE), "fork_idle");
  SG_CHECK_STR_EQ(sg_ctl_reason_name(SG_REASON_ANSWER_AT_CAP), "answer_at_cap");
  SG_CHECK_STR_EQ(sg_ctl_reason_name(SG_REASON_BUDGET_TOKENS),
                  "budget_tokens");
  SG_CHECK_STR_EQ(sg_ctl_action_type_name(SG_CACT_SUBMIT_EVAL),
                  "submit_eval");
  SG_CHECK_STR_EQ(sg_ctl_state_name(SG_CTL__COUNT), "unknown");
}


/* A resumed workflow: restored kernels shape the search and the criterion,
 * iterations continue from where they were, and budgets count what was
 * already spent. */
static void test_restore_continues_the_workflow(void) {
  bare b;
  bare_init(&b, "hist-best");
  sg_err err = b.err;
  sg_ctl_opts o = b.o;
  o.max_iterations = 3;
  o.max_tokens = 1000;
  sg_controller *c = NULL;
  SG_CHECK_OK(sg_controller_new(&o, &c, &err), err);
  const char *src1 = "void hinge(float *x) { x[0] = 1; }";
  const char *src2 = "void hinge(float *x) { x[0] = 2; }";
  sg_ctl_restored k = {.iteration = 0, .origin = SG_GEN_MAIN, .source = src1,
                       .source_len = strlen(src1), .validated = true,
                       .validate_status = SG_EVAL_OK, .validate_speedup = 1.5,
                       .validate_message = "correct", .profiled = true,
                       .profile_speedup = 2.0, .profile_text = "fast"};
  SG_CHECK_OK(sg_controller_restore_kernel(c, &k, &err), err);
  sg_ctl_restored bad = {.iteration = 1, .origin = SG_GEN_SPEC, .prefix_len = 40,
                         .source = src2, .source_len = strlen(src2),
                         .validated = true,
                         .validate_status = SG_EVAL_NUMERICAL_ERROR,
                         .validate_speedup = NAN, .validate_message = "wrong"};
  SG_CHECK_OK(sg_controller_restore_kernel(c, &bad, &err), err);
  sg_ctl_restored empty = {.iteration = 1, .source = NULL};
  SG_CHECK_EQ_INT(sg_controller_restore_kernel(c, &empty, &err), SG_EINVAL);
  sg_usage spent = {300, 400, 50};
  SG_CHECK_OK(sg_controller_restore_progress(c, 2, 5000, &spent, &err), err);

  const sg_history *h = sg_controller_history(c);
  SG_CHECK_EQ_INT(h->n, 2);
  SG_CHECK_EQ_INT(h->best_id, 1);
  SG_CHECK_EQ_INT(h->speedups.n, 2); /* {0, 2.0} */
  SG_CHECK(sg_history_get(h, 2)->validate_status == SG_EVAL_NUMERICAL_ERROR);

  sg_ctl_actions a;
  sg_ctl_actions_init(&a);
  SG_CHECK_OK(sg_controller_start(c, 10000, &a, &err), err);
  SG_CHECK_EQ_INT(sg_controller_iteration(c), 2);
  SG_CHECK(a.n >= 1 && a.v[0].type == SG_CACT_START_GEN);
  SG_CHECK_EQ_INT(a.v[0].iteration, 2);
  /* refine improves the restored best, and shows the restored failure */
  const sg_prompt *p = a.v[0].u.start.prompt;
  SG_CHECK_EQ_INT(p->base_kernel, 1);
  bool shows_failure = false;
  for (size_t i = 0; i < p->n_items; i++)
    shows_failure |= p->items[i].kind == SG_ITEM_FAILURE && p->items[i].kernel == 2;
  SG_CHECK(shows_failure);
  sg_ctl_stats st;
  sg_controller_stats(c, &st);
  SG_CHECK_EQ_INT(st.iterations, 2);
  SG_CHECK_EQ_INT(st.prompt_tokens, 300);
  SG_CHECK_EQ_INT(st.start_us, 5000); /* the wall budget counts the time spent */
  sg_err e2;
  sg_err_clear(&e2);
  SG_CHECK_EQ_INT(sg_controller_restore_progress(c, 1, 0, NULL, &e2), SG_ESTATE);

  /* A workflow restored with its iterations spent ends at start. */
  sg_controller *d = NULL;
  SG_CHECK_OK(sg_controller_new(&o, &d, &err), err);
  SG_CHECK_OK(sg_controller_restore_progress(d, 3, 0, NULL, &err), err);
  sg_ctl_actions_clear(&a);
  SG_CHECK_OK(sg_controller_start(d, 10000, &a, &err), err);
  SG_CHECK_EQ_INT(a.n, 1);
  SG_CHECK(a.v[0].type == SG_CACT_WORKFLOW_DONE);
  SG_CHECK(a.v[0].u.done.reason == SG_REASON_BUDGET_ITERATIONS);
  SG_CHECK(sg_controller_state(d) == SG_CTL_DONE);

  sg_ctl_actions_free(&a);
  sg_controller_free(c);
  sg_controller_free(d);
  bare_free(&b);
}

/* ---- a main generation the model server cut ------------------------------ */

/* The model server failed gen (it cut the stream), after it spent
 * completion tokens. */
static void cut_gen(fx *f, uint64_t gen, uint64_t completion) {
  sg_ctl_event e = {.type = SG_CEV_GEN_FAILED};
  e.u.failed.gen = gen;
  e.u.failed.error = SG_ECONN;
  e.u.failed.message = "connection reset";
  e.u.failed.endpoint = true;
  e.u.failed.usage.prompt_tokens = 10;
  e.u.failed.usage.completion_tokens = completion;
  SG_CHECK_OK(ev(f, &e), f->err);
}

/* A cut main is sent again in its iteration, on the same prompt, a fork of
 * its cut text goes on and its kernel counts; the cut try's tokens count;
 * past main_retries it is still sent again, with `wait`, and the iteration
 * neither ends nor counts; its answer then ends the iteration as usual. */
static void test_cut_main_restarted_fork_goes_on(void) {
  fx f;
  fx_init(&f, "none", NULL);
  const sg_prompt *prompt = act(&f, SG_CACT_START_GEN, 0)->u.start.prompt;
  uint64_t fork = fork_on(&f, PHRASE);
  cut_gen(&f, f.main_gen, 30);
  SG_CHECK_EQ_INT(f.a.n, 1);
  const sg_ctl_action *s = act(&f, SG_CACT_START_GEN, 0);
  SG_CHECK(s != NULL && s->u.start.gen == f.main_gen && s->u.start.kind == SG_GEN_MAIN);
  SG_CHECK(s->u.start.thinking && s->u.start.prompt == prompt);
  SG_CHECK_EQ_INT(s->u.start.restart, 1);
  SG_CHECK(!s->u.start.wait);
  SG_CHECK_EQ_INT(s->iteration, 0);
  SG_CHECK(sg_controller_state(f.c) == SG_CTL_GENERATING);
  sg_ctl_stats st;
  sg_controller_stats(f.c, &st);
  SG_CHECK_EQ_INT(st.main_restarts, 1);
  SG_CHECK_EQ_INT(st.completion_tokens, 30); /* the chunk's 5 were provisional */
  SG_CHECK_EQ_INT(st.prompt_tokens, 10);
  /* the fork of the cut text goes on: its kernel is submitted */
  finish(&f, fork, CODE);
  uint64_t cand = submitted(&f, SG_PHASE_VALIDATE);
  SG_CHECK(cand != 0);
  /* the new try's text is its own: the same phrase forks again */
  set_cap(&f, 1, 1);
  chunk(&f, f.main_gen, PHRASE, NULL, 5);
  s = act(&f, SG_CACT_START_GEN, 0);
  SG_CHECK(s != NULL && s->u.start.kind == SG_GEN_SPEC && s->u.start.parent_gen == f.main_gen);
  SG_CHECK_EQ_INT(s->u.start.prefix_len, strlen(PHRASE));
  uint64_t fork2 = s->u.start.gen;
  /* the second cut: sent again at once; the third: past main_retries (2),
   * after a wait */
  cut_gen(&f, f.main_gen, 1);
  s = act(&f, SG_CACT_START_GEN, 0);
  SG_CHECK(s != NULL && s->u.start.restart == 2 && !s->u.start.wait);
  cut_gen(&f, f.main_gen, 1);
  s = act(&f, SG_CACT_START_GEN, 0);
  SG_CHECK(s != NULL && s->u.start.restart == 3 && s->u.start.wait);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_END_ITERATION), 0);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_CANCEL_GEN), 0);
  sg_controller_stats(f.c, &st);
  SG_CHECK_EQ_INT(st.iterations, 0);
  SG_CHECK_EQ_INT(st.main_restarts, 3);
  SG_CHECK_EQ_INT(st.completion_tokens, 30 + 20 + 1 + 1); /* the fork's 20 too */
  /* the kernels of both forks are evaluated in this iteration */
  eval(&f, cand, SG_PHASE_VALIDATE, SG_EVAL_OK, 1.5);
  SG_CHECK_EQ_INT(submitted(&f, SG_PHASE_PROFILE), cand);
  eval(&f, cand, SG_PHASE_PROFILE, SG_EVAL_OK, 1.5);
  finish(&f, fork2, CODE);
  uint64_t cand2 = submitted(&f, SG_PHASE_VALIDATE);
  SG_CHECK(cand2 != 0 && cand2 != cand);
  eval(&f, cand2, SG_PHASE_VALIDATE, SG_EVAL_NUMERICAL_ERROR, NAN);
  /* the last try answers: its kernel is the fallback, the iteration ends */
  finish(&f, f.main_gen, CODE);
  uint64_t mc = submitted(&f, SG_PHASE_VALIDATE);
  SG_CHECK(mc != 0 && mc != cand && mc != cand2);
  eval(&f, mc, SG_PHASE_VALIDATE, SG_EVAL_NUMERICAL_ERROR, NAN);
  const sg_ctl_action *end = act(&f, SG_CACT_END_ITERATION, 0);
  SG_CHECK(end != NULL && end->u.end.reason == SG_REASON_FALLBACK);
  SG_CHECK_EQ_INT(end->u.end.best_kernel, cand);
  sg_controller_stats(f.c, &st);
  SG_CHECK_EQ_INT(st.iterations, 1);
  /* the next iteration's main starts afresh */
  s = act(&f, SG_CACT_START_GEN, 0);
  SG_CHECK(s != NULL && s->u.start.restart == 0 && s->iteration == 1);
  fx_free(&f);
}

/* The main is cut while the kernel of a fork of it is being evaluated: the
 * evaluation goes on, and when the criterion accepts that kernel the
 * iteration ends early, cancelling the main sent again. */
static void test_cut_main_after_its_kernel_submitted(void) {
  fx f;
  fx_init(&f, "first-valid", NULL);
  uint64_t fork = fork_on(&f, PHRASE);
  finish(&f, fork, CODE);
  uint64_t cand = submitted(&f, SG_PHASE_VALIDATE);
  SG_CHECK(cand != 0);
  cut_gen(&f, f.main_gen, 3);
  SG_CHECK(act(&f, SG_CACT_START_GEN, 0) != NULL);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_SUBMIT_EVAL), 0); /* nothing submitted again */
  eval(&f, cand, SG_PHASE_VALIDATE, SG_EVAL_OK, 2.0);
  SG_CHECK_EQ_INT(submitted(&f, SG_PHASE_PROFILE), cand);
  eval(&f, cand, SG_PHASE_PROFILE, SG_EVAL_OK, 2.0);
  const sg_ctl_action *c = act(&f, SG_CACT_CANCEL_GEN, 0);
  SG_CHECK(c != NULL && c->u.cancel.gen == f.main_gen);
  const sg_ctl_action *end = act(&f, SG_CACT_END_ITERATION, 0);
  SG_CHECK(end != NULL && end->u.end.reason == SG_REASON_EARLY);
  SG_CHECK_EQ_INT(end->u.end.best_kernel, cand);
  fx_free(&f);
}

static void no_main_retries(sg_ctl_opts *o) { o->main_retries = 0; }

static void token_budget_40(sg_ctl_opts *o) { o->max_tokens = 40; }

/* What is not sent again: a fork the server cut, a main the model failed
 * (not the server), and a main cut once the token budget is spent (the
 * workflow ends for the budget). main_retries 0: the first cut already
 * waits. */
static void test_cut_main_not_restarted(void) {
  fx f;
  fx_init(&f, "none", NULL);
  uint64_t fork = fork_on(&f, PHRASE);
  cut_gen(&f, fork, 2);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 0);
  fail_gen(&f, f.main_gen); /* not the server's: the iteration ends */
  const sg_ctl_action *end = act(&f, SG_CACT_END_ITERATION, 0);
  SG_CHECK(end != NULL && end->u.end.reason == SG_REASON_FALLBACK);
  const sg_ctl_action *s = act(&f, SG_CACT_START_GEN, 0);
  SG_CHECK(s != NULL && s->iteration == 1 && s->u.start.restart == 0);
  fx_free(&f);

  fx_init(&f, "none", token_budget_40);
  cut_gen(&f, f.main_gen, 35); /* 10 + 35 tokens: the budget is spent */
  SG_CHECK(act(&f, SG_CACT_END_ITERATION, 0) != NULL);
  const sg_ctl_action *done = act(&f, SG_CACT_WORKFLOW_DONE, 0);
  SG_CHECK(done != NULL && done->u.done.reason == SG_REASON_BUDGET_TOKENS);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 0);
  fx_free(&f);

  fx_init(&f, "none", no_main_retries);
  cut_gen(&f, f.main_gen, 1);
  s = act(&f, SG_CACT_START_GEN, 0);
  SG_CHECK(s != NULL && s->u.start.restart == 1 && s->u.start.wait);
  fx_free(&f);
}

/* ---- the answer at the length cap (budget forcing) ------------------------------ */

static void finish_len(fx *f, uint64_t gen, const char *text) {
  sg_ctl_event e = {.type = SG_CEV_GEN_FINISHED};
  e.u.finished.gen = gen;
  e.u.finished.text = text;
  e.u.finished.len = strlen(text);
  e.u.finished.reason = SG_FINISH_LENGTH;
  e.u.finished.usage.prompt_tokens = 10;
  e.u.finished.usage.completion_tokens = 20;
  SG_CHECK_OK(ev(f, &e), f->err);
}

/* The START_GEN of an answer at the cap in the last batch, or NULL. */
static const sg_ctl_action *answer_start(const fx *f) {
  for (size_t i = 0; i < f->a.n; i++)
    if (f->a.v[i].type == SG_CACT_START_GEN && f->a.v[i].u.start.answer)
      return &f->a.v[i];
  return NULL;
}

static int answer_decisions(const fx *f) {
  int n = 0;
  for (size_t i = 0; i < f->a.n; i++)
    n += f->a.v[i].type == SG_CACT_DECISION &&
         f->a.v[i].u.decision.reason == SG_REASON_ANSWER_AT_CAP;
  return n;
}

/* A main cut by max tokens with no kernel: one generation, thinking off,
 * from all its reasoning, whose kernel the fallback waits for. */
static void test_answer_at_cap(void) {
  fx f;
  fx_init(&f, "none", NULL);
  chunk(&f, f.main_gen, FILLER, NULL, 5);
  chunk(&f, f.main_gen, FILLER, NULL, 5);
  finish_len(&f, f.main_gen, "");
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 1);
  SG_CHECK_EQ_INT(answer_decisions(&f), 1);
  const sg_ctl_action *d = act(&f, SG_CACT_DECISION, 0);
  SG_CHECK(d < answer_start(&f)); /* the decision first, as a fork's */
  SG_CHECK_EQ_INT(d->u.decision.gen, f.main_gen);
  SG_CHECK_EQ_INT(d->u.decision.k, 1);
  SG_CHECK_EQ_INT(d->u.decision.prefix_len, 2 * strlen(FILLER));
  const sg_ctl_action *s = answer_start(&f);
  SG_CHECK(s != NULL && s->u.start.kind == SG_GEN_SPEC && !s->u.start.thinking);
  SG_CHECK_EQ_INT(s->u.start.parent_gen, f.main_gen);
  SG_CHECK_EQ_INT(s->u.start.prefix_len, 2 * strlen(FILLER));
  SG_CHECK(memcmp(s->u.start.prefix, FILLER FILLER, 2 * strlen(FILLER)) == 0);
  SG_CHECK(s->u.start.prompt != NULL && s->iteration == 0);
  SG_CHECK(act(&f, SG_CACT_END_ITERATION, 0) == NULL);
  uint64_t ag = s->u.start.gen;
  /* the main's duplicate finish asks nothing again */
  finish_len(&f, f.main_gen, "");
  SG_CHECK_EQ_INT(f.a.n, 0);
  /* its kernel stands in for the main's: the iteration waits for it */
  finish(&f, ag, CODE);
  uint64_t cand = submitted(&f, SG_PHASE_VALIDATE);
  SG_CHECK(cand != 0);
  SG_CHECK(act(&f, SG_CACT_END_ITERATION, 0) == NULL);
  SG_CHECK(sg_controller_state(f.c) == SG_CTL_FALLBACK);
  eval(&f, cand, SG_PHASE_VALIDATE, SG_EVAL_OK, NAN);
  SG_CHECK(act(&f, SG_CACT_END_ITERATION, 0) == NULL);
  eval(&f, cand, SG_PHASE_PROFILE, SG_EVAL_OK, 1.5);
  const sg_ctl_action *end = act(&f, SG_CACT_END_ITERATION, 0);
  SG_CHECK(end != NULL && end->u.end.reason == SG_REASON_FALLBACK);
  SG_CHECK_EQ_INT(end->u.end.best_kernel, cand);
  sg_ctl_stats st;
  sg_controller_stats(f.c, &st);
  SG_CHECK_EQ_INT(st.answers_at_cap, 1);
  SG_CHECK_EQ_INT(st.forks, 0); /* not a fork */
  SG_CHECK(sg_controller_history(f.c)->v[cand - 1].answer); /* its kernel says so */
  SG_CHECK_EQ_INT(st.completion_tokens, 40); /* its tokens count */
  fx_free(&f);
}

static void no_answer_at_cap(sg_ctl_opts *o) { o->answer_at_cap = false; }
static void tokens_25(sg_ctl_opts *o) { o->max_tokens = 25; }

/* When there is none: a kernel in the cut answer, a stop finish, the
 * option off, no reasoning, a budget spent; and never a second one. */
static void test_answer_at_cap_when_not(void) {
  for (int mode = 0; mode < 6; mode++) {
    fx f;
    tweak_fn tw = mode == 2 ? no_answer_at_cap : mode == 4 ? tokens_25 : NULL;
    fx_init(&f, "none", tw);
    if (mode != 3)
      chunk(&f, f.main_gen, FILLER, NULL, 1);
    if (mode == 0) {
      finish_len(&f, f.main_gen, CODE);
      SG_CHECK(submitted(&f, SG_PHASE_VALIDATE) != 0);
    } else if (mode == 1) {
      finish(&f, f.main_gen, "I could not do it.");
    } else if (mode == 5) { /* the answer itself cut with no kernel */
      finish_len(&f, f.main_gen, "");
      const sg_ctl_action *s = answer_start(&f);
      SG_CHECK(s != NULL);
      finish_len(&f, s->u.start.gen, "still no code");
    } else {
      finish_len(&f, f.main_gen, "");
    }
    SG_CHECK_MSG(answer_start(&f) == NULL, "mode %d: an answer at the cap", mode);
    SG_CHECK_EQ_INT(answer_decisions(&f), 0);
    if (mode != 0) {
      const sg_ctl_action *end = act(&f, SG_CACT_END_ITERATION, 0);
      SG_CHECK_MSG(end != NULL, "mode %d: the iteration did not end", mode);
      SG_CHECK(end->u.end.reason == SG_REASON_FALLBACK);
      const sg_ctl_action *done = act(&f, SG_CACT_WORKFLOW_DONE, 0);
      SG_CHECK((done != NULL) == (mode == 4)); /* 30 tokens of 25 */
    }
    fx_free(&f);
  }
}

/* Not speculation: it runs with speculate off, and the fork caps and the
 * fork budget leave it out; its failure resolves the main. */
static sg_fork_budget full_budget;
static void no_spec_full_server(sg_ctl_opts *o) {
  o->speculate = false;
  o->max_live_forks = 1;
  o->max_forks_per_iteration = 1;
  o->fork_budget = &full_budget;
}

static void test_answer_at_cap_without_speculation(void) {
  full_budget.cap = 1;
  full_budget.used = 1; /* the server has no stream for a fork */
  fx f;
  fx_init(&f, "none", no_spec_full_server);
  chunk(&f, f.main_gen, PHRASE, NULL, 1);
  tick(&f, 4, 4);
  SG_CHECK_EQ_INT(count(&f, SG_CACT_START_GEN), 0);
  finish_len(&f, f.main_gen, "");
  const sg_ctl_action *s = answer_start(&f);
  SG_CHECK(s != NULL);
  SG_CHECK_EQ_INT(full_budget.used, 1);
  fail_gen(&f, s->u.start.gen);
  const sg_ctl_action *end = act(&f, SG_CACT_END_ITERATION, 0);
  SG_CHECK(end != NULL && end->u.end.reason == SG_REASON_FALLBACK);
  SG_CHECK_EQ_INT(full_budget.used, 1);
  fx_free(&f);
}

SG_TEST_MAIN(SG_TEST(test_start_issues_main_generation),
             SG_TEST(test_event_before_start_refused),
             SG_TEST(test_fork_on_each_trigger_class),
             SG_TEST(test_k_formula_edges),
             SG_TEST(test_fork_on_idle_devices),
             SG_TEST(test_fork_gate_by_expected_value),
             SG_TEST(test_restored_answer_stays_out_of_the_fork_gate),
             SG_TEST(test_cutoff_ends_hopeless_iterations),
             SG_TEST(test_cutoff_detach_keeps_the_main_answer),
             SG_TEST(test_cutoff_detach_not_in_the_last_iteration),
             SG_TEST(test_decide_at_validation),
             SG_TEST(test_decide_with_siblings),
             SG_TEST(test_next_ahead),
             SG_TEST(test_next_ahead_limits),
             SG_TEST(test_restore_after_decide_at_validation),
             SG_TEST(test_many_forks_by_id),
             SG_TEST(test_fork_cost_linear_in_forks),
             SG_TEST(test_never_twice_from_same_prefix),
             SG_TEST(test_speculation_off_is_the_baseline),
             SG_TEST(test_early_termination_cancels_main_and_forks),
             SG_TEST(test_accepting_the_main_kernel_is_not_early),
             SG_TEST(test_fallback_to_main_generation),
             SG_TEST(test_fallback_when_main_has_no_kernel),
             SG_TEST(test_each_termination_criterion),
             SG_TEST(test_first_valid_takes_a_slow_kernel),
             SG_TEST(test_iteration_budget),
             SG_TEST(test_wall_budget_ends_mid_iteration),
             SG_TEST(test_token_budget),
             SG_TEST(test_best_of_n_waits_for_every_main),
             SG_TEST(test_stale_and_malformed_events),
             SG_TEST(test_answer_from_streamed_content),
             SG_TEST(test_shadowing_define_taken_out),
             SG_TEST(test_prefix_never_past_kept_text),
             SG_TEST(test_restore_continues_the_workflow),
             SG_TEST(test_names),
             SG_TEST(test_fork_budget_shared_by_a_server),
             SG_TEST(test_fork_budget_lowered_withholds),
             SG_TEST(test_history_compacted_at_iteration_ends),
             SG_TEST(test_cut_main_restarted_fork_goes_on),
             SG_TEST(test_cut_main_after_its_kernel_submitted),
             SG_TEST(test_cut_main_not_restarted),
             SG_TEST(test_answer_at_cap),
             SG_TEST(test_answer_at_cap_when_not),
             SG_TEST(test_answer_at_cap_without_speculation))
