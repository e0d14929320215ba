/* sg_pol_gate.c: the fork gate (sg_ctl_opts.fork_gate; the interface is
 * sg_policy.h).
 *
 * Forks gated by their expected value: once forks of this workflow have
 * validated, none is started from a prefix shorter than fork_gate x the
 * shortest of the last SG_CTL_GATE_WINDOW valid ones. Shorter prefixes have
 * been invalid: they would spend tokens and devices for nothing, and the
 * reasoning that follows gives a later fork its chance.
 */
#include "core/sg_policy.h"

static int gate_check(const sg_ctl_opts *o, sg_err *err) {
  if (!(o->fork_gate >= 0 && o->fork_gate <= 1))
    return sg_err_set(err, SG_EINVAL, "controller: fork_gate must be in 0..1, got %g",
                      o->fork_gate);
  return 0;
}

static bool gate_may_fork(const sg_controller *c, const gen *m,
                          uint64_t prefix_len) {
  (void)m;
  if (c->o.fork_gate <= 0 || c->nvalid_prefix == 0)
    return true;
  /* too early to be worth it: wait for more reasoning */
  return (double)prefix_len >= c->o.fork_gate * (double)sg_policy_valid_shortest(c);
}

const sg_ctl_policy sg_pol_gate = {
    .name = "fork_gate",
    .check = gate_check,
    .may_fork = gate_may_fork,
};
