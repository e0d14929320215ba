/* sg_controller_api.c: the controller's options, lifecycle, resuming, names
 * and stats (the API of sg_controller.h around the algorithm, which is in
 * sg_controller.c; the options of each policy are checked by its own file,
 * sg_policy.h).
 */
#include "core/sg_controller_priv.h"
#include "core/sg_policy.h"

#include "common/sg_alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *sg_ctl_state_name(sg_ctl_state s) {
  static const char *const names[SG_CTL__COUNT] = {"new", "generating",
                                                   "fallback", "done"};
  return (unsigned)s < SG_CTL__COUNT ? names[s] : "unknown";
}

const char *sg_ctl_reason_name(sg_ctl_reason r) {
  static const char *const names[SG_REASON__COUNT] = {
      "early",         "fallback",      "budget_iterations", "budget_wall",
      "budget_tokens", "search_failed", "fork_trigger",      "fork_idle",
      "cutoff",        "answer_at_cap"};
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
  o->answer_at_cap = true;
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
  o->main_retries = 2;
}

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
  int rc = sg_policy_check(o, err);
  if (rc < 0)
    return rc;
  if (o->max_wall_us < 0)
    return sg_err_set(err, SG_EINVAL, "controller: max_wall_us must be >= 0");
  if (o->max_text_bytes < 1024)
    return sg_err_set(err, SG_EINVAL, "controller: max_text_bytes must be >= "
                      "1024, got %zu", o->max_text_bytes);
  sg_controller *c = sg_calloc(1, sizeof *c);
  c->o = *o;
  c->state = SG_CTL_NEW;
  c->compact = strcmp(sg_search_name(o->search), "refine") == 0;
  sg_history_init(&c->hist);
  sg_policy_init(c);
  *out = c;
  return 0;
}

void sg_controller_free(sg_controller *c) {
  if (c == NULL)
    return;
  ctl_free_gens(c);
  sg_policy_stop(c, NULL);
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
  h->answer = k->origin == SG_GEN_SPEC && k->answer;
  uint64_t id = h->id;
  ctl_cand_set(c, id, CAND_DONE);
  c->st.candidates++;
  if (k->validated) {
    sg_history_validated(&c->hist, id, k->validate_status, k->validate_speedup,
                         k->validate_message);
    if (k->validate_status == SG_EVAL_OK) {
      c->st.validated_ok++;
      sg_policy_note_valid(c, h); /* the gate and the cutoff resume */
    }
  }
  if (k->profiled) {
    sg_history_profiled(&c->hist, id, k->profile_speedup, k->profile_text);
    c->st.profiled++;
  } else if (k->accepted_at_validation && k->validated &&
             k->validate_status == SG_EVAL_OK &&
             isfinite(k->validate_speedup)) {
    /* As it was live (sg_pol_validation.c): its validation speedup is its
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
  sg_ctl_reason spent = ctl_budget_spent(c, now_us, true);
  if (spent != SG_REASON__COUNT) {
    ctl_workflow_done(c, now_us, spent, out);
    return 0;
  }
  return ctl_start_iteration(c, now_us, out, err);
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
