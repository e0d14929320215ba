/* sg_pol_cutoff.c: the cutoff policy and its detach (sg_ctl_opts.cutoff,
 * cutoff_detach; the interface is sg_policy.h).
 *
 * Cutoff: once SG_CTL_GATE_WINDOW forks of the workflow have validated, an
 * iteration whose reasoning has passed cutoff x the longest of their
 * prefixes, with no kernel of its own valid and nothing in flight, ends
 * (reason cutoff) at a tick: its trace is unlikely to lead a fork anywhere.
 * Detach: the main generation a cutoff ends is not cancelled but finishes
 * detached (one at a time; not in the budget's last iteration), and its
 * answer's kernel joins the iteration running when it arrives.
 */
#include "core/sg_policy.h"

#include <assert.h>

static int cutoff_check(const sg_ctl_opts *o, sg_err *err) {
  if (!(o->cutoff >= 0 && o->cutoff <= 100))
    return sg_err_set(err, SG_EINVAL, "controller: cutoff must be in 0..100, got %g",
                      o->cutoff);
  if (o->cutoff_detach && o->cutoff <= 0)
    return sg_err_set(err, SG_EINVAL, "controller: cutoff_detach needs a cutoff "
                      "(cutoff > 0)");
  return 0;
}

/* The detached main generation with this id, if it still generates. */
static gen *find_detached(sg_controller *c, uint64_t id) {
  return c->det.live && c->det.id == id ? &c->det : NULL;
}

static void cutoff_stop(sg_controller *c, sg_ctl_actions *out) {
  if (c->det.live && out != NULL) {
    sg_ctl_action *a = ctl_emit(c, out, SG_CACT_CANCEL_GEN);
    a->u.cancel.gen = c->det.id;
  }
  ctl_gen_free_bufs(&c->det);
}

/* Main generation g of the ending iteration goes on detached: its answer
 * is all that is kept (no reasoning, no scanner, no forks from it). A cut
 * main goes on only if an iteration follows to take its answer. */
static bool cutoff_keep_main(sg_controller *c, gen *g, sg_ctl_reason reason) {
  if (reason != SG_REASON_CUTOFF || !c->o.cutoff_detach || c->det.live ||
      g->kind != SG_GEN_MAIN ||
      (c->o.max_iterations > 0 && c->st.iterations + 1 >= c->o.max_iterations))
    return false;
  assert(g->live);
  sg_buf_free(&g->reasoning);
  sg_scanner_free(g->scanner);
  g->scanner = NULL;
  c->det = *g; /* the answer's buffer moves; det is empty when not live */
  sg_buf_init(&g->content, c->o.max_text_bytes);
  g->live = false;
  c->st.detached++;
  return true;
}

static void cutoff_iteration_ended(sg_controller *c) { c->iter_valid = false; }

/* A detached main's answer: its kernel joins the iteration running now,
 * as a main generation's (the scheduler aborts it at this iteration's end
 * if it is still being evaluated then, like any of the iteration's). */
static int cutoff_finished(sg_controller *c, const sg_ctl_event *ev,
                           sg_ctl_actions *out, sg_err *err) {
  (void)err;
  gen *g = find_detached(c, ev->u.finished.gen);
  if (g == NULL)
    return 0;
  g->live = false;
  ctl_take_answer(c, g, ev, out);
  c->st.detached_answers++;
  ctl_gen_free_bufs(&c->det);
  return 1;
}

static int cutoff_failed(sg_controller *c, const sg_ctl_event *ev,
                         sg_ctl_actions *out, sg_err *err) {
  (void)out;
  (void)err;
  if (find_detached(c, ev->u.failed.gen) == NULL)
    return 0;
  ctl_count_usage(c, &c->det, &ev->u.failed.usage);
  ctl_gen_free_bufs(&c->det);
  return 1;
}

static int cutoff_validated(sg_controller *c, sg_kernel *k, double speedup,
                            int64_t now_us, sg_ctl_actions *out, sg_err *err) {
  (void)k;
  (void)speedup;
  (void)now_us;
  (void)out;
  (void)err;
  c->iter_valid = true;
  return 0;
}

/* True when the current iteration should end now. */
static bool past_cutoff(const sg_controller *c) {
  if (c->o.cutoff <= 0 || c->nvalid_prefix < SG_CTL_GATE_WINDOW || c->iter_valid ||
      c->state != SG_CTL_GENERATING)
    return false;
  uint64_t longest = sg_policy_valid_longest(c);
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

const sg_ctl_policy sg_pol_cutoff = {
    .name = "cutoff",
    .check = cutoff_check,
    .stop = cutoff_stop,
    .keep_main = cutoff_keep_main,
    .iteration_ended = cutoff_iteration_ended,
    .find_gen = find_detached,
    .finished = cutoff_finished,
    .failed = cutoff_failed,
    .validated = cutoff_validated,
    .end_now = past_cutoff,
};
