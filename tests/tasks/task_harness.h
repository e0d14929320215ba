/* task_harness.h: what the tests of the built-in CPU tasks share (header only).
 *
 * Loads a task from the source tree, draws its inputs from a fixed seed
 * following each argument's init spec (common's generator with the test's own
 * distributions, so the check does not lean on the evaluator it is meant to
 * check), compiles a C file of the
 * task into a shared object with the system compiler, runs its entry function
 * in a child process (so a crash, an abort or an endless loop is observed, not
 * suffered) and compares the output with an independent naive computation in
 * double precision written from KernelBench's semantics.
 *
 * The built-in CPU tasks share one calling convention, which this header
 * asserts: the float32 arrays first (inputs, then the one output), then the
 * dimensions as int32 scalars.
 */
#ifndef TASK_HARNESS_H
#define TASK_HARNESS_H

#include "common/sg_alloc.h"
#include "common/sg_hash.h"
#include "common/sg_rng.h"
#include "eval/sg_task.h"
#include "sg_test.h"

#include <dlfcn.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define TH_MAX_ARGS 8
#define TH_MAX_INTS 5

/* The ten built-in CPU tasks (KernelBench level 1: 100, 10-18). */
static const char *const th_task_names[] = {
    "hinge_loss",          "tensor3d_matmul",         "tensor4d_matmul",
    "diag_matmul",         "symmetric_matmul",        "upper_triangular_matmul",
    "lower_triangular_matmul", "matmul_transposed_a", "matmul_transposed_b",
    "matmul_transposed_both",
};
#define TH_NTASKS (sizeof th_task_names / sizeof th_task_names[0])

typedef struct th_ctx {
  sg_task *task;
  float *buf[TH_MAX_ARGS]; /* per argument; NULL for scalars */
  int ival[TH_MAX_INTS];   /* the scalars, in order */
  int nint;
  int out;                 /* index of the output argument */
  size_t out_bytes;
  double *expect;          /* the naive result, numel of the output */
  char tmpdir[64];
} th_ctx;

/* ---- a seeded RNG (common's sg_rng) with the test's own normals ---------- */

typedef struct th_rng {
  sg_rng g;
  double spare;
  int has_spare;
} th_rng;

static inline void th_rng_seed(th_rng *r, uint64_t seed) {
  sg_rng_seed(&r->g, seed);
  r->has_spare = 0;
}

/* Uniform in [0, 1). */
static inline double th_rng_unit(th_rng *r) { return sg_rng_uniform(&r->g); }

/* Standard normal (Box-Muller, two values per draw). */
static inline double th_rng_normal(th_rng *r) {
  if (r->has_spare) {
    r->has_spare = 0;
    return r->spare;
  }
  double u = 1.0 - th_rng_unit(r), v = th_rng_unit(r);
  double m = sqrt(-2.0 * log(u));
  r->spare = m * sin(2.0 * M_PI * v);
  r->has_spare = 1;
  return m * cos(2.0 * M_PI * v);
}

/* ---- inputs --------------------------------------------------------------- */

/* Fills input argument a (float32) following its init spec, then applies its
 * structure to every trailing square matrix. */
static inline void th_fill(const sg_task_arg *a, float *x, uint64_t seed) {
  th_rng r;
  th_rng_seed(&r, seed ^ sg_fnv1a64(a->name, strlen(a->name)));
  const sg_init_spec *s = &a->init;
  for (int64_t i = 0; i < a->numel; i++) {
    double v;
    if (strcmp(s->dist, "normal") == 0)
      v = s->p[0] + s->p[1] * th_rng_normal(&r);
    else if (strcmp(s->dist, "uniform") == 0)
      v = s->p[0] + (s->p[1] - s->p[0]) * th_rng_unit(&r);
    else if (strcmp(s->dist, "choice") == 0)
      v = s->values[sg_rng_next(&r.g) % s->nvalues];
    else
      SG_FAIL("%s: unknown dist \"%s\"", a->name, s->dist);
    x[i] = (float)v;
  }
  if (s->structure[0] == '\0')
    return;
  SG_CHECK(a->ndims >= 2);
  int64_t n = a->shape[a->ndims - 1];
  SG_CHECK_EQ_INT(a->shape[a->ndims - 2], n);
  for (int64_t base = 0; base < a->numel; base += n * n) {
    float *m = x + base;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        if (strcmp(s->structure, "symmetric") == 0) {
          if (j > i) {
            float v = (m[i * n + j] + m[j * n + i]) / 2.0f;
            m[i * n + j] = m[j * n + i] = v;
          }
        } else if (strcmp(s->structure, "upper") == 0) {
          if (j < i)
            m[i * n + j] = 0.0f;
        } else if (strcmp(s->structure, "lower") == 0) {
          if (j > i)
            m[i * n + j] = 0.0f;
        } else if (strcmp(s->structure, "diagonal") == 0) {
          if (j != i)
            m[i * n + j] = 0.0f;
        } else {
          SG_FAIL("%s: unknown structure \"%s\"", a->name, s->structure);
        }
      }
  }
}

/* The argument called name (an array), or fails the test. */
static inline const float *th_arr(const th_ctx *c, const char *name) {
  for (size_t i = 0; i < c->task->nargs; i++)
    if (strcmp(c->task->args[i].name, name) == 0 && c->buf[i])
      return c->buf[i];
  SG_FAIL("%s: no array argument \"%s\"", c->task->name, name);
}

/* The scalar argument called name, or fails the test. */
static inline long th_dim(const th_ctx *c, const char *name) {
  for (size_t i = 0; i < c->task->nargs; i++)
    if (strcmp(c->task->args[i].name, name) == 0 &&
        c->task->args[i].kind == SG_ARG_SCALAR)
      return (long)c->task->args[i].scalar_value;
  SG_FAIL("%s: no scalar argument \"%s\"", c->task->name, name);
}

/* ---- naive computations in double (KernelBench semantics) ----------------- */

/* out[i][j] = sum_k A(i, k) * B(k, j) for i < m, j < n, k < kk, where
 * A(i, k) = a[i*ai + k*ak] and B(k, j) = b[k*bk + j*bj]: every matrix product
 * of these tasks (plain, transposed, reshaped, or deliberately wrong) is one
 * choice of strides. */
static inline void th_matmul(double *out, const float *a, long ai, long ak,
                             const float *b, long bk, long bj, long m, long n,
                             long kk) {
  for (long i = 0; i < m; i++) {
    double *o = out + i * n;
    for (long j = 0; j < n; j++)
      o[j] = 0.0;
    for (long k = 0; k < kk; k++) {
      double av = a[i * ai + k * ak];
      const float *brow = b + k * bk;
      for (long j = 0; j < n; j++)
        o[j] += av * (double)brow[j * bj];
    }
  }
}

/* Zeroes out the part of an n x n result outside the kept triangle. */
static inline void th_mask(double *out, long n, int keep_upper) {
  for (long i = 0; i < n; i++)
    for (long j = 0; j < n; j++)
      if (keep_upper ? j < i : j > i)
        out[i * n + j] = 0.0;
}

/* The mean of max(0, 1 - p[i][j] * t[j]): targets broadcast along the last
 * dimension, as PyTorch does for predictions (batch, dim) * targets (dim,). */
static inline double th_hinge(const float *p, const float *t, long batch,
                              long dim) {
  double s = 0.0;
  for (long i = 0; i < batch; i++)
    for (long j = 0; j < dim; j++) {
      double h = 1.0 - (double)p[i * dim + j] * (double)t[j];
      s += h > 0.0 ? h : 0.0;
    }
  return s / ((double)batch * (double)dim);
}

/* The task's result, computed naively in double into c->expect. */
static inline void th_naive(th_ctx *c) {
  const char *t = c->task->name;
  double *e = c->expect;
  if (strcmp(t, "hinge_loss") == 0) {
    e[0] = th_hinge(th_arr(c, "predictions"), th_arr(c, "targets"),
                    th_dim(c, "batch"), th_dim(c, "dim"));
  } else if (strcmp(t, "tensor3d_matmul") == 0) {
    long K = th_dim(c, "K"), L = th_dim(c, "L");
    th_matmul(e, th_arr(c, "A"), K, 1, th_arr(c, "B"), L, 1,
              th_dim(c, "N") * th_dim(c, "M"), L, K);
  } else if (strcmp(t, "tensor4d_matmul") == 0) {
    long l = th_dim(c, "l"), k = th_dim(c, "k");
    th_matmul(e, th_arr(c, "A"), l, 1, th_arr(c, "B"), k, 1,
              th_dim(c, "b") * th_dim(c, "i") * th_dim(c, "j"), k, l);
  } else if (strcmp(t, "diag_matmul") == 0) {
    long N = th_dim(c, "N"), M = th_dim(c, "M");
    const float *A = th_arr(c, "A"), *B = th_arr(c, "B");
    for (long i = 0; i < N; i++)
      for (long j = 0; j < M; j++)
        e[i * M + j] = (double)A[i] * (double)B[i * M + j];
  } else if (strcmp(t, "symmetric_matmul") == 0 ||
             strcmp(t, "upper_triangular_matmul") == 0 ||
             strcmp(t, "lower_triangular_matmul") == 0) {
    long N = th_dim(c, "N");
    th_matmul(e, th_arr(c, "A"), N, 1, th_arr(c, "B"), N, 1, N, N, N);
    if (strcmp(t, "upper_triangular_matmul") == 0)
      th_mask(e, N, 1);
    else if (strcmp(t, "lower_triangular_matmul") == 0)
      th_mask(e, N, 0);
  } else if (strcmp(t, "matmul_transposed_a") == 0) {
    long M = th_dim(c, "M"), K = th_dim(c, "K"), N = th_dim(c, "N");
    th_matmul(e, th_arr(c, "A"), 1, M, th_arr(c, "B"), N, 1, M, N, K);
  } else if (strcmp(t, "matmul_transposed_b") == 0) {
    long M = th_dim(c, "M"), K = th_dim(c, "K"), N = th_dim(c, "N");
    th_matmul(e, th_arr(c, "A"), K, 1, th_arr(c, "B"), 1, K, M, N, K);
  } else if (strcmp(t, "matmul_transposed_both") == 0) {
    long M = th_dim(c, "M"), K = th_dim(c, "K"), N = th_dim(c, "N");
    th_matmul(e, th_arr(c, "A"), 1, M, th_arr(c, "B"), 1, K, M, N, K);
  } else {
    SG_FAIL("no naive computation for task %s", t);
  }
}

/* ---- setup ---------------------------------------------------------------- */

/* Loads tasks/cpu/<name> from the source tree, checks the calling convention,
 * draws the inputs from seed and computes the naive result. The output buffer
 * is shared memory, so what a child process writes there is seen here. */
static inline void th_setup(th_ctx *c, const char *name, uint64_t seed) {
  memset(c, 0, sizeof *c);
  char dir[512];
  snprintf(dir, sizeof dir, "%s/tasks/cpu/%s", SG_SOURCE_ROOT, name);
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_task_load(dir, &c->task, &err), err);
  sg_task *t = c->task;
  SG_CHECK_STR_EQ(t->name, name);
  SG_CHECK_STR_EQ(t->evaluator, "cpu");
  SG_CHECK_STR_EQ(t->language, "c");
  SG_CHECK_STR_EQ(t->entry, name);
  SG_CHECK(t->nargs <= TH_MAX_ARGS);
  c->out = -1;
  size_t i = 0;
  for (; i < t->nargs && t->args[i].kind != SG_ARG_SCALAR; i++) {
    const sg_task_arg *a = &t->args[i];
    SG_CHECK_MSG(a->dtype == SG_DTYPE_F32, "%s: %s is not float32", name, a->name);
    size_t bytes = (size_t)a->numel * sizeof(float);
    if (a->kind == SG_ARG_OUTPUT) {
      SG_CHECK_MSG(c->out < 0, "%s: more than one output", name);
      c->out = (int)i;
      c->out_bytes = bytes;
      void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
      SG_CHECK(m != MAP_FAILED);
      c->buf[i] = m;
    } else {
      SG_CHECK_MSG(c->out < 0, "%s: input %s after the output", name, a->name);
      c->buf[i] = sg_malloc(bytes);
      th_fill(a, c->buf[i], seed);
    }
  }
  SG_CHECK_MSG(c->out >= 0, "%s: no output", name);
  for (; i < t->nargs; i++) {
    const sg_task_arg *a = &t->args[i];
    SG_CHECK_MSG(a->kind == SG_ARG_SCALAR, "%s: array %s after the scalars",
                 name, a->name);
    SG_CHECK_MSG(a->dtype == SG_DTYPE_I32, "%s: %s is not int32", name, a->name);
    SG_CHECK(c->nint < TH_MAX_INTS);
    SG_CHECK(a->scalar_value == floor(a->scalar_value) && a->scalar_value > 0);
    c->ival[c->nint++] = (int)a->scalar_value;
  }
  SG_CHECK_MSG(c->out == 2, "%s: expected two inputs then the output", name);
  SG_CHECK(c->nint >= 1);
  c->expect = sg_calloc((size_t)t->args[c->out].numel, sizeof(double));
  th_naive(c);
  snprintf(c->tmpdir, sizeof c->tmpdir, "/tmp/sg-test-tasks-XXXXXX");
  SG_CHECK(mkdtemp(c->tmpdir) != NULL);
}

static inline void th_teardown(th_ctx *c) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", c->tmpdir);
  if (system(cmd) != 0)
    fprintf(stdout, "# could not remove %s\n", c->tmpdir);
  for (size_t i = 0; i < c->task->nargs; i++) {
    if ((int)i == c->out)
      munmap(c->buf[i], c->out_bytes);
    else
      free(c->buf[i]);
  }
  free(c->expect);
  sg_task_free(c->task);
}

/* ---- compile and run -------------------------------------------------------- */

/* Compiles src into <tmpdir>/<tag>.so with the system compiler (cc, or
 * $SG_TASKS_CC to check the tasks under another compiler) and the flags the
 * cpu evaluator uses (src/eval/sg_eval_cpu.c); returns the
 * compiler's exit status and its messages in log (the caller frees it). */
static inline int th_compile(th_ctx *c, const char *src, const char *tag,
                             char *so, size_t so_size, char **log) {
  snprintf(so, so_size, "%s/%s.so", c->tmpdir, tag);
  char logpath[256];
  snprintf(logpath, sizeof logpath, "%s/%s.log", c->tmpdir, tag);
  const char *cc = getenv("SG_TASKS_CC");
  char *cmd = sg_asprintf(
      "%s -std=c11 -O3 -march=native -fPIC -shared -D_GNU_SOURCE "
      "-Werror=implicit-function-declaration -o '%s' '%s' -lm 2>'%s'",
      cc && cc[0] ? cc : "cc", so, src, logpath);
  int st = system(cmd);
  free(cmd);
  SG_CHECK(st != -1 && WIFEXITED(st));
  if (log) {
    FILE *f = fopen(logpath, "r");
    char text[4096] = "";
    if (f) {
      size_t n = fread(text, 1, sizeof text - 1, f);
      text[n] = '\0';
      fclose(f);
    }
    *log = sg_strdup(text);
  }
  return WEXITSTATUS(st);
}

typedef void (*th_fn1)(const float *, const float *, float *, int);
typedef void (*th_fn2)(const float *, const float *, float *, int, int);
typedef void (*th_fn3)(const float *, const float *, float *, int, int, int);
typedef void (*th_fn4)(const float *, const float *, float *, int, int, int, int);
typedef void (*th_fn5)(const float *, const float *, float *, int, int, int, int,
                       int);

/* Calls the entry with the task's arrays and dimensions. */
static inline void th_call(const th_ctx *c, void *fn) {
  const float *a = c->buf[0], *b = c->buf[1];
  float *o = c->buf[2];
  const int *v = c->ival;
  switch (c->nint) {
  case 1: ((th_fn1)fn)(a, b, o, v[0]); break;
  case 2: ((th_fn2)fn)(a, b, o, v[0], v[1]); break;
  case 3: ((th_fn3)fn)(a, b, o, v[0], v[1], v[2]); break;
  case 4: ((th_fn4)fn)(a, b, o, v[0], v[1], v[2], v[3]); break;
  case 5: ((th_fn5)fn)(a, b, o, v[0], v[1], v[2], v[3], v[4]); break;
  default: SG_FAIL("unsupported number of scalars %d", c->nint);
  }
}

/* How a run in a child process ended. */
typedef enum th_end { TH_RETURNED, TH_CRASHED, TH_TIMED_OUT } th_end;

/* Loads so, poisons the output with NaN and runs the entry in a child process
 * that is killed after timeout_s seconds. Returns how it ended; *sig is the
 * signal or exit status that ended a crashed run. */
static inline th_end th_run(th_ctx *c, const char *so, unsigned timeout_s,
                            int *sig) {
  float *o = c->buf[c->out];
  for (int64_t i = 0; i < c->task->args[c->out].numel; i++)
    o[i] = NAN;
  fflush(stdout);
  pid_t pid = fork();
  SG_CHECK(pid >= 0);
  if (pid == 0) {
    signal(SIGALRM, SIG_DFL);
    alarm(timeout_s);
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      fprintf(stdout, "# dlopen %s: %s\n", so, dlerror());
      _exit(100);
    }
    void *fn = dlsym(h, c->task->entry);
    if (!fn) {
      fprintf(stdout, "# %s: no symbol %s\n", so, c->task->entry);
      _exit(101);
    }
    th_call(c, fn);
    _exit(0);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    ;
  *sig = 0;
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
    return TH_RETURNED;
  if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
    return TH_TIMED_OUT;
  *sig = WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st);
  return TH_CRASHED;
}

/* ---- comparison ------------------------------------------------------------- */

typedef struct th_cmp {
  size_t bad;          /* elements outside |x - e| <= atol + rtol * |e| */
  long long first_bad; /* flat index, -1 if none */
  double max_abs;      /* largest |x - e| (inf for a NaN) */
} th_cmp;

/* Compares got (n values, float or double) with want under the task's
 * tolerance, as the allclose check of docs/tasks.md does. */
static inline th_cmp th_compare_d(const sg_task *t, const double *got,
                                  const double *want, size_t n) {
  th_cmp r = {0, -1, 0.0};
  for (size_t i = 0; i < n; i++) {
    double d = fabs(got[i] - want[i]);
    if (isnan(d))
      d = INFINITY;
    if (d > r.max_abs)
      r.max_abs = d;
    if (!(d <= t->atol + t->rtol * fabs(want[i]))) {
      if (r.bad++ == 0)
        r.first_bad = (long long)i;
    }
  }
  return r;
}

static inline th_cmp th_compare_out(const th_ctx *c) {
  const sg_task *t = c->task;
  size_t n = (size_t)t->args[c->out].numel;
  const float *o = c->buf[c->out];
  th_cmp r = {0, -1, 0.0};
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)o[i] - c->expect[i]);
    if (isnan(d))
      d = INFINITY;
    if (d > r.max_abs)
      r.max_abs = d;
    if (!(d <= t->atol + t->rtol * fabs(c->expect[i]))) {
      if (r.bad++ == 0)
        r.first_bad = (long long)i;
    }
  }
  return r;
}

#endif
