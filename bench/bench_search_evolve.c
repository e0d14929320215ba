/* bench_search_evolve.c: what one `evolve` plan costs, against `refine`,
 * so a runtime knows the search is never its bottleneck (a plan is asked
 * once per iteration; an iteration lasts minutes).
 *
 * Each run builds a history of 4 valid kernels and 1 compile error per
 * iteration (sources of 300..5000 bytes, profile verdicts in turn) and
 * asks the search for a plan every iteration; it times the iterations after
 * the database is full (cap reached), so eviction is included. Reported:
 * median over RUNS runs of the mean thread CPU time per next() call.
 * Usage: bench_search_evolve [runs]   (default 7)
 */
#include "core/sg_search_evolve.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int runs = 7;

static double cpu_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void add_iteration(sg_history *h, uint32_t it, char *src) {
  static const char *const prof[] = {"memory-bound", "compute-bound",
                                     "latency-bound", NULL};
  for (unsigned j = 0; j < 5; j++) {
    size_t len = 300 + (size_t)((it * 131 + j * 977) % 4700);
    snprintf(src, 32, "/* %u.%u */", it, j);
    size_t head = strlen(src);
    memset(src + head, 'x', len - head);
    sg_kernel *k = sg_history_add(h, it, SG_GEN_SPEC, 1, 10, SG_EXTRACT_FOUND,
                                  src, len);
    uint64_t id = k->id;
    if (j == 4) {
      sg_history_validated(h, id, SG_EVAL_COMPILE_ERROR, NAN, "error: x");
      continue;
    }
    double s = 0.2 + (double)((it * 7919u + j * 104729u) % 4000) / 1000.0;
    sg_history_validated(h, id, SG_EVAL_OK, s, NULL);
    sg_history_profiled(h, id, NAN, prof[(it + j) % 4]);
  }
}

/* Mean ns per next() over `timed` iterations after `warm` ones. */
static double ns_per_plan(const sg_search_registry *reg, const char *spec,
                          uint32_t warm, uint32_t timed) {
  sg_search *s = NULL;
  sg_err err;
  sg_err_clear(&err);
  if (sg_search_new(reg, spec, 1, &s, &err) < 0) {
    fprintf(stderr, "bench_search_evolve: %s: %s\n", spec, err.msg);
    exit(1);
  }
  sg_history h;
  sg_history_init(&h);
  char *src = malloc(8192);
  sg_search_plan plan;
  double spent = 0;
  for (uint32_t it = 0; it < warm + timed; it++) {
    double t0 = cpu_now_s();
    if (sg_search_next(s, &h, it, &plan, &err) < 0) {
      fprintf(stderr, "bench_search_evolve: %s: %s\n", spec, err.msg);
      exit(1);
    }
    if (it >= warm)
      spent += cpu_now_s() - t0;
    add_iteration(&h, it, src);
  }
  free(src);
  sg_history_free(&h);
  sg_search_free(s);
  return spent / timed * 1e9;
}

int main(int argc, char **argv) {
  if (argc > 1)
    runs = atoi(argv[1]);
  if (runs < 1 || runs > 1000) {
    fprintf(stderr, "usage: bench_search_evolve [runs 1..1000]\n");
    return 2;
  }
  sg_search_registry reg;
  sg_search_registry_init(&reg);
  sg_err err;
  sg_err_clear(&err);
  if (sg_search_register(&reg, &sg_search_evolve_ops, &err) < 0) {
    fprintf(stderr, "bench_search_evolve: %s\n", err.msg);
    return 1;
  }
  /* warm-up iterations: enough for 4 valid kernels each to fill the cap,
   * plus the copies migration makes */
  struct {
    const char *spec;
    uint32_t warm, timed;
  } rows[] = {
      {"refine", 300, 200},
      {"evolve", 300, 200},
      {"evolve:mains=4", 300, 200},
      {"refine", 2600, 200},
      {"evolve:cap=10000", 2600, 200},
      {"evolve:cap=10000,islands=16,bins=8,inspirations=8", 2600, 200},
  };
  printf("%-52s %8s %14s\n", "search", "history", "ns/plan (med)");
  double *v = malloc((size_t)runs * sizeof *v);
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    for (int i = 0; i < runs; i++)
      v[i] = ns_per_plan(&reg, rows[r].spec, rows[r].warm, rows[r].timed);
    qsort(v, (size_t)runs, sizeof *v, cmp_double);
    double med = runs % 2 ? v[runs / 2] : (v[runs / 2 - 1] + v[runs / 2]) / 2;
    printf("%-52s %8u %14.0f\n", rows[r].spec,
           (rows[r].warm + rows[r].timed) * 5, med);
  }
  free(v);
  return 0;
}
