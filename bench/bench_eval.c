/* bench_eval.c: what one evaluation of the cpu evaluator costs, phase by
 * phase, next to the kernel's own run time.
 *
 * For each built-in cpu task, its ok-fast example (else ok-reference) is
 * validated REPS times (default 3) with the default protocol (3 correctness
 * sets, 10 warm-ups and 40 timed runs of each side): once with a cold
 * reference cache (both shared objects compiled) and then warm (the
 * reference's build reused). Columns are medians over the repetitions:
 *   compile_cold_s / compile_warm_s  the CPU stage, cold and warm cache
 *   setup_ms     both workers' sandboxes up and their objects loaded
 *   teardown_ms  both workers killed and reaped
 *   correct_s timing_s  the judge's phases (every timed call is checked)
 *   run_s        the whole device stage
 *   cand_ms ref_ms  the kernel's and the reference's median run time
 *   kernel_share  50 candidate calls (what timing needs of the kernel
 *                itself) over compile_warm_s + run_s
 * Before the tasks, one line: the sandbox alone, setup and teardown of an
 * isolated worker (namespaces, read-only view, nobody, filters, exec of this
 * program as a worker that exits at once), median of 20, and the same
 * without `isolate`.
 * Usage: bench_eval [REPS] [TASK...]
 */
#include "common/sg_stats.h"
#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "eval/sg_eval.h"
#include "common/sg_clock.h"
#include "eval/sg_eval_cpu.h"
#include "eval/sg_eval_cpu_worker.h"
#include "eval/sg_sandbox.h"
#include "eval/sg_task.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { COLD, WARM, SETUP, TEARDOWN, CORRECT, TIMING, RUN, CAND, REF, NCOL };

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
        col[SETUP][rep] = 1000 * phase(log, "setup");
        col[TEARDOWN][rep] = 1000 * phase(log, "teardown");
        col[CORRECT][rep] = phase(log, "correctness");
        col[TIMING][rep] = phase(log, "timing");
        col[RUN][rep] = r.run_s;
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
  printf("%-24s %6.2f %6.2f %8.1f %8.1f %7.2f %7.2f %6.2f %9.3f %9.3f %6.1f%%\n",
         t->name, m[COLD], m[WARM], m[SETUP], m[TEARDOWN], m[CORRECT], m[TIMING],
         m[RUN], m[CAND], m[REF], 100 * share);
  fflush(stdout);
  sg_rm_rf(cache, &err);
  for (int c = 0; c < NCOL; c++)
    free(col[c]);
  free(src);
  free(path);
  return 0;
}

/* Setup and teardown of one worker's sandbox, in ms. */
static double sandbox_once(bool isolate, const char *dir) {
  sg_sandbox_limits lim;
  sg_sandbox_limits_default(&lim);
  lim.isolate = isolate;
  lim.work_dir = dir;
  lim.pin_cpu = 0;
  static char *const env[] = {NULL};
  lim.env = env;
  /* a worker with no arguments exits at once ("bad arguments") */
  char *argv[] = {"specgen-eval-worker", NULL};
  double t0 = sg_clock_now_s();
  sg_sandbox *s = NULL;
  sg_err err;
  sg_sandbox_outcome o;
  if (sg_sandbox_spawn(&lim, argv, true, &s, &err) != 0) {
    fprintf(stderr, "sandbox: %s\n", err.msg);
    return NAN;
  }
  sg_sandbox_wait(s, -1, 5);
  sg_sandbox_finish(s, false, &o, &err);
  double ms = 1000 * (sg_clock_now_s() - t0);
  sg_sandbox_outcome_free(&o);
  return ms;
}

/* Medians of n of each, isolated and not, alternating (a busy machine's
 * load then weighs on both alike). */
static void sandbox_ms(int n, double *iso, double *plain) {
  double *x = sg_calloc((size_t)n, sizeof *x), *y = sg_calloc((size_t)n, sizeof *y);
  char dir[] = "/tmp/sg_bench_sandbox_XXXXXX";
  if (!mkdtemp(dir)) {
    *iso = *plain = NAN;
    return;
  }
  for (int i = 0; i < n; i++) {
    x[i] = sandbox_once(true, dir);
    y[i] = sandbox_once(false, dir);
  }
  sg_err ignore;
  sg_rm_rf(dir, &ignore);
  *iso = sg_stats_median(x, (size_t)n);
  *plain = sg_stats_median(y, (size_t)n);
  free(x);
  free(y);
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
  /* a real reference, so the worker is linked in */
  if (!((const volatile char *)sg_eval_cpu_worker_name)[0])
    return 1;
  double iso, plain;
  sandbox_ms(40, &iso, &plain);
  printf("# sandbox setup+teardown of one worker (exec, exits at once), medians of 40, "
         "alternating: isolated %.2f ms, not isolated %.2f ms\n", iso, plain);
  printf("# cpu evaluator cost per evaluation, medians of %d (seconds unless _ms)\n", reps);
  printf("%-24s %6s %6s %8s %8s %7s %7s %6s %9s %9s %7s\n", "task",
         "cold_s", "warm_s", "setup_ms", "tear_ms", "correct", "timing",
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
