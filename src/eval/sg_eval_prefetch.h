/* sg_eval_prefetch.h: compiling candidates ahead, in child processes.
 *
 * Compile is a CPU stage (nvcc, a Python import): while one candidate runs
 * on the device, the next ones compile. sg_eval_compile_start forks a child
 * that runs sg_eval_compile and sends back the result and the build's paths
 * (the scratch directory stays; the parent owns it once it has finished);
 * sg_eval_compile_finish waits for it. Used by `specgen bench` and the GPU
 * check, which run many candidates in a row.
 */
#ifndef SG_EVAL_PREFETCH_H
#define SG_EVAL_PREFETCH_H

#include "eval/sg_eval.h"

#include <sys/types.h>

typedef struct sg_eval_pending {
  pid_t pid;
  int fd;
} sg_eval_pending;

/* Starts compiling source for task with opts (which must stay valid only
 * until this returns). */
int sg_eval_compile_start(const sg_task *task, const char *source, size_t len,
                          const sg_eval_opts *opts, sg_eval_pending *p,
                          sg_err *err);

/* Waits for it and fills build and r as sg_eval_compile would have; returns
 * what sg_eval_compile returned (its error in err). */
int sg_eval_compile_finish(sg_eval_pending *p, sg_eval_build *build,
                           sg_eval_result *r, sg_err *err);

#endif
