/* sg_controller.c: the per-workflow controller (Algorithm 1 of the SpecGen
 * paper) as a pure state machine; its options, lifecycle and resuming are
 * in sg_controller_api.c, its state in sg_controller_priv.h.
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
 * The policies beyond the paper (the fork gate, the cutoff and its detach,
 * deciding at validation and among siblings, the next main started ahead)
 * are not here: each is a file of its own that the algorithm calls through
 * the hooks of sg_policy.h, at the points marked "policy".
 *
 * Never: fork twice from the same prefix length, submit a candidate twice or
 * for an ended iteration, act on an event of a cancelled generation.
 */
#include "core/sg_controller_priv.h"
#include "core/sg_policy.h"
#include "core/sg_tidy.h"

#include "common/sg_alloc.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

void ctl_set_state(sg_controller *c, sg_ctl_state to) {
  assert(transition_ok(c->state, to));
  c->state = to;
}

/* ---- helpers -------------------------------------------------------------- */

sg_ctl_action *ctl_emit(sg_controller *c, sg_ctl_actions *out,
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
 * sg_pol_ahead.c), and free_gens empties the array at each iteration's
 * end, so a fork's id sits at index nmain + id - gens[nmain].id. A fork
 * decision starts K generations, K the pool's free capacity (hundreds in a
 * pool of a thousand devices), and every one of their events looks its
 * generation up: a scan here made an iteration cost O(K^2). The mains (one,
 * or a plan's few) are scanned: an adopted main's id is older. */
gen *ctl_find_gen(sg_controller *c, uint64_t id) {
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

void ctl_gen_stopped(sg_controller *c, gen *g) {
  assert(g->live);
  g->live = false;
  if (g->kind == SG_GEN_SPEC && !g->answer) {
    assert(c->nlive_forks > 0);
    c->nlive_forks--;
    if (c->o.fork_budget != NULL) {
      assert(c->o.fork_budget->used > 0);
      c->o.fork_budget->used--;
    }
  }
}

gen *ctl_append_gen(sg_controller *c) {
  if (c->ngens == c->capgens) {
    c->capgens = c->capgens ? c->capgens * 2 : 8;
    c->gens = sg_realloc(c->gens, c->capgens * sizeof *c->gens);
  }
  return &c->gens[c->ngens++];
}

void ctl_gen_init_bufs(sg_controller *c, gen *g) {
  sg_buf_init(&g->content, c->o.max_text_bytes);
  if (g->kind == SG_GEN_MAIN) {
    sg_buf_init(&g->reasoning, c->o.max_text_bytes);
    g->scanner = sg_scanner_new(&c->o.scanner);
  }
}

void ctl_gen_free_bufs(gen *g) {
  sg_buf_free(&g->content);
  sg_buf_free(&g->reasoning);
  sg_scanner_free(g->scanner);
  memset(g, 0, sizeof *g);
}

static gen *new_gen(sg_controller *c, sg_gen_kind kind, size_t prompt_index) {
  gen *g = ctl_append_gen(c);
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
  ctl_gen_init_bufs(c, g);
  return g;
}

void ctl_free_gens(sg_controller *c) {
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

cand_state ctl_cand_get(const sg_controller *c, uint64_t id) {
  if (id == 0 || id > c->hist.n)
    return CAND_NONE;
  return (cand_state)c->cand[id - 1];
}

static bool cand_evaluating(cand_state st) {
  return st == CAND_VALIDATING || st == CAND_PROFILING;
}

void ctl_cand_set(sg_controller *c, uint64_t id, cand_state st) {
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

/* Whether generation g can no longer change the iteration: it failed or was
 * cancelled, or it finished and its candidate (if any) has been evaluated. */
static bool gen_resolved(const sg_controller *c, const gen *g) {
  if (g->live)
    return false;
  if (g->failed || g->candidate == 0)
    return true;
  cand_state cs = ctl_cand_get(c, g->candidate);
  return cs != CAND_VALIDATING && cs != CAND_PROFILING;
}

/* A main generation is resolved once it is (gen_resolved), and so is its
 * answer at the length cap, which stands in for it. */
static bool main_resolved(sg_controller *c, const gen *g) {
  assert(g->kind == SG_GEN_MAIN);
  if (!gen_resolved(c, g))
    return false;
  const gen *a = g->answer_gen ? ctl_find_gen(c, g->answer_gen) : NULL;
  return a == NULL || gen_resolved(c, a);
}

/* ---- iterations ------------------------------------------------------------ */

void ctl_workflow_done(sg_controller *c, int64_t now_us, sg_ctl_reason reason,
                       sg_ctl_actions *out) {
  ctl_set_state(c, SG_CTL_DONE);
  ctl_free_gens(c);
  sg_policy_stop(c, out); /* policy: what it still runs is cancelled */
  c->st.end_us = now_us;
  sg_ctl_action *a = ctl_emit(c, out, SG_CACT_WORKFLOW_DONE);
  a->u.done.reason = reason;
  a->u.done.best_kernel = c->hist.best_id;
}

sg_ctl_reason ctl_budget_spent(const sg_controller *c, int64_t now_us,
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

/* Step 1: the search's plan, one main generation per prompt. */
int ctl_start_iteration(sg_controller *c, int64_t now_us, sg_ctl_actions *out,
                        sg_err *err) {
  assert(c->ngens == 0);
  int rc = sg_policy_start_iteration(c, now_us, out, err); /* policy */
  if (rc != 0)
    return rc < 0 ? rc : 0;
  rc = sg_search_next(c->o.search, &c->hist, c->iteration, &c->plan, err);
  if (rc < 0) {
    ctl_workflow_done(c, now_us, SG_REASON_SEARCH_FAILED, out);
    return rc;
  }
  ctl_set_state(c, SG_CTL_GENERATING);
  c->iter_first_kernel = c->hist.n;
  c->iter_forks = 0;
  for (size_t i = 0; i < c->plan.n; i++) {
    ctl_emit_start(c, out, new_gen(c, SG_GEN_MAIN, i));
  }
  return 0;
}

/* Ends the iteration: cancels what still generates, drops what is still
 * being evaluated (the scheduler aborts it at the boundary END_ITERATION
 * announces), then starts the next iteration or ends the workflow. */
int ctl_end_iteration(sg_controller *c, int64_t now_us, sg_ctl_reason reason,
                      sg_ctl_actions *out, sg_err *err) {
  assert(c->state == SG_CTL_GENERATING || c->state == SG_CTL_FALLBACK);
  bool main_running = false;
  for (size_t i = 0; i < c->ngens; i++) {
    gen *g = &c->gens[i];
    if (!g->live)
      continue;
    if (sg_policy_keep_main(c, g, reason)) /* policy: it goes on */
      continue;
    main_running |= g->kind == SG_GEN_MAIN;
    ctl_gen_stopped(c, g);
    sg_ctl_action *a = ctl_emit(c, out, SG_CACT_CANCEL_GEN);
    a->u.cancel.gen = g->id;
  }
  uint64_t best = 0;
  for (size_t i = c->iter_first_kernel; i < c->hist.n; i++) {
    sg_kernel *k = &c->hist.v[i];
    cand_state cs = ctl_cand_get(c, k->id);
    if (cs == CAND_VALIDATING || cs == CAND_PROFILING) {
      ctl_cand_set(c, k->id, CAND_DROPPED);
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
  sg_ctl_action *a = ctl_emit(c, out, SG_CACT_END_ITERATION);
  a->u.end.reason = reason;
  a->u.end.best_kernel = best;
  c->st.iterations++;
  c->hist.iterations_done = c->st.iterations;
  if (reason == SG_REASON_EARLY) {
    c->st.criterion_accepts++;
    if (main_running) /* the paper's metric: reasoning cut short */
      c->st.early_terminations++;
  }
  ctl_free_gens(c);
  sg_policy_iteration_ended(c);
  c->iteration++;
  sg_ctl_reason spent = reason >= SG_REASON_BUDGET_ITERATIONS &&
                                reason <= SG_REASON_BUDGET_TOKENS
                            ? reason
                            : ctl_budget_spent(c, now_us, true);
  if (spent != SG_REASON__COUNT) {
    ctl_workflow_done(c, now_us, spent, out);
    return 0;
  }
  return ctl_start_iteration(c, now_us, out, err);
}

/* Fallback (Algorithm 1, step 6): every main generation resolved. */
int ctl_maybe_fallback(sg_controller *c, int64_t now_us, sg_ctl_actions *out,
                       sg_err *err) {
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
    return ctl_end_iteration(c, now_us, SG_REASON_FALLBACK, out, err);
  return 0;
}

static int check_budget(sg_controller *c, int64_t now_us, sg_ctl_actions *out,
                        sg_err *err) {
  if (c->state != SG_CTL_GENERATING && c->state != SG_CTL_FALLBACK)
    return 0;
  sg_ctl_reason spent = ctl_budget_spent(c, now_us, false);
  if (spent == SG_REASON__COUNT)
    return 0;
  return ctl_end_iteration(c, now_us, spent, out, err);
}

/* ---- forks (Algorithm 1, step 3) ------------------------------------------------ */

void ctl_fork_from(sg_controller *c, gen *m, uint64_t prefix_len,
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
  if (!sg_policy_may_fork(c, m, prefix_len)) /* policy: the fork gate */
    return;
  int fv = c->cap.free_validate, fp = c->cap.free_profile;
  int k = fv < fp ? fv : fp;
  if (k < 1)
    k = 1;
  int room = c->o.max_forks_per_iteration - c->iter_forks;
  if (k > room)
    k = room;
  room = c->o.max_live_forks - c->nlive_forks;
  if (k > room)
    k = room;
  sg_fork_budget *fb = c->o.fork_budget;
  if (fb != NULL && k > fb->cap - fb->used) {
    int left = fb->cap - fb->used > 0 ? fb->cap - fb->used : 0;
    /* the server is full: what it keeps from starting is counted once per
     * main and reasoning growth an idle fork needs (ticks retry often) */
    if (m->last_withheld == 0 ||
        (prefix_len > m->last_withheld &&
         prefix_len >= m->last_withheld + c->o.idle_min_new_bytes)) {
      fb->withheld += (uint64_t)(k - left);
      m->last_withheld = prefix_len;
    }
    k = left;
  }
  if (k < 1)
    return;
  m->last_fork_prefix = prefix_len;
  ctl_emit_decision(c, out, reason, now_us, m, prefix_len, k, trigger);
  uint64_t parent = m->id;
  size_t prompt_index = m->prompt_index;
  size_t mi = (size_t)(m - c->gens); /* new_gen may move gens[] */
  for (int i = 0; i < k; i++) {
    gen *g = new_gen(c, SG_GEN_SPEC, prompt_index);
    g->parent = parent;
    g->prefix_len = prefix_len;
    ctl_emit_start_spec(c, out, g, &c->gens[mi]);
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

void ctl_count_usage(sg_controller *c, gen *g, const sg_usage *u) {
  c->tokens -= g->provisional;
  g->provisional = 0;
  c->tokens += u->prompt_tokens + u->completion_tokens;
  c->st.prompt_tokens += u->prompt_tokens;
  c->st.completion_tokens += u->completion_tokens;
  c->st.cached_tokens += u->cached_tokens;
}

/* Step 2: the stream kept and scanned; a trigger forks. */
static void on_chunk(sg_controller *c, const sg_ctl_event *ev,
                     sg_ctl_actions *out) {
  gen *g = sg_policy_find_gen(c, ev->u.chunk.gen); /* policy: its own */
  if (g == NULL)
    g = ctl_find_gen(c, ev->u.chunk.gen);
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
  if (ts.any && !sg_policy_trigger(c, g, ts.cls)) /* policy: not now */
    ctl_fork_from(c, g, ts.offset, SG_REASON_FORK_TRIGGER, ts.cls, ev->now_us,
                  out);
}

/* Step 4: a generation ended with text, its candidate is extracted and
 * submitted for validation. */
void ctl_take_candidate(sg_controller *c, gen *g, const char *text, size_t len,
                        sg_ctl_actions *out) {
  sg_extracted ex;
  sg_extract_candidate(text, len, c->o.language, c->o.entry, &ex);
  const char *src = ex.outcome == SG_EXTRACT_FOUND ? text + ex.start : NULL;
  size_t srclen = ex.outcome == SG_EXTRACT_FOUND ? ex.len : 0;
  size_t fixed_len = 0;
  int tidied = 0;
  char *fixed = src ? sg_tidy_candidate(src, srclen, c->o.language, c->o.entry,
                                         &fixed_len, &tidied)
                    : NULL;
  sg_kernel *k = sg_history_add(&c->hist, c->iteration, g->kind, g->id,
                                g->prefix_len, ex.outcome, fixed ? fixed : src,
                                fixed ? fixed_len : srclen);
  free(fixed);
  k->answer = g->answer;
  g->candidate = k->id;
  c->st.candidates++;
  if (ex.outcome != SG_EXTRACT_FOUND) {
    /* the reason becomes the feedback the search shows */
    k->validate_message =
        ex.reason ? sg_strndup(ex.reason, strlen(ex.reason)) : NULL;
    ctl_cand_set(c, k->id, CAND_NONE);
    return;
  }
  ctl_cand_set(c, k->id, CAND_VALIDATING);
  sg_ctl_action *a = ctl_emit(c, out, SG_CACT_SUBMIT_EVAL);
  a->u.submit.candidate = k->id;
  a->u.submit.phase = SG_PHASE_VALIDATE;
  a->u.submit.source = k->source;
  a->u.submit.source_len = k->source_len;
  sg_policy_submitted(c, out);
}

void ctl_take_answer(sg_controller *c, gen *g, const sg_ctl_event *ev,
                     sg_ctl_actions *out) {
  ctl_count_usage(c, g, &ev->u.finished.usage);
  const char *text = ev->u.finished.text;
  size_t len = ev->u.finished.len;
  if (text == NULL) {
    text = sg_buf_str(&g->content);
    len = g->content.len;
  }
  ctl_take_candidate(c, g, text, len, out);
}

static int on_finished(sg_controller *c, const sg_ctl_event *ev,
                       sg_ctl_actions *out, sg_err *err) {
  int rc = sg_policy_finished(c, ev, out, err); /* policy: its own */
  if (rc != 0)
    return rc < 0 ? rc : 0;
  gen *g = ctl_find_gen(c, ev->u.finished.gen);
  if (g == NULL || !g->live)
    return 0;
  ctl_gen_stopped(c, g);
  ctl_take_answer(c, g, ev, out);
  /* A policy told of the submission (generate ahead) may append to gens[]
   * and move it: find the generation again. */
  g = ctl_find_gen(c, ev->u.finished.gen);
  if (g != NULL)
    ctl_answer_at_cap(c, g, ev, out);
  return ctl_maybe_fallback(c, ev->now_us, out, err);
}

static int on_failed(sg_controller *c, const sg_ctl_event *ev,
                     sg_ctl_actions *out, sg_err *err) {
  int rc = sg_policy_failed(c, ev, out, err); /* policy: its own */
  if (rc != 0)
    return rc < 0 ? rc : 0;
  gen *g = ctl_find_gen(c, ev->u.failed.gen);
  if (g == NULL || !g->live)
    return 0;
  ctl_count_usage(c, g, &ev->u.failed.usage); /* the cut try's tokens too */
  if (ev->u.failed.endpoint && g->kind == SG_GEN_MAIN &&
      c->state == SG_CTL_GENERATING &&
      ctl_budget_spent(c, ev->now_us, false) == SG_REASON__COUNT) {
    ctl_restart_main(c, g, out);
    return 0;
  }
  ctl_gen_stopped(c, g);
  g->failed = true;
  return ctl_maybe_fallback(c, ev->now_us, out, err);
}

int ctl_accept_early(sg_controller *c, const sg_kernel *k, double speedup,
                     const sg_termination_history *view, int64_t now_us,
                     sg_ctl_actions *out, sg_err *err) {
  gen m = {.id = k->gen};
  sg_ctl_action *d =
      ctl_emit_decision(c, out, SG_REASON_EARLY, now_us, &m, k->prefix_len, 0, -1);
  d->u.decision.candidate = k->id;
  d->u.decision.speedup = speedup;
  d->u.decision.threshold_mean = view->mean;
  d->u.decision.threshold_best = view->best;
  return ctl_end_iteration(c, now_us, SG_REASON_EARLY, out, err);
}

/* Steps 4 and 5: a valid kernel goes to profiling; a profiled speedup the
 * criterion accepts ends the iteration. */
static int on_eval(sg_controller *c, const sg_ctl_event *ev,
                   sg_ctl_actions *out, sg_err *err) {
  uint64_t id = ev->u.eval.candidate;
  sg_phase phase = ev->u.eval.phase;
  sg_eval_status status = ev->u.eval.status;
  if ((unsigned)phase >= SG_PHASE__COUNT || (unsigned)status >= SG_EVAL__COUNT)
    return sg_err_set(err, SG_EINVAL, "controller: eval event with phase %d "
                      "status %d", (int)phase, (int)status);
  cand_state cs = ctl_cand_get(c, id);
  cand_state want =
      phase == SG_PHASE_VALIDATE ? CAND_VALIDATING : CAND_PROFILING;
  if (cs != want)
    return 0; /* dropped, unknown, or a duplicate result: ignore */
  sg_kernel *k = sg_history_get(&c->hist, id);
  if (phase == SG_PHASE_VALIDATE) {
    sg_history_validated(&c->hist, id, status, ev->u.eval.speedup,
                         ev->u.eval.message);
    if (status != SG_EVAL_OK) {
      ctl_cand_set(c, id, CAND_DONE);
      return ctl_maybe_fallback(c, ev->now_us, out, err);
    }
    c->st.validated_ok++;
    sg_policy_note_valid(c, k);
    /* policy: deciding at validation, alone or among siblings */
    int rc = sg_policy_validated(c, k, ev->u.eval.speedup, ev->now_us, out, err);
    if (rc != 0)
      return rc < 0 ? rc : 0;
    ctl_cand_set(c, id, CAND_PROFILING);
    sg_ctl_action *a = ctl_emit(c, out, SG_CACT_SUBMIT_EVAL);
    a->u.submit.candidate = id;
    a->u.submit.phase = SG_PHASE_PROFILE;
    a->u.submit.source = k->source;
    a->u.submit.source_len = k->source_len;
    return 0;
  }
  ctl_cand_set(c, id, CAND_DONE);
  if (status != SG_EVAL_OK)
    return ctl_maybe_fallback(c, ev->now_us, out, err);
  /* Algorithm 1, step 5: ask the criterion against the history as it was,
   * then add this speedup to it. */
  double speedup = isnan(ev->u.eval.speedup) ? k->speedup : ev->u.eval.speedup;
  sg_termination_history view = sg_speedup_history_view(&c->hist.speedups);
  bool stop = sg_termination_decide(c->o.termination, &view, speedup);
  sg_history_profiled(&c->hist, id, speedup, ev->u.eval.profile_text);
  c->st.profiled++;
  if (!stop)
    return ctl_maybe_fallback(c, ev->now_us, out, err);
  return ctl_accept_early(c, k, speedup, &view, ev->now_us, out, err);
}

/* Step 3 on idle devices: fork from each main generation whose reasoning
 * grew enough since its last fork. */
static void on_tick_forks(sg_controller *c, const sg_ctl_event *ev,
                          sg_ctl_actions *out) {
  if (!c->o.fork_on_idle || c->state != SG_CTL_GENERATING ||
      c->cap.free_validate < 1)
    return;
  /* Index loop: a fork appends to gens. */
  size_t n = c->nmain; /* the mains: gens[0..nmain) */
  for (size_t i = 0; i < n; i++) {
    gen *m = &c->gens[i];
    assert(m->kind == SG_GEN_MAIN);
    if (!m->live)
      continue;
    uint64_t len = m->reasoning.len;
    if (len >= m->last_fork_prefix + c->o.idle_min_new_bytes && len > 0)
      ctl_fork_from(c, m, len, SG_REASON_FORK_IDLE, -1, ev->now_us, out);
  }
}

static int on_tick(sg_controller *c, const sg_ctl_event *ev,
                   sg_ctl_actions *out, sg_err *err) {
  c->cap = ev->u.tick.capacity;
  if (sg_policy_end_now(c)) /* policy: the cutoff */
    return ctl_end_iteration(c, ev->now_us, SG_REASON_CUTOFF, out, err);
  on_tick_forks(c, ev, out);
  return 0;
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
  if ((rc = sg_policy_after_event(c, ev->now_us, out, err)) < 0) /* policy */
    return rc;
  return check_budget(c, ev->now_us, out, err);
}
