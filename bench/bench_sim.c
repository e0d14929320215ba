/* bench_sim.c: how long `specgen sim` takes for the paper's campaigns, per
 * configuration: CPU seconds of a whole campaign (10 workflows x 100
 * iterations on 10 devices), events processed and events per CPU second.
 * Usage: bench_sim [RUNS] (default 3); each figure is the median of RUNS.
 *
 * bench_sim scale [MAX] [ITERATIONS]: the scaling table, N workflows on N
 * devices for N = 10, 100, 1000 (up to MAX, default 1000), ITERATIONS
 * (default 100) each, configurations baseline and full of paper-glm, one
 * campaign per cell: CPU seconds, events, events per CPU second and the CPU
 * cost per event relative to N = 10 (1.00 everywhere = linear in events). */
#include "sim/sg_sim.h"
#include "sim/sg_sim_params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int scale(int max, int iters) {
  printf("%-6s %-9s %10s %12s %14s %12s %12s\n", "N", "config", "cpu_s", "events",
         "events_per_s", "us_per_event", "x_per_event");
  double base_per_ev[2] = {0, 0};
  for (int n = 10; n <= max; n *= 10) {
    for (int v = 0; v < 2; v++) {
      sg_sim_params p;
      sg_err err;
      sg_sim_variant var;
      if (sg_sim_params_preset(&p, "paper-glm", &err) < 0 ||
          sg_sim_variant_parse(v == 0 ? "baseline" : "full", &var, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
      }
      p.workflows = n;
      p.devices = n;
      p.iterations = iters;
      sg_sim_result r;
      double t0 = cpu_s();
      if (sg_sim_run(&p, &var, &r, &err) < 0) {
        fprintf(stderr, "N=%d %s: %s\n", n, var.name, err.msg);
        return 1;
      }
      double t = cpu_s() - t0;
      double per = t / (double)r.events;
      if (n == 10)
        base_per_ev[v] = per;
      printf("%-6d %-9s %10.2f %12llu %14.0f %12.3f %12.2f\n", n, var.name, t,
             (unsigned long long)r.events, (double)r.events / t, per * 1e6,
             per / base_per_ev[v]);
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
      fprintf(stderr, "usage: bench_sim scale [MAX 10..4096] [ITERATIONS >= 1]\n");
      return 2;
    }
    return scale(max, iters);
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
