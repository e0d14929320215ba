/* sg_pol_ahead.c: the next_ahead policy (sg_ctl_opts.next_ahead; the
 * interface is sg_policy.h).
 *
 * With the refine search, once a candidate of the iteration goes to
 * validation and a best kernel exists, the next iteration's main
 * generation starts at once on the prompt the search gives now. It only
 * generates (no forks, its triggers remembered) until the iteration ends;
 * then, if the best kernel is still the one it was asked to refine, it
 * becomes the next iteration's main with the reasoning it has, else it is
 * cancelled and the next iteration starts as usual. It never starts in
 * the budget's last iteration, and one at a time.
 */
#include "core/sg_policy.h"

#include <string.h>

static int ahead_check(const sg_ctl_opts *o, sg_err *err) {
  if (o->next_ahead && strcmp(sg_search_name(o->search), "refine") != 0)
    return sg_err_set(err, SG_EINVAL, "controller: next_ahead needs the refine search "
                      "(its next prompt refines the best kernel), not %s",
                      sg_search_name(o->search));
  return 0;
}

static void ahead_init(sg_controller *c) { c->ahead_trigger = -1; }

static void ahead_free(sg_controller *c) {
  ctl_gen_free_bufs(&c->ahead);
  c->ahead_trigger = -1;
}

/* The main started ahead is not needed: cancelled if it still generates. */
static void ahead_drop(sg_controller *c, sg_ctl_actions *out) {
  if (c->ahead.id == 0)
    return;
  if (c->ahead.live && out != NULL) {
    sg_ctl_action *a = ctl_emit(c, out, SG_CACT_CANCEL_GEN);
    a->u.cancel.gen = c->ahead.id;
    a->u.cancel.ahead = true;
  }
  ahead_free(c);
}

/* The main started ahead becomes this iteration's main, with the reasoning
 * (or the answer) it has. */
static int adopt_ahead(sg_controller *c, int64_t now_us, sg_ctl_actions *out,
                       sg_err *err) {
  c->plan.n = 1;
  c->plan.prompts[0] = c->ahead_prompt;
  ctl_set_state(c, SG_CTL_GENERATING);
  c->iter_first_kernel = c->hist.n;
  c->iter_forks = 0;
  gen *m = ctl_append_gen(c);
  *m = c->ahead; /* its buffers move */
  c->nmain = 1;
  int trigger = c->ahead_trigger;
  memset(&c->ahead, 0, sizeof c->ahead);
  c->ahead_trigger = -1;
  c->st.ahead_adopted++;
  if (!m->live) { /* it finished while ahead: its answer is the candidate */
    ctl_take_candidate(c, m, sg_buf_str(&m->content), m->content.len, out);
    return ctl_maybe_fallback(c, now_us, out, err);
  }
  if (trigger >= 0) /* the text it wrote ahead holds a trigger: fork now */
    ctl_fork_from(c, m, m->reasoning.len, SG_REASON_FORK_TRIGGER, trigger,
                  now_us, out);
  return 0;
}

/* The items of the prompt the search gives now that the prompt the main
 * started ahead on lacks: the feedback that came after it started (with
 * refine, the newest failures), which its reasoning never read. */
static size_t ahead_missing(sg_controller *c) {
  sg_search_plan plan;
  sg_err e;
  sg_err_clear(&e);
  if (sg_search_next(c->o.search, &c->hist, c->iteration, &plan, &e) < 0 || plan.n < 1)
    return 0;
  const sg_prompt *now = &plan.prompts[0], *was = &c->ahead_prompt;
  size_t missing = 0;
  for (size_t i = 0; i < now->n_items; i++) {
    bool found = false;
    for (size_t j = 0; j < was->n_items && !found; j++)
      found = now->items[i].kind == was->items[j].kind &&
              now->items[i].kernel == was->items[j].kernel;
    missing += !found;
  }
  return missing;
}

static int ahead_start_iteration(sg_controller *c, int64_t now_us,
                                 sg_ctl_actions *out, sg_err *err) {
  if (c->ahead.id == 0)
    return 0;
  if (c->hist.best_id == c->ahead_base) {
    size_t missing = ahead_missing(c);
    c->st.ahead_stale += missing > 0;
    c->st.ahead_stale_items += missing;
    int rc = adopt_ahead(c, now_us, out, err);
    return rc < 0 ? rc : 1;
  }
  ahead_drop(c, out); /* asked to refine a kernel that is no longer the best */
  return 0;
}

/* A candidate of this iteration went to validation, so the iteration may
 * end soon; the next one's main starts now on the prompt the search gives
 * for it now (with refine: the best kernel so far). Its id is one of this
 * iteration's: a hole in gens[] (dead, no parent: no fork's sibling) keeps
 * the forks' ids consecutive for ctl_find_gen. */
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
  ctl_gen_init_bufs(c, g);
  gen *hole = ctl_append_gen(c);
  memset(hole, 0, sizeof *hole);
  hole->id = g->id;
  hole->kind = SG_GEN_SPEC;
  sg_ctl_action *a = ctl_emit(c, out, SG_CACT_START_GEN);
  a->iteration = c->iteration + 1;
  a->u.start.gen = g->id;
  a->u.start.kind = SG_GEN_MAIN;
  a->u.start.thinking = true;
  a->u.start.prompt_index = 0;
  a->u.start.prompt = &c->ahead_prompt;
  c->st.ahead_started++;
}

/* The main started ahead with this id, if any (live or finished). */
static gen *ahead_find(sg_controller *c, uint64_t id) {
  return c->ahead.id != 0 && c->ahead.id == id ? &c->ahead : NULL;
}

/* No forks before its iteration: the trigger is remembered. */
static bool ahead_trigger(sg_controller *c, gen *g, int cls) {
  if (g != &c->ahead)
    return false;
  c->ahead_trigger = cls;
  return true;
}

/* Its answer waits for its iteration. */
static int ahead_finished(sg_controller *c, const sg_ctl_event *ev,
                          sg_ctl_actions *out, sg_err *err) {
  (void)out;
  (void)err;
  gen *g = ahead_find(c, ev->u.finished.gen);
  if (g == NULL)
    return 0;
  if (!g->live)
    return 1;
  g->live = false;
  ctl_count_usage(c, g, &ev->u.finished.usage);
  if (ev->u.finished.text != NULL) {
    sg_buf_reset(&g->content);
    sg_buf_append(&g->content, ev->u.finished.text, ev->u.finished.len);
  }
  return 1;
}

/* Gone: the next iteration starts as usual. */
static int ahead_failed(sg_controller *c, const sg_ctl_event *ev,
                        sg_ctl_actions *out, sg_err *err) {
  (void)out;
  (void)err;
  gen *g = ahead_find(c, ev->u.failed.gen);
  if (g == NULL)
    return 0;
  if (g->live) {
    ctl_count_usage(c, g, &ev->u.failed.usage);
    ahead_free(c);
  }
  return 1;
}

const sg_ctl_policy sg_pol_ahead = {
    .name = "next_ahead",
    .check = ahead_check,
    .init = ahead_init,
    .stop = ahead_drop,
    .start_iteration = ahead_start_iteration,
    .find_gen = ahead_find,
    .trigger = ahead_trigger,
    .finished = ahead_finished,
    .failed = ahead_failed,
    .submitted = start_ahead,
};
