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
int sg_eval_cuda_profile(const sg_task *task, const sg_eval_build *build,
                         const sg_eval_opts *opts, sg_eval_result *r,
                         sg_err *err);

/* A program the evaluator runs: $SPECGEN_<VAR> if set, else the first of the
 * candidates that exists, else NULL. The caller frees it. Exposed for tests. */
char *sg_eval_cuda_find_nvcc(void);
char *sg_eval_cuda_find_runner(void);
char *sg_eval_cuda_find_ncu(void);

/* The nvcc target flag: $SPECGEN_CUDA_ARCH (e.g. sm_80) or sm_90. */
const char *sg_eval_cuda_arch(void);

/* "cuda:N" (or NULL: cuda:0) to N; errors name the device. */
int sg_eval_cuda_parse_device(const char *device, int *ordinal, sg_err *err);

#endif
