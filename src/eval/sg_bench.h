/* sg_bench.h: whole sets of tasks in one command (`specgen bench`,
 * docs/usage.md "specgen bench"): which tasks, which candidate for each, and
 * the table and summary at the end. The device work is sg_eval's; the
 * command (src/cli/cmd_bench.c) spreads it over the devices.
 */
#ifndef SG_BENCH_H
#define SG_BENCH_H

#include "common/sg_buf.h"
#include "common/sg_error.h"
#include "eval/sg_eval.h"
#include "eval/sg_task.h"

#include <jansson.h>
#include <stdbool.h>

/* One row: a task, its candidate (NULL: none found) and the outcome. */
typedef struct sg_bench_row {
  sg_task *task;          /* owned */
  char *label;            /* "T7" in the paper suite, else NULL; owned */
  char *candidate;        /* path; owned; NULL when missing */
  bool evaluated;
  bool infra;             /* specgen failed (the error is in result.message) */
  sg_eval_result result;
  double wall_s;          /* compile + run */
} sg_bench_row;

typedef struct sg_bench {
  sg_bench_row *rows;
  size_t n;
  /* NULL, or the self-check's mode ("same", "wrong", "both"): the
   * candidates are the references (sg_bench_self_check), and the report
   * says so. */
  const char *self_check;
  /* "both": the wrong candidates' rows (mode "wrong"), one per row above,
   * their tasks borrowed; each row's verdict comes with the same row's
   * (sg_bench_take_wrong). Else NULL. Owned. */
  struct sg_bench *wrong;
  bool borrowed; /* the rows' tasks are another bench's: free leaves them */
} sg_bench;

/* The self-check of the kernelbench harness (`specgen bench --self-check
 * MODE`): every row's candidate becomes its own reference, written into
 * dir as <row>_<task>.py: mode "same" gives Model back as ModelNew (it must
 * come out ok at about 1.0x with the heavy-operator rule off); "wrong" a
 * ModelNew whose first output has a small slice perturbed past any
 * tolerance (python/specgen_kb/selfcheck.py; it must not come out ok).
 * "both" gives the "same" candidates and adds b->wrong, whose rows the
 * same validation decides (sg_eval_opts.also_wrong: each task's judge
 * checks both candidates against one set of reference outputs, and times
 * the same one only). Sets b->self_check. Errors: SG_EINVAL for another
 * mode or a task of another evaluator (named), or the file's error. */
int sg_bench_self_check(sg_bench *b, const char *mode, const char *dir, sg_err *err);

/* "both": row i's wrong row from row i (its result's self_check_wrong):
 * evaluated with that verdict; infra_error where row i is (the
 * evaluation failed for both); otherwise, with no verdict for it ("undecided":
 * the validation ended first), not evaluated, with a message saying why.
 * Nothing when b has no wrong rows or row i was not evaluated. */
void sg_bench_take_wrong(sg_bench *b, size_t i);

/* A row's validation time in mode "both": its run stage less the wrong
 * candidate's checks (its stages' wrong_s), the same candidate's own
 * checks and timing; NAN where it was not evaluated or has no wrong_s. */
double sg_bench_row_validation_s(const sg_bench_row *r);

/* A row's status as printed: missing, not_run, infra_error (specgen failed,
 * or the evaluator said so) or the result's status. */
const char *sg_bench_row_status(const sg_bench_row *r);

/* Whether the run failed (the command then exits 1): a row with a
 * candidate (b's, or its wrong rows') was not evaluated or came out
 * infra_error. */
bool sg_bench_failed(const sg_bench *b);

/* The tasks named by spec, appended to b in order: a suite ("paper": the
 * twenty built-in cuda tasks as T1-T20), a KernelBench file, a folder of
 * KernelBench files or of task directories, kernelbench:LEVEL or
 * kernelbench:LEVEL/N, a task directory or a built-in name. */
int sg_bench_add_tasks(sg_bench *b, const char *spec, sg_err *err);

/* The paper's T1-T20: the built-in cuda tasks ordered by their KernelBench
 * file ("kernelbench" key: level, then problem number); T1-T10 are level 1,
 * T11-T20 levels 2 and 3. Returns the position (0-based) for a sort, or a
 * large number for a task without the key. */
long sg_bench_paper_rank(const sg_task *t);

/* The candidate for task in dir: dir/NAME.EXT, else the first file of dir
 * whose name starts with the task's problem number and '_' (KernelBench's
 * "19_..."), else NULL. EXT by the task's language (py, cu, c). A run
 * directory (summary.json and best/) stands for its best/ kernels. */
char *sg_bench_find_candidate(const sg_task *task, const char *dir);

/* The task's example whose label is one of the comma-separated labels
 * ("ok-fast,ok-fused"), first match in that order; NULL if none. */
char *sg_bench_find_example(const sg_task *task, const char *labels);

/* The table (status, both verdicts, speedup, times) into out. */
void sg_bench_table(const sg_bench *b, sg_buf *out);

/* {"rows": [...], "summary": {...}}; with wrong rows ("both"):
 * {"self_check": "both", "same": {rows, summary}, "wrong": {rows, summary}},
 * each part as for its mode alone. A row not evaluated that has a message
 * (an undecided wrong row) carries it. */
json_t *sg_bench_json(const sg_bench *b);

/* The summary line(s) into out: counts by verdict, geometric mean speedup
 * of the specgen-ok rows, total time. */
void sg_bench_summary(const sg_bench *b, sg_buf *out);

void sg_bench_free(sg_bench *b);

#endif
