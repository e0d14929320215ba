/* sg_cuda_judge.h: the judge's device kernels and the pure rules of its
 * verdicts (docs/gpu.md, "What is checked").
 *
 * The judge process of the cuda evaluator draws inputs on the device (a
 * seeded counter-based generator: no host generation, no uploads), poisons
 * outputs, and compares the candidate's outputs with the reference's on the
 * device. Those kernels are CUDA source (sg_cuda_judge_src) that the
 * evaluator compiles into the reference's shared object, a trusted build
 * that the candidate's process never loads. The structures below cross from
 * the judge's C code into that source by value; both sides declare them
 * identically (plain doubles and 64-bit integers, no padding surprises).
 */
#ifndef SG_CUDA_JUDGE_H
#define SG_CUDA_JUDGE_H

#include "eval/sg_task.h"

#include <stdbool.h>
#include <stdint.h>

#define SG_JUDGE_MAX_CHOICE 16

/* How to draw one input on the device. */
typedef struct sg_judge_fill {
  int64_t dtype;      /* sg_dtype */
  int64_t dist;       /* 0 normal(p0, p1), 1 uniform[p0, p1), 2 choice */
  int64_t structure;  /* 0 none, 1 symmetric, 2 upper, 3 lower, 4 diagonal */
  int64_t nvalues;
  int64_t numel;
  int64_t side;       /* the trailing square matrix's side, with structure */
  double p0, p1;
  double values[SG_JUDGE_MAX_CHOICE];
} sg_judge_fill;

/* What one comparison of a candidate's output with the reference's found. */
typedef struct sg_judge_stats {
  int64_t n;
  int64_t bad;           /* outside atol + rtol * |ref| (the given pair) */
  int64_t unwritten;     /* NaN in the candidate, not in the reference */
  int64_t first_bad;     /* flat index; -1 if none */
  int64_t cand_varies;   /* elements unequal to the candidate's first */
  int64_t ref_varies;    /* elements unequal to the reference's first */
  int64_t ref_nonfinite; /* NaN or infinite in the reference */
  double max_abs_ref;    /* the reference's magnitude */
  double max_abs_err, max_rel_err;
  double max_excess;     /* max over elements of |c - r| - rtol * |r|, >= 0;
                            infinite where one side is NaN and not the other */
  double first_ref, first_cand;
} sg_judge_stats;

/* The source of the judge's kernels and their C entry points:
 *   int sg_judge_fill(void *dst, const sg_judge_fill *f, uint64_t seed,
 *                     uint64_t arg);
 *   int sg_judge_poison(void *dst, int64_t bytes);
 *   int sg_judge_compare(const void *ref, const void *cand, int64_t n,
 *                        int64_t dtype, double atol, double rtol,
 *                        sg_judge_stats *out);          (host pointer)
 *   int sg_judge_count_ne(const void *a, const void *b, int64_t bytes,
 *                         int64_t *out);                (bitwise)
 * each synchronous, returning a cudaError_t. */
extern const char sg_cuda_judge_src[];

/* The fill spec of input a as the task draws it (variant 0), or for a
 * domain trial (variant > 0): floating inputs drawn from normal(0, s * m),
 * m the task distribution's magnitude and s the variant's scale (signed
 * values at 1, 1e-3 and 1e3 of it); integer and choice inputs (indices,
 * labels, signs) as the task draws them. */
void sg_judge_fill_spec(const sg_task_arg *a, int variant, sg_judge_fill *f);

/* The scales of the domain trials, in order: variant v > 0 uses
 * SG_JUDGE_DOMAIN_SCALES[v - 1]. */
#define SG_JUDGE_DOMAIN_TRIALS 3
extern const double SG_JUDGE_DOMAIN_SCALES[SG_JUDGE_DOMAIN_TRIALS];

/* Timing stops early once it is precise: after at least
 * SG_JUDGE_MIN_TIMED timed runs, when for both sides the 95% confidence
 * interval of the median call is within SG_JUDGE_TIMING_CI of that side's
 * work time (its median less the empty call's). */
#define SG_JUDGE_MIN_TIMED 10
#define SG_JUDGE_TIMING_CI 0.01

/* Whether the n calls v (ms) pin their median down: its 95% confidence
 * half-width (normal approximation, 1.96 * 1.2533 * sigma / sqrt(n), sigma
 * estimated robustly as 1.4826 times the median absolute deviation) is at
 * most SG_JUDGE_TIMING_CI of the median less overhead_ms. False for n < 2
 * and where nothing is left after the overhead. */
bool sg_judge_timing_settled(const double *v, size_t n, double overhead_ms);

/* specgen's absolute tolerance for one output of one trial: the task's atol
 * scaled by how the reference's magnitude m (its largest absolute value)
 * compares with its magnitude m0 on the task's own inputs (so domain trials
 * at other scales are judged at their scale), and never above
 * SG_JUDGE_ATOL_CAP * m (so an output of 1e-6 is checked at 1e-6's scale,
 * not at an atol meant for outputs near 1). m0 <= 0 means unknown (taken
 * as m). */
#define SG_JUDGE_ATOL_CAP 1e-2
double sg_judge_atol(double atol, double m, double m0);

/* KernelBench's own check: torch.allclose with atol = rtol = 1e-2. */
#define SG_JUDGE_KB_ATOL 1e-2
#define SG_JUDGE_KB_RTOL 1e-2

/* The shortcut rules: true (with the reason in why) when the candidate's
 * output is constant while the reference's is not, or equals an input
 * bitwise (equal_input >= 0: that input's index) while the reference's does
 * not. */
bool sg_judge_shortcut(const sg_judge_stats *s, int equal_input,
                       const char *input_name, const char *output_name,
                       char *why, size_t why_len);

#endif
