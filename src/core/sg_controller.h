/* sg_controller.h: the per-workflow controller, Algorithm 1 of the SpecGen
 * paper (pure: no I/O, no clock, no randomness; time is an argument).
 *
 * One controller drives one workflow (one task) through iterations. In an
 * iteration it:
 *   1. asks the search for the plan and starts the main reasoning
 *      generation(s) (START_GEN kind=main, thinking on);
 *   2. feeds their streamed reasoning to a trigger scanner it owns; on a
 *      trigger, or on a tick while validation devices sit idle, forks
 *      K = max(1, min(free validate, free profile)) speculative generations
 *      (START_GEN kind=spec, thinking off) from the reasoning prefix so far,
 *      never twice from the same prefix length; K is cut by the fork caps
 *      and by the fork streams the LLM server has left (fork_budget);
 *   3. extracts a candidate from every finished generation and submits it for
 *      validation, then (when valid) for profiling (SUBMIT_EVAL);
 *   4. asks the termination criterion about each profiled speedup; yes: the
 *      main generations and running forks are cancelled (CANCEL_GEN) and the
 *      iteration ends (END_ITERATION, reason early);
 *   5. otherwise the main generation is the fallback: once every main
 *      generation has finished (or failed) and its candidate's evaluation is
 *      complete, running forks are cancelled and the iteration ends
 *      (reason fallback).
 *      A main cut by max tokens with no kernel but with reasoning is first
 *      answered once from all its reasoning, thinking off (answer_at_cap:
 *      START_GEN kind spec with `answer`, not a fork); the fallback waits
 *      for that answer's kernel as for the main's.
 * After END_ITERATION the next iteration starts in the same call (its
 * START_GENs follow), unless a budget (iterations, wall time, tokens) is
 * spent: then WORKFLOW_DONE. A wall-time or token budget spent mid-iteration
 * ends the iteration at once (reason budget).
 *
 * The runtime executes the actions in order (sg_interp.h does it for run
 * and sim): END_ITERATION means "tell the scheduler this workflow's
 * iteration boundary" (which aborts its queued and
 * running evaluations, docs/core.md says why). Events about generations or
 * candidates the controller has cancelled or dropped are ignored (return 0).
 * Every decision (a fork and why, a termination and why) is also emitted as
 * a DECISION action in order, for the run store.
 */
#ifndef SG_CONTROLLER_H
#define SG_CONTROLLER_H

#include "common/sg_error.h"
#include "core/sg_scheduler.h"
#include "core/sg_search.h"
#include "core/sg_termination.h"
#include "core/sg_triggers.h"
#include "core/sg_outcome.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The controller's state (one enum, one setter; docs/core.md has the
 * diagram):
 *   NEW -> GENERATING      sg_controller_start
 *   GENERATING -> FALLBACK every main generation finished or failed; waiting
 *                          for their candidates' evaluation
 *   GENERATING|FALLBACK -> GENERATING   iteration ended, the next one began
 *   any -> DONE            a budget spent, or the search failed */
typedef enum sg_ctl_state {
  SG_CTL_NEW,
  SG_CTL_GENERATING,
  SG_CTL_FALLBACK,
  SG_CTL_DONE,
  SG_CTL__COUNT
} sg_ctl_state;

const char *sg_ctl_state_name(sg_ctl_state s);

/* Why a generation ended. */
typedef enum sg_finish_reason {
  SG_FINISH_STOP,      /* the model ended it */
  SG_FINISH_LENGTH,    /* max tokens */
  SG_FINISH_OTHER,
  SG_FINISH__COUNT
} sg_finish_reason;

typedef struct sg_usage {
  uint64_t prompt_tokens;
  uint64_t completion_tokens;   /* reasoning included */
  uint64_t cached_tokens;       /* of prompt_tokens, served from cache */
} sg_usage;

typedef enum sg_ctl_event_type {
  SG_CEV_GEN_STARTED,   /* the server accepted it (informational) */
  SG_CEV_GEN_CHUNK,     /* streamed text */
  SG_CEV_GEN_FINISHED,
  SG_CEV_GEN_FAILED,
  SG_CEV_EVAL_DONE,
  SG_CEV_TICK,
  SG_CEV__COUNT
} sg_ctl_event_type;

/* An event in. All pointers are borrowed for the call only. */
typedef struct sg_ctl_event {
  sg_ctl_event_type type;
  int64_t now_us;
  union {
    struct {
      uint64_t gen;
    } started;
    struct {
      uint64_t gen;
      const char *reasoning;    /* thinking text, may be NULL */
      size_t reasoning_len;
      const char *content;      /* answer text, may be NULL */
      size_t content_len;
      uint64_t tokens;          /* completion tokens in this chunk */
    } chunk;
    struct {
      uint64_t gen;
      const char *text;         /* the whole answer; NULL: the content
                                   streamed in chunks */
      size_t len;
      sg_finish_reason reason;
      sg_usage usage;           /* final; replaces the chunk counts */
    } finished;
    struct {
      uint64_t gen;
      int error;                /* SG_E* */
      const char *message;      /* may be NULL */
      sg_usage usage;           /* what was spent before it failed */
      bool endpoint;            /* the model server's failure, not the
                                   model's (it cut the stream, was
                                   unreachable, answered 5xx): a main
                                   generation is sent again (main_retries) */
    } failed;
    struct {
      uint64_t candidate;
      sg_phase phase;
      sg_eval_status status;
      double speedup;           /* NAN unless measured */
      const char *message;      /* validation feedback, may be NULL */
      const char *profile_text; /* profile verdict, may be NULL */
    } eval;
    struct {
      sg_sched_capacity capacity;
    } tick;
  } u;
} sg_ctl_event;

/* Why an iteration or a workflow ended, why a fork happened. */
typedef enum sg_ctl_reason {
  SG_REASON_EARLY,          /* the termination criterion accepted a kernel */
  SG_REASON_FALLBACK,       /* the main generation(s) evaluated */
  SG_REASON_BUDGET_ITERATIONS,
  SG_REASON_BUDGET_WALL,
  SG_REASON_BUDGET_TOKENS,
  SG_REASON_SEARCH_FAILED,
  SG_REASON_FORK_TRIGGER,
  SG_REASON_FORK_IDLE,
  SG_REASON_CUTOFF,         /* the reasoning ran far past where forks of this
                               workflow have been valid, with none valid in
                               this iteration (sg_ctl_opts.cutoff) */
  SG_REASON_ANSWER_AT_CAP,  /* a main generation hit max tokens with no
                               kernel: its answer asked for from all its
                               reasoning (sg_ctl_opts.answer_at_cap) */
  SG_REASON__COUNT
} sg_ctl_reason;

/* "early", "fallback", "budget_iterations", "budget_wall", "budget_tokens",
 * "search_failed", "fork_trigger", "fork_idle", "cutoff", "answer_at_cap". */
const char *sg_ctl_reason_name(sg_ctl_reason r);

typedef enum sg_ctl_action_type {
  SG_CACT_START_GEN,
  SG_CACT_CANCEL_GEN,
  SG_CACT_SUBMIT_EVAL,
  SG_CACT_END_ITERATION,
  SG_CACT_WORKFLOW_DONE,
  SG_CACT_DECISION,
  SG_CACT__COUNT
} sg_ctl_action_type;

const char *sg_ctl_action_type_name(sg_ctl_action_type t);

/* An action out. Lifetimes of its pointers: prefix, until the next call
 * into the controller; prompt, until its iteration ends (the runtime renders
 * it at once); source, until the controller is freed. `iteration` is the
 * iteration the action belongs to (WORKFLOW_DONE: the count of iterations
 * ended). */
typedef struct sg_ctl_action {
  sg_ctl_action_type type;
  uint32_t iteration;
  union {
    struct {                   /* START_GEN */
      uint64_t gen;            /* the id events must carry */
      sg_gen_kind kind;
      bool thinking;           /* main: on; spec: off */
      size_t prompt_index;     /* which prompt of the iteration's plan */
      const sg_prompt *prompt;
      uint64_t parent_gen;     /* spec: the main generation forked; else 0 */
      uint64_t prefix_len;     /* spec: bytes of its reasoning to continue */
      const char *prefix;      /* spec: those bytes */
      uint32_t restart;        /* main: 0 its first try; n: sent again, the
                                  same generation on the same prompt, after
                                  the model server cut its n-th try */
      bool wait;               /* restart past main_retries: the runtime
                                  sends it after a wait (its outage rules) */
      bool answer;             /* spec: not a fork but the answer at the
                                  length cap (sg_ctl_opts.answer_at_cap):
                                  prefix is all the main's reasoning */
    } start;
    struct {                   /* CANCEL_GEN */
      uint64_t gen;
      bool ahead;              /* a main started ahead for the next
                                  iteration (next_ahead): not its
                                  iteration's reasoning cut short */
    } cancel;
    struct {                   /* SUBMIT_EVAL */
      uint64_t candidate;
      sg_phase phase;
      const char *source;
      size_t source_len;
    } submit;
    struct {                   /* END_ITERATION */
      sg_ctl_reason reason;
      uint64_t best_kernel;    /* best profiled kernel of the iteration, 0 */
    } end;
    struct {                   /* WORKFLOW_DONE */
      sg_ctl_reason reason;
      uint64_t best_kernel;    /* best of the workflow, 0 if none */
    } done;
    struct {                   /* DECISION */
      sg_ctl_reason reason;    /* fork_trigger, fork_idle, early, ... */
      int64_t now_us;
      uint64_t gen;            /* the main generation forked (answer_at_cap:
                                  the main whose answer is asked for) */
      uint64_t prefix_len;
      int k;                   /* forks started */
      int trigger;             /* sg_trigger_class, -1 when none */
      uint64_t candidate;      /* early: the winner */
      double speedup;          /* early: its speedup */
      double threshold_mean;   /* early: the history it beat */
      double threshold_best;
    } decision;
  } u;
} sg_ctl_action;

typedef struct sg_ctl_actions {
  sg_ctl_action *v;
  size_t n, cap;
} sg_ctl_actions;

void sg_ctl_actions_init(sg_ctl_actions *a);
void sg_ctl_actions_clear(sg_ctl_actions *a);
void sg_ctl_actions_free(sg_ctl_actions *a);

#define SG_CTL_GATE_WINDOW 8

/* The fork streams an LLM server can take beside its workflows' main
 * generations without slowing them: its concurrency (the streams it decodes
 * at the full per-stream rate) less one main per workflow it serves. One
 * budget is shared by the controllers of the workflows on one server
 * (sg_ctl_opts.fork_budget); each counts its forks generating in `used`, so
 * a fork decision's K is also cut to cap - used. Without it K is the pool's
 * free capacity alone, hundreds of forks per decision in a pool of a
 * thousand devices, all on the one server of the workflow, and every main
 * it serves slows (docs/core.md, "Fork budget"). The owner (the runtime)
 * zeroes it and sets cap; controllers only add and take back their own. */
typedef struct sg_fork_budget {
  int cap;   /* fork streams the server takes at once; >= 1 when a
                controller is created with it, then >= 0 (the runtime lowers
                it to what the server's measured load allows,
                sg_server_load.h; 0: no fork starts) */
  int used;  /* forks of its workflows generating now */
  uint64_t withheld; /* forks the cap kept from starting: a decision's K cut
                        by it, counted once per main generation and prefix */
} sg_fork_budget;

typedef struct sg_ctl_opts {
  sg_search *search;                 /* borrowed; required */
  const sg_termination *termination; /* borrowed; required */
  const char *language;              /* the task's: "c", "cuda", "python" */
  const char *entry;                 /* the function candidates define */
  bool speculate;          /* false: no forks at all (the baseline) */
  bool answer_at_cap;      /* budget forcing: a main generation that ends at
                              max tokens (SG_FINISH_LENGTH) with no kernel in
                              its answer but with reasoning, while its
                              iteration runs and no budget is spent, is
                              answered once by a generation with thinking off
                              that continues all its reasoning (START_GEN
                              kind spec, answer set, parent the main; DECISION
                              answer_at_cap). Its kernel stands in for the
                              main's: the fallback waits for it. Not
                              speculation: it runs with speculate false, and
                              the fork caps and the fork budget do not count
                              it (it takes the stream the main freed) */
  bool fork_on_idle;       /* fork on ticks while validation is idle */
  uint64_t idle_min_new_bytes; /* reasoning growth needed for an idle fork */
  int max_forks_per_iteration;
  int max_live_forks;      /* forks generating at once */
  sg_fork_budget *fork_budget; /* borrowed, shared by the workflows of one
                              LLM server; NULL: no server bound */
  double fork_gate;        /* 0: fork whenever Algorithm 1 says so. > 0:
                              forks gated by their expected value: once
                              forks of this workflow have validated, none
                              is started from a prefix shorter than
                              fork_gate x the shortest of the last
                              SG_CTL_GATE_WINDOW valid ones (shorter
                              prefixes have been invalid: they would spend
                              tokens and devices for nothing) */
  double cutoff;           /* 0: off. > 0: an adaptive end to hopeless
                              iterations: once SG_CTL_GATE_WINDOW forks have
                              validated, an iteration whose reasoning has
                              passed cutoff x the longest of their prefixes
                              with no kernel of its own valid and nothing
                              in flight ends (reason cutoff) and the next
                              begins: its trace is unlikely to lead a fork
                              anywhere, and its own answer is rarely worth
                              the rest of the reasoning */
  bool cutoff_detach;      /* with cutoff: the main generation a cutoff
                              ends is not cancelled but finishes detached
                              (one at a time per workflow; a later cutoff
                              while one runs, or one in the last iteration
                              of the budget, cancels as before): the next
                              iteration starts at once, and the detached
                              answer's kernel joins the iteration running
                              when it arrives, so the cutoff saves the
                              wait without losing the answer */
  double decide_at_validation; /* 0: off (the paper: the criterion sees
                              profiled speedups only). M >= 1: a kernel
                              whose validation-measured speedup / M passes
                              the criterion is accepted when it validates:
                              its profile is skipped, its validation
                              speedup stands as its measurement, and the
                              iteration (with its reasoning) ends one
                              profiling sooner. M > 1 asks for a margin,
                              as the validation's timing is the rougher */
  bool decide_with_siblings; /* with decide_at_validation: a fork's kernel
                              accepted at validation waits until its
                              sibling forks (same main, same prefix) have
                              given their kernels and validated them, and
                              the fastest of them at validation is
                              accepted: their tokens are spent already,
                              and one draw is a poor pick of several */
  bool next_ahead;         /* with the refine search: when a candidate of
                              the iteration is submitted for validation
                              and a best kernel exists (one at a time, not
                              in the budget's last iteration), the next
                              iteration's main generation starts
                              at once (START_GEN with the next iteration's
                              number), on the prompt the search gives now.
                              It only generates (no forks) until the
                              iteration ends; then, if the best kernel is
                              the one it was asked to refine, it becomes
                              the next iteration's main with the reasoning
                              it has (forking from it at once if its text
                              held a trigger), else it is cancelled and the
                              next iteration starts as usual. The wait for
                              the winner's evaluation overlaps the next
                              reasoning; tokens are lost only when the best
                              kernel changed */
  sg_scanner_opts scanner; /* the trigger scanner's options */
  /* Budgets; 0: unlimited. */
  uint32_t max_iterations;
  int64_t max_wall_us;     /* from sg_controller_start's now_us */
  uint64_t max_tokens;     /* prompt + completion, all generations */
  size_t max_text_bytes;   /* cap on a generation's kept text */
  uint32_t main_retries;   /* a main generation the model server fails
                              (GEN_FAILED with endpoint) is sent again at
                              once this many times per iteration, on the
                              same prompt; after that it is sent again with
                              `wait` set, and its iteration neither ends nor
                              counts: the runtime's outage rules bound it.
                              Forks of its cut text go on. Restarting, not
                              continuing the cut text: docs/core.md says
                              why */
} sg_ctl_opts;

/* The scanner's min_gap_bytes in the controller's defaults. */
#define SG_CTL_TRIGGER_GAP_BYTES 256

/* speculate, answer_at_cap, fork_on_idle, idle_min_new_bytes=512, max_forks=64,
 * max_live_forks=16, scanner defaults but min_gap_bytes=256, max_iterations=10, no wall or token
 * budget, max_text_bytes=1 MiB, main_retries=2; search, termination, language NULL. */
void sg_ctl_opts_default(sg_ctl_opts *o);

typedef struct sg_controller sg_controller;

/* SG_EINVAL naming the option for bad options. */
int sg_controller_new(const sg_ctl_opts *opts, sg_controller **out,
                      sg_err *err);
void sg_controller_free(sg_controller *c);

/* Starts the workflow: the first iteration's main generations. */
int sg_controller_start(sg_controller *c, int64_t now_us, sg_ctl_actions *out,
                        sg_err *err);

/* Resuming a workflow another process began (the run store has it): before
 * start, each kernel of the ended iterations is restored into the history
 * with its recorded results, then the iterations ended, the wall time and
 * the tokens already spent, so that the search, the termination criterion
 * and the budgets continue where they were. start then begins iteration
 * `iterations_ended`, or ends the workflow at once if a budget is spent.
 * SG_ESTATE after start; SG_EINVAL for a kernel without source. */
typedef struct sg_ctl_restored {
  uint32_t iteration;
  sg_gen_kind origin;
  bool answer;                   /* spec: an answer at the length cap */
  uint64_t gen;
  uint64_t prefix_len;
  const char *source;
  size_t source_len;
  bool validated;
  sg_eval_status validate_status;
  double validate_speedup;
  const char *validate_message;  /* may be NULL */
  bool accepted_at_validation;   /* validated ok, never submitted for
                                    profiling: the criterion accepted it
                                    at validation (decide_at_validation),
                                    so its validation speedup is restored
                                    as its measurement */
  bool profiled;                 /* a profile with status ok */
  double profile_speedup;
  const char *profile_text;      /* may be NULL */
} sg_ctl_restored;

int sg_controller_restore_kernel(sg_controller *c, const sg_ctl_restored *k,
                                 sg_err *err);
int sg_controller_restore_progress(sg_controller *c, uint32_t iterations_ended,
                                   int64_t wall_spent_us,
                                   const sg_usage *tokens, sg_err *err);

/* Feeds one event; appends actions. SG_ESTATE before start, SG_EINVAL for a
 * malformed event; events for unknown, cancelled or finished generations and
 * dropped candidates are ignored. After DONE every event is ignored. */
int sg_controller_event(sg_controller *c, const sg_ctl_event *ev,
                        sg_ctl_actions *out, sg_err *err);

/* The latest free capacity (what K is computed from); a tick also sets it. */
void sg_controller_set_capacity(sg_controller *c, const sg_sched_capacity *cap);

typedef struct sg_ctl_stats {
  uint32_t iterations;           /* ended */
  uint32_t early_terminations;   /* ended by the criterion while a main
                                    generation was still running (the
                                    paper's metric) */
  uint32_t criterion_accepts;    /* ended by the criterion (reason early) */
  uint32_t validation_accepts;   /* of those, accepted at validation
                                    (decide_at_validation) */
  uint32_t sibling_waits;        /* kernels accepted at validation that
                                    waited for their siblings
                                    (decide_with_siblings) */
  uint64_t forks;
  uint64_t forks_by_reason[SG_REASON__COUNT];
  uint64_t forks_by_trigger[SG_TRIGGER__COUNT];
  uint64_t candidates, validated_ok, profiled;
  uint32_t detached;             /* mains a cutoff left running detached */
  uint32_t detached_answers;     /* of those, finished with an answer */
  uint32_t ahead_started;        /* next_ahead: mains started ahead */
  uint32_t ahead_adopted;        /* of those, the next iteration's main */
  uint32_t ahead_stale;          /* of those, adopted on a prompt that lacks
                                    feedback the iteration's own prompt
                                    would show (what came after it started) */
  uint64_t ahead_stale_items;    /* the prompt items they lacked */
  uint32_t main_restarts;        /* mains sent again after the model server
                                    failed them (main_retries) */
  uint32_t answers_at_cap;       /* answers asked for from the reasoning of a
                                    main cut by max tokens (answer_at_cap);
                                    not counted in forks */
  uint64_t prompt_tokens, completion_tokens, cached_tokens;
  int64_t start_us, end_us;      /* end_us 0 until DONE */
} sg_ctl_stats;

sg_ctl_state sg_controller_state(const sg_controller *c);
uint32_t sg_controller_iteration(const sg_controller *c);
const sg_history *sg_controller_history(const sg_controller *c);
void sg_controller_stats(const sg_controller *c, sg_ctl_stats *st);

#endif
