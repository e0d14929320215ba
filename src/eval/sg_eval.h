/* sg_eval.h: evaluating a candidate kernel, the contract every evaluator
 * (cpu, cuda, kernelbench) keeps.
 *
 * An evaluation has a CPU stage, compile, and a device stage, run (validate:
 * correctness on fresh random inputs, then timing against the reference) or
 * profile (hardware metrics). The scheduler takes a device only for the
 * device stage. Every stage that completes fills an sg_eval_result, whatever
 * the candidate did; a negative return means specgen itself could not
 * evaluate (the error says why), never that the candidate was bad.
 */
#ifndef SG_EVAL_H
#define SG_EVAL_H

#include "common/sg_error.h"
#include "config/sg_knobs.h"
#include "core/sg_outcome.h"
#include "eval/sg_task.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* sg_eval_status and its names: core/sg_outcome.h. */

/* The evaluation timeout: the longest one device stage (a validation or a
 * profile) may take, s. One name from the flag to the evaluator: the knob
 * eval-timeout (config/sg_knobs.h, `specgen run`, `specgen eval` and
 * `specgen bench --eval-timeout`), then eval_timeout in sg_knobs,
 * sg_pool_request, the worker protocol and sg_eval_opts; 0 in any of them
 * means the row's default, this. */
#define SG_EVAL_TIMEOUT_S SG_KNOB_DEFAULT(SG_KNOB_EVAL_TIMEOUT)

typedef struct sg_eval_opts {
  const char *device;      /* "cpu:N" or "cuda:N"; NULL: the evaluator's default */
  int correctness_trials;  /* fresh random input sets; at least 3 */
  int warmup_runs;         /* 10 */
  int timed_runs;          /* 40 */
  double compile_timeout_s;
  double eval_timeout;     /* wall clock for the sandboxed child
                              (SG_EVAL_TIMEOUT_S; 0: the same) */
  const char *work_dir;    /* scratch root; NULL: a fresh temporary directory */
  unsigned long long seed; /* for the random inputs; 0: from the clock */
  bool strict;             /* tighter tolerances where the evaluator has them */
  /* The kernelbench evaluator's heavy-operator rule off: only for
   * `specgen bench --self-check`, whose candidates are the references
   * themselves; no other command sets it. */
  bool heavy_rule_off;
  /* The kernelbench evaluator also checks the self-check's wrong candidate
   * beside the candidate (a reference given back as itself), against the
   * same reference outputs: only for `specgen bench --self-check both`,
   * with heavy_rule_off; no other command sets it. Its verdict comes in
   * the result's self_check_wrong. */
  bool also_wrong;
} sg_eval_opts;

/* Fills opts with the defaults above. */
void sg_eval_opts_default(sg_eval_opts *opts);
/* The evaluation timeout opts give: eval_timeout, or SG_EVAL_TIMEOUT_S for
 * 0 (or no opts). */
double sg_eval_timeout(const sg_eval_opts *opts);

typedef struct sg_eval_result {
  sg_eval_status status;
  char *message;           /* what an LLM needs to fix the kernel; owned */
  double speedup;          /* ref_ms / cand_ms; NAN unless ok */
  double ref_ms, ref_mean_ms;   /* median and mean; NAN when not timed */
  double cand_ms, cand_mean_ms;
  double compile_s, run_s;
  double max_abs_err, max_rel_err; /* over all trials; NAN when not checked */
  long long first_mismatch;        /* flat index, -1 if none */
  bool network_isolated;   /* the candidate ran in its own network namespace */
  /* what isolated the candidate (cpu evaluator: user, mount, pid, ipc,
   * network, unprivileged, seccomp, separate_judge), or NULL; owned */
  json_t *isolation;
  json_t *metrics;         /* profiling metrics (an object) or NULL; owned */
  char *profile_text;      /* short profiling verdict for the LLM, or NULL */
  unsigned long long seed; /* the seed the inputs were drawn from; 0: none */
  /* KernelBench's own verdict on the same candidate (its allclose at
   * atol = rtol = 1e-2 on the task's own inputs, nothing else checked),
   * beside specgen's stricter one in status: "ok", "numerical_error", ...;
   * NULL where the evaluator does not give it (cpu). Owned. */
  char *kernelbench_status;
  /* Where the device stage's time went, by its own clock (cuda: context_s,
   * ready_s, correctness_s, timing_wall_s, and started_ahead, ahead_s,
   * go_wait_s, warm_up_ms for a runner started ahead; a profile's
   * settle_s, the wait before it, and started_ahead; docs/gpu.md), or
   * NULL. Owned. */
  json_t *stages;
  /* With sg_eval_opts.also_wrong: the wrong candidate's verdict, as the
   * harness gave it (status, message, kernelbench_status, max_abs_err,
   * ...; status "undecided" when the validation ended before it was
   * decided), else NULL. Owned. */
  json_t *self_check_wrong;
} sg_eval_result;

void sg_eval_result_init(sg_eval_result *r);
void sg_eval_result_free(sg_eval_result *r);
/* The result as a JSON object (the keys of `specgen eval --json`). */
json_t *sg_eval_result_to_json(const sg_eval_result *r);
/* The reverse, for results that crossed a process boundary. */
int sg_eval_result_from_json(const json_t *j, sg_eval_result *r, sg_err *err);

/* What compile produced, handed to run or profile. */
typedef struct sg_eval_build {
  char *work_dir;          /* owned scratch directory, removed by free */
  char *artifact;          /* the compiled candidate (e.g. a shared object) */
  char *reference_artifact;
  bool owns_work_dir;
} sg_eval_build;

void sg_eval_build_free(sg_eval_build *b);

/* Names a build's reference by its bytes: a copy in dir (made once), so
 * that builds of one task found in a build cache (each entry holds its own
 * copy) name one reference, and a cuda runner started ahead, keyed by its
 * command line, serves them all. Does nothing for evaluators whose runners
 * do not name the reference. */
int sg_eval_build_share_reference(const sg_task *task, sg_eval_build *build,
                                  const char *dir, sg_err *err);

/* The CPU stage. Returns 0 when it completed: r->status is then ok (and
 * *build is ready) or compile_error / rejected. */
int sg_eval_compile(const sg_task *task, const char *source, size_t len,
                    const sg_eval_opts *opts, sg_eval_build *build,
                    sg_eval_result *r, sg_err *err);

/* The device stage of validation: correctness, then timing. */
int sg_eval_run(const sg_task *task, const sg_eval_build *build,
                const sg_eval_opts *opts, sg_eval_result *r, sg_err *err);

/* Says that the next candidate this process validates on opts->device is
 * of task, with build's reference and opts: an evaluator with runners
 * started ahead (sg_cuda_ahead.h, in a process that said it validates a
 * sequence) starts that one's runner when the current run is ready,
 * instead of another for the current task. For a caller that knows its
 * order (`specgen bench`, the GPU check); a hint, never an error. task
 * NULL: nothing the caller knows of comes next; none is started. */
void sg_eval_expect(const sg_task *task, const sg_eval_build *build,
                    const sg_eval_opts *opts);

/* Says, after sg_eval_expect, that the candidate after that one is of task
 * (build, opts as there): its runner is started with the next one's, so
 * that each has the time of two runs to start. Two runs ahead at most
 * (sg_cuda_ahead.h); a hint, never an error; task NULL: nothing. */
void sg_eval_expect_then(const sg_task *task, const sg_eval_build *build,
                         const sg_eval_opts *opts);

/* Says that a candidate of task (with build's reference) will be profiled
 * on opts->device soon, typically once the validation about to run finds
 * it valid: an evaluator whose profiles have runners started ahead (cuda,
 * in a process that said it validates a sequence) starts that runner now,
 * so that the profiler's start-up overlaps the validation. A hint, never an
 * error; the runner waits for a later candidate of the task when this one
 * fails. */
void sg_eval_expect_profile(const sg_task *task, const sg_eval_build *build,
                            const sg_eval_opts *opts);

/* The device stage of profiling: hardware metrics into r->metrics and
 * r->profile_text. */
int sg_eval_profile(const sg_task *task, const sg_eval_build *build,
                    const sg_eval_opts *opts, sg_eval_result *r, sg_err *err);

/* compile then run, for one-shot use (`specgen eval`). */
int sg_eval_validate(const sg_task *task, const char *source, size_t len,
                     const sg_eval_opts *opts, sg_eval_result *r, sg_err *err);

/* How an evaluator's profile stage works. */
typedef enum sg_eval_profiling {
  SG_PROFILE_COUNTERS,  /* hardware counters (ncu): the profile stage */
  SG_PROFILE_TIMING,    /* no counters: a profile is a second, independent
                           timing run (the run stage again) */
} sg_eval_profiling;

/* One evaluator; sg_eval_* dispatch on task->evaluator. It describes itself,
 * so that nothing outside src/eval decides by its name. */
typedef struct sg_evaluator {
  const char *name;
  const char *device_kind;       /* the devices it runs on: "cpu" or "cuda"
                                    (the prefix of `--devices KIND:N`) */
  bool gpu;                      /* those devices are GPUs */
  bool hardware_counters;        /* its profile reads hardware counters */
  sg_eval_profiling profiling;
  int (*compile)(const sg_task *, const char *, size_t, const sg_eval_opts *,
                 sg_eval_build *, sg_eval_result *, sg_err *);
  int (*run)(const sg_task *, const sg_eval_build *, const sg_eval_opts *,
             sg_eval_result *, sg_err *);
  int (*profile)(const sg_task *, const sg_eval_build *, const sg_eval_opts *,
                 sg_eval_result *, sg_err *);
  /* sg_eval_expect; NULL: nothing is started ahead */
  void (*expect)(const sg_task *, const sg_eval_build *, const sg_eval_opts *);
  /* sg_eval_expect_profile; NULL: profiles start no runner ahead */
  void (*expect_profile)(const sg_task *, const sg_eval_build *, const sg_eval_opts *);
} sg_evaluator;

/* The evaluator called name, or NULL. */
const sg_evaluator *sg_evaluator_find(const char *name);
/* The evaluators of this build, in their order of preference (i from 0;
 * NULL past the last): to list them, or to try those of a device kind. */
const sg_evaluator *sg_evaluator_at(size_t i);
/* The device kind of a device name ("cpu:0" -> "cpu"): a static string,
 * NULL for a kind no evaluator runs on. */
const char *sg_eval_device_kind(const char *device);
/* Whether device can evaluate at all, before anything is started on it:
 * cuda:N needs a CUDA driver that sees at least N+1 devices; cpu:N a core
 * this process may run on. SG_EINVAL with the reason ("cuda:0: no CUDA
 * driver: libcuda.so.1 not loadable: ...", "device cpu:99: no such core
 * here (...)") otherwise. */
int sg_eval_device_check(const char *device, sg_err *err);

#endif
