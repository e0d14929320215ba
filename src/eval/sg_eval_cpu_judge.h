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

/* Runs the protocol and fills r (status, message, times, errors, isolation).
 * *log (if log is not NULL) gets the judge's own record: "order" of the
 * calls ("r"/"c" warm-ups, "R"/"C" timed), "ref_ns"/"cand_ns" (the timed
 * calls), "phase_s" (setup, correctness, timing, teardown), "max_gap_ns".
 * Returns negative only when the evaluation could not be made at all. */
int sg_eval_cpu_judge(const sg_task *task, const sg_eval_cpu_judge_opts *jo,
                      sg_eval_result *r, json_t **log, sg_err *err);

#endif
