/* sg_pol_validation.c: deciding at validation (sg_ctl_opts.
 * decide_at_validation; the interface is sg_policy.h).
 *
 * The paper's criterion sees profiled speedups only. With a margin M >= 1,
 * a valid kernel whose validation-measured speedup / M passes the
 * criterion is accepted when it validates: its profile is skipped, its
 * validation speedup stands as its measurement (it joins the history as
 * profiled, with no profile text), and the iteration with its reasoning
 * ends one profiling sooner. M > 1 asks for a margin, as the validation's
 * timing is the rougher. With decide_with_siblings (sg_pol_siblings.c) an
 * accepted fork's kernel may first wait for its siblings.
 */
#include "core/sg_policy.h"

#include <math.h>

static int validation_check(const sg_ctl_opts *o, sg_err *err) {
  if (!(o->decide_at_validation == 0 ||
        (o->decide_at_validation >= 1 && o->decide_at_validation <= 10)))
    return sg_err_set(err, SG_EINVAL, "controller: decide_at_validation must be "
                      "0 or in 1..10, got %g", o->decide_at_validation);
  return 0;
}

static bool accept_at_validation(sg_controller *c, sg_kernel *k,
                                 double speedup,
                                 sg_termination_history *view) {
  if (c->o.decide_at_validation <= 0 || !isfinite(speedup) || speedup <= 0)
    return false;
  *view = sg_speedup_history_view(&c->hist.speedups);
  if (!sg_termination_decide(c->o.termination, view,
                             speedup / c->o.decide_at_validation))
    return false;
  ctl_cand_set(c, k->id, CAND_DONE);
  sg_history_profiled(&c->hist, k->id, speedup, NULL);
  c->st.validation_accepts++;
  return true;
}

static int validation_validated(sg_controller *c, sg_kernel *k, double speedup,
                                int64_t now_us, sg_ctl_actions *out,
                                sg_err *err) {
  sg_termination_history view;
  if (sg_pol_siblings_waiting(c) || !accept_at_validation(c, k, speedup, &view))
    return 0;
  if (sg_pol_siblings_wait(c, k))
    return 1;
  int rc = ctl_accept_early(c, k, speedup, &view, now_us, out, err);
  return rc < 0 ? rc : 1;
}

const sg_ctl_policy sg_pol_validation = {
    .name = "decide_at_validation",
    .check = validation_check,
    .validated = validation_validated,
};
