/* bench_sim.c: how long `specgen sim` takes for the paper's campaigns, per
 * configuration: CPU seconds of a whole campaign (10 workflows x 100
 * iterations on 10 devices), events processed and events per CPU second.
 * Usage: bench_sim [RUNS] (default 3); each figure is the median of RUNS. */
#include "sim/sg_sim.h"
#include "sim/sg_sim_params.h"

#include <stdio.h>
#include <stdlib.h>
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

int main(int argc, char **argv) {
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
