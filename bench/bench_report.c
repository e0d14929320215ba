/* bench_report.c: what a report of a large run costs to build.
 *
 *   bench_report [--tasks N] [--iterations N] [--reps N]
 *       builds a synthetic run store (N tasks x N iterations on N devices,
 *       about 12 records per iteration: 3 generations, 2 kernels, 2-3
 *       evaluations and device intervals, the iteration) in a temporary
 *       directory, then
 *       prints a table: records, the data's build time, the page's, and the
 *       page's size (median and range over reps).
 *   bench_report --make DIR [--tasks N] [--iterations N]
 *       only writes the store to DIR (the browser test draws it).
 *
 * The store is written through sg_store, as a run writes it. Times on the
 * run clock: each workflow's iterations follow each other, 60 s apart. */
#include "common/sg_alloc.h"
#include "common/sg_clock.h"
#include "common/sg_file.h"
#include "common/sg_rng.h"
#include "common/sg_stats.h"
#include "report/sg_report.h"
#include "store/sg_store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S1 1000000LL

static void die(const char *what, const sg_err *err) {
  fprintf(stderr, "bench_report: %s: %s\n", what, err->msg);
  exit(1);
}

#define CHECK(call, what)                                                      \
  do {                                                                         \
    if ((call) < 0)                                                            \
      die(what, &err);                                                         \
  } while (0)

static void finish(sg_store *s, int64_t ev, bool ok, double speedup, int64_t at) {
  sg_err err;
  sg_eval_result r;
  sg_eval_result_init(&r);
  r.status = ok ? SG_EVAL_OK : SG_EVAL_NUMERICAL_ERROR;
  r.speedup = ok ? speedup : NAN;
  r.ref_ms = 1.0;
  r.cand_ms = ok ? 1.0 / speedup : NAN;
  r.message = ok ? NULL : sg_strdup("max abs error 3.2e-2 at index 4711 (tolerance 1e-3)");
  if (ok)
    r.metrics = json_pack("{s:f, s:f}", "dram_throughput_pct", 40 + speedup,
                          "sm_busy_pct", 50.0);
  CHECK(sg_store_eval_finish(s, ev, &r, at, &err), "eval_finish");
  sg_eval_result_free(&r);
}

/* One evaluation: queued at q, on device dev from q+1 s to q+1+dur s. */
static void evaluate(sg_store *s, int64_t cand, sg_store_phase ph, const char *dev,
                     int64_t q, int64_t dur, bool ok, double speedup) {
  sg_err err;
  int64_t ev;
  CHECK(sg_store_eval_queue(s, cand, ph, q, &ev, &err), "eval_queue");
  CHECK(sg_store_eval_start(s, ev, dev, q + S1, &err), "eval_start");
  finish(s, ev, ok, speedup, q + S1 + dur);
  CHECK(sg_store_device_interval_add(s, dev, ph, ev, q + S1, q + S1 + dur, NULL, &err),
        "device_interval");
}

static int64_t make_store(const char *dir, int tasks, int iters) {
  sg_err err;
  sg_err_clear(&err);
  sg_store *s = NULL;
  CHECK(sg_store_open(dir, &s, &err), "open");
  json_t *cfg = json_pack("{s:s, s:i}", "search", "refine", "iterations", iters);
  int64_t run, records = 1;
  int64_t t0 = 1700000000 * S1;
  /* One device per task: each workflow's evaluations follow each other on
   * it, so no device runs two at once. */
  CHECK(sg_store_run_begin(s, cfg, tasks, t0, &run, &err), "run_begin");
  json_decref(cfg);
  char src[2048], dev[16];
  sg_rng rng;
  sg_rng_seed(&rng, 88172645463325252ull);
  for (int w = 0; w < tasks; w++) {
    char task[32];
    snprintf(task, sizeof task, "task_%03d", w);
    sg_store_workflow wf = {.task = task, .budget_iterations = iters, .started_us = t0};
    int64_t wid;
    CHECK(sg_store_workflow_add(s, &wf, &wid, &err), "workflow_add");
    records++;
    double best = 1.0;
    for (int k = 1; k <= iters; k++) {
      int64_t t = t0 + (int64_t)(k - 1) * 60 * S1 + w * 100000;
      int64_t it, g[3], c[2];
      double u = sg_rng_uniform(&rng);
      CHECK(sg_store_iteration_begin(s, wid, k, t, &it, &err), "iteration_begin");
      for (int j = 0; j < 3; j++) {
        sg_store_generation gen = {.iteration_id = it,
                                   .kind = j == 0 ? SG_STORE_GEN_MAIN : SG_STORE_GEN_SPEC,
                                   .parent_id = j == 0 ? 0 : g[0],
                                   .prefix_bytes = j * 1000,
                                   .prompt = "optimize this kernel",
                                   .started_us = t + j * 5 * S1};
        CHECK(sg_store_generation_begin(s, &gen, &g[j], &err), "generation_begin");
        CHECK(sg_store_generation_end(s, g[j], 3000, 2000 + j * 500, j ? 2900 : 1500, "stop",
                                      SG_STORE_GEN_COMPLETED, t + (j ? 30 : 50) * S1, &err),
              "generation_end");
      }
      for (int j = 0; j < 2; j++) {
        int n = snprintf(src, sizeof src, "// task %d iteration %d kernel %d\n", w, k, j);
        while (n < 1500)
          n += snprintf(src + n, sizeof src - (size_t)n,
                        "for (int i = 0; i < n; i++) y[i] = a * x[i] + y[i];\n");
        CHECK(sg_store_candidate_add(s, g[j == 0 ? 0 : 1], src, t + (j ? 30 : 50) * S1, &c[j],
                                     NULL, &err), "candidate_add");
      }
      snprintf(dev, sizeof dev, "cuda:%d", w);
      evaluate(s, c[1], SG_STORE_VALIDATE, dev, t + 30 * S1, 10 * S1, u < 0.6, 1.0);
      evaluate(s, c[0], SG_STORE_VALIDATE, dev, t + 50 * S1, 4 * S1, u < 0.4, 1.0);
      if (u < 0.6) {
        best *= 1.0 + 0.05 * u;
        evaluate(s, c[1], SG_STORE_PROFILE, dev, t + 42 * S1, 5 * S1, true, best);
      }
      if (k % 10 == 0) {
        int prof = 1 + (k / 10) % (tasks > 2 ? tasks - 1 : 1);
        json_t *d = json_pack("{s:i, s:i}", "validate_devices", tasks - prof, "profile_devices",
                              prof);
        CHECK(sg_store_decision_add(s, wid, it, "reallocate", d, t + 59 * S1, NULL, &err),
              "decision_add");
        json_decref(d);
        records++;
      }
      CHECK(sg_store_iteration_end(s, it, u < 0.33 ? "early" : "accepted", t + 59 * S1, &err),
            "iteration_end");
      records += 1 + 3 + 2 + 2 * (u < 0.6 ? 3 : 2); /* evaluations and intervals */
    }
    CHECK(sg_store_workflow_set_state(s, wid, SG_STORE_WF_DONE, t0 + iters * 60 * S1, &err),
          "workflow_done");
  }
  CHECK(sg_store_run_end(s, t0 + (int64_t)iters * 60 * S1 + S1, &err), "run_end");
  sg_store_close(s);
  return records;
}

int main(int argc, char **argv) {
  const char *make = NULL;
  int tasks = 100, iters = 100, reps = 5;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--make") == 0 && i + 1 < argc)
      make = argv[++i];
    else if (strcmp(argv[i], "--tasks") == 0 && i + 1 < argc)
      tasks = atoi(argv[++i]);
    else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
      iters = atoi(argv[++i]);
    else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
      reps = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_report [--make DIR] [--tasks N] [--iterations N] "
                      "[--reps N]\n");
      return 2;
    }
  }
  if (tasks < 1 || iters < 1 || reps < 1 || reps > 100) {
    fprintf(stderr, "bench_report: tasks, iterations and reps must be positive\n");
    return 2;
  }
  if (make) {
    int64_t n = make_store(make, tasks, iters);
    printf("%s: %lld records\n", make, (long long)n);
    return 0;
  }
  char dir[] = "/tmp/sg_bench_report_XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  double t = sg_clock_now_s();
  int64_t records = make_store(dir, tasks, iters);
  double made = sg_clock_now_s() - t;
  double data_ms[100], page_ms[100];
  size_t len = 0;
  sg_err err;
  sg_err_clear(&err);
  for (int r = 0; r < reps; r++) {
    sg_report_src *src = NULL;
    json_t *d = NULL;
    t = sg_clock_now_s();
    CHECK(sg_report_open(dir, &src, &err), "report_open");
    CHECK(sg_report_data_json(src, true, &d, &err), "data_json");
    data_ms[r] = (sg_clock_now_s() - t) * 1e3;
    sg_report_close(src);
    char *html = NULL;
    t = sg_clock_now_s();
    CHECK(sg_report_page(d, &html, &len, &err), "page");
    page_ms[r] = (sg_clock_now_s() - t) * 1e3;
    free(html);
    json_decref(d);
  }
  sg_rm_rf(dir, &err);
  printf("report of %d tasks x %d iterations: %lld records (store written in %.1f s)\n",
         tasks, iters, (long long)records, made);
  printf("%-28s %10s %10s %10s\n", "step", "median", "min", "max");
  double *cols[] = {data_ms, page_ms};
  const char *names[] = {"data from run.db (ms)", "page assembled (ms)"};
  for (int c = 0; c < 2; c++) {
    double lo = cols[c][0], hi = cols[c][0];
    for (int r = 1; r < reps; r++) {
      lo = fmin(lo, cols[c][r]);
      hi = fmax(hi, cols[c][r]);
    }
    printf("%-28s %10.1f %10.1f %10.1f\n", names[c], sg_stats_median(cols[c], (size_t)reps),
           lo, hi);
  }
  printf("%-28s %10.2f\n", "page size (MB)", (double)len / 1e6);
  return 0;
}
