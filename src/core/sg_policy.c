/* sg_policy.c: the one table of the controller's policies and the calls
 * that run their hooks (sg_policy.h), and the window of valid fork prefixes
 * the fork gate and the cutoff learn from.
 *
 * Each call runs the hooks in the table's order and stops at the first
 * that handled its point.
 */
#include "core/sg_policy.h"

#include <stdint.h>

/* The policies, in the order the controller calls them:
 *   sg_pol_ahead.c       next_ahead: the next iteration's main starts while
 *                        the winner is being evaluated
 *   sg_pol_cutoff.c      cutoff, cutoff_detach: an adaptive end to hopeless
 *                        iterations; the main it ends may finish detached
 *   sg_pol_gate.c        fork_gate: no fork from a prefix shorter than the
 *                        valid ones
 *   sg_pol_siblings.c    decide_with_siblings: a kernel accepted at
 *                        validation waits for its sibling forks
 *   sg_pol_validation.c  decide_at_validation: the criterion asked at
 *                        validation
 * The order matters where two act at one point: the main started ahead is
 * cancelled before the detached one, and the cutoff notes a valid kernel
 * before the sibling and validation decisions may end the iteration.
 */
extern const sg_ctl_policy sg_pol_ahead, sg_pol_cutoff, sg_pol_gate,
    sg_pol_siblings, sg_pol_validation;

static const sg_ctl_policy *const policies[] = {
    &sg_pol_ahead, &sg_pol_cutoff, &sg_pol_gate, &sg_pol_siblings,
    &sg_pol_validation,
};

#define NPOLICIES (sizeof policies / sizeof policies[0])

int sg_policy_check(const sg_ctl_opts *o, sg_err *err) {
  for (size_t i = 0; i < NPOLICIES; i++) {
    int rc = policies[i]->check ? policies[i]->check(o, err) : 0;
    if (rc < 0)
      return rc;
  }
  return 0;
}

void sg_policy_init(sg_controller *c) {
  for (size_t i = 0; i < NPOLICIES; i++)
    if (policies[i]->init)
      policies[i]->init(c);
}

void sg_policy_stop(sg_controller *c, sg_ctl_actions *out) {
  for (size_t i = 0; i < NPOLICIES; i++)
    if (policies[i]->stop)
      policies[i]->stop(c, out);
}

int sg_policy_start_iteration(sg_controller *c, int64_t now_us,
                              sg_ctl_actions *out, sg_err *err) {
  for (size_t i = 0; i < NPOLICIES; i++) {
    int rc = policies[i]->start_iteration
                 ? policies[i]->start_iteration(c, now_us, out, err)
                 : 0;
    if (rc != 0)
      return rc;
  }
  return 0;
}

bool sg_policy_keep_main(sg_controller *c, gen *g, sg_ctl_reason reason) {
  for (size_t i = 0; i < NPOLICIES; i++)
    if (policies[i]->keep_main && policies[i]->keep_main(c, g, reason))
      return true;
  return false;
}

void sg_policy_iteration_ended(sg_controller *c) {
  for (size_t i = 0; i < NPOLICIES; i++)
    if (policies[i]->iteration_ended)
      policies[i]->iteration_ended(c);
}

bool sg_policy_may_fork(const sg_controller *c, const gen *m,
                        uint64_t prefix_len) {
  for (size_t i = 0; i < NPOLICIES; i++)
    if (policies[i]->may_fork && !policies[i]->may_fork(c, m, prefix_len))
      return false;
  return true;
}

gen *sg_policy_find_gen(sg_controller *c, uint64_t id) {
  for (size_t i = 0; i < NPOLICIES; i++) {
    gen *g = policies[i]->find_gen ? policies[i]->find_gen(c, id) : NULL;
    if (g != NULL)
      return g;
  }
  return NULL;
}

bool sg_policy_trigger(sg_controller *c, gen *g, int cls) {
  for (size_t i = 0; i < NPOLICIES; i++)
    if (policies[i]->trigger && policies[i]->trigger(c, g, cls))
      return true;
  return false;
}

int sg_policy_finished(sg_controller *c, const sg_ctl_event *ev,
                       sg_ctl_actions *out, sg_err *err) {
  for (size_t i = 0; i < NPOLICIES; i++) {
    int rc = policies[i]->finished ? policies[i]->finished(c, ev, out, err) : 0;
    if (rc != 0)
      return rc;
  }
  return 0;
}

int sg_policy_failed(sg_controller *c, const sg_ctl_event *ev,
                     sg_ctl_actions *out, sg_err *err) {
  for (size_t i = 0; i < NPOLICIES; i++) {
    int rc = policies[i]->failed ? policies[i]->failed(c, ev, out, err) : 0;
    if (rc != 0)
      return rc;
  }
  return 0;
}

void sg_policy_submitted(sg_controller *c, sg_ctl_actions *out) {
  for (size_t i = 0; i < NPOLICIES; i++)
    if (policies[i]->submitted)
      policies[i]->submitted(c, out);
}

int sg_policy_validated(sg_controller *c, sg_kernel *k, double speedup,
                        int64_t now_us, sg_ctl_actions *out, sg_err *err) {
  for (size_t i = 0; i < NPOLICIES; i++) {
    int rc = policies[i]->validated
                 ? policies[i]->validated(c, k, speedup, now_us, out, err)
                 : 0;
    if (rc != 0)
      return rc;
  }
  return 0;
}

int sg_policy_after_event(sg_controller *c, int64_t now_us,
                          sg_ctl_actions *out, sg_err *err) {
  for (size_t i = 0; i < NPOLICIES; i++) {
    int rc = policies[i]->after_event
                 ? policies[i]->after_event(c, now_us, out, err)
                 : 0;
    if (rc < 0)
      return rc;
  }
  return 0;
}

bool sg_policy_end_now(const sg_controller *c) {
  for (size_t i = 0; i < NPOLICIES; i++)
    if (policies[i]->end_now && policies[i]->end_now(c))
      return true;
  return false;
}

/* ---- the window of valid fork prefixes ------------------------------------ */

void sg_policy_note_valid(sg_controller *c, const sg_kernel *k) {
  if (k->origin != SG_GEN_SPEC || k->answer) /* an answer: all the reasoning,
                                                 not a fork's prefix */
    return;
  c->valid_prefix[c->valid_prefix_next] = k->prefix_len;
  c->valid_prefix_next = (c->valid_prefix_next + 1) % SG_CTL_GATE_WINDOW;
  if (c->nvalid_prefix < SG_CTL_GATE_WINDOW)
    c->nvalid_prefix++;
}

uint64_t sg_policy_valid_shortest(const sg_controller *c) {
  uint64_t shortest = UINT64_MAX;
  for (int i = 0; i < c->nvalid_prefix; i++)
    if (c->valid_prefix[i] < shortest)
      shortest = c->valid_prefix[i];
  return shortest;
}

uint64_t sg_policy_valid_longest(const sg_controller *c) {
  uint64_t longest = 0;
  for (int i = 0; i < c->nvalid_prefix; i++)
    if (c->valid_prefix[i] > longest)
      longest = c->valid_prefix[i];
  return longest;
}
