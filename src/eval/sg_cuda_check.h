/* sg_cuda_check.h: the pure pieces of the cuda evaluator, testable without a
 * GPU: the candidate rules (what is forbidden in a candidate's source) and
 * the launcher shim that adapts a candidate's entry function to one calling
 * convention. (Inputs are drawn and outputs compared on the device, by the
 * judge's kernels: sg_cuda_judge.h.)
 */
#ifndef SG_CUDA_CHECK_H
#define SG_CUDA_CHECK_H

#include "common/sg_buf.h"
#include "common/sg_error.h"
#include "eval/sg_task.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The candidate rules: returns true when the source (comments removed)
 * uses something forbidden, with the rule broken in why (size len). Forbidden:
 * vendor libraries that do the work (cuBLAS, cuBLASLt, cuDNN, cuSPARSE,
 * cuSOLVER, cuFFT, CUTLASS), loading code at run time (dlopen, dlsym), and
 * starting processes (system, popen, fork, exec*). */
bool sg_cuda_source_forbidden(const char *src, size_t len, char *why,
                              size_t why_len);

/* Writes into out the launcher shim for task: a CUDA C++ file that includes
 * the candidate (include_name) and defines
 *   extern "C" void sg_launch(void **args)
 * calling the task's entry with each argument cast to its declared type
 * (inputs and outputs as device pointers, scalars by value). */
void sg_cuda_shim(const sg_task *task, const char *include_name, sg_buf *out);

#endif
