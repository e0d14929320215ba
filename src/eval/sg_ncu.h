/* sg_ncu.h: reading Nsight Compute's output and judging a kernel against the
 * roofline. Pure: it parses text that ncu printed and decides from numbers,
 * so it is tested from recorded ncu output (tests/gpu/data/) on any machine.
 *
 * Input: `ncu --csv --page raw --print-units base` output: a header row of
 * column names (ID, Process ID, ..., Kernel Name, ..., then one column per
 * metric), a row of units, then one row per profiled kernel launch. Lines
 * that ncu itself writes (==PROF==, ==WARNING==, ...) are skipped.
 */
#ifndef SG_NCU_H
#define SG_NCU_H

#include "common/sg_error.h"

#include <jansson.h>
#include <stddef.h>

typedef enum sg_ncu_bound {
  SG_NCU_MEMORY_BOUND,
  SG_NCU_COMPUTE_BOUND,
  SG_NCU_LATENCY_BOUND,
} sg_ncu_bound;

/* "memory-bound", "compute-bound", "latency-bound". */
const char *sg_ncu_bound_name(sg_ncu_bound b);

/* The roofline verdict from the speed-of-light percentages: below
 * SG_NCU_SOL_THRESHOLD_PCT on both, the kernel is latency-bound (it keeps
 * neither the memory system nor the SMs busy); otherwise it is bound by the
 * larger of the two. */
#define SG_NCU_SOL_THRESHOLD_PCT 60.0
sg_ncu_bound sg_ncu_verdict(double compute_pct, double memory_pct);

typedef struct sg_ncu_kernel {
  char *name;        /* the demangled name ncu printed */
  json_t *values;    /* metric name -> number (base units) or string */
} sg_ncu_kernel;

typedef struct sg_ncu_report {
  sg_ncu_kernel *kernels;  /* in launch order */
  size_t nkernels;
  json_t *units;           /* metric name -> unit */
} sg_ncu_report;

/* Parses ncu's CSV. Returns SG_EPARSE (with the line) when the text holds
 * no header row or a row whose field count differs from the header's. */
int sg_ncu_parse(const char *text, size_t len, sg_ncu_report *rep, sg_err *err);
void sg_ncu_report_free(sg_ncu_report *rep);

/* A metric of kernel k as a number; NAN when absent or not numeric. */
double sg_ncu_value(const sg_ncu_report *rep, size_t k, const char *metric);

/* The structured metrics: {"kernels": [{name, duration_ns, compute_sol_pct,
 * memory_sol_pct, dram_pct, l1_hit_pct, l2_hit_pct, achieved_occupancy_pct,
 * theoretical_occupancy_pct, occupancy_limit_*, registers_per_thread,
 * block_size, grid_size, warps_active_per_scheduler, top_stalls: [{reason,
 * cycles_per_instruction}], top_pipes: [{pipe, pct}], verdict}, ...],
 * "total_duration_ns", "verdict", "dominant_kernel"}. The caller owns it. */
json_t *sg_ncu_report_json(const sg_ncu_report *rep);

/* A short text for the LLM: the verdict with its numbers, per kernel (the
 * longest first, at most 4). The caller frees it. */
char *sg_ncu_report_text(const sg_ncu_report *rep);

/* What the cuda evaluator asks ncu for: --metrics with exactly the metrics
 * the report reads (a comma-separated list, some of it "regex:" patterns).
 * They need as many replay passes as the sections that hold them (21 on an
 * H200), but ncu no longer loads the sections nor computes and prints
 * their other 400-odd metrics (docs/benchmarks.md). */
const char *sg_ncu_metrics(void);

/* The ncu --section identifiers that hold those metrics (NULL-ended): asked
 * for instead when an ncu does not know a metric of the list. */
const char *const *sg_ncu_sections(void);

#endif
