/* bench_eval.c: what one evaluation of the cpu evaluator costs, phase by
 * phase, next to the kernel's own run time.
 *
 * For each built-in cpu task, its ok-fast example (else ok-reference) is
 * validated REPS times (default 3) with the default protocol (3 correctness
 * sets, 10 warm-ups and 40 timed runs of each side): once with a cold
 * reference cache (both shared objects compiled) and then warm (the
 * reference's build reused). Columns are medians over the repetitions:
 *   compile_cold_s / compile_warm_s  the CPU stage, cold and warm cache
 *   sandbox_s    fork, sandbox setup, teardown and the report's parsing
 *                (run_s minus the phases the child timed itself)
 *   load_s correct_s timing_s recheck_s  the child's phases
 *   run_s        the whole device stage
 *   cand_ms ref_ms  the kernel's and the reference's median run time
 *   kernel_share  50 candidate calls (what timing needs of the kernel
 *                itself) over compile_warm_s + run_s
 * Usage: bench_eval [REPS] [TASK...]
 */
#include "common/sg_stats.h"
#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "eval/sg_eval.h"
#include "eval/sg_eval_cpu.h"
#include "eval/sg_task.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { COLD, WARM, SANDBOX, LOAD, CORRECT, TIMING, RECHECK, RUN, CAND, REF, NCOL };

static double phase(const json_t *log, const char *name) {
  const json_t *v = json_object_get(json_object_get(log, "phase_s"), name);
  return json_is_number(v) ? json_number_value(v) : 0;
}

static int bench_task(const sg_task *t, int reps) {
  char *path = sg_asprintf("%s/examples/ok-fast.c", t->dir);
  if (access(path, R_OK) != 0) {
    free(path);
    path = sg_asprintf("%s/examples/ok-reference.c", t->dir);
  }
  char *src = NULL;
  size_t len = 0;
  sg_err err;
  if (sg_file_read(path, 1 << 22, &src, &len, &err) != 0) {
    fprintf(stderr, "%s\n", err.msg);
    free(path);
    return 1;
  }
  double *col[NCOL];
  for (int c = 0; c < NCOL; c++)
    col[c] = sg_calloc((size_t)reps, sizeof(double));
  char cache[] = "/tmp/sg_bench_cache_XXXXXX";
  if (!mkdtemp(cache)) {
    perror("mkdtemp");
    return 1;
  }
  for (int rep = 0; rep < reps; rep++) {
    for (int pass = 0; pass < 2; pass++) {
      if (pass == 0) { /* cold: an empty cache */
        sg_rm_rf(cache, &err);
        sg_mkdir_p(cache, &err);
      }
      setenv("SPECGEN_CACHE_DIR", cache, 1);
      sg_eval_opts o;
      sg_eval_opts_default(&o);
      sg_eval_build b;
      sg_eval_result r;
      sg_eval_result_init(&r);
      if (sg_eval_compile(t, src, len, &o, &b, &r, &err) != 0 || r.status != SG_EVAL_OK) {
        fprintf(stderr, "%s: compile: %s %s\n", t->name, err.msg, r.message ? r.message : "");
        return 1;
      }
      col[pass == 0 ? COLD : WARM][rep] = r.compile_s;
      if (pass == 1) {
        json_t *log = NULL;
        if (sg_eval_cpu_run_logged(t, &b, &o, &r, &log, &err) != 0 || r.status != SG_EVAL_OK) {
          fprintf(stderr, "%s: run: %s %s\n", t->name, err.msg, r.message ? r.message : "");
          return 1;
        }
        col[LOAD][rep] = phase(log, "load");
        col[CORRECT][rep] = phase(log, "correctness");
        col[TIMING][rep] = phase(log, "timing");
        col[RECHECK][rep] = phase(log, "recheck");
        col[RUN][rep] = r.run_s;
        col[SANDBOX][rep] = r.run_s - col[LOAD][rep] - col[CORRECT][rep] -
                            col[TIMING][rep] - col[RECHECK][rep];
        col[CAND][rep] = r.cand_ms;
        col[REF][rep] = r.ref_ms;
        json_decref(log);
      }
      sg_eval_build_free(&b);
      sg_eval_result_free(&r);
    }
  }
  double m[NCOL];
  for (int c = 0; c < NCOL; c++)
    m[c] = sg_stats_median(col[c], (size_t)reps);
  double share = 50 * m[CAND] / 1000 / (m[WARM] + m[RUN]);
  printf("%-24s %6.2f %6.2f %7.3f %6.3f %7.2f %7.2f %7.2f %6.2f %9.3f %9.3f %6.1f%%\n",
         t->name, m[COLD], m[WARM], m[SANDBOX], m[LOAD], m[CORRECT], m[TIMING],
         m[RECHECK], m[RUN], m[CAND], m[REF], 100 * share);
  fflush(stdout);
  sg_rm_rf(cache, &err);
  for (int c = 0; c < NCOL; c++)
    free(col[c]);
  free(src);
  free(path);
  return 0;
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 3;
  if (reps < 1)
    reps = 1;
  sg_task **ts = NULL;
  size_t n = 0;
  sg_err err;
  if (sg_task_list(&ts, &n, &err) != 0) {
    fprintf(stderr, "bench_eval: %s\n", err.msg);
    return 1;
  }
  printf("# cpu evaluator cost per evaluation, medians of %d (seconds unless _ms)\n", reps);
  printf("%-24s %6s %6s %7s %6s %7s %7s %7s %6s %9s %9s %7s\n", "task",
         "cold_s", "warm_s", "sandbox", "load", "correct", "timing", "recheck",
         "run_s", "cand_ms", "ref_ms", "kernel");
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(ts[i]->evaluator, "cpu") != 0)
      continue;
    bool want = argc <= 2;
    for (int a = 2; a < argc; a++)
      want |= strcmp(argv[a], ts[i]->name) == 0;
    if (want)
      rc |= bench_task(ts[i], reps);
  }
  sg_task_list_free(ts, n);
  return rc;
}
