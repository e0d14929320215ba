/* sg_sim.h: the simulated runtime: a discrete-event loop in virtual time that
 * drives the real decision core (sg_controller per workflow, one shared
 * sg_scheduler) against stochastic models of the LLM and the evaluators.
 *
 * How it works. Virtual time is int64 microseconds; events sit in a 4-ary
 * heap and first-in first-out lanes (sg_sim_queue), taken in order of time,
 * then of scheduling, so a seed
 * replays a campaign byte for byte. The runtime never decides anything: it
 * executes the controller's actions (start or cancel a generation, submit a
 * candidate, end an iteration) and the scheduler's (start a compile or a
 * device run, abort, fail), and turns the models' outcomes back into core
 * events. Main generations stream synthetic reasoning text in chunks; the
 * controller's own trigger scanner reads it, so triggers are found by the
 * real scanner, at positions the model planted. A fork's kernel is valid
 * according to the fraction of its parent's trace it was forked from
 * (docs/simulation.md has every model and its calibration).
 *
 * Configurations (the paper's ablation):
 *   baseline                no forks, static split, FIFO validation
 *   spec                    + speculative generation
 *   spec+realloc            + elastic re-split at iteration boundaries
 *   spec+realloc+priority   + LIFO validation queue
 *   full                    + remote prefix cache (forks find more of their
 *                             prefix cached: shorter prefill)
 */
#ifndef SG_SIM_H
#define SG_SIM_H

#include "common/sg_error.h"
#include "sim/sg_sim_params.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct sg_sim_variant {
  char name[SG_SIM_NAME_MAX];
  bool speculate;     /* controller forks speculative generations */
  bool elastic;       /* scheduler re-splits at iteration boundaries */
  bool lifo;          /* LIFO validation queue */
  bool remote_cache;  /* forks' prefixes hit the remote prefix cache */
  /* Beyond the paper (options of the real core): */
  bool work_conserving; /* sg_sched_opts.work_conserving */
  bool fork_gate;       /* sg_ctl_opts.fork_gate = ctl.fork_gate */
  bool cutoff;          /* sg_ctl_opts.cutoff = ctl.cutoff */
  bool split_capacity;  /* sg_sched_opts.split_capacity */
  double at_validation; /* sg_ctl_opts.decide_at_validation (0: off) */
  bool cutoff_detach;   /* sg_ctl_opts.cutoff_detach (with cutoff) */
  bool siblings;        /* sg_ctl_opts.decide_with_siblings (with +vd) */
  bool ahead;           /* sg_ctl_opts.next_ahead */
} sg_sim_variant;

/* The paper's ablation, run by default: "baseline", "spec",
 * "spec+realloc", "spec+realloc+priority", "full". */
#define SG_SIM_VARIANTS 5
/* And the policies beyond it, run when asked for: "full+wc" (work-
 * conserving devices), "full+gate" (forks gated by expected value),
 * "full+cutoff" (hopeless iterations end early), "full+gate+cutoff",
 * "beyond" (all three). */
/* "full+vd", "full+cutoff+vd", "full+gate+cutoff+vd", "beyond+vd": the
 * criterion also asked at validation (margin 1; "NAME:M" sets M). */
/* "...+detach...": the cutoff's main generation finishes detached
 * (sg_ctl_opts.cutoff_detach). "...+vds": deciding at validation among a
 * fork's siblings (sg_ctl_opts.decide_with_siblings). "...+ahead": the
 * next iteration's main starts when a candidate goes to validation
 * (sg_ctl_opts.next_ahead); "full+gate+vd" is its reference without;
 * "full+gate+ahead" starts ahead without deciding at validation, so its
 * winners are profiled. */
#define SG_SIM_VARIANTS_ALL 31
const char *sg_sim_variant_name(int i); /* 0 .. SG_SIM_VARIANTS_ALL - 1 */
/* SG_ENOENT naming the known ones for an unknown name. */
int sg_sim_variant_parse(const char *name, sg_sim_variant *v, sg_err *err);

/* What one configuration's campaign measured. Counts are totals over all
 * workflows. */
typedef struct sg_sim_result {
  char name[SG_SIM_NAME_MAX];
  double e2e_s;                  /* virtual time until the last workflow ended */
  double e2e_geomean_s;          /* geometric mean over workflows of the time
                                    each took (the paper's per-task E2E,
                                    aggregated as its tables do) */
  uint64_t workflows_done;
  uint64_t iterations;
  uint64_t early_terminations;   /* iterations ended while their main
                                    generation still ran (it was cancelled) */
  uint64_t criterion_accepts;    /* iterations the termination criterion
                                    ended (early, or after the main one) */
  uint64_t profiling_feedback;   /* profiled valid kernels (profile results
                                    with status ok given to controllers) */
  uint64_t controller_profiled;  /* the same, as the controllers counted it */
  uint64_t controller_early;     /* early terminations, as they counted them */
  uint64_t candidates;           /* candidates submitted for validation */
  uint64_t validated_ok;
  uint64_t main_validated, main_valid; /* main-generation candidates */
  uint64_t spec_validated, spec_valid; /* fork candidates */
  uint64_t forks;                /* speculative generations started */
  uint64_t forks_trigger, forks_idle; /* by the controller's reason */
  uint64_t detached, detached_answers; /* mains a cutoff left running, and
                                    those that gave an answer (cutoff_detach) */
  uint64_t sibling_waits;        /* kernels accepted at validation that
                                    waited for siblings (decide_with_siblings) */
  /* Where device time goes: device-seconds not running a request while
   * requests waited (held back by the split) and while none waited (no
   * work); busy and pool device-seconds until the first workflow ended. */
  double idle_waiting_s, idle_no_work_s;
  double all_live_busy_s, all_live_pool_s;
  double idle_waiting, idle_no_work; /* those over pool time (devices x
                                        e2e_s): with utilization, they sum
                                        to 1 */
  double util_all_live;  /* busy over pool time until the first workflow
                            ended */
  uint64_t ahead_started, ahead_adopted; /* mains started ahead, and those
                                    that became their iteration's (next_ahead) */
  uint64_t ahead_stale, ahead_stale_items; /* of the adopted, those whose
                                    prompt lacked feedback the iteration's
                                    own prompt shows, and the items lacked */
  uint64_t main_gens;
  uint64_t gens_cancelled, gens_failed;
  double main_gen_s;             /* summed duration of completed main gens */
  uint64_t main_gens_completed;
  double util_validate;          /* busy validation device time / pool time */
  double util_profile;
  double util_overall;           /* sum of the two; 0..1 */
  uint64_t prompt_tokens, completion_tokens, cached_tokens;
  double best_speedup_mean;      /* mean over workflows of the best kernel
                                    (1.0, the reference, for a workflow
                                    that profiled none) */
  uint64_t workflows_without_kernel;
  double best_speedup_geomean;
  uint64_t devices_died;         /* by the fault model */
  uint64_t devices_retired;      /* taken out of service by the scheduler */
  uint64_t infra_failures, requests_failed, requests_aborted, resplits;
  uint64_t events;               /* events processed */
  /* Peak slots of a workflow's generation ring and of the request ring:
   * bounded by what one iteration keeps alive, not by the campaign. */
  uint64_t gen_slots_max, req_slots_max;
  /* The LLM servers and prefix caches (sg_sim_llm.h), in tokens. */
  double cache_local_tokens;     /* prefix tokens found in a server's KV */
  double cache_remote_tokens;    /* restored from the remote store */
  double cache_miss_tokens;      /* prefilled again */
  double remote_transfer_gb, remote_transfer_s;
  uint64_t remote_yields;        /* evaluations that made the store shrink */
  double llm_mean_streams;       /* live generations, time average */
} sg_sim_result;

/* Runs one configuration's campaign. p must be valid
 * (sg_sim_params_validate). Errors: the core's (a bad termination or search
 * spec names it), SG_ESTATE if the campaign stalls (no event left while a
 * workflow is unfinished: a bug), SG_ETIMEDOUT past the virtual-time guard. */
int sg_sim_run(const sg_sim_params *p, const sg_sim_variant *v,
               sg_sim_result *out, sg_err *err);
/* The same, with every core action executed and every event fed, as one
 * line each, given to trace (sg_interp.h): what tests compare with a real
 * run's actions. */
int sg_sim_run_traced(const sg_sim_params *p, const sg_sim_variant *v,
                      void (*trace)(void *data, const char *line), void *trace_data,
                      sg_sim_result *out, sg_err *err);

#endif
