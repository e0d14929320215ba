/* sg_pol_siblings.c: deciding among a fork's siblings (sg_ctl_opts.
 * decide_with_siblings, with decide_at_validation; the interface is
 * sg_policy.h).
 *
 * A fork's kernel accepted at validation waits until its sibling forks
 * (same main, same prefix) have given their kernels and validated them;
 * each that validates with a speedup joins the history at it, unprofiled;
 * then the fastest of them at validation is accepted. Their tokens are
 * spent already, and one draw is a poor pick of several.
 */
#include "core/sg_policy.h"

#include <math.h>

static int siblings_check(const sg_ctl_opts *o, sg_err *err) {
  if (o->decide_with_siblings && o->decide_at_validation <= 0)
    return sg_err_set(err, SG_EINVAL, "controller: decide_with_siblings needs "
                      "decide_at_validation");
  return 0;
}

/* Forks started together, from one main generation at one prefix. */
static bool siblings(const gen *a, const gen *b) {
  return a->kind == SG_GEN_SPEC && b->kind == SG_GEN_SPEC && !a->answer && !b->answer &&
         a->parent == b->parent &&
         a->prefix_len == b->prefix_len;
}

/* The fork that wrote kernel k, if it is one of this iteration's. */
static const gen *fork_of(sg_controller *c, const sg_kernel *k) {
  const gen *g = ctl_find_gen(c, k->gen);
  return g != NULL && g->kind == SG_GEN_SPEC && !g->answer ? g : NULL;
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
        (g->live || (g->candidate != 0 && ctl_cand_get(c, g->candidate) == CAND_VALIDATING)))
      return true;
  }
  return false;
}

bool sg_pol_siblings_waiting(const sg_controller *c) {
  return c->pending_accept != 0;
}

bool sg_pol_siblings_wait(sg_controller *c, const sg_kernel *k) {
  if (!c->o.decide_with_siblings || !sibling_pending(c, k))
    return false;
  c->pending_accept = k->id;
  c->st.sibling_waits++;
  return true;
}

/* Once no sibling of the waiting kernel's fork is pending, the fastest of
 * them at validation is accepted. */
static int settle_pending(sg_controller *c, int64_t now_us, sg_ctl_actions *out,
                          sg_err *err) {
  if (c->pending_accept == 0)
    return 0;
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
  return ctl_accept_early(c, best, best->speedup, &view, now_us, out, err);
}

/* A sibling of the waiting kernel validated with a speedup: it joins the
 * history at that speedup, unprofiled, as the waiting one did (settled
 * after the event). */
static int siblings_validated(sg_controller *c, sg_kernel *k, double speedup,
                              int64_t now_us, sg_ctl_actions *out, sg_err *err) {
  (void)now_us;
  (void)out;
  (void)err;
  if (c->pending_accept == 0)
    return 0;
  sg_kernel *w = sg_history_get(&c->hist, c->pending_accept);
  const gen *kg = fork_of(c, k), *wg = w != NULL ? fork_of(c, w) : NULL;
  if (kg == NULL || wg == NULL || !siblings(kg, wg) || !isfinite(speedup) || speedup <= 0)
    return 0;
  ctl_cand_set(c, k->id, CAND_DONE);
  sg_history_profiled(&c->hist, k->id, speedup, NULL);
  return 1;
}

static void siblings_iteration_ended(sg_controller *c) { c->pending_accept = 0; }

const sg_ctl_policy sg_pol_siblings = {
    .name = "decide_with_siblings",
    .check = siblings_check,
    .iteration_ended = siblings_iteration_ended,
    .validated = siblings_validated,
    .after_event = settle_pending,
};
