/* sg_controller.c: the per-workflow controller (Algorithm 1 of the SpecGen
 * paper) as a pure state machine.
 *
 * How it works. The controller keeps the generations of the current
 * iteration in a small array (a main generation holds its reasoning text and
 * its trigger scanner; every generation holds its answer text), the workflow
 * history (every candidate and what became of it) and, per candidate, where
 * its evaluation stands (validating, profiling, done, dropped). Events update
 * these and may fork, submit, terminate or end the iteration; every change of
 * the controller's state goes through ctl_set_state(). Nothing here reads a
 * clock, does I/O or draws a random number: time comes with the events and
 * the fork count K comes from the scheduler's capacity.
 *
 * Algorithm 1 of the paper, in the steps docs/core.md numbers (the paper's
 * own line numbers are not in this repository, so the steps are ours):
 * (1) start the main generation with the search's prompt; (2) watch its
 * stream for triggers; (3) on a trigger or idle devices fork K = max(1,
 * min(free validation, free profiling)) speculative generations from the
 * prefix; (4) validate each candidate and profile the valid ones; (5) a
 * profiled speedup that passes the criterion cancels the main generation
 * and the forks; (6) otherwise the main generation's answer is the
 * fallback.
 *
 * Never: fork twice from the same prefix length, submit a candidate twice or
 * for an ended iteration, act on an event of a cancelled generation.
 */
#include "core/sg_controller.h"
#include "core/sg_unshadow.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Where a candidate's evaluation stands. */
typedef enum cand_state {
  CAND_NONE,        /* no source: nothing to evaluate */
  CAND_VALIDATING,
  CAND_PROFILING,
  CAND_DONE,
  CAND_DROPPED,     /* its iteration ended first */
} cand_state;

/* Layout: what a fork's events read (id, kind, live, candidate, usage,
 * prefix) in the first cache line; the main generation's text and scanner
 * after. */
typedef struct gen {
  uint64_t id;
  sg_gen_kind kind;
  bool live;                 /* still generating */
  bool failed;
  uint64_t candidate;        /* after it finished: its kernel, 0 none */
  uint64_t provisional;      /* completion tokens counted from chunks */
  uint64_t prefix_len;       /* spec: where it was forked */
  uint64_t parent;           /* spec: the main generation */
  size_t prompt_index;
  sg_buf content;
  sg_buf reasoning;          /* main only */
  sg_scanner *scanner;       /* main only */
  uint64_t last_fork_prefix; /* main: prefix of the last fork, 0 none */
} gen;

/* Layout: what every event reads (state, the generations, the capacity,
 * the token count, the candidates) first and together; the plan (5 KB of
 * prompts, read once per iteration) last. A thousand workflows' controllers
 * do not fit the caches, so each cache line an event touches is a miss. */
struct sg_controller {
  sg_ctl_state state;
  uint32_t iteration;
  gen *gens;                 /* this iteration's generations, by id: the
                                mains first (start_iteration), then the
                                forks, ids consecutive (see find_gen) */
  size_t ngens, capgens;
  size_t nmain;              /* gens[0..nmain) are the main generations */
  int nlive_forks;           /* forks of gens[] still generating */
  uint64_t next_gen;
  size_t iter_first_kernel;  /* history index where this iteration began */
  size_t compact_from;       /* history index sg_history_compact goes on
                                from (refine only; 0 otherwise) */
  bool compact;              /* the search is refine: compact the history */
  int iter_forks;
  uint64_t valid_prefix[SG_CTL_GATE_WINDOW]; /* prefixes of recent valid forks */
  int nvalid_prefix, valid_prefix_next;
  bool iter_valid;         /* a kernel of this iteration validated */
  sg_history hist;
  uint8_t *cand;             /* cand_state by kernel id - 1 */
  size_t capcand;
  size_t nevaluating;        /* candidates VALIDATING or PROFILING (all of
                                this iteration: its end drops them) */
  sg_sched_capacity cap;
  uint64_t tokens;           /* spent, provisional included */
  int64_t restored_wall_us;  /* wall time spent before a resume */
  sg_ctl_opts o;
  sg_ctl_stats st;
  sg_search_plan plan;
  uint64_t pending_accept;   /* sg_ctl_opts.decide_with_siblings: a kernel
                                accepted at validation, waiting for its
                                sibling forks (0: none) */
  gen det;                   /* sg_ctl_opts.cutoff_detach: a main of an
                                ended iteration still generating (live),
                                its answer text only */
  gen ahead;                 /* sg_ctl_opts.next_ahead: the next
                                iteration's main, started early (id 0:
                                none); not live once it finished */
  uint64_t ahead_base;       /* the best kernel when its prompt was made */
  int ahead_trigger;         /* the class of the last trigger its text
                                held while ahead, -1 none */
  sg_prompt ahead_prompt;
};

const char *sg_ctl_state_name(sg_ctl_state s) {
  static const char *const names[SG_CTL__COUNT] = {"new", "generating",
                                                   "fallback", "done"};
  return (unsigned)s < SG_CTL__COUNT ? names[s] : "unknown";
}

const char *sg_ctl_reason_name(sg_ctl_reason r) {
  static const char *const names[SG_REASON__COUNT] = {
      "early",         "fallback",      "budget_iterations", "budget_wall",
      "budget_tokens", "search_failed", "fork_trigger",      "fork_idle",
      "cutoff"};
  return (unsigned)r < SG_REASON__COUNT ? names[r] : "unknown";
}

const char *sg_ctl_action_type_name(sg_ctl_action_type t) {
  static const char *const names[SG_CACT__COUNT] = {
      "start_gen",     "cancel_gen",    "submit_eval",
      "end_iteration", "workflow_done", "decision"};
  return (unsigned)t < SG_CACT__COUNT ? names[t] : "unknown";
}

void sg_ctl_actions_init(sg_ctl_actions *a) { memset(a, 0, sizeof *a); }
void sg_ctl_actions_clear(sg_ctl_actions *a) { a->n = 0; }
void sg_ctl_actions_free(sg_ctl_actions *a) {
  free(a->v);
  memset(a, 0, sizeof *a);
}

void sg_ctl_opts_default(sg_ctl_opts *o) {
  memset(o, 0, sizeof *o);
  o->speculate = true;
  o->fork_on_idle = true;
  o->idle_min_new_bytes = 512;
  o->max_forks_per_iteration = 64;
  o->max_live_forks = 16;
  sg_scanner_opts_default(&o->scanner);
  /* Each trigger forks generations: prose triggers closer than a couple of
   * sentences to the last one would give near-identical candidates (the
   * scanner reports them all by default; new code blocks always pass). */
  o->scanner.min_gap_bytes = SG_CTL_TRIGGER_GAP_BYTES;
  o->max_iterations = 10;
  o->max_text_bytes = 1u << 20;
}

/* ---- the one door for state changes (docs/style.md rule 13) ------------- */

static bool transition_ok(sg_ctl_state from, sg_ctl_state to) {
  switch (to) {
  case SG_CTL_GENERATING:
    return from == SG_CTL_NEW || from == SG_CTL_GENERATING ||
           from == SG_CTL_FALLBACK;
  case SG_CTL_FALLBACK:
    return from == SG_CTL_GENERATING;
  case SG_CTL_DONE:
    return from != SG_CTL_DONE;
  default:
    return false;
  }
}

static void ctl_set_state(sg_controller *c, sg_ctl_state to) {
  assert(transition_ok(c->state, to));
  c->state = to;
}

/* ---- helpers -------------------------------------------------------------- */

static sg_ctl_action *emit(sg_controller *c, sg_ctl_actions *out,
                           sg_ctl_action_type type) {
  if (out->n == out->cap) {
    out->cap = out->cap ? out->cap * 2 : 16;
    out->v = sg_realloc(out->v, out->cap * sizeof *out->v);
  }
  sg_ctl_action *a = &out->v[out->n++];
  memset(a, 0, sizeof *a);
  a->type = type;
  a->iteration = c->iteration;
  return a;
}

/* O(1) for the forks: new_gen gives consecutive ids and appends (a main
 * started ahead takes an id among them and leaves a hole, see
 * start_ahead), and free_gens empties the array at each iteration's end,
 * so a fork's id sits at index nmain + id - gens[nmain].id. A fork
 * decision starts K generations, K the pool's free capacity (hundreds in a
 * pool of a thousand devices), and every one of their events looks its
 * generation up: a scan here made an iteration cost O(K^2). The mains (one,
 * or a plan's few) are scanned: an adopted main's id is older. */
static gen *find_gen(sg_controller *c, uint64_t id) {
  for (size_t i = 0; i < c->nmain; i++)
    if (c->gens[i].id == id)
      return &c->gens[i];
  if (c->ngens == c->nmain || id < c->gens[c->nmain].id)
    return NULL;
  uint64_t i = id - c->gens[c->nmain].id;
  if (i >= c->ngens - c->nmain)
    return NULL;
  assert(c->gens[c->nmain + i].id == id);
  return &c->gens[c->nmain + i];
}

/* A generation stops generating (finished, failed or cancelled). */
static void gen_stopped(sg_controller *c, gen *g) {
  assert(g->live);
  g->live = false;
  if (g->kind == SG_GEN_SPEC) {
    assert(c->nlive_forks > 0);
    c->nlive_forks--;
    if (c->o.fork_budget != NULL) {
      assert(c->o.fork_budget->used > 0);
      c->o.fork_budget->used--;
    }
  }
}

static gen *append_gen(sg_controller *c) {
  if (c->ngens == c->capgens) {
    c->capgens = c->capgens ? c->capgens * 2 : 8;
    c->gens = sg_realloc(c->gens, c->capgens * sizeof *c->gens);
  }
  return &c->gens[c->ngens++];
}

static void gen_init_bufs(sg_controller *c, gen *g) {
  sg_buf_init(&g->content, c->o.max_text_bytes);
  if (g->kind == SG_GEN_MAIN) {
    sg_buf_init(&g->reasoning, c->o.max_text_bytes);
    g->scanner = sg_scanner_new(&c->o.scanner);
  }
}

static gen *new_gen(sg_controller *c, sg_gen_kind kind, size_t prompt_index) {
  gen *g = append_gen(c);
  memset(g, 0, sizeof *g);
  g->id = ++c->next_gen;
  g->kind = kind;
  g->prompt_index = prompt_index;
  g->live = true;
  if (kind == SG_GEN_MAIN) {
    assert(c->nmain == c->ngens - 1); /* mains come first */
    c->nmain++;
  } else {
    c->nlive_forks++;
    if (c->o.fork_budget != NULL)
      c->o.fork_budget->used++;
  }
  gen_init_bufs(c, g);
  return g;
}

static void free_gens(sg_controller *c) {
  for (size_t i = 0; i < c->ngens; i++) {
    sg_buf_free(&c->gens[i].content);
    sg_buf_free(&c->gens[i].reasoning);
    sg_scanner_free(c->gens[i].scanner);
  }
  /* forks still live here (the controller freed mid-iteration) give their
   * streams back to the server they share */
  if (c->o.fork_budget != NULL) {
    assert(c->o.fork_budget->used >= c->nlive_forks);
    c->o.fork_budget->used -= c->nlive_forks;
  }
  c->ngens = 0;
  c->nmain = 0;
  c->nlive_forks = 0;
}

/* The detached main generation with this id, if it still generates. */
static gen *find_detached(sg_controller *c, uint64_t id) {
  return c->det.live && c->det.id == id ? &c->det : NULL;
}

static void detached_free(sg_controller *c) {
  sg_buf_free(&c->det.content);
  sg_buf_free(&c->det.reasoning);
  sg_scanner_free(c->det.scanner);
  memset(&c->det, 0, sizeof c->det);
}

/* Main generation g of the ending iteration goes on detached: its answer
 * is all that is kept (no reasoning, no scanner, no forks from it). */
static void detach(sg_controller *c, gen *g) {
  assert(g->kind == SG_GEN_MAIN && g->live && !c->det.live);
  sg_buf_free(&g->reasoning);
  sg_scanner_free(g->scanner);
  g->scanner = NULL;
  c->det = *g; /* the answer's buffer moves; det is empty when not live */
  sg_buf_init(&g->content, c->o.max_text_bytes);
  g->live = false;
  c->st.detached++;
}

/* The main generation started ahead with this id, if any (live or
 * finished). */
static gen *find_ahead(sg_controller *c, uint64_t id) {
  return c->ahead.id != 0 && c->ahead.id == id ? &c->ahead : NULL;
}

static void ahead_free(sg_controller *c) {
  sg_buf_free(&c->ahead.content);
  sg_buf_free(&c->ahead.reasoning);
  sg_scanner_free(c->ahead.scanner);
  memset(&c->ahead, 0, sizeof c->ahead);
  c->ahead_trigger = -1;
}

/* The main started ahead is not needed: cancelled if it still generates. */
static void ahead_drop(sg_controller *c, sg_ctl_actions *out);

static cand_state cand_get(const sg_controller *c, uint64_t id) {
  if (id == 0 || id > c->hist.n)
    return CAND_NONE;
  return (cand_state)c->cand[id - 1];
}

static bool cand_evaluating(cand_state st) {
  return st == CAND_VALIDATING || st == CAND_PROFILING;
}

static void cand_set(sg_controller *c, uint64_t id, cand_state st) {
  assert(id >= 1 && id <= c->hist.n);
  if (c->capcand < c->hist.n) {
    size_t old = c->capcand;
    c->capcand = c->hist.n * 2;
    c->cand = sg_realloc(c->cand, c->capcand);
    memset(c->cand + old, CAND_NONE, c->capcand - old);
  }
  c->nevaluating -= cand_evaluating((cand_state)c->cand[id - 1]);
  c->nevaluating += cand_evaluating(st);
  c->cand[id - 1] = (uint8_t)st;
}

static int live_forks(const sg_controller *c) { return c->nlive_forks; }

/* A main generation is resolved once it can no longer change the iteration:
 * it failed or was cancelled, or it finished and its candidate (if any) has
 * been evaluated. */
static bool main_resolved(const sg_controller *c, const gen *g) {
  assert(g->kind == SG_GEN_MAIN);
  if (g->live)
    return false;
  if (g->failed || g->candidate == 0)
    return true;
  cand_state cs = cand_get(c, g->candidate);
  return cs != CAND_VALIDATING && cs != CAND_PROFILING;
}

/* ---- iterations ------------------------------------------------------------ */

static void workflow_done(sg_controller *c, int64_t now_us,
                          sg_ctl_reason reason, sg_ctl_actions *out) {
  ctl_set_state(c, SG_CTL_DONE);
  free_gens(c);
  ahead_drop(c, out);
  if (c->det.live) {
    sg_ctl_action *a = emit(c, out, SG_CACT_CANCEL_GEN);
    a->u.cancel.gen = c->det.id;
    detached_free(c);
  }
  c->st.end_us = now_us;
  sg_ctl_action *a = emit(c, out, SG_CACT_WORKFLOW_DONE);
  a->u.done.reason = reason;
  a->u.done.best_kernel = c->hist.best_id;
}

/* The budget a workflow has spent, or SG_REASON__COUNT while none is. */
static sg_ctl_reason budget_spent(const sg_controller *c, int64_t now_us,
                                  bool at_boundary) {
  if (at_boundary && c->o.max_iterations > 0 &&
      c->st.iterations >= c->o.max_iterations)
    return SG_REASON_BUDGET_ITERATIONS;
  if (c->o.max_wall_us > 0 && now_us - c->st.start_us >= c->o.max_wall_us)
    return SG_REASON_BUDGET_WALL;
  if (c->o.max_tokens > 0 && c->tokens >= c->o.max_tokens)
    return SG_REASON_BUDGET_TOKENS;
  return SG_REASON__COUNT;
}

static void take_candidate(sg_controller *c, gen *g, const char *text,
                           size_t len, sg_ctl_actions *out);
static int maybe_fallback(sg_controller *c, int64_t now_us,
                          sg_ctl_actions *out, sg_err *err);
static void fork_from(sg_controller *c, gen *m, uint64_t prefix_len,
                      sg_ctl_reason reason, int trigger, int64_t now_us,
                      sg_ctl_actions *out);

/* sg_ctl_opts.next_ahead: the main started ahead becomes this iteration's
 * main, with the reasoning (or the answer) it has. */
static int adopt_ahead(sg_controller *c, int64_t now_us, sg_ctl_actions *out,
                       sg_err *err) {
  c->plan.n = 1;
  c->plan.prompts[0] = c->ahead_prompt;
  ctl_set_state(c, SG_CTL_GENERATING);
  c->iter_first_kernel = c->hist.n;
  c->iter_forks = 0;
  gen *m = append_gen(c);
  *m = c->ahead; /* its buffers move */
  c->nmain = 1;
  int trigger = c->ahead_trigger;
  memset(&c->ahead, 0, sizeof c->ahead);
  c->ahead_trigger = -1;
  c->st.ahead_adopted++;
  if (!m->live) { /* it finished while ahead: its answer is the candidate */
    take_candidate(c, m, sg_buf_str(&m->content), m->content.len, out);
    return maybe_fallback(c, now_us, out, err);
  }
  if (trigger >= 0) /* the text it wrote ahead holds a trigger: fork now */
    fork_from(c, m, m->reasoning.len, SG_REASON_FORK_TRIGGER, trigger, now_us, out);
  return 0;
}

static int start_iteration(sg_controller *c, int64_t now_us,
                           sg_ctl_actions *out, sg_err *err) {
  assert(c->ngens == 0);
  if (c->ahead.id != 0) {
    if (c->hist.best_id == c->ahead_base)
      return adopt_ahead(c, now_us, out, err);
    ahead_drop(c, out); /* asked to refine a kernel that is no longer the best */
  }
  int rc = sg_search_next(c->o.search, &c->hist, c->iteration, &c->plan, err);
  if (rc < 0) {
    workflow_done(c, now_us, SG_REASON_SEARCH_FAILED, out);
    return rc;
  }
  ctl_set_state(c, SG_CTL_GENERATING);
  c->iter_first_kernel = c->hist.n;
  c->iter_forks = 0;
  for (size_t i = 0; i < c->plan.n; i++) {
    gen *g = new_gen(c, SG_GEN_MAIN, i);
    sg_ctl_action *a = emit(c, out, SG_CACT_START_GEN);
    a->u.start.gen = g->id;
    a->u.start.kind = SG_GEN_MAIN;
    a->u.start.thinking = true;
    a->u.start.prompt_index = i;
    a->u.start.prompt = &c->plan.prompts[i];
  }
  return 0;
}

/* Ends the iteration: cancels what still generates, drops what is still
 * being evaluated (the scheduler aborts it at the boundary END_ITERATION
 * announces), then starts the next iteration or ends the workflow. */
static int end_iteration(sg_controller *c, int64_t now_us,
                         sg_ctl_reason reason, sg_ctl_actions *out,
                         sg_err *err) {
  assert(c->state == SG_CTL_GENERATING || c->state == SG_CTL_FALLBACK);
  bool main_running = false;
  /* a cut main goes on only if an iteration follows to take its answer */
  bool detaching = reason == SG_REASON_CUTOFF && c->o.cutoff_detach && !c->det.live &&
                   !(c->o.max_iterations > 0 && c->st.iterations + 1 >= c->o.max_iterations);
  for (size_t i = 0; i < c->ngens; i++) {
    gen *g = &c->gens[i];
    if (!g->live)
      continue;
    if (detaching && g->kind == SG_GEN_MAIN && !c->det.live) {
      detach(c, g);
      continue;
    }
    main_running |= g->kind == SG_GEN_MAIN;
    gen_stopped(c, g);
    sg_ctl_action *a = emit(c, out, SG_CACT_CANCEL_GEN);
    a->u.cancel.gen = g->id;
  }
  uint64_t best = 0;
  for (size_t i = c->iter_first_kernel; i < c->hist.n; i++) {
    sg_kernel *k = &c->hist.v[i];
    cand_state cs = cand_get(c, k->id);
    if (cs == CAND_VALIDATING || cs == CAND_PROFILING) {
      cand_set(c, k->id, CAND_DROPPED);
      k->dropped = true;
    }
    if (k->profiled && !isnan(k->speedup) &&
        (best == 0 || k->speedup > sg_history_get(&c->hist, best)->speedup))
      best = k->id;
  }
  /* The iterations before this one: their kernels' texts that refine will
   * never show again are freed (the runtime may still read this
   * iteration's while it acts on END_ITERATION). */
  if (c->compact)
    c->compact_from = sg_history_compact(&c->hist, c->compact_from, c->iter_first_kernel);
  sg_ctl_action *a = emit(c, out, SG_CACT_END_ITERATION);
  a->u.end.reason = reason;
  a->u.end.best_kernel = best;
  c->st.iterations++;
  c->hist.iterations_done = c->st.iterations;
  if (reason == SG_REASON_EARLY) {
    c->st.criterion_accepts++;
    if (main_running) /* the paper's metric: reasoning cut short */
      c->st.early_terminations++;
  }
  free_gens(c);
  c->pending_accept = 0;
  c->iteration++;
  c->iter_valid = false;
  sg_ctl_reason spent = reason >= SG_REASON_BUDGET_ITERATIONS &&
                                reason <= SG_REASON_BUDGET_TOKENS
                            ? reason
                            : budget_spent(c, now_us, true);
  if (spent != SG_REASON__COUNT) {
    workflow_done(c, now_us, spent, out);
    return 0;
  }
  return start_iteration(c, now_us, out, err);
}

static void ahead_drop(sg_controller *c, sg_ctl_actions *out) {
  if (c->ahead.id == 0)
    return;
  if (c->ahead.live) {
    sg_ctl_action *a = emit(c, out, SG_CACT_CANCEL_GEN);
    a->u.cancel.gen = c->ahead.id;
    a->u.cancel.ahead = true;
  }
  ahead_free(c);
}

/* sg_ctl_opts.next_ahead: a candidate of this iteration went to
 * validation, so the iteration may end soon; the next one's main starts
 * now on the prompt the search gives for it now (with refine: the best
 * kernel so far). Its id is one of this iteration's: a hole in gens[]
 * (dead, no parent: no fork's sibling) keeps the forks' ids consecutive
 * for find_gen. */
static void start_ahead(sg_controller *c, sg_ctl_actions *out) {
  if (!c->o.next_ahead || c->ahead.id != 0 ||
      (c->state != SG_CTL_GENERATING && c->state != SG_CTL_FALLBACK))
    return;
  if (c->o.max_iterations > 0 && c->st.iterations + 1 >= c->o.max_iterations)
    return; /* no iteration follows */
  if (c->hist.best_id == 0)
    return; /* the first kernel accepted will be the best: one started now
               would be cancelled for it */
  sg_search_plan plan;
  sg_err e;
  sg_err_clear(&e);
  if (sg_search_next(c->o.search, &c->hist, c->iteration + 1, &plan, &e) < 0 ||
      plan.n != 1)
    return; /* the iteration's own start will ask again, and report */
  c->ahead_prompt = plan.prompts[0];
  c->ahead_base = c->hist.best_id;
  c->ahead_trigger = -1;
  gen *g = &c->ahead;
  memset(g, 0, sizeof *g);
  g->id = ++c->next_gen;
  g->kind = SG_GEN_MAIN;
  g->live = true;
  gen_init_bufs(c, g);
  gen *hole = append_gen(c);
  memset(hole, 0, sizeof *hole);
  hole->id = g->id;
  hole->kind = SG_GEN_SPEC;
  sg_ctl_action *a = emit(c, out, SG_CACT_START_GEN);
  a->iteration = c->iteration + 1;
  a->u.start.gen = g->id;
  a->u.start.kind = SG_GEN_MAIN;
  a->u.start.thinking = true;
  a->u.start.prompt_index = 0;
  a->u.start.prompt = &c->ahead_prompt;
  c->st.ahead_started++;
}

/* Fallback (Algorithm 1, step 6): every main generation resolved. */
static int maybe_fallback(sg_controller *c, int64_t now_us,
                          sg_ctl_actions *out, sg_err *err) {
  if (c->state != SG_CTL_GENERATING && c->state != SG_CTL_FALLBACK)
    return 0;
  bool all_finished = true, all_resolved = true;
  /* The mains only (gens[0..nmain)): this runs on every result, and an
   * iteration may hold hundreds of forks. */
  for (size_t i = 0; i < c->nmain; i++) {
    const gen *g = &c->gens[i];
    assert(g->kind == SG_GEN_MAIN);
    all_finished &= !g->live;
    all_resolved &= main_resolved(c, g);
  }
  if (all_finished && c->state == SG_CTL_GENERATING)
    ctl_set_state(c, SG_CTL_FALLBACK);
  if (all_resolved)
    return end_iteration(c, now_us, SG_REASON_FALLBACK, out, err);
  return 0;
}

static int check_budget(sg_controller *c, int64_t now_us, sg_ctl_actions *out,
                        sg_err *err) {
  if (c->state != SG_CTL_GENERATING && c->state != SG_CTL_FALLBACK)
    return 0;
  sg_ctl_reason spent = budget_spent(c, now_us, false);
  if (spent == SG_REASON__COUNT)
    return 0;
  return end_iteration(c, now_us, spent, out, err);
}

/* ---- forks (Algorithm 1, step 3) ------------------------------------------------ */

static void fork_from(sg_controller *c, gen *m, uint64_t prefix_len,
                      sg_ctl_reason reason, int trigger, int64_t now_us,
                      sg_ctl_actions *out) {
  assert(m->kind == SG_GEN_MAIN);
  if (!c->o.speculate || !m->live || c->state != SG_CTL_GENERATING)
    return;
  if (prefix_len > m->reasoning.len)
    prefix_len = m->reasoning.len; /* the kept text was capped */
  /* never twice from the same prefix, nor from a shorter one */
  if (prefix_len == 0 || prefix_len <= m->last_fork_prefix)
    return;
  if (c->o.fork_gate > 0 && c->nvalid_prefix > 0) {
    uint64_t shortest = UINT64_MAX;
    for (int i = 0; i < c->nvalid_prefix; i++)
      if (c->valid_prefix[i] < shortest)
        shortest = c->valid_prefix[i];
    if ((double)prefix_len < c->o.fork_gate * (double)shortest)
      return; /* too early to be worth it: wait for more reasoning */
  }
  int fv = c->cap.free_validate, fp = c->cap.free_profile;
  int k = fv < fp ? fv : fp;
  if (k < 1)
    k = 1;
  int room = c->o.max_forks_per_iteration - c->iter_forks;
  if (k > room)
    k = room;
  room = c->o.max_live_forks - live_forks(c);
  if (k > room)
    k = room;
  if (c->o.fork_budget != NULL && k > c->o.fork_budget->cap - c->o.fork_budget->used)
    k = c->o.fork_budget->cap - c->o.fork_budget->used; /* the server is full */
  if (k < 1)
    return;
  m->last_fork_prefix = prefix_len;
  sg_ctl_action *d = emit(c, out, SG_CACT_DECISION);
  d->u.decision.reason = reason;
  d->u.decision.now_us = now_us;
  d->u.decision.gen = m->id;
  d->u.decision.prefix_len = prefix_len;
  d->u.decision.k = k;
  d->u.decision.trigger = trigger;
  d->u.decision.speedup = NAN;
  d->u.decision.threshold_mean = NAN;
  d->u.decision.threshold_best = NAN;
  uint64_t parent = m->id;
  size_t prompt_index = m->prompt_index;
  size_t mi = (size_t)(m - c->gens); /* new_gen may move gens[] */
  for (int i = 0; i < k; i++) {
    gen *g = new_gen(c, SG_GEN_SPEC, prompt_index);
    g->parent = parent;
    g->prefix_len = prefix_len;
    gen *mm = &c->gens[mi];
    sg_ctl_action *a = emit(c, out, SG_CACT_START_GEN);
    a->u.start.gen = g->id;
    a->u.start.kind = SG_GEN_SPEC;
    a->u.start.thinking = false;
    a->u.start.prompt_index = prompt_index;
    a->u.start.prompt = &c->plan.prompts[prompt_index];
    a->u.start.parent_gen = parent;
    a->u.start.prefix_len = prefix_len;
    a->u.start.prefix = sg_buf_str(&mm->reasoning);
  }
  c->iter_forks += k;
  c->st.forks += (uint64_t)k;
  c->st.forks_by_reason[reason] += (uint64_t)k;
  if (trigger >= 0 && trigger < SG_TRIGGER__COUNT)
    c->st.forks_by_trigger[trigger] += (uint64_t)k;
}

typedef struct trig_seen {
  bool any;
  uint64_t offset;
  int cls;
} trig_seen;

static void on_trigger(void *user, const sg_trigger *t) {
  trig_seen *ts = user;
  /* The scanner reports in offset order: keep the last. One chunk forks at
   * most once, at its last trigger: its prefix holds all the others. */
  ts->any = true;
  ts->offset = t->offset;
  ts->cls = (int)t->cls;
}

/* ---- events -------------------------------------------------------------------- */

static void count_usage(sg_controller *c, gen *g, const sg_usage *u) {
  /* final usage replaces what the chunks counted */
  c->tokens -= g->provisional;
  g->provisional = 0;
  c->tokens += u->prompt_tokens + u->completion_tokens;
  c->st.prompt_tokens += u->prompt_tokens;
  c->st.completion_tokens += u->completion_tokens;
  c->st.cached_tokens += u->cached_tokens;
}

static void on_chunk(sg_controller *c, const sg_ctl_event *ev,
                     sg_ctl_actions *out) {
  gen *g = find_ahead(c, ev->u.chunk.gen);
  if (g == NULL)
    g = find_gen(c, ev->u.chunk.gen);
  if (g == NULL)
    g = find_detached(c, ev->u.chunk.gen);
  if (g == NULL || !g->live)
    return;
  g->provisional += ev->u.chunk.tokens;
  c->tokens += ev->u.chunk.tokens;
  if (ev->u.chunk.content != NULL && ev->u.chunk.content_len > 0)
    sg_buf_append(&g->content, ev->u.chunk.content, ev->u.chunk.content_len);
  if (g->kind != SG_GEN_MAIN || g->scanner == NULL || ev->u.chunk.reasoning == NULL ||
      ev->u.chunk.reasoning_len == 0)
    return;
  sg_buf_append(&g->reasoning, ev->u.chunk.reasoning,
                ev->u.chunk.reasoning_len);
  trig_seen ts = {false, 0, -1};
  sg_scanner_feed(g->scanner, ev->u.chunk.reasoning,
                  ev->u.chunk.reasoning_len, on_trigger, &ts);
  if (g == &c->ahead) { /* no forks before its iteration: remember */
    if (ts.any)
      c->ahead_trigger = ts.cls;
    return;
  }
  if (ts.any)
    fork_from(c, g, ts.offset, SG_REASON_FORK_TRIGGER, ts.cls, ev->now_us,
              out);
}

/* A generation ended with text: extract and submit its candidate. */
static void take_candidate(sg_controller *c, gen *g, const char *text,
                           size_t len, sg_ctl_actions *out) {
  sg_extracted ex;
  sg_extract_candidate(text, len, c->o.language, c->o.entry, &ex);
  const char *src = ex.outcome == SG_EXTRACT_FOUND ? text + ex.start : NULL;
  size_t srclen = ex.outcome == SG_EXTRACT_FOUND ? ex.len : 0;
  size_t fixed_len = 0;
  int unshadowed = 0;
  char *fixed = src ? sg_unshadow_params(src, srclen, c->o.language, c->o.entry,
                                         &fixed_len, &unshadowed)
                    : NULL;
  sg_kernel *k = sg_history_add(&c->hist, c->iteration, g->kind, g->id,
                                g->prefix_len, ex.outcome, fixed ? fixed : src,
                                fixed ? fixed_len : srclen);
  free(fixed);
  g->candidate = k->id;
  c->st.candidates++;
  if (ex.outcome != SG_EXTRACT_FOUND) {
    /* the reason becomes the feedback the search shows */
    k->validate_message =
        ex.reason ? sg_strndup(ex.reason, strlen(ex.reason)) : NULL;
    cand_set(c, k->id, CAND_NONE);
    return;
  }
  cand_set(c, k->id, CAND_VALIDATING);
  sg_ctl_action *a = emit(c, out, SG_CACT_SUBMIT_EVAL);
  a->u.submit.candidate = k->id;
  a->u.submit.phase = SG_PHASE_VALIDATE;
  a->u.submit.source = k->source;
  a->u.submit.source_len = k->source_len;
  start_ahead(c, out);
}

/* A generation's answer: its candidate is extracted and submitted. A main
 * a cutoff detached gives its kernel to the iteration running now, as a
 * main generation's (the scheduler aborts it at this iteration's end if it
 * is still being evaluated then, like any of the iteration's). */
static int on_finished(sg_controller *c, const sg_ctl_event *ev,
                       sg_ctl_actions *out, sg_err *err) {
  gen *g = find_ahead(c, ev->u.finished.gen);
  if (g != NULL) { /* its answer waits for its iteration */
    if (!g->live)
      return 0;
    g->live = false;
    count_usage(c, g, &ev->u.finished.usage);
    if (ev->u.finished.text != NULL) {
      sg_buf_reset(&g->content);
      sg_buf_append(&g->content, ev->u.finished.text, ev->u.finished.len);
    }
    return 0;
  }
  g = find_detached(c, ev->u.finished.gen);
  bool detached = g != NULL;
  if (!detached)
    g = find_gen(c, ev->u.finished.gen);
  if (g == NULL || !g->live)
    return 0;
  if (detached)
    g->live = false;
  else
    gen_stopped(c, g);
  count_usage(c, g, &ev->u.finished.usage);
  const char *text = ev->u.finished.text;
  size_t len = ev->u.finished.len;
  if (text == NULL) {
    text = sg_buf_str(&g->content);
    len = g->content.len;
  }
  take_candidate(c, g, text, len, out);
  if (detached) {
    c->st.detached_answers++;
    detached_free(c);
    return 0;
  }
  return maybe_fallback(c, ev->now_us, out, err);
}

static int on_failed(sg_controller *c, const sg_ctl_event *ev,
                     sg_ctl_actions *out, sg_err *err) {
  gen *ag = find_ahead(c, ev->u.failed.gen);
  if (ag != NULL) { /* gone: the next iteration starts as usual */
    if (ag->live) {
      count_usage(c, ag, &ev->u.failed.usage);
      ahead_free(c);
    }
    return 0;
  }
  if (find_detached(c, ev->u.failed.gen)) {
    count_usage(c, &c->det, &ev->u.failed.usage);
    detached_free(c);
    return 0;
  }
  gen *g = find_gen(c, ev->u.failed.gen);
  if (g == NULL || !g->live)
    return 0;
  gen_stopped(c, g);
  g->failed = true;
  count_usage(c, g, &ev->u.failed.usage);
  return maybe_fallback(c, ev->now_us, out, err);
}

/* A kernel validated ok: a fork's prefix joins the window the fork gate and
 * the cutoff learn from. */
static void note_valid(sg_controller *c, const sg_kernel *k) {
  if (k->origin != SG_GEN_SPEC)
    return;
  c->valid_prefix[c->valid_prefix_next] = k->prefix_len;
  c->valid_prefix_next = (c->valid_prefix_next + 1) % SG_CTL_GATE_WINDOW;
  if (c->nvalid_prefix < SG_CTL_GATE_WINDOW)
    c->nvalid_prefix++;
}

/* The criterion accepted kernel k (measured at speedup against view):
 * DECISION early, then the iteration ends. */
static int accept_early(sg_controller *c, const sg_kernel *k, double speedup,
                        const sg_termination_history *view, int64_t now_us,
                        sg_ctl_actions *out, sg_err *err) {
  sg_ctl_action *d = emit(c, out, SG_CACT_DECISION);
  d->u.decision.reason = SG_REASON_EARLY;
  d->u.decision.now_us = now_us;
  d->u.decision.gen = k->gen;
  d->u.decision.prefix_len = k->prefix_len;
  d->u.decision.trigger = -1;
  d->u.decision.candidate = k->id;
  d->u.decision.speedup = speedup;
  d->u.decision.threshold_mean = view->mean;
  d->u.decision.threshold_best = view->best;
  return end_iteration(c, now_us, SG_REASON_EARLY, out, err);
}

/* sg_ctl_opts.decide_at_validation: a valid kernel whose validation-measured
 * speedup, divided by the margin, passes the criterion is accepted without
 * its profile: the validation's speedup stands as its measurement (it joins
 * the history as profiled, with no profile text), and the iteration ends
 * one profiling sooner. */
static bool accept_at_validation(sg_controller *c, sg_kernel *k,
                                 double speedup,
                                 sg_termination_history *view) {
  if (c->o.decide_at_validation <= 0 || !isfinite(speedup) || speedup <= 0)
    return false;
  *view = sg_speedup_history_view(&c->hist.speedups);
  if (!sg_termination_decide(c->o.termination, view,
                             speedup / c->o.decide_at_validation))
    return false;
  cand_set(c, k->id, CAND_DONE);
  sg_history_profiled(&c->hist, k->id, speedup, NULL);
  c->st.validation_accepts++;
  return true;
}

/* Forks started together, from one main generation at one prefix. */
static bool siblings(const gen *a, const gen *b) {
  return a->kind == SG_GEN_SPEC && b->kind == SG_GEN_SPEC && a->parent == b->parent &&
         a->prefix_len == b->prefix_len;
}

/* The fork that wrote kernel k, if it is one of this iteration's. */
static const gen *fork_of(sg_controller *c, const sg_kernel *k) {
  const gen *g = find_gen(c, k->gen);
  return g != NULL && g->kind == SG_GEN_SPEC ? g : NULL;
}

/* Whether a sibling of the fork that wrote k may still give a kernel to
 * decide on: still generating, or its kernel still validating. */
static bool sibling_pending(sg_controller *c, const sg_kernel *k) {
  const gen *kg = fork_of(c, k);
  if (kg == NULL)
    return false;
  for (size_t i = c->nmain; i < c->ngens; i++) { /* the forks */
    const gen *g = &c->gens[i];
    if (g != kg && siblings(g, kg) &&
        (g->live || (g->candidate != 0 && cand_get(c, g->candidate) == CAND_VALIDATING)))
      return true;
  }
  return false;
}

/* sg_ctl_opts.decide_with_siblings: once no sibling of the waiting
 * kernel's fork is pending, the fastest of them at validation is
 * accepted. */
static int settle_pending(sg_controller *c, int64_t now_us, sg_ctl_actions *out,
                          sg_err *err) {
  sg_kernel *k = sg_history_get(&c->hist, c->pending_accept);
  if (k == NULL || sibling_pending(c, k))
    return 0;
  const gen *kg = fork_of(c, k);
  sg_kernel *best = k;
  for (size_t i = c->iter_first_kernel; kg != NULL && i < c->hist.n; i++) {
    sg_kernel *q = &c->hist.v[i];
    const gen *qg = q->profiled && isfinite(q->speedup) ? fork_of(c, q) : NULL;
    if (qg != NULL && siblings(qg, kg) && q->speedup > best->speedup)
      best = q;
  }
  c->pending_accept = 0;
  sg_termination_history view = sg_speedup_history_view(&c->hist.speedups);
  return accept_early(c, best, best->speedup, &view, now_us, out, err);
}

/* A sibling of the waiting kernel validated with a speedup: it joins the
 * history at that speedup, unprofiled, as the waiting one did. */
static bool take_sibling(sg_controller *c, sg_kernel *k, double speedup) {
  sg_kernel *w = sg_history_get(&c->hist, c->pending_accept);
  const gen *kg = fork_of(c, k), *wg = w != NULL ? fork_of(c, w) : NULL;
  if (kg == NULL || wg == NULL || !siblings(kg, wg) || !isfinite(speedup) || speedup <= 0)
    return false;
  cand_set(c, k->id, CAND_DONE);
  sg_history_profiled(&c->hist, k->id, speedup, NULL);
  return true;
}

static int on_eval(sg_controller *c, const sg_ctl_event *ev,
                   sg_ctl_actions *out, sg_err *err) {
  uint64_t id = ev->u.eval.candidate;
  sg_phase phase = ev->u.eval.phase;
  sg_eval_status status = ev->u.eval.status;
  if ((unsigned)phase >= SG_PHASE__COUNT || (unsigned)status >= SG_EVAL__COUNT)
    return sg_err_set(err, SG_EINVAL, "controller: eval event with phase %d "
                      "status %d", (int)phase, (int)status);
  cand_state cs = cand_get(c, id);
  cand_state want =
      phase == SG_PHASE_VALIDATE ? CAND_VALIDATING : CAND_PROFILING;
  if (cs != want)
    return 0; /* dropped, unknown, or a duplicate result: ignore */
  sg_kernel *k = sg_history_get(&c->hist, id);
  if (phase == SG_PHASE_VALIDATE) {
    sg_history_validated(&c->hist, id, status, ev->u.eval.speedup,
                         ev->u.eval.message);
    if (status != SG_EVAL_OK) {
      cand_set(c, id, CAND_DONE);
      return maybe_fallback(c, ev->now_us, out, err);
    }
    c->st.validated_ok++;
    c->iter_valid = true;
    note_valid(c, k);
    if (c->pending_accept != 0 && take_sibling(c, k, ev->u.eval.speedup))
      return 0; /* settled after the event */
    sg_termination_history view;
    if (c->pending_accept == 0 && accept_at_validation(c, k, ev->u.eval.speedup, &view)) {
      if (c->o.decide_with_siblings && sibling_pending(c, k)) {
        c->pending_accept = k->id;
        c->st.sibling_waits++;
        return 0;
      }
      return accept_early(c, k, ev->u.eval.speedup, &view, ev->now_us, out,
                          err);
    }
    cand_set(c, id, CAND_PROFILING);
    sg_ctl_action *a = emit(c, out, SG_CACT_SUBMIT_EVAL);
    a->u.submit.candidate = id;
    a->u.submit.phase = SG_PHASE_PROFILE;
    a->u.submit.source = k->source;
    a->u.submit.source_len = k->source_len;
    return 0;
  }
  cand_set(c, id, CAND_DONE);
  if (status != SG_EVAL_OK)
    return maybe_fallback(c, ev->now_us, out, err);
  /* Algorithm 1, step 5: ask the criterion against the history as it was,
   * then add this speedup to it. */
  double speedup = isnan(ev->u.eval.speedup) ? k->speedup : ev->u.eval.speedup;
  sg_termination_history view = sg_speedup_history_view(&c->hist.speedups);
  bool stop = sg_termination_decide(c->o.termination, &view, speedup);
  sg_history_profiled(&c->hist, id, speedup, ev->u.eval.profile_text);
  c->st.profiled++;
  if (!stop)
    return maybe_fallback(c, ev->now_us, out, err);
  return accept_early(c, k, speedup, &view, ev->now_us, out, err);
}

static void on_tick_forks(sg_controller *c, const sg_ctl_event *ev,
                          sg_ctl_actions *out);

/* sg_ctl_opts.cutoff: true when the current iteration should end now. */
static bool past_cutoff(const sg_controller *c) {
  if (c->o.cutoff <= 0 || c->nvalid_prefix < SG_CTL_GATE_WINDOW || c->iter_valid ||
      c->state != SG_CTL_GENERATING)
    return false;
  uint64_t longest = 0;
  for (int i = 0; i < c->nvalid_prefix; i++)
    if (c->valid_prefix[i] > longest)
      longest = c->valid_prefix[i];
  /* Counters, not scans: this runs at every tick, and an iteration may
   * hold hundreds of forks and candidates. */
  if (c->nlive_forks > 0)
    return false; /* a fork is still writing: wait for it */
  if (c->nevaluating > 0)
    return false; /* a candidate is being evaluated: wait for it */
  for (size_t i = 0; i < c->nmain; i++) {
    const gen *g = &c->gens[i];
    if (g->live && (double)g->reasoning.len >= c->o.cutoff * (double)longest)
      return true;
  }
  return false;
}

static int on_tick(sg_controller *c, const sg_ctl_event *ev,
                   sg_ctl_actions *out, sg_err *err) {
  c->cap = ev->u.tick.capacity;
  if (past_cutoff(c))
    return end_iteration(c, ev->now_us, SG_REASON_CUTOFF, out, err);
  on_tick_forks(c, ev, out);
  return 0;
}

static void on_tick_forks(sg_controller *c, const sg_ctl_event *ev,
                          sg_ctl_actions *out) {
  if (!c->o.fork_on_idle || c->state != SG_CTL_GENERATING ||
      c->cap.free_validate < 1)
    return;
  /* Idle devices (Algorithm 1, step 3): fork from each main generation
   * whose reasoning grew enough since its last fork. Index loop: a fork
   * appends to gens. */
  size_t n = c->nmain; /* the mains: gens[0..nmain) */
  for (size_t i = 0; i < n; i++) {
    gen *m = &c->gens[i];
    assert(m->kind == SG_GEN_MAIN);
    if (!m->live)
      continue;
    uint64_t len = m->reasoning.len;
    if (len >= m->last_fork_prefix + c->o.idle_min_new_bytes && len > 0)
      fork_from(c, m, len, SG_REASON_FORK_IDLE, -1, ev->now_us, out);
  }
}

/* ---- public API -------------------------------------------------------------------- */

int sg_controller_new(const sg_ctl_opts *o, sg_controller **out,
                      sg_err *err) {
  *out = NULL;
  if (o->search == NULL)
    return sg_err_set(err, SG_EINVAL, "controller: search is required");
  if (o->termination == NULL)
    return sg_err_set(err, SG_EINVAL, "controller: termination is required");
  if (o->language == NULL)
    return sg_err_set(err, SG_EINVAL, "controller: language is required");
  if (o->max_forks_per_iteration < 0 || o->max_live_forks < 0)
    return sg_err_set(err, SG_EINVAL, "controller: max_forks_per_iteration "
                      "and max_live_forks must be >= 0");
  if (o->fork_budget != NULL && o->fork_budget->cap < 1)
    return sg_err_set(err, SG_EINVAL, "controller: fork_budget's cap must be >= 1, "
                      "got %d", o->fork_budget->cap);
  if (!(o->cutoff >= 0 && o->cutoff <= 100))
    return sg_err_set(err, SG_EINVAL, "controller: cutoff must be in 0..100, got %g",
                      o->cutoff);
  if (o->cutoff_detach && o->cutoff <= 0)
    return sg_err_set(err, SG_EINVAL, "controller: cutoff_detach needs a cutoff "
                      "(cutoff > 0)");
  if (o->next_ahead && strcmp(sg_search_name(o->search), "refine") != 0)
    return sg_err_set(err, SG_EINVAL, "controller: next_ahead needs the refine search "
                      "(its next prompt refines the best kernel), not %s",
                      sg_search_name(o->search));
  if (o->decide_with_siblings && o->decide_at_validation <= 0)
    return sg_err_set(err, SG_EINVAL, "controller: decide_with_siblings needs "
                      "decide_at_validation");
  if (!(o->decide_at_validation == 0 ||
        (o->decide_at_validation >= 1 && o->decide_at_validation <= 10)))
    return sg_err_set(err, SG_EINVAL, "controller: decide_at_validation must be "
                      "0 or in 1..10, got %g", o->decide_at_validation);
  if (!(o->fork_gate >= 0 && o->fork_gate <= 1))
    return sg_err_set(err, SG_EINVAL, "controller: fork_gate must be in 0..1, got %g",
                      o->fork_gate);
  if (o->max_wall_us < 0)
    return sg_err_set(err, SG_EINVAL, "controller: max_wall_us must be >= 0");
  if (o->max_text_bytes < 1024)
    return sg_err_set(err, SG_EINVAL, "controller: max_text_bytes must be >= "
                      "1024, got %zu", o->max_text_bytes);
  sg_controller *c = sg_calloc(1, sizeof *c);
  c->o = *o;
  c->state = SG_CTL_NEW;
  c->ahead_trigger = -1;
  c->compact = strcmp(sg_search_name(o->search), "refine") == 0;
  sg_history_init(&c->hist);
  *out = c;
  return 0;
}

void sg_controller_free(sg_controller *c) {
  if (c == NULL)
    return;
  free_gens(c);
  detached_free(c);
  ahead_free(c);
  free(c->gens);
  free(c->cand);
  sg_history_free(&c->hist);
  free(c);
}

int sg_controller_restore_kernel(sg_controller *c, const sg_ctl_restored *k,
                                 sg_err *err) {
  if (c->state != SG_CTL_NEW)
    return sg_err_set(err, SG_ESTATE, "controller: restore after start");
  if (k->source == NULL || k->source_len == 0)
    return sg_err_set(err, SG_EINVAL, "controller: restored kernel without source");
  sg_kernel *h = sg_history_add(&c->hist, k->iteration, k->origin, k->gen,
                                k->prefix_len, SG_EXTRACT_FOUND, k->source,
                                k->source_len);
  uint64_t id = h->id;
  cand_set(c, id, CAND_DONE);
  c->st.candidates++;
  if (k->validated) {
    sg_history_validated(&c->hist, id, k->validate_status, k->validate_speedup,
                         k->validate_message);
    if (k->validate_status == SG_EVAL_OK) {
      c->st.validated_ok++;
      note_valid(c, h); /* the gate and the cutoff resume where they were */
    }
  }
  if (k->profiled) {
    sg_history_profiled(&c->hist, id, k->profile_speedup, k->profile_text);
    c->st.profiled++;
  } else if (k->accepted_at_validation && k->validated &&
             k->validate_status == SG_EVAL_OK &&
             isfinite(k->validate_speedup)) {
    /* As it was live (accept_at_validation): its validation speedup is its
     * measurement, in the criterion's history and the best kernel's rank. */
    sg_history_profiled(&c->hist, id, k->validate_speedup, NULL);
    c->st.validation_accepts++;
  }
  return 0;
}

int sg_controller_restore_progress(sg_controller *c, uint32_t iterations_ended,
                                   int64_t wall_spent_us,
                                   const sg_usage *tokens, sg_err *err) {
  if (c->state != SG_CTL_NEW)
    return sg_err_set(err, SG_ESTATE, "controller: restore after start");
  c->iteration = iterations_ended;
  c->st.iterations = iterations_ended;
  c->hist.iterations_done = iterations_ended;
  c->restored_wall_us = wall_spent_us > 0 ? wall_spent_us : 0;
  if (tokens) {
    c->st.prompt_tokens = tokens->prompt_tokens;
    c->st.completion_tokens = tokens->completion_tokens;
    c->st.cached_tokens = tokens->cached_tokens;
    c->tokens = tokens->prompt_tokens + tokens->completion_tokens;
  }
  return 0;
}

int sg_controller_start(sg_controller *c, int64_t now_us, sg_ctl_actions *out,
                        sg_err *err) {
  if (c->state != SG_CTL_NEW)
    return sg_err_set(err, SG_ESTATE, "controller: already started");
  /* No budget at all is allowed: the runtime stops such a workflow. A
   * restored workflow's wall budget counts the time it already spent. */
  c->st.start_us = now_us - c->restored_wall_us;
  sg_ctl_reason spent = budget_spent(c, now_us, true);
  if (spent != SG_REASON__COUNT) {
    workflow_done(c, now_us, spent, out);
    return 0;
  }
  return start_iteration(c, now_us, out, err);
}

int sg_controller_event(sg_controller *c, const sg_ctl_event *ev,
                        sg_ctl_actions *out, sg_err *err) {
  if (c->state == SG_CTL_NEW)
    return sg_err_set(err, SG_ESTATE, "controller: event before start");
  if (c->state == SG_CTL_DONE)
    return 0;
  int rc = 0;
  switch (ev->type) {
  case SG_CEV_GEN_STARTED:
    break;
  case SG_CEV_GEN_CHUNK:
    on_chunk(c, ev, out);
    break;
  case SG_CEV_GEN_FINISHED:
    rc = on_finished(c, ev, out, err);
    break;
  case SG_CEV_GEN_FAILED:
    rc = on_failed(c, ev, out, err);
    break;
  case SG_CEV_EVAL_DONE:
    rc = on_eval(c, ev, out, err);
    break;
  case SG_CEV_TICK:
    rc = on_tick(c, ev, out, err);
    break;
  default:
    return sg_err_set(err, SG_EINVAL, "controller: unknown event type %d",
                      (int)ev->type);
  }
  if (rc < 0)
    return rc;
  if (c->pending_accept != 0 && (rc = settle_pending(c, ev->now_us, out, err)) < 0)
    return rc;
  return check_budget(c, ev->now_us, out, err);
}

void sg_controller_set_capacity(sg_controller *c,
                                const sg_sched_capacity *cap) {
  c->cap = *cap;
}

sg_ctl_state sg_controller_state(const sg_controller *c) { return c->state; }

uint32_t sg_controller_iteration(const sg_controller *c) {
  return c->iteration;
}

const sg_history *sg_controller_history(const sg_controller *c) {
  return &c->hist;
}

void sg_controller_stats(const sg_controller *c, sg_ctl_stats *st) {
  *st = c->st;
}
