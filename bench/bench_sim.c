/* bench_sim.c: how long `specgen sim` takes for the paper's campaigns, per
 * configuration: CPU seconds of a whole campaign (10 workflows x 100
 * iterations on 10 devices), events processed and events per CPU second.
 * Usage: bench_sim [RUNS] (default 3); each figure is the median of RUNS.
 *
 * bench_sim scale [MAX] [ITERATIONS] [KEY=VALUE ...]: the scaling table, N
 * workflows on N devices for N = 10, 100, 300, 1000, 3000 (up to MAX,
 * default 1000), ITERATIONS (default 100) each, configurations baseline and
 * full of paper-glm (with the simulator parameters KEY=VALUE set on top),
 * one campaign per cell, each in its own process: its CPU seconds and peak
 * resident memory, events, the CPU cost per event relative to N = 10 (1.00
 * everywhere = linear in events), forks per iteration, the end-to-end
 * ratio baseline / this configuration, of the campaign's time and of the
 * geometric mean of the workflows' times (the paper's per-task E2E), and
 * the pool's utilization (busy device time over devices x E2E, %). */
#include "sim/sg_sim.h"
#include "sim/sg_sim_params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* One cell of the scaling table, in a child process so that its CPU time
 * and peak resident memory are its own (wait4's rusage), not the sum of the
 * cells before it. The child sends its result back through a pipe. */
typedef struct cell {
  sg_sim_result r;
  double cpu_s;
  double max_rss_mb;
} cell;

static int scale_cell(int n, int iters, int v, char **kv, int nkv, cell *out) {
  int fd[2];
  if (pipe(fd) < 0)
    return -1;
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    close(fd[0]);
    sg_sim_params p;
    sg_err err;
    sg_sim_variant var;
    if (sg_sim_params_preset(&p, "paper-glm", &err) < 0 ||
        sg_sim_variant_parse(v == 0 ? "baseline" : "full", &var, &err) < 0) {
      fprintf(stderr, "%s\n", err.msg);
      _exit(1);
    }
    for (int i = 0; i < nkv; i++)
      if (sg_sim_params_set_kv(&p, kv[i], &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        _exit(2);
      }
    p.workflows = n;
    p.devices = n;
    p.knobs.iterations = iters;
    cell c;
    memset(&c, 0, sizeof c);
    if (sg_sim_run(&p, &var, &c.r, &err) < 0) {
      fprintf(stderr, "N=%d %s: %s\n", n, var.name, err.msg);
      _exit(1);
    }
    ssize_t w = write(fd[1], &c, sizeof c);
    _exit(w == (ssize_t)sizeof c ? 0 : 1);
  }
  close(fd[1]);
  ssize_t got = read(fd[0], out, sizeof *out);
  close(fd[0]);
  int status;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      got != (ssize_t)sizeof *out)
    return WIFEXITED(status) && WEXITSTATUS(status) == 2 ? -2 : -1;
  out->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
  out->max_rss_mb = (double)ru.ru_maxrss / 1024.0; /* Linux: kilobytes */
  return 0;
}

static int scale(int max, int iters, char **kv, int nkv) {
  static const int ns[] = {10, 100, 300, 1000, 3000};
  printf("%-6s %-9s %8s %10s %10s %8s %9s %10s %11s %9s %6s\n", "N", "config", "cpu_s",
         "max_rss_mb", "events", "us_per_ev", "x_per_ev", "forks_iter", "e2e_ratio",
         "geo_ratio", "util");
  double base_per_ev[2] = {0, 0};
  for (size_t i = 0; i < sizeof ns / sizeof ns[0] && ns[i] <= max; i++) {
    int n = ns[i];
    cell c[2];
    for (int v = 0; v < 2; v++) {
      int rc = scale_cell(n, iters, v, kv, nkv, &c[v]);
      if (rc < 0)
        return rc == -2 ? 2 : 1;
      double per = c[v].cpu_s / (double)c[v].r.events;
      if (n == 10)
        base_per_ev[v] = per;
      /* the ratios: baseline's time over this configuration's (> 1: faster) */
      printf("%-6d %-9s %8.2f %10.0f %10llu %8.3f %9.2f %10.2f %11.3f %9.3f %6.1f\n", n,
             c[v].r.name, c[v].cpu_s, c[v].max_rss_mb, (unsigned long long)c[v].r.events,
             per * 1e6, per / base_per_ev[v],
             (double)c[v].r.forks / (double)(c[v].r.iterations ? c[v].r.iterations : 1),
             c[0].r.e2e_s / c[v].r.e2e_s, c[0].r.e2e_geomean_s / c[v].r.e2e_geomean_s,
             100.0 * c[v].r.util_overall);
      fflush(stdout);
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "scale") == 0) {
    int max = argc > 2 ? atoi(argv[2]) : 1000;
    int iters = argc > 3 ? atoi(argv[3]) : 100;
    if (max < 10 || max > 4096 || iters < 1) {
      fprintf(stderr, "usage: bench_sim scale [MAX 10..4096] [ITERATIONS >= 1] "
                      "[KEY=VALUE ...]\n");
      return 2;
    }
    return scale(max, iters, argv + 4, argc > 4 ? argc - 4 : 0);
  }
  int runs = argc > 1 ? atoi(argv[1]) : 3;
  if (runs < 1 || runs > 100) {
    fprintf(stderr, "usage: bench_sim [RUNS 1..100]\n");
    return 2;
  }
  const char *presets[] = {"paper-glm", "paper-dsv4"};
  printf("%-11s %-22s %10s %12s %14s %10s\n", "preset", "config", "cpu_s", "events",
         "events_per_s", "x_baseline");
  for (int pi = 0; pi < 2; pi++) {
    sg_sim_params p;
    sg_err err;
    if (sg_sim_params_preset(&p, presets[pi], &err) < 0) {
      fprintf(stderr, "%s\n", err.msg);
      return 1;
    }
    double base_s = 0;
    for (int v = 0; v < SG_SIM_VARIANTS; v++) {
      sg_sim_variant var;
      sg_sim_variant_parse(sg_sim_variant_name(v), &var, &err);
      double t[100];
      sg_sim_result r;
      for (int k = 0; k < runs; k++) {
        double t0 = cpu_s();
        if (sg_sim_run(&p, &var, &r, &err) < 0) {
          fprintf(stderr, "%s: %s\n", var.name, err.msg);
          return 1;
        }
        t[k] = cpu_s() - t0;
      }
      qsort(t, (size_t)runs, sizeof t[0], cmp);
      double med = t[runs / 2];
      if (v == 0)
        base_s = med;
      printf("%-11s %-22s %10.3f %12llu %14.0f %10.2f\n", presets[pi], var.name, med,
             (unsigned long long)r.events, (double)r.events / med, med / base_s);
    }
  }
  return 0;
}
