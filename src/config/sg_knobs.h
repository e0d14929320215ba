/* sg_knobs.h: the policy knobs of the decision core, one table.
 *
 * A knob is a setting that ends in the core's options (sg_ctl_opts,
 * sg_scheduler's sg_sched_opts) or in the loop that drives them (the
 * evaluation requests included), that `specgen run` sets and, most of
 * them, `specgen sim` too. Each knob is one row below:
 * its field of sg_knobs, type, run key (the same text is the YAML key and
 * the flag --KEY), default, range, the value's name in the usage text, the
 * usage group, where `specgen sim` takes it from, where it lands in the
 * core's options, and the help line. Everything else is built from the
 * rows: the run configuration's keys (sg_run_config.c expands them into
 * its key table, so flags, YAML, JSON, --help and its checks follow), the
 * defaults (sg_knobs_default), the parameters `specgen sim --set` takes
 * (sg_sim_params.c places the rows whose sim column says "--set KEY" in its
 * table: key, range and parser, sg_knobs_set, are the row's), the landing
 * of both `run` and `sim` in the core's options (sg_knobs_land) and the
 * generated table of docs/configuration.md (sg_knobs_doc, compared by a
 * test).
 *
 * A row is a macro SG_KNOB_<NAME>(X) calling X once with its columns, and
 * SG_KNOBS(X) lists them all: a consumer defines X to build its own kind of
 * row (the run key table places each row where its group reads best). A
 * new policy knob is a field of sg_knobs, one row here and a line in
 * SG_KNOBS, plus its code in the core (docs/configuration.md, "Adding a
 * knob").
 */
#ifndef SG_KNOBS_H
#define SG_KNOBS_H

#include "common/sg_error.h"
#include "config/sg_value.h"
#include "core/sg_controller.h"
#include "core/sg_scheduler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct sg_knobs {
  bool elastic;                /* elastic */
  double eval_timeout;         /* eval-timeout */
  bool spec;                   /* spec */
  bool answer_at_cap;          /* answer-at-cap */
  bool fork_on_idle;           /* fork-on-idle */
  int max_forks;               /* max-forks */
  int max_live_forks;          /* max-live-forks */
  int llm_streams;             /* llm-streams */
  double fork_slowdown_max;    /* fork-slowdown-max */
  bool work_conserving;        /* work-conserving */
  bool split_capacity;         /* split-capacity */
  double fork_gate;            /* fork-gate */
  double cutoff;               /* cutoff */
  bool cutoff_detach;          /* cutoff-detach */
  double decide_at_validation; /* decide-at-validation */
  bool decide_with_siblings;   /* decide-with-siblings */
  bool next_ahead;             /* next-ahead */
  double tick;                 /* tick */
  int iterations;              /* iterations */
  double time_budget;          /* time-budget */
  uint64_t token_budget;       /* token-budget */
} sg_knobs;

/* The columns of a row, in the order X takes them:
 *   field   of sg_knobs
 *   TYPE    BOOL, INT, DOUBLE or U64
 *   name    the run key: YAML key and --flag
 *   def     the default (on/off as 1/0)
 *   min,max the range (numbers)
 *   flags   SG_KNOBF_* range flags
 *   vname   the value's name in the usage text (NULL for on/off)
 *   GROUP   the usage group: EVAL, SEARCH or BUDGET
 *   sim     how `specgen sim` sets it: "--set KEY" where the sim takes it
 *           as a parameter under KEY (the sim's --set, YAML, --list-params
 *           and JSON report take the key, the range and the parser from
 *           this row), a configuration (its --configs names), "on", or
 *           "none: why" where the simulator has no such setting
 *   LAND    where it lands: CTL(field) of sg_ctl_opts, SCHED(field) of
 *           sg_sched_opts, FN(field, setter) of sg_ctl_opts through a
 *           conversion, NONE(why) where the owner of the loop applies it
 *   help    the usage line, with the default in parentheses
 */
#define SG_KNOBF_MIN_OPEN SG_VALUEF_MIN_OPEN /* min itself is out of range */
#define SG_KNOBF_MAX_OPEN SG_VALUEF_MAX_OPEN /* max itself is out of range */

#define SG_KNOB_TWO64 18446744073709551616.0 /* 2^64 */

#define SG_KNOB_ELASTIC(X)                                                    \
  X(elastic, BOOL, "elastic", 1, 0, 0, 0, NULL, EVAL,                         \
    "configurations from spec+realloc on", SCHED(elastic),                    \
    "re-split the devices between validation and profiling every "            \
    "iteration (on)")
#define SG_KNOB_EVAL_TIMEOUT(X)                                               \
  X(eval_timeout, DOUBLE, "eval-timeout", 60, 0, 86400, SG_KNOBF_MIN_OPEN,    \
    "S", EVAL, "none: it draws how long evaluations take",                    \
    NONE("every evaluation request (sg_pool_request.eval_timeout, the "       \
         "worker protocol's eval_timeout, sg_eval_opts.eval_timeout)"),       \
    "seconds one device stage may take (60)")
#define SG_KNOB_SPEC(X)                                                       \
  X(spec, BOOL, "spec", 1, 0, 0, 0, NULL, SEARCH,                             \
    "every configuration but baseline", CTL(speculate),                       \
    "speculative forks of the reasoning (on)")
#define SG_KNOB_ANSWER_AT_CAP(X)                                              \
  X(answer_at_cap, BOOL, "answer-at-cap", 1, 0, 0, 0, NULL, SEARCH,           \
    "every configuration: on (no generation of its ends at max tokens)",     \
    CTL(answer_at_cap),                                                       \
    "a main generation cut by max tokens inside its reasoning, with no "      \
    "kernel, is asked once for its answer from all its reasoning, "           \
    "thinking off (on)")
#define SG_KNOB_FORK_ON_IDLE(X)                                               \
  X(fork_on_idle, BOOL, "fork-on-idle", 1, 0, 0, 0, NULL, SEARCH, "on",       \
    CTL(fork_on_idle), "fork when devices sit idle (on)")
#define SG_KNOB_MAX_FORKS(X)                                                  \
  X(max_forks, INT, "max-forks", 64, 0, 100000, 0, "N", SEARCH,               \
    "--set ctl.max_forks_per_iteration", CTL(max_forks_per_iteration),        \
    "speculative forks per iteration (64)")
#define SG_KNOB_MAX_LIVE_FORKS(X)                                             \
  X(max_live_forks, INT, "max-live-forks", 16, 1, 100000, 0, "N", SEARCH,     \
    "--set ctl.max_live_forks", CTL(max_live_forks),                          \
    "forks generating at once (16)")
#define SG_KNOB_LLM_STREAMS(X)                                                \
  X(llm_streams, INT, "llm-streams", 0, 0, 100000, 0, "N", SEARCH,            \
    "--set llm.server_streams",                                               \
    NONE("the fork budget (sg_fork_budget) its owner builds per server"),     \
    "streams the LLM server decodes at once without slowing them "            \
    "(its concurrency); all tasks' forks share what their main "              \
    "generations leave of it (0: no bound)")
#define SG_KNOB_FORK_SLOWDOWN_MAX(X)                                          \
  X(fork_slowdown_max, DOUBLE, "fork-slowdown-max", 0.15, 0, 1,               \
    SG_KNOBF_MAX_OPEN, "F", SEARCH,                                           \
    "every configuration: off (its streams' rates are fixed at their "        \
    "start: nothing to measure)",                                             \
    NONE("the runtime's measure of the server's load (sg_server_load) "       \
         "sets the fork budget's cap"),                                       \
    "measure how much forks slow the main generations and allow only as "     \
    "many forks as slow them by at most F (0.15: 15%); 0: off, the cap is "   \
    "--llm-streams' alone (0.15)")
#define SG_KNOB_WORK_CONSERVING(X)                                            \
  X(work_conserving, BOOL, "work-conserving", 0, 0, 0, 0, NULL, EVAL,         \
    "configurations with +wc, +wcs, beyond", SCHED(work_conserving),          \
    "an idle device runs the other part's requests when its own "             \
    "part has none waiting (off)")
#define SG_KNOB_SPLIT_CAPACITY(X)                                             \
  X(split_capacity, BOOL, "split-capacity", 0, 0, 0, 0, NULL, EVAL,           \
    "configurations with +wcs", SCHED(split_capacity),                        \
    "with work-conserving: the free capacity the controllers fork "           \
    "from stays each part's own, not the pool's (off)")
#define SG_KNOB_FORK_GATE(X)                                                  \
  X(fork_gate, DOUBLE, "fork-gate", 0, 0, 1, 0, "F", SEARCH,                  \
    "--set ctl.fork_gate, in configurations with +gate, beyond",              \
    CTL(fork_gate),                                                           \
    "no fork from a prefix shorter than F x the shortest recent valid "       \
    "fork's (0: off)")
#define SG_KNOB_CUTOFF(X)                                                     \
  X(cutoff, DOUBLE, "cutoff", 0, 0, 100, 0, "F", SEARCH,                      \
    "--set ctl.cutoff, in configurations with +cutoff, beyond", CTL(cutoff),  \
    "end an iteration with nothing valid once its reasoning passes F x "      \
    "the longest recent valid fork's prefix (0: off)")
#define SG_KNOB_CUTOFF_DETACH(X)                                              \
  X(cutoff_detach, BOOL, "cutoff-detach", 0, 0, 0, 0, NULL, SEARCH,           \
    "configurations with +detach", CTL(cutoff_detach),                        \
    "with cutoff: the main generation a cutoff ends is not cancelled; "       \
    "it finishes while the next iteration runs, and its kernel joins "        \
    "that iteration (off)")
#define SG_KNOB_DECIDE_AT_VALIDATION(X)                                       \
  X(decide_at_validation, DOUBLE, "decide-at-validation", 0, 0, 10, 0, "M",   \
    SEARCH, "configurations with +vd or +vds, margin NAME:M (1)",             \
    CTL(decide_at_validation),                                                \
    "accept a kernel when it validates if its validation speedup / M "        \
    "passes the termination criterion, skipping its profile (0: off; "        \
    "else 1..10)")
#define SG_KNOB_DECIDE_WITH_SIBLINGS(X)                                       \
  X(decide_with_siblings, BOOL, "decide-with-siblings", 0, 0, 0, 0, NULL,     \
    SEARCH, "configurations with +vds", CTL(decide_with_siblings),            \
    "with decide-at-validation: a fork's kernel accepted there waits "        \
    "for the forks started with it, and the fastest of them is "              \
    "accepted (off)")
#define SG_KNOB_NEXT_AHEAD(X)                                                 \
  X(next_ahead, BOOL, "next-ahead", 0, 0, 0, 0, NULL, SEARCH,                 \
    "configurations with +ahead", CTL(next_ahead),                            \
    "with the refine search: when a candidate goes to validation and "        \
    "a best kernel exists, the next iteration's main generation starts; "     \
    "it becomes that "                                                        \
    "iteration's main if the best kernel is still the one it refines, "       \
    "else it is cancelled (off)")
#define SG_KNOB_TICK(X)                                                       \
  X(tick, DOUBLE, "tick", 0.25, 0.01, 60, 0, "S", SEARCH, "--set ctl.tick_s", \
    NONE("the loop's timer of controller ticks"),                             \
    "seconds between controller ticks (0.25)")
#define SG_KNOB_ITERATIONS(X)                                                 \
  X(iterations, INT, "iterations", 10, 1, 100000, 0, "N", BUDGET,             \
    "--set iterations", FN(max_iterations, land_iterations), "iterations per task (10)")
#define SG_KNOB_TIME_BUDGET(X)                                                \
  X(time_budget, DOUBLE, "time-budget", 0, 0, 1e7, 0, "S", BUDGET,            \
    "--set budget.wall_s", FN(max_wall_us, land_time_budget),                 \
    "wall seconds per task, 0: none (0)")
#define SG_KNOB_TOKEN_BUDGET(X)                                               \
  X(token_budget, U64, "token-budget", 0, 0, SG_KNOB_TWO64,                   \
    SG_KNOBF_MAX_OPEN, "N", BUDGET, "--set budget.tokens", CTL(max_tokens),   \
    "tokens per task, 0: none (0)")

#define SG_KNOBS(X)                                                           \
  SG_KNOB_ELASTIC(X)                                                          \
  SG_KNOB_EVAL_TIMEOUT(X)                                                     \
  SG_KNOB_SPEC(X)                                                             \
  SG_KNOB_ANSWER_AT_CAP(X)                                                    \
  SG_KNOB_FORK_ON_IDLE(X)                                                     \
  SG_KNOB_MAX_FORKS(X)                                                        \
  SG_KNOB_MAX_LIVE_FORKS(X)                                                   \
  SG_KNOB_LLM_STREAMS(X)                                                      \
  SG_KNOB_FORK_SLOWDOWN_MAX(X)                                                \
  SG_KNOB_WORK_CONSERVING(X)                                                  \
  SG_KNOB_SPLIT_CAPACITY(X)                                                   \
  SG_KNOB_FORK_GATE(X)                                                        \
  SG_KNOB_CUTOFF(X)                                                           \
  SG_KNOB_CUTOFF_DETACH(X)                                                    \
  SG_KNOB_DECIDE_AT_VALIDATION(X)                                             \
  SG_KNOB_DECIDE_WITH_SIBLINGS(X)                                             \
  SG_KNOB_NEXT_AHEAD(X)                                                       \
  SG_KNOB_TICK(X)                                                             \
  SG_KNOB_ITERATIONS(X)                                                       \
  SG_KNOB_TIME_BUDGET(X)                                                      \
  SG_KNOB_TOKEN_BUDGET(X)

/* A row's default as a constant expression: SG_KNOB_DEFAULT(SG_KNOB_TICK),
 * for the code that needs it where no sg_knobs is at hand. */
#define SG_KNOB_DEFAULT_(field, TYPE, name, def, ...) (def)
#define SG_KNOB_DEFAULT(ROW) ROW(SG_KNOB_DEFAULT_)

typedef enum sg_knob_type {
  SG_KNOB_BOOL = SG_VALUE_BOOL,
  SG_KNOB_INT = SG_VALUE_INT,
  SG_KNOB_DOUBLE = SG_VALUE_DOUBLE,
  SG_KNOB_U64 = SG_VALUE_U64,
} sg_knob_type;

typedef enum sg_knob_land {
  SG_LAND_CTL,   /* land_offset into sg_ctl_opts, the knob's own type */
  SG_LAND_SCHED, /* land_offset into sg_sched_opts */
  SG_LAND_FN,    /* land_fn converts */
  SG_LAND_NONE,  /* applied by the owner of the loop (land_note says how) */
} sg_knob_land;

/* One row as data, for landing, listing and the docs. */
typedef struct sg_knob {
  const char *name;
  sg_knob_type type;
  size_t offset;               /* of the field in sg_knobs */
  double def, min, max;
  unsigned flags;
  const char *sim;
  sg_knob_land land;
  size_t land_offset;          /* in sg_ctl_opts or sg_sched_opts */
  const char *land_field;      /* the field it lands in, or the setter */
  void (*land_fn)(const sg_knobs *k, sg_ctl_opts *o); /* SG_LAND_FN */
  const char *land_note;       /* SG_LAND_NONE */
  const char *help;
} sg_knob;

/* The table and its length. */
const sg_knob *sg_knobs_table(size_t *n);

/* Knob r of k as a number (on/off: 1/0), and set from one. */
double sg_knobs_get(const sg_knobs *k, const sg_knob *r);
void sg_knobs_put(sg_knobs *k, const sg_knob *r, double v);

/* Sets knob r of k from text through the one value parser (sg_value.h);
 * SG_EINVAL "expected WHAT, got \"TEXT\"" when text is not a value of r's
 * range (the caller says which key it was). */
int sg_knobs_set(sg_knobs *k, const sg_knob *r, const char *text, sg_err *err);

/* The key `specgen sim --set` takes knob r by (the word after "--set " in
 * its sim column) into buf; false, buf "", when the sim takes it from a
 * configuration or not at all. */
bool sg_knob_sim_key(const sg_knob *r, char *buf, size_t n);

/* The row whose name (the run key) is name; NULL if none. */
const sg_knob *sg_knobs_find(const char *name);

/* Every knob at its default. */
void sg_knobs_default(sg_knobs *k);

/* Writes every knob that lands in o (when not NULL) and in s (when not
 * NULL); leaves the other fields of both as they were. */
void sg_knobs_land(const sg_knobs *k, sg_ctl_opts *o, sg_sched_opts *s);

/* The Markdown table of the knobs that docs/configuration.md holds between
 * its "knobs" markers. */
void sg_knobs_doc(FILE *f);

#endif
