/* bench_tasks.c: how long each built-in CPU task's reference and its
 * examples/ok-fast.c take on one core, at the task's real shapes.
 *
 * Both files are compiled with the system compiler and the cpu evaluator's
 * flags (cc -std=c11 -O3 -march=native -D_GNU_SOURCE), loaded with dlopen
 * and called directly on inputs drawn uniformly from [-1, 1) (timing does not
 * depend on the values; the triangular and symmetric structures are applied
 * anyway). The process is
 * pinned to one CPU; after one warm-up call each, the reference and ok-fast
 * runs alternate so that drift in the machine affects both alike. Prints the
 * median and the minimum of each and the ratio of the medians.
 *
 * --clock cpu measures the thread's CPU time instead of wall-clock time:
 * on a machine shared with other work it leaves out the time the benchmark
 * spends preempted (not what the others do to the caches and memory bus).
 *
 * Usage: bench_tasks [--runs N] [--cpu C] [--clock wall|cpu] [task ...]
 *        (default: all tasks, 11 runs, wall clock)
 *
 * The built-in CPU tasks share one calling convention (tests/tasks checks
 * it): the float32 arrays first, then the dimensions as int32 scalars.
 */
#include "common/sg_stats.h"
#include "common/sg_alloc.h"
#include "common/sg_clock.h"
#include "common/sg_rng.h"
#include "eval/sg_task.h"

#include <dlfcn.h>
#include <getopt.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ARRAYS 4
#define MAX_INTS 5

typedef struct call {
  float *arr[MAX_ARRAYS];
  int narr;
  int ival[MAX_INTS];
  int nint;
} call;

typedef void (*fn_3_1)(float *, float *, float *, int);
typedef void (*fn_3_2)(float *, float *, float *, int, int);
typedef void (*fn_3_3)(float *, float *, float *, int, int, int);
typedef void (*fn_3_4)(float *, float *, float *, int, int, int, int);
typedef void (*fn_3_5)(float *, float *, float *, int, int, int, int, int);

static bool cpu_clock; /* --clock cpu */

static double now_s(void) {
  if (!cpu_clock)
    return sg_clock_now_s();
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Times one call of fn, in milliseconds. */
static double time_call(void *fn, const call *c) {
  float **a = (float **)c->arr;
  const int *v = c->ival;
  double t0 = now_s();
  switch (c->nint) {
  case 1: ((fn_3_1)fn)(a[0], a[1], a[2], v[0]); break;
  case 2: ((fn_3_2)fn)(a[0], a[1], a[2], v[0], v[1]); break;
  case 3: ((fn_3_3)fn)(a[0], a[1], a[2], v[0], v[1], v[2]); break;
  case 4: ((fn_3_4)fn)(a[0], a[1], a[2], v[0], v[1], v[2], v[3]); break;
  default: ((fn_3_5)fn)(a[0], a[1], a[2], v[0], v[1], v[2], v[3], v[4]); break;
  }
  return (now_s() - t0) * 1e3;
}

/* Compiles src into so; returns 0 on success. */
static int compile(const char *src, const char *so) {
  char *cmd = sg_asprintf("cc -std=c11 -O3 -march=native -fPIC -shared -D_GNU_SOURCE "
                          "-o '%s' '%s' -lm",
                          so, src);
  int st = system(cmd);
  free(cmd);
  return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static void *load(const char *so, const char *entry) {
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "bench_tasks: %s\n", dlerror());
    return NULL;
  }
  void *fn = dlsym(h, entry);
  if (!fn)
    fprintf(stderr, "bench_tasks: %s: no %s\n", so, entry);
  return fn;
}

static void fill(const sg_task_arg *a, float *x, sg_rng *g) {
  for (int64_t i = 0; i < a->numel; i++)
    x[i] = (float)(2.0 * sg_rng_uniform(g) - 1.0);
  if (a->init.structure[0] == '\0' || a->ndims < 2)
    return;
  int64_t n = a->shape[a->ndims - 1];
  for (int64_t b = 0; b + n * n <= a->numel; b += n * n)
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        float *m = x + b;
        if (strcmp(a->init.structure, "symmetric") == 0 && j > i)
          m[j * n + i] = m[i * n + j];
        else if (strcmp(a->init.structure, "upper") == 0 && j < i)
          m[i * n + j] = 0.0f;
        else if (strcmp(a->init.structure, "lower") == 0 && j > i)
          m[i * n + j] = 0.0f;
        else if (strcmp(a->init.structure, "diagonal") == 0 && j != i)
          m[i * n + j] = 0.0f;
      }
}

/* Benchmarks one task; returns 0 when it ran. */
static int bench_task(const sg_task *t, int runs, const char *tmp) {
  call c = {0};
  for (size_t i = 0; i < t->nargs; i++) {
    const sg_task_arg *a = &t->args[i];
    if (a->kind == SG_ARG_SCALAR) {
      if (c.nint == MAX_INTS || a->dtype != SG_DTYPE_I32)
        goto unsupported;
      c.ival[c.nint++] = (int)a->scalar_value;
    } else {
      if (c.nint > 0 || c.narr == MAX_ARRAYS || a->dtype != SG_DTYPE_F32)
        goto unsupported;
      c.arr[c.narr++] = sg_malloc((size_t)a->numel * sizeof(float));
    }
  }
  if (c.narr != 3 || c.nint < 1)
    goto unsupported;
  sg_rng state;
  sg_rng_seed(&state, 42);
  for (size_t i = 0, k = 0; i < t->nargs; i++)
    if (t->args[i].kind != SG_ARG_SCALAR) {
      fill(&t->args[i], c.arr[k], &state);
      k++;
    }
  char *fast_src = sg_asprintf("%s/examples/ok-fast.c", t->dir);
  char *ref_so = sg_asprintf("%s/%s-ref.so", tmp, t->name);
  char *fast_so = sg_asprintf("%s/%s-fast.so", tmp, t->name);
  int rc = -1;
  void *ref, *fast;
  if (compile(t->reference_path, ref_so) || compile(fast_src, fast_so) ||
      !(ref = load(ref_so, t->entry)) || !(fast = load(fast_so, t->entry))) {
    fprintf(stderr, "bench_tasks: %s: could not build or load\n", t->name);
  } else {
    double *tr = sg_calloc((size_t)runs, sizeof *tr);
    double *tf = sg_calloc((size_t)runs, sizeof *tf);
    time_call(ref, &c);
    time_call(fast, &c);
    for (int r = 0; r < runs; r++) {
      tr[r] = time_call(ref, &c);
      tf[r] = time_call(fast, &c);
    }
    double mr = sg_stats_median(tr, (size_t)runs), mf = sg_stats_median(tf, (size_t)runs);
    printf("%-26s %10.2f %10.2f %10.2f %10.2f %8.2fx\n", t->name, mr, tr[0], mf,
           tf[0], mr / mf);
    free(tr);
    free(tf);
    rc = 0;
  }
  free(fast_src);
  free(ref_so);
  free(fast_so);
  for (int i = 0; i < c.narr; i++)
    free(c.arr[i]);
  return rc;
unsupported:
  for (int i = 0; i < c.narr; i++)
    free(c.arr[i]);
  fprintf(stderr, "bench_tasks: %s: arguments not (float arrays..., ints...)\n",
          t->name);
  return -1;
}

int main(int argc, char **argv) {
  int runs = 11, cpu = -1;
  static const struct option opts[] = {{"runs", required_argument, 0, 'r'},
                                       {"cpu", required_argument, 0, 'c'},
                                       {"clock", required_argument, 0, 'k'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int o;
  while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (o == 'r')
      runs = atoi(optarg);
    else if (o == 'c')
      cpu = atoi(optarg);
    else if (o == 'k' && (strcmp(optarg, "wall") == 0 || strcmp(optarg, "cpu") == 0))
      cpu_clock = strcmp(optarg, "cpu") == 0;
    else {
      fprintf(o == 'h' ? stdout : stderr,
              "usage: bench_tasks [--runs N] [--cpu C] [--clock wall|cpu] "
              "[task ...]\n");
      return o == 'h' ? 0 : 2;
    }
  }
  if (runs < 1) {
    fprintf(stderr, "bench_tasks: --runs must be at least 1\n");
    return 2;
  }
  if (cpu < 0)
    cpu = (int)sysconf(_SC_NPROCESSORS_ONLN) - 1;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    fprintf(stderr, "bench_tasks: could not pin to CPU %d; running unpinned\n", cpu);

  sg_task **tasks = NULL;
  size_t n = 0;
  sg_err err;
  sg_err_clear(&err);
  if (sg_task_list(&tasks, &n, &err) != 0) {
    fprintf(stderr, "bench_tasks: %s\n", err.msg);
    return 1;
  }
  char tmp[] = "/tmp/bench-tasks-XXXXXX";
  if (!mkdtemp(tmp)) {
    perror("bench_tasks: mkdtemp");
    return 1;
  }
  printf("# %d runs per kernel, pinned to CPU %d, %s time, "
         "cc -std=c11 -O3 -march=native\n",
         runs, cpu, cpu_clock ? "thread CPU" : "wall-clock");
  printf("%-26s %10s %10s %10s %10s %9s\n", "task", "ref_med_ms", "ref_min_ms",
         "fast_med_ms", "fast_min_ms", "speedup");
  int failed = 0;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(tasks[i]->evaluator, "cpu") != 0)
      continue;
    int wanted = optind == argc;
    for (int a = optind; a < argc && !wanted; a++)
      wanted = strcmp(argv[a], tasks[i]->name) == 0;
    if (wanted)
      failed |= bench_task(tasks[i], runs, tmp) != 0;
  }
  sg_task_list_free(tasks, n);
  char *cmd = sg_asprintf("rm -rf '%s'", tmp);
  if (system(cmd) != 0)
    fprintf(stderr, "bench_tasks: could not remove %s\n", tmp);
  free(cmd);
  return failed;
}
