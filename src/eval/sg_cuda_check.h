/* sg_cuda_check.h: the pure pieces of the cuda evaluator, testable without a
 * GPU: drawing inputs from a task's init specs, comparing outputs element by
 * element, statistics of timings, the candidate rules (what is forbidden in a
 * candidate's source) and the launcher shim that adapts a candidate's entry
 * function to one calling convention.
 */
#ifndef SG_CUDA_CHECK_H
#define SG_CUDA_CHECK_H

#include "common/sg_buf.h"
#include "common/sg_error.h"
#include "common/sg_rng.h"
#include "eval/sg_task.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Standard normal (Box-Muller) from the shared generator (common/sg_rng.h),
 * whose seed gives the same inputs on every machine. */
double sg_cuda_rng_normal(sg_rng *r);

/* Inputs are drawn in chunks of SG_CUDA_FILL_CHUNK elements, chunk c from
 * its own stream seeded by (seed, arg, c), so several threads can fill one
 * input and the values do not depend on how many did. */
#define SG_CUDA_FILL_CHUNK ((int64_t)1 << 20)

/* Draws elements [begin, end) of input a (chunk-aligned begin) per a->init
 * into host (the whole input's memory). */
void sg_cuda_fill_range(const sg_task_arg *a, void *host, uint64_t seed,
                        uint64_t arg_index, int64_t begin, int64_t end);

/* Applies a->init.structure (symmetric, upper, lower, diagonal) to every
 * trailing square matrix of a drawn input. */
void sg_cuda_apply_structure(const sg_task_arg *a, void *host);

/* Both, on the calling thread. */
void sg_cuda_fill_input(const sg_task_arg *a, void *host, uint64_t seed,
                        uint64_t arg_index);

/* The outcome of comparing a candidate's output with the reference's. */
typedef struct sg_cuda_cmp {
  int64_t n;             /* elements compared */
  int64_t bad;           /* elements outside atol + rtol * |ref| */
  int64_t unwritten;     /* NaN in the candidate where the reference has none:
                            most likely never written (outputs are poisoned) */
  int64_t first_bad;     /* flat index of the first bad element, -1 if none */
  double first_ref, first_cand;
  double max_abs, max_rel;
} sg_cuda_cmp;

/* Compares n elements of dtype; NaN in the candidate never passes unless the
 * reference is NaN there too. */
void sg_cuda_compare(sg_dtype dtype, const void *ref, const void *cand,
                     int64_t n, double atol, double rtol, sg_cuda_cmp *out);


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
