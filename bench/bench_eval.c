/* bench_eval.c: what one evaluation of the cpu evaluator costs, phase by
 * phase, next to the kernel's own run time.
 *
 * For each built-in cpu task, its ok-fast example (else ok-reference) is
 * validated REPS times (default 3) with the default protocol (3 correctness
 * sets, 10 warm-ups and 40 timed runs of each side): once with a cold
 * reference cache (both shared objects compiled) and then warm (the
 * reference's build reused). Columns are medians over the repetitions:
 *   compile_cold_s / compile_warm_s  the CPU stage, cold and warm cache
 *   spawn_ms     both workers' sandboxes up (fork, namespaces, exec)
 *   setup_ms     that, and both objects loaded (dlopen, filters)
 *   teardown_ms  both workers killed and reaped
 *   correct_s timing_s  the judge's phases (every timed call is checked)
 *   run_s        the whole device stage (wall clock)
 *   cpu_s        the CPU time of the device stage, this process's and the
 *                workers' (the judge reads their CPU clocks before it ends
 *                them; not this process's children's times, which may or
 *                may not hold a worker, as its waiter did or did not reap
 *                it before being killed): less moved by other processes
 *                on a busy machine than run_s
 *   cand_ms ref_ms  the kernel's and the reference's median run time
 *   kernel_share  50 candidate calls (what timing needs of the kernel
 *                itself) over compile_warm_s + run_s
 * Before the tasks, one line: the sandbox alone, setup and teardown of an
 * isolated worker (namespaces, read-only view, nobody, filters, exec of the
 * worker program, which exits at once), median of 40; the same with the
 * specgen program of the build tree exec'd as the worker (the fallback when
 * the worker program is not found: specgen loads forty shared libraries);
 * and the worker program without `isolate`. Then two isolated workers,
 * their sandboxes set up in turn and side by side (the judge's way).
 * Usage: bench_eval [REPS] [TASK...]
 *
 * bench_eval checks [TASK...]: the judge's own work per call, for each
 * task's buffers, CPU time of this thread, median of 5: fresh input values
 * (sg_eval_refresh of every input), the kernel's outputs poisoned, compared
 * with the reference's, and compared and poisoned in one pass (what the
 * judge does); a memcpy of the outputs for the machine's memory speed.
 */
#include "common/sg_stats.h"
#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "eval/sg_eval.h"
#include "common/sg_clock.h"
#include "eval/sg_eval_cpu.h"
#include "eval/sg_eval_cpu_judge.h"
#include "eval/sg_eval_cpu_worker.h"
#include "eval/sg_eval_worker_paths.h"
#include "eval/sg_sandbox.h"
#include "eval/sg_task.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

enum { COLD, WARM, SPAWN, SETUP, TEARDOWN, CORRECT, TIMING, RUN, CPU, CAND, REF, NCOL };

/* CPU seconds of this process so far. */
static double cpu_now(void) {
  struct rusage s;
  getrusage(RUSAGE_SELF, &s);
  return (double)(s.ru_utime.tv_sec + s.ru_stime.tv_sec) +
         (double)(s.ru_utime.tv_usec + s.ru_stime.tv_usec) / 1e6;
}

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
        double cpu0 = cpu_now();
        int rrc = sg_eval_cpu_run_logged(t, &b, &o, &r, &log, &err);
        col[CPU][rep] = cpu_now() - cpu0 + phase(log, "workers_cpu");
        if (rrc != 0 || r.status != SG_EVAL_OK) {
          fprintf(stderr, "%s: run: %s %s\n", t->name, err.msg, r.message ? r.message : "");
          return 1;
        }
        col[SPAWN][rep] = 1000 * phase(log, "spawn");
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
  printf("%-24s %6.2f %6.2f %8.1f %8.1f %8.1f %7.2f %7.2f %6.2f %6.2f %9.3f %9.3f "
         "%6.1f%%\n",
         t->name, m[COLD], m[WARM], m[SPAWN], m[SETUP], m[TEARDOWN], m[CORRECT],
         m[TIMING], m[RUN], m[CPU], m[CAND], m[REF], 100 * share);
  fflush(stdout);
  sg_rm_rf(cache, &err);
  for (int c = 0; c < NCOL; c++)
    free(col[c]);
  free(src);
  free(path);
  return 0;
}

/* Setup and teardown of n (1 or 2) workers' sandboxes, in ms: set up in
 * turn (the judge's way before) or side by side (as it does now). */
static double sandbox_once(bool isolate, const char *prog, const char *dir, int n,
                           bool side_by_side) {
  sg_sandbox_limits lim;
  sg_sandbox_limits_default(&lim);
  lim.isolate = isolate;
  lim.work_dir = dir;
  lim.pin_cpu = 0;
  static char *const env[] = {NULL};
  lim.env = env;
  lim.program = prog; /* a worker given no arguments exits at once */
  char *argv[] = {SG_EVAL_WORKER_NAME, NULL};
  double t0 = sg_clock_now_s();
  sg_sandbox *s[2] = {NULL, NULL};
  sg_err err;
  sg_sandbox_outcome o;
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++)
    rc = side_by_side ? sg_sandbox_spawn_begin(&lim, argv, false, &s[i], &err)
                      : sg_sandbox_spawn(&lim, argv, false, &s[i], &err);
  if (rc == 0 && side_by_side)
    rc = sg_sandbox_spawn_wait(s, (size_t)n, NULL, &err);
  if (rc != 0)
    fprintf(stderr, "sandbox: %s\n", err.msg);
  for (int i = 0; i < n; i++)
    if (s[i])
      sg_sandbox_kill(s[i]);
  for (int i = 0; i < n; i++)
    if (s[i] && sg_sandbox_finish(s[i], false, &o, &err) == 0)
      sg_sandbox_outcome_free(&o);
  return rc ? NAN : 1000 * (sg_clock_now_s() - t0);
}

/* Medians of n of each: isolated with the worker program, isolated with
 * specgen as the worker, not isolated with the worker program, and two
 * isolated workers set up in turn and side by side; in turns (a busy
 * machine's load then weighs on all alike). */
enum { SB_KINDS = 5 };
static void sandbox_ms(int n, double ms[SB_KINDS]) {
  double *x[SB_KINDS];
  for (int v = 0; v < SB_KINDS; v++)
    x[v] = sg_calloc((size_t)n, sizeof *x[v]);
  char dir[] = "/tmp/sg_bench_sandbox_XXXXXX";
  const char *prog = sg_eval_cpu_worker_program();
  if (!mkdtemp(dir) || !prog) {
    fprintf(stderr, "bench_eval: %s\n", prog ? "mkdtemp failed" : "no worker program");
    for (int v = 0; v < SB_KINDS; v++)
      ms[v] = NAN;
    return;
  }
  for (int i = 0; i < n; i++) {
    x[0][i] = sandbox_once(true, prog, dir, 1, false);
    x[1][i] = sandbox_once(true, SG_WORKER_BUILD_ROOT "/src/cli/specgen", dir, 1, false);
    x[2][i] = sandbox_once(false, prog, dir, 1, false);
    x[3][i] = sandbox_once(true, prog, dir, 2, false);
    x[4][i] = sandbox_once(true, prog, dir, 2, true);
  }
  sg_err ignore;
  sg_rm_rf(dir, &ignore);
  for (int v = 0; v < SB_KINDS; v++) {
    ms[v] = sg_stats_median(x[v], (size_t)n);
    free(x[v]);
  }
}

static double thread_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The judge's per-call work on t's buffers (see the usage above). */
static void bench_checks(const sg_task *t) {
  enum { REFRESH, POISON, COMPARE, BOTH, COPY, NK, REPS = 5 };
  double x[NK][REPS];
  size_t in_bytes = 0, out_bytes = 0;
  void **buf = sg_calloc(t->nargs ? t->nargs : 1, sizeof *buf);
  void **ref = sg_calloc(t->nargs ? t->nargs : 1, sizeof *ref);
  void **copy = sg_calloc(t->nargs ? t->nargs : 1, sizeof *copy);
  for (size_t i = 0; i < t->nargs; i++) {
    const sg_task_arg *a = &t->args[i];
    if (a->kind == SG_ARG_SCALAR)
      continue;
    size_t bytes = (size_t)a->numel * sg_dtype_size(a->dtype);
    buf[i] = sg_malloc(bytes);
    sg_rng r;
    sg_rng_seed(&r, i + 1);
    sg_task_arg as_input = *a;
    if (a->kind == SG_ARG_OUTPUT) { /* outputs: normal values, a copy as the reference */
      snprintf(as_input.init.dist, sizeof as_input.init.dist, "normal");
      as_input.init.p[0] = 0;
      as_input.init.p[1] = 1;
      as_input.init.structure[0] = '\0';
      ref[i] = sg_malloc(bytes);
      copy[i] = sg_malloc(bytes);
      out_bytes += bytes;
    } else {
      in_bytes += bytes;
    }
    sg_eval_fill(&as_input, buf[i], &r);
    if (ref[i])
      memcpy(ref[i], buf[i], bytes);
  }
  for (int rep = 0; rep < REPS; rep++) {
    sg_rng r;
    sg_rng_seed(&r, 100 + (uint64_t)rep);
    for (int k = 0; k < NK; k++) {
      double t0 = thread_cpu_s();
      for (size_t i = 0; i < t->nargs; i++) {
        const sg_task_arg *a = &t->args[i];
        size_t bytes = (size_t)a->numel * sg_dtype_size(a->dtype);
        sg_eval_cmp cmp;
        if (k == REFRESH && a->kind == SG_ARG_INPUT)
          sg_eval_refresh(a, buf[i], &r);
        if (a->kind != SG_ARG_OUTPUT)
          continue;
        if (k == POISON)
          sg_eval_poison(a->dtype, copy[i], a->numel);
        else if (k == COMPARE)
          sg_eval_compare(a->dtype, buf[i], ref[i], a->numel, t->atol, t->rtol, &cmp);
        else if (k == BOTH)
          sg_eval_compare_poison(a->dtype, copy[i], ref[i], a->numel, t->atol, t->rtol,
                                 &cmp);
        else if (k == COPY)
          memcpy(copy[i], buf[i], bytes);
      }
      x[k][rep] = 1000 * (thread_cpu_s() - t0);
      if (k == POISON) /* the kernel's answer again, for the fused pass */
        for (size_t i = 0; i < t->nargs; i++)
          if (t->args[i].kind == SG_ARG_OUTPUT)
            memcpy(copy[i], buf[i], (size_t)t->args[i].numel * sg_dtype_size(t->args[i].dtype));
    }
  }
  double m[NK];
  for (int k = 0; k < NK; k++)
    m[k] = sg_stats_median(x[k], REPS);
  printf("%-24s %8.1f %8.1f %10.2f %9.2f %10.2f %9.2f %8.2f\n", t->name,
         (double)in_bytes / (1 << 20), (double)out_bytes / (1 << 20), m[REFRESH], m[POISON],
         m[COMPARE], m[BOTH], m[COPY]);
  for (size_t i = 0; i < t->nargs; i++) {
    free(buf[i]);
    free(ref[i]);
    free(copy[i]);
  }
  free(buf);
  free(ref);
  free(copy);
}

int main(int argc, char **argv) {
  sg_task **ts = NULL;
  size_t n = 0;
  sg_err err;
  if (sg_task_list(&ts, &n, &err) != 0) {
    fprintf(stderr, "bench_eval: %s\n", err.msg);
    return 1;
  }
  if (argc > 1 && strcmp(argv[1], "checks") == 0) {
    printf("# the judge's work per call, CPU ms of this thread, medians of 5\n");
    printf("%-24s %8s %8s %10s %9s %10s %9s %8s\n", "task", "in_MiB", "out_MiB",
           "refresh", "poison", "compare", "cmp+pois", "memcpy");
    for (size_t i = 0; i < n; i++) {
      bool want = strcmp(ts[i]->evaluator, "cpu") == 0 && argc <= 2;
      for (int a = 2; a < argc; a++)
        want |= strcmp(ts[i]->evaluator, "cpu") == 0 && strcmp(argv[a], ts[i]->name) == 0;
      if (want)
        bench_checks(ts[i]);
    }
    sg_task_list_free(ts, n);
    return 0;
  }
  int reps = argc > 1 ? atoi(argv[1]) : 3;
  if (reps < 1)
    reps = 1;
  /* a real reference, so the worker is linked in */
  if (!((const volatile char *)sg_eval_cpu_worker_name)[0])
    return 1;
  double sb[SB_KINDS];
  sandbox_ms(40, sb);
  printf("# sandbox setup+teardown of one worker (exec, exits at once), medians of 40, "
         "in turns: isolated %.2f ms (specgen as the worker: %.2f ms), "
         "not isolated %.2f ms\n", sb[0], sb[1], sb[2]);
  printf("# two isolated workers, setup+teardown: set up in turn %.2f ms, side by side "
         "%.2f ms (%.2fx)\n", sb[3], sb[4], sb[4] / sb[3]);
  printf("# cpu evaluator cost per evaluation, medians of %d (seconds unless _ms)\n", reps);
  printf("%-24s %6s %6s %8s %8s %8s %7s %7s %6s %6s %9s %9s %7s\n", "task",
         "cold_s", "warm_s", "spawn_ms", "setup_ms", "tear_ms", "correct", "timing",
         "run_s", "cpu_s", "cand_ms", "ref_ms", "kernel");
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
