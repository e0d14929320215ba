/* sg_eval_cuda.h: the cuda evaluator (docs/gpu.md), internals exposed for its
 * tests and benchmark; other modules use sg_eval.h.
 *
 * compile (CPU): the candidate's rules are checked, a launcher shim is
 * written next to it, and nvcc builds both into a shared object; the task's
 * reference is built the same way (linked with cuBLAS) once and cached.
 * run (device): specgen-cuda-run checks and times them in a sandboxed child.
 * profile (device): ncu runs specgen-cuda-run in profile mode over exactly the
 * candidate's kernels; sg_ncu turns its CSV into metrics and a verdict.
 */
#ifndef SG_EVAL_CUDA_H
#define SG_EVAL_CUDA_H

#include "eval/sg_eval.h"

int sg_eval_cuda_compile(const sg_task *task, const char *source, size_t len,
                         const sg_eval_opts *opts, sg_eval_build *build,
                         sg_eval_result *r, sg_err *err);
int sg_eval_cuda_run(const sg_task *task, const sg_eval_build *build,
                     const sg_eval_opts *opts, sg_eval_result *r, sg_err *err);
/* The next candidate validated here will be of task with build's
 * reference and opts: its runner starts ahead (sg_cuda_ahead_expect). */
void sg_eval_cuda_expect(const sg_task *task, const sg_eval_build *build,
                         const sg_eval_opts *opts);
int sg_eval_cuda_profile(const sg_task *task, const sg_eval_build *build,
                         const sg_eval_opts *opts, sg_eval_result *r,
                         sg_err *err);
/* A candidate of task with build's reference will be profiled on
 * opts->device soon: its runner (ncu over specgen-cuda-run --go-fd) starts
 * now, unless one waits already (sg_cuda_ahead_start_argv). */
void sg_eval_cuda_expect_profile(const sg_task *task, const sg_eval_build *build,
                                 const sg_eval_opts *opts);

/* Shared with the kernelbench evaluator (sg_eval_kernelbench.c). */
struct sg_sandbox_outcome;
struct sg_sandbox_limits;
/* A device-side child's JSON result (the runner's keys) into r; a child that
 * timed out, died or wrote nothing is reported as such. */
void sg_eval_cuda_take_outcome(const struct sg_sandbox_outcome *o,
                               double timeout_s, sg_eval_result *r);
/* Sandbox limits for a device-side child: no address-space limit (CUDA maps
 * far more than it uses), the wall clock as the bound. */
void sg_eval_cuda_runner_limits(const sg_eval_build *build, double wall_s,
                                struct sg_sandbox_limits *lim);
/* Waits until the validations before have ended on the device (their
 * judges' teardown must not overlap a timing or a profile; one that
 * outlasts 10 s is killed); returns the seconds waited. */
double sg_eval_cuda_hand_over(void);
/* A profile's target started ahead: its command line with a go descriptor
 * (SG_SANDBOX_PASS_FD(0)) in place of the candidate and seed, which its go
 * line gives (sg_cuda_ahead_run_argv). */
typedef struct sg_eval_ncu_ahead {
  int device;
  char *const *target;
  const char *cand;
  uint64_t seed;
} sg_eval_ncu_ahead;
/* Runs ncu over target (a program that brackets the candidate's work with
 * cuProfilerStart/Stop) and fills r->metrics and r->profile_text; with
 * ahead, over ahead's target started ahead instead (the one waiting, else
 * one started now; none is started after it). Waits first until every
 * runner started ahead is ready (sg_cuda_ahead_settle) and the judges
 * before have ended: nothing starts beside the replays. */
int sg_eval_cuda_ncu(const sg_task *task, const sg_eval_build *build,
                     const sg_eval_opts *opts, char *const target[],
                     const sg_eval_ncu_ahead *ahead, sg_eval_result *r, sg_err *err);
/* Starts ncu over ahead_target on device now (as sg_eval_cuda_ncu would
 * run it), unless one waits already: a profile comes soon. */
void sg_eval_cuda_ncu_expect(const sg_eval_build *build, const sg_eval_opts *opts,
                             int device, char *const ahead_target[]);

/* The kernelbench evaluator (docs/gpu.md): a Python harness under the user's
 * PyTorch (python/specgen_kb). */
extern const sg_evaluator sg_evaluator_kernelbench;

/* A program the evaluator runs: $SPECGEN_<VAR> if set, else the first of the
 * candidates that exists, else NULL. The caller frees it. Exposed for tests. */
char *sg_eval_cuda_find_nvcc(void);
char *sg_eval_cuda_find_runner(void);
char *sg_eval_cuda_find_ncu(void);
char *sg_eval_cuda_find_sanitizer(void);

/* compute-sanitizer's report cut to its first max_lines finding lines
 * (the "========= " prefix dropped) and its ERROR SUMMARY line; the caller
 * frees it. Pure. The run stage runs the sanitizer first when
 * $SPECGEN_CUDA_SANITIZE names a tool (docs/gpu.md). */
char *sg_eval_cuda_sanitizer_summary(const char *text, size_t max_lines);

/* The nvcc target flag: $SPECGEN_CUDA_ARCH (e.g. sm_80) or sm_90. */
const char *sg_eval_cuda_arch(void);

/* "cuda:N" (or NULL: cuda:0) to N; errors name the device. */
int sg_eval_cuda_parse_device(const char *device, int *ordinal, sg_err *err);

#endif
