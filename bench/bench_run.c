/* bench_run.c: speculation off versus on, the same campaign side by side.
 *
 * Runs `specgen run` on the same tasks, devices, budget and test-model speed
 * with --spec off and with --spec on, alternating the order each repetition
 * (so slow drift on a shared machine hits both alike), and prints the medians
 * of what the paper measures — end-to-end time, profiling feedback (kernels
 * profiled), device utilization, early terminations — their on/off ratios,
 * and what the decisions cost: the controllers' CPU time per generation and
 * the loop thread's CPU time; and the kernels found (the best speedups
 * summed over tasks) and the paper's token consumption (uncached prompt
 * plus completion). And what duplicate evaluations cost: device seconds
 * in all, and those of evaluations that repeated one of the same candidate
 * and phase (queued while the first was in flight, or after it finished
 * with a result), with the evaluations the run deduplicated instead.
 *
 * usage: bench_run [--specgen PATH] [--reps N] [--iterations N]
 *                  [--speed TOKENS_PER_S] [--tasks T1,T2,...] [--devices D]
 *                  [--policy "FLAG ..."]
 * --policy adds a third arm: spec on plus those `specgen run` flags (for
 * example "--work-conserving"), in the same alternating order.
 * PATH defaults to src/cli/specgen beside this program's bench/ folder.
 * The model is the built-in test server: its speed (--speed, default 60
 * tokens/s per stream, so a reasoning of 600-1800 tokens takes 10-30 s) sets
 * how long reasoning takes against the evaluations, which are kept short
 * (--runs 10 --warmups 2 --eval-timeout 10) as on a GPU, where a validation
 * takes seconds and a reasoning minutes.
 */
#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "common/sg_stats.h"

#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_REPS 20

typedef struct sample {
  double e2e, feedback, util, early, forks, ctl_us_per_gen, loop_cpu, best, tokens;
  double dev_s, dup_evals, dup_dev_s, dedup;
} sample;

/* An evaluation that repeats an earlier one of its candidate and phase
 * (tests/runtime/test_run.c, check_each_kernel_evaluated_once, same rule). */
#define REPEATS_SQL                                                                 \
  "SELECT DISTINCT b.id FROM evaluations a JOIN evaluations b ON b.candidate_id = " \
  "a.candidate_id AND b.phase = a.phase AND b.id > a.id WHERE b.queued_us < "       \
  "coalesce(a.ended_us, b.queued_us + 1) OR a.status NOT IN ('aborted', 'infra_error')"

static double db_num(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  double v = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_double(st, 0);
  else
    fprintf(stderr, "bench_run: %s: %s\n", sql, sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return v;
}

/* Device seconds in all and those of repeated evaluations, from run.db. */
static int duplicate_cost(const char *dir, sample *out) {
  char *path = sg_asprintf("%s/run.db", dir);
  sqlite3 *db = NULL;
  int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK ? 0 : -1;
  free(path);
  if (rc == 0) {
    out->dev_s = db_num(db, "SELECT coalesce(sum(ended_us - started_us), 0) / 1e6 "
                            "FROM device_intervals");
    out->dup_evals = db_num(db, "SELECT count(*) FROM (" REPEATS_SQL ")");
    out->dup_dev_s = db_num(db, "SELECT coalesce(sum(ended_us - started_us), 0) / 1e6 "
                                "FROM device_intervals WHERE evaluation_id IN (" REPEATS_SQL ")");
    rc = out->dev_s < 0 || out->dup_evals < 0 || out->dup_dev_s < 0 ? -1 : 0;
  }
  sqlite3_close(db);
  return rc;
}

static char *default_specgen(const char *argv0) {
  char *copy = sg_strdup(argv0);
  char *path = sg_asprintf("%s/../src/cli/specgen", dirname(copy));
  free(copy);
  return path;
}

static int run_one(const char *specgen, const char *spec, const char *policy,
                   const char *tasks, const char *devices, const char *iterations,
                   const char *speed, sample *out) {
  char tmpl[] = "/tmp/sg-bench-run-XXXXXX";
  if (!mkdtemp(tmpl))
    return -1;
  char *dir = sg_asprintf("%s/run", tmpl);
  const char *argv[64] = {specgen, "run", "--devices", devices, "--iterations",
                          iterations, "--server-speed", speed, "--spec", spec,
                          "--out", dir, "--quiet", "--runs", "10", "--warmups", "2",
                          "--eval-timeout", "10"};
  int n = 19;
  char *tl = sg_strdup(tasks);
  for (char *save = NULL, *t = strtok_r(tl, ",", &save); t && n < 60;
       t = strtok_r(NULL, ",", &save)) {
    argv[n++] = "--task";
    argv[n++] = t;
  }
  char *pl = sg_strdup(policy ? policy : "");
  for (char *save = NULL, *t = strtok_r(pl, " ", &save); t && n < 62;
       t = strtok_r(NULL, " ", &save))
    argv[n++] = t;
  argv[n] = NULL;
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", 1);
    dup2(null, 1);
    execv(specgen, (char *const *)argv);
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  free(tl);
  free(pl);
  int rc = -1;
  char *path = sg_asprintf("%s/summary.json", dir);
  json_t *s = WIFEXITED(st) && WEXITSTATUS(st) == 0 ? json_load_file(path, 0, NULL) : NULL;
  if (s) {
    memset(out, 0, sizeof *out);
    out->e2e = json_number_value(json_object_get(s, "e2e_s"));
    out->util = json_number_value(json_object_get(json_object_get(s, "utilization"), "overall"));
    /* the paper's token consumption: uncached prompt + completion */
    out->tokens = json_number_value(json_object_get(json_object_get(s, "tokens"), "consumption"));
    const json_t *w;
    size_t i;
    json_array_foreach(json_object_get(s, "workflows"), i, w) {
      out->feedback += json_number_value(json_object_get(w, "profiling_feedback"));
      out->early += json_number_value(json_object_get(w, "early_terminations"));
      out->forks += json_number_value(json_object_get(w, "generations_spec"));
      out->dedup += json_number_value(json_object_get(w, "deduplicated")); /* 0: none */
      double b = json_number_value(json_object_get(w, "best_speedup"));
      out->best += b > 0 ? b : 0;
    }
    const json_t *o = json_object_get(s, "overhead");
    out->ctl_us_per_gen = json_number_value(json_object_get(o, "controller_cpu_us_per_generation"));
    out->loop_cpu = json_number_value(json_object_get(o, "loop_thread_cpu_s"));
    json_decref(s);
    rc = duplicate_cost(dir, out);
  } else {
    fprintf(stderr, "bench_run: spec %s failed (status %d); its directory: %s\n", spec, st, dir);
  }
  if (rc == 0) {
    sg_err e;
    sg_rm_rf(tmpl, &e);
  }
  free(path);
  free(dir);
  return rc;
}

static double med(const sample *s, int n, size_t off) {
  double v[MAX_REPS];
  for (int i = 0; i < n; i++)
    v[i] = *(const double *)((const char *)&s[i] + off);
  return sg_stats_median(v, (size_t)n);
}

int main(int argc, char **argv) {
  char *specgen = default_specgen(argv[0]);
  int reps = 3;
  const char *iterations = "3", *speed = "60", *tasks = "hinge_loss,diag_matmul",
             *devices = "cpu:0-1", *policy = NULL;
  /* every flag takes a value: a lone or unknown one is a usage error (not
   * a whole benchmark run on the defaults) */
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 < argc && strcmp(argv[i], "--specgen") == 0) {
      free(specgen);
      specgen = sg_strdup(argv[i + 1]);
    } else if (i + 1 < argc && strcmp(argv[i], "--reps") == 0) {
      reps = atoi(argv[i + 1]);
    } else if (i + 1 < argc && strcmp(argv[i], "--iterations") == 0) {
      iterations = argv[i + 1];
    } else if (i + 1 < argc && strcmp(argv[i], "--speed") == 0) {
      speed = argv[i + 1];
    } else if (i + 1 < argc && strcmp(argv[i], "--tasks") == 0) {
      tasks = argv[i + 1];
    } else if (i + 1 < argc && strcmp(argv[i], "--devices") == 0) {
      devices = argv[i + 1];
    } else if (i + 1 < argc && strcmp(argv[i], "--policy") == 0) {
      policy = argv[i + 1];
    } else {
      fprintf(stderr, "usage: bench_run [--specgen PATH] [--reps N] [--iterations N] "
                      "[--speed TOKENS_PER_S] [--tasks T1,T2] [--devices D] "
                      "[--policy \"FLAG ...\"]\n");
      return 2;
    }
  }
  if (reps < 1 || reps > MAX_REPS) {
    fprintf(stderr, "bench_run: --reps must be 1..%d\n", MAX_REPS);
    return 2;
  }
  sample off[MAX_REPS], on[MAX_REPS], pol[MAX_REPS];
  int arms = policy ? 3 : 2;
  for (int r = 0; r < reps; r++) {
    for (int k = 0; k < arms; k++) {
      /* Rotate the order each repetition: drift hits every arm alike. */
      int arm = (k + r) % arms;
      sample *s = arm == 0 ? &off[r] : arm == 1 ? &on[r] : &pol[r];
      const char *name = arm == 0 ? "off" : arm == 1 ? "on" : "policy";
      if (run_one(specgen, arm == 0 ? "off" : "on", arm == 2 ? policy : NULL, tasks,
                  devices, iterations, speed, s) < 0)
        return 1;
      fprintf(stderr, "rep %d %-6s: e2e %.1f s, feedback %.0f, utilization %.0f%%\n",
              r + 1, name, s->e2e, s->feedback, 100 * s->util);
    }
  }
  printf("campaign: tasks %s, devices %s, %s iterations, test model %s tokens/s, "
         "%d repetitions (medians)\n\n", tasks, devices, iterations, speed, reps);
  printf("%-10s %9s %9s %12s %6s %6s %10s %10s %14s %12s\n", "spec", "e2e_s", "feedback",
         "utilization", "early", "forks", "best_sum", "tokens", "ctl_us/gen", "loop_cpu_s");
#define ROW(name, a)                                                                    \
  printf("%-10s %9.1f %9.1f %11.0f%% %6.1f %6.1f %10.2f %10.0f %14.1f %12.2f\n", name,  \
         med(a, reps, offsetof(sample, e2e)), med(a, reps, offsetof(sample, feedback)),  \
         100 * med(a, reps, offsetof(sample, util)), med(a, reps, offsetof(sample, early)), \
         med(a, reps, offsetof(sample, forks)), med(a, reps, offsetof(sample, best)),    \
         med(a, reps, offsetof(sample, tokens)),                                         \
         med(a, reps, offsetof(sample, ctl_us_per_gen)),                                 \
         med(a, reps, offsetof(sample, loop_cpu)))
  ROW("off", off);
  ROW("on", on);
  if (policy)
    ROW("policy", pol);
  printf("\n%-10s %9s %10s %12s %8s\n", "spec", "device_s", "dup_evals", "dup_device_s",
         "dedup");
#define DUPS(name, a)                                                                 \
  printf("%-10s %9.1f %10.1f %12.2f %8.1f\n", name, med(a, reps, offsetof(sample, dev_s)), \
         med(a, reps, offsetof(sample, dup_evals)), med(a, reps, offsetof(sample, dup_dev_s)), \
         med(a, reps, offsetof(sample, dedup)))
  DUPS("off", off);
  DUPS("on", on);
  if (policy)
    DUPS("policy", pol);
  double e_off = med(off, reps, offsetof(sample, e2e)), e_on = med(on, reps, offsetof(sample, e2e));
  double f_off = med(off, reps, offsetof(sample, feedback)), f_on = med(on, reps, offsetof(sample, feedback));
  double u_off = med(off, reps, offsetof(sample, util)), u_on = med(on, reps, offsetof(sample, util));
  printf("\non/off: end-to-end time %.2fx (speedup %.2fx), feedback %.2fx, utilization %.2fx\n",
         e_on / e_off, e_off / e_on, f_off > 0 ? f_on / f_off : 0.0, u_off > 0 ? u_on / u_off : 0.0);
  if (policy) {
    double e_p = med(pol, reps, offsetof(sample, e2e));
    double f_p = med(pol, reps, offsetof(sample, feedback));
    double u_p = med(pol, reps, offsetof(sample, util));
    double b_on = med(on, reps, offsetof(sample, best)), b_p = med(pol, reps, offsetof(sample, best));
    double t_on = med(on, reps, offsetof(sample, tokens)), t_p = med(pol, reps, offsetof(sample, tokens));
    printf("policy (%s)/on: end-to-end time %.2fx, feedback %.2fx, utilization %.2fx, "
           "best kernels (sum) %.2fx, token consumption %.2fx\n",
           policy, e_p / e_on, f_on > 0 ? f_p / f_on : 0.0, u_on > 0 ? u_p / u_on : 0.0,
           b_on > 0 ? b_p / b_on : 0.0, t_on > 0 ? t_p / t_on : 0.0);
  }
  free(specgen);
  return 0;
}
