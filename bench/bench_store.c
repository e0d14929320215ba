/* bench_store.c: what recording costs in the run store, so the runtime knows
 * whether one transaction per record (the store's choice) is ever a
 * bottleneck, and what the durable option (synchronous=FULL) adds.
 *
 * Measures (median of RUNS runs, wall time: the cost is mostly I/O):
 *   - one record: each call of a candidate's life (candidate_add,
 *     eval_queue, eval_start, eval_finish, device_interval_add,
 *     decision_add), averaged over N candidates, with synchronous=NORMAL
 *     and FULL;
 *   - the summary and resume queries over the store that run left (N
 *     candidates, 3N evaluations... see below).
 * Usage: bench_store [candidates] [runs] [dir]   (default 2000, 5, $TMPDIR
 * or /tmp). The directory's file system decides the numbers: say which.
 */
#include "common/sg_stats.h"
#include "common/sg_alloc.h"
#include "common/sg_clock.h"
#include "common/sg_file.h"
#include "store/sg_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void check(int rc, const char *what, const sg_err *err) {
  if (rc) {
    fprintf(stderr, "bench_store: %s: %s\n", what, err->msg);
    exit(1);
  }
}

/* Fills a fresh store with n candidates (each validated ok, with a device
 * interval and a decision) and returns the wall seconds the recording took. */
static double fill(const char *dir, bool full, int n, double *summary_s,
                   double *resume_s) {
  sg_err err;
  sg_err_clear(&err);
  check(sg_rm_rf(dir, &err), "rm", &err);
  sg_store_opts opts = {.sync_full = full};
  sg_store *s;
  check(sg_store_open_opts(dir, &opts, &s, &err), "open", &err);
  json_t *cfg = json_object();
  int64_t run, wf, it, gen;
  check(sg_store_run_begin(s, cfg, 8, 0, &run, &err), "run", &err);
  json_decref(cfg);
  sg_store_workflow w = {.task = "bench"};
  check(sg_store_workflow_add(s, &w, &wf, &err), "workflow", &err);
  check(sg_store_iteration_begin(s, wf, 1, 0, &it, &err), "iteration", &err);
  sg_store_generation g = {.iteration_id = it, .kind = SG_STORE_GEN_MAIN};
  check(sg_store_generation_begin(s, &g, &gen, &err), "generation", &err);

  /* A kernel-sized source (about 2 KB) made unique per candidate. */
  char src[2048];
  memset(src, 'x', sizeof src - 1);
  src[sizeof src - 1] = '\0';
  sg_eval_result r;
  sg_eval_result_init(&r);
  r.status = SG_EVAL_OK;
  r.speedup = 1.5;
  r.ref_ms = 3.0;
  r.cand_ms = 2.0;
  r.message = sg_strdup("ok: 5 trials within tolerance");
  double t0 = sg_clock_now_s();
  for (int i = 0; i < n; i++) {
    int len = snprintf(src, 32, "kernel %d ", i);
    src[len] = 'x';
    int64_t cand, ev, id;
    int64_t t = (int64_t)i * 10;
    check(sg_store_candidate_add(s, gen, src, t, &cand, NULL, &err), "cand",
          &err);
    check(sg_store_eval_queue(s, cand, SG_STORE_VALIDATE, t, &ev, &err),
          "queue", &err);
    check(sg_store_eval_start(s, ev, "cuda:0", t + 1, &err), "start", &err);
    check(sg_store_eval_finish(s, ev, &r, t + 5, &err), "finish", &err);
    check(sg_store_device_interval_add(s, "cuda:0", SG_STORE_VALIDATE, ev,
                                       t + 1, t + 5, &id, &err),
          "interval", &err);
    check(sg_store_decision_add(s, wf, it, "submit", NULL, t, &id, &err),
          "decision", &err);
  }
  double rec_s = sg_clock_now_s() - t0;
  sg_eval_result_free(&r);

  json_t *j;
  t0 = sg_clock_now_s();
  check(sg_store_summary_json(s, &j, &err), "summary", &err);
  *summary_s = sg_clock_now_s() - t0;
  json_decref(j);
  t0 = sg_clock_now_s();
  check(sg_store_resume_json(s, &j, &err), "resume", &err);
  *resume_s = sg_clock_now_s() - t0;
  json_decref(j);
  sg_store_close(s);
  return rec_s;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 2000;
  int runs = argc > 2 ? atoi(argv[2]) : 5;
  const char *base = argc > 3 ? argv[3] : getenv("TMPDIR");
  if (base == NULL)
    base = "/tmp";
  if (n < 1 || runs < 1 || runs > 99) {
    fprintf(stderr, "usage: bench_store [candidates>=1] [runs 1..99] [dir]\n");
    return 2;
  }
  char *dir = sg_asprintf("%s/bench_store_%d", base, (int)getpid());
  double rec[2][99], sum[2][99], res[2][99];
  for (int k = 0; k < runs; k++)
    for (int m = 0; m < 2; m++)
      rec[m][k] = fill(dir, m == 1, n, &sum[m][k], &res[m][k]);
  sg_err err;
  check(sg_rm_rf(dir, &err), "rm", &err);
  free(dir);

  printf("run store, %d candidates x 6 records each, median of %d runs, "
         "in %s\n",
         n, runs, base);
  printf("%-28s %14s %14s %8s\n", "", "NORMAL", "FULL", "FULL/N");
  double rn = sg_stats_median(rec[0], (size_t)runs) / (6.0 * n) * 1e6;
  double rf = sg_stats_median(rec[1], (size_t)runs) / (6.0 * n) * 1e6;
  printf("%-28s %11.1f us %11.1f us %7.1fx\n", "one record (mean of 6 kinds)",
         rn, rf, rf / rn);
  double cn = sg_stats_median(rec[0], (size_t)runs) / n * 1e6;
  double cf = sg_stats_median(rec[1], (size_t)runs) / n * 1e6;
  printf("%-28s %11.1f us %11.1f us %7.1fx\n", "one candidate's 6 records", cn,
         cf, cf / cn);
  double sn = sg_stats_median(sum[0], (size_t)runs) * 1e3, sf = sg_stats_median(sum[1], (size_t)runs) * 1e3;
  printf("%-28s %11.2f ms %11.2f ms\n", "summary_json", sn, sf);
  double qn = sg_stats_median(res[0], (size_t)runs) * 1e3, qf = sg_stats_median(res[1], (size_t)runs) * 1e3;
  printf("%-28s %11.2f ms %11.2f ms\n", "resume_json", qn, qf);
  return 0;
}
