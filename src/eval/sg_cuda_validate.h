/* sg_cuda_validate.h: the cuda evaluator's judge (docs/gpu.md, "What is
 * checked").
 *
 * Runs in specgen-cuda-run, the trusted side: it never loads the
 * candidate's code. The candidate and the reference run in server processes
 * (sg_cuda_server.h) on buffers this process allocates, fills and reads.
 */
#ifndef SG_CUDA_VALIDATE_H
#define SG_CUDA_VALIDATE_H

#include "eval/sg_cuda_harness.h"

/* Validates cfg->cand_so against cfg->ref_so (which must carry the judge's
 * kernels, sg_cuda_judge.h). Must be called before this process initializes
 * CUDA (it forks the servers first). Returns the outcome object; never
 * NULL. */
json_t *sg_cuda_validate_run(const sg_cuda_harness_cfg *cfg);

/* Stops the servers of the judge that returned (after its result is out:
 * their teardown, a CUDA context each, is not the verdict's to wait for). */
void sg_cuda_validate_end(void);

#endif
