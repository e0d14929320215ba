/* sg_eval_cpu_judge.h: the trusted side of the cpu evaluator's run stage:
 * inputs, the reference's and the candidate's workers (each in its own
 * sandbox), timing and checking of every call (docs/eval.md). */
#ifndef SG_EVAL_CPU_JUDGE_H
#define SG_EVAL_CPU_JUDGE_H

#include "common/sg_error.h"
#include "eval/sg_eval.h"
#include "eval/sg_task.h"

#include <stdint.h>

typedef struct sg_eval_cpu_judge_opts {
  const char *cand_so, *ref_so; /* shared objects readable inside work_dir */
  const char *work_dir;         /* the scratch directory (writable there) */
  int cpu;                      /* the core both workers are pinned to */
  int trials, warmups, runs;
  uint64_t seed;
  double budget_s;              /* wall clock the kernel's calls may take */
  double cpu_limit_s;           /* RLIMIT_CPU of each worker */
} sg_eval_cpu_judge_opts;

/* The rule on CPU time a worker uses between its calls (its "gap"): the
 * reference's gaps set the machine's noise floor; a candidate's gap over
 * the floor plus 2 ms counts, and the second that counts (or one over the
 * floor plus 20 ms) rejects the kernel. Pure; the judge feeds it. */
typedef struct sg_eval_cpu_gaps {
  int64_t ref_floor_ns;  /* the reference's largest gap so far */
  int over;              /* the candidate's gaps that counted so far */
} sg_eval_cpu_gaps;

void sg_eval_cpu_gaps_reference(sg_eval_cpu_gaps *g, int64_t gap_ns);
/* Counts the candidate's gap; true when it rejects the kernel. */
bool sg_eval_cpu_gaps_candidate(sg_eval_cpu_gaps *g, int64_t gap_ns);

/* Runs the protocol and fills r (status, message, times, errors, isolation).
 * *log (if log is not NULL) gets the judge's own record: "order" of the
 * calls ("r"/"c" warm-ups, "R"/"C" timed), "ref_ns"/"cand_ns" (the timed
 * calls), "phase_s" (spawn: both sandboxes up; setup: that and both
 * objects loaded; correctness, timing, teardown; workers_cpu: both
 * workers' CPU time at the end, when both were still running), "max_gap_ns"
 * (the largest CPU time either worker used between two calls) and
 * "ref_max_gap_ns" (the reference's alone: the noise floor of the gap rule).
 * Returns negative only when the evaluation could not be made at all. */
int sg_eval_cpu_judge(const sg_task *task, const sg_eval_cpu_judge_opts *jo,
                      sg_eval_result *r, json_t **log, sg_err *err);

/* The worker program the judge runs: specgen-eval-worker of the build
 * tree (when this program runs from it) or the installed one; NULL when
 * neither is there (or nobody may run it), and the judge runs this
 * executable as the worker. */
const char *sg_eval_cpu_worker_program(void);
/* Makes sg_eval_cpu_worker_program answer prog from now on (NULL: this
 * executable), for tests of both ways. */
void sg_eval_cpu_worker_program_set(const char *prog);

#endif
