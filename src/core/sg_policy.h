/* sg_policy.h: the interface of the controller's policies beyond the paper.
 *
 * sg_controller.c is Algorithm 1 of the SpecGen paper and nothing else. Each
 * policy that changes it (an option of sg_ctl_opts, off by default) lives in
 * a file of its own and is one sg_ctl_policy: a table of hooks the
 * controller calls at fixed points of the algorithm. A hook a policy does
 * not need is NULL; a hook checks its own option and does nothing while it
 * is off, so the paper's run calls them all and nothing changes.
 *
 * The policies, one file each (sg_pol_*.c), and the order the controller
 * calls them in are the table of sg_policy.c.
 * Other policies live outside the controller: the termination criteria in
 * sg_termination.c (the controller asks sg_termination_decide), the
 * scheduler's work-conserving ones in sg_scheduler.c.
 *
 * A new policy: its options in sg_ctl_opts (sg_controller.h), its state (if
 * any) in struct sg_controller (sg_controller_priv.h), its file with one
 * sg_ctl_policy (src/core/meson.build lists it), and one row in the table
 * of sg_policy.c.
 */
#ifndef SG_POLICY_H
#define SG_POLICY_H

#include "core/sg_controller_priv.h"

typedef struct sg_ctl_policy {
  const char *name;   /* the option of sg_ctl_opts that turns it on */
  /* sg_controller_new: SG_EINVAL naming the option for a bad value */
  int (*check)(const sg_ctl_opts *o, sg_err *err);
  /* sg_controller_new, once c->o is set */
  void (*init)(sg_controller *c);
  /* The workflow ends (out: cancel what still generates) or the controller
   * is freed (out NULL): what the policy holds is freed. */
  void (*stop)(sg_controller *c, sg_ctl_actions *out);
  /* An iteration is to start: 1 when the policy started it, 0 when the
   * search is to be asked as usual, < 0 an error. */
  int (*start_iteration)(sg_controller *c, int64_t now_us,
                         sg_ctl_actions *out, sg_err *err);
  /* The iteration ends for reason while main generation g still generates:
   * true when the policy took g over (it is not cancelled). */
  bool (*keep_main)(sg_controller *c, gen *g, sg_ctl_reason reason);
  /* The iteration ended; its generations are freed. */
  void (*iteration_ended)(sg_controller *c);
  /* A fork from main m at prefix_len passed the paper's checks: false
   * vetoes it (no fork, no DECISION). */
  bool (*may_fork)(const sg_controller *c, const gen *m, uint64_t prefix_len);
  /* A generation the policy holds outside gens[] with this id, or NULL
   * (its chunks are kept like a main's). */
  gen *(*find_gen)(sg_controller *c, uint64_t id);
  /* Main g's text held a trigger of class cls: true when the policy took
   * it (no fork now). */
  bool (*trigger)(sg_controller *c, gen *g, int cls);
  /* GEN_FINISHED, GEN_FAILED: 1 when the event was of a generation the
   * policy holds (handled), 0 when not, < 0 an error. */
  int (*finished)(sg_controller *c, const sg_ctl_event *ev,
                  sg_ctl_actions *out, sg_err *err);
  int (*failed)(sg_controller *c, const sg_ctl_event *ev, sg_ctl_actions *out,
                sg_err *err);
  /* A candidate of the iteration was submitted for validation. */
  void (*submitted)(sg_controller *c, sg_ctl_actions *out);
  /* Kernel k validated ok at speedup (NAN: unmeasured): 1 when the policy
   * decided what follows (k is not profiled), 0 when not, < 0 an error. */
  int (*validated)(sg_controller *c, sg_kernel *k, double speedup,
                   int64_t now_us, sg_ctl_actions *out, sg_err *err);
  /* After each event: < 0 an error. */
  int (*after_event)(sg_controller *c, int64_t now_us, sg_ctl_actions *out,
                     sg_err *err);
  /* On a tick: true when the iteration is to end now (reason cutoff). */
  bool (*end_now)(const sg_controller *c);
} sg_ctl_policy;

/* The controller's calls: each runs the hook of every policy in order,
 * stopping at the first that handled the point (returned nonzero). */
int sg_policy_check(const sg_ctl_opts *o, sg_err *err);
void sg_policy_init(sg_controller *c);
void sg_policy_stop(sg_controller *c, sg_ctl_actions *out);
int sg_policy_start_iteration(sg_controller *c, int64_t now_us,
                              sg_ctl_actions *out, sg_err *err);
bool sg_policy_keep_main(sg_controller *c, gen *g, sg_ctl_reason reason);
void sg_policy_iteration_ended(sg_controller *c);
bool sg_policy_may_fork(const sg_controller *c, const gen *m,
                        uint64_t prefix_len);
gen *sg_policy_find_gen(sg_controller *c, uint64_t id);
bool sg_policy_trigger(sg_controller *c, gen *g, int cls);
int sg_policy_finished(sg_controller *c, const sg_ctl_event *ev,
                       sg_ctl_actions *out, sg_err *err);
int sg_policy_failed(sg_controller *c, const sg_ctl_event *ev,
                     sg_ctl_actions *out, sg_err *err);
void sg_policy_submitted(sg_controller *c, sg_ctl_actions *out);
int sg_policy_validated(sg_controller *c, sg_kernel *k, double speedup,
                        int64_t now_us, sg_ctl_actions *out, sg_err *err);
int sg_policy_after_event(sg_controller *c, int64_t now_us,
                          sg_ctl_actions *out, sg_err *err);
bool sg_policy_end_now(const sg_controller *c);

/* What the policies learn from: the prefixes of the last
 * SG_CTL_GATE_WINDOW forks whose kernels validated (live or restored). */
void sg_policy_note_valid(sg_controller *c, const sg_kernel *k);
uint64_t sg_policy_valid_shortest(const sg_controller *c);
uint64_t sg_policy_valid_longest(const sg_controller *c);

/* sg_pol_siblings.c, for sg_pol_validation.c: whether a kernel accepted
 * at validation is waiting for its siblings; whether k, just accepted at
 * validation, waits for them (it then becomes the waiting one). */
bool sg_pol_siblings_waiting(const sg_controller *c);
bool sg_pol_siblings_wait(sg_controller *c, const sg_kernel *k);

#endif
