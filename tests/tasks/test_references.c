/* test_references.c: every built-in CPU task's reference computes what
 * KernelBench's operator computes, and the task's inputs make shortcuts fail.
 *
 * For each task: its reference.c is compiled with the system compiler, run on
 * inputs drawn from a fixed seed following task.json's init specs, at the
 * task's real shapes, and compared with a naive double-precision computation
 * written here from KernelBench's semantics (task_harness.h) under the task's
 * tolerance. Then plausible wrong answers (a constant, a missed transpose, an
 * off-by-one in the reduction, the other triangle, a forgotten clamp...) are
 * computed in double and must NOT pass the same check: that is what makes the
 * inputs and the tolerance worth anything.
 */
#include "task_harness.h"

#include <dirent.h>

#define SEED 20260502u

/* The reference, compiled and run on the real shapes, matches the naive
 * double computation within the task's tolerance. */
static void check_reference(const char *name) {
  th_ctx c;
  th_setup(&c, name, SEED);
  char so[256], *log = NULL;
  int rc = th_compile(&c, c.task->reference_path, "reference", so, sizeof so, &log);
  SG_CHECK_MSG(rc == 0, "%s: reference.c does not compile:\n%s", name, log);
  free(log);
  int sig;
  th_end end = th_run(&c, so, 60, &sig);
  SG_CHECK_MSG(end == TH_RETURNED, "%s: reference did not return (%d, %d)", name,
               (int)end, sig);
  th_cmp r = th_compare_out(&c);
  SG_CHECK_MSG(r.bad == 0,
               "%s: reference differs from the naive computation at %zu elements "
               "(first %lld: %.9g vs %.9g; max abs error %g)",
               name, r.bad, r.first_bad, (double)c.buf[c.out][r.first_bad],
               c.expect[r.first_bad], r.max_abs);
  th_teardown(&c);
}

/* A wrong answer must fail the task's check against the true result. */
static void check_fails(const th_ctx *c, const char *what, const double *wrong) {
  size_t n = (size_t)c->task->args[c->out].numel;
  th_cmp r = th_compare_d(c->task, wrong, c->expect, n);
  SG_CHECK_MSG(r.bad > 0, "%s: the shortcut \"%s\" passes the check", c->task->name,
               what);
}

static double normal_cdf(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

/* E[max(0, Y)] for Y ~ N(m, s^2). */
static double relu_mean(double m, double s) {
  return m * normal_cdf(m / s) + s * exp(-0.5 * (m / s) * (m / s)) / sqrt(2.0 * M_PI);
}

static void shortcuts_hinge(th_ctx *c) {
  const float *p = th_arr(c, "predictions"), *t = th_arr(c, "targets");
  long batch = th_dim(c, "batch"), dim = th_dim(c, "dim");
  double n = (double)batch * (double)dim;
  double mean_t = 0, mean_pt = 0, no_targets = 0, clamped = 0;
  for (long j = 0; j < dim; j++)
    mean_t += t[j] / (double)dim;
  for (long i = 0; i < batch; i++)
    for (long j = 0; j < dim; j++) {
      double x = p[i * dim + j];
      mean_pt += x * t[j] / n;
      no_targets += (1.0 - x > 0 ? 1.0 - x : 0.0) / n;
      clamped += (1.0 - x * t[j] <= 0) / n;
    }
  /* The clamp must matter for a good share of the elements. */
  SG_CHECK_MSG(clamped > 0.1 && clamped < 0.9, "clamped share %g", clamped);
  double v;
  v = 1.0;
  check_fails(c, "a constant 1", &v);
  v = 1.0 - 0.5 * mean_t;
  check_fails(c, "1 - 0.5 * mean(targets)", &v);
  v = 1.0 - mean_pt;
  check_fails(c, "no clamp: 1 - mean(predictions * targets)", &v);
  v = no_targets;
  check_fails(c, "targets ignored: mean(max(0, 1 - predictions))", &v);
  /* The expectation under the task's own distributions, in closed form: the
   * sample is large, but the tolerance is far below its sampling noise. */
  const sg_init_spec *ps = &c->task->args[0].init;
  SG_CHECK_STR_EQ(ps->dist, "normal");
  double mu = ps->p[0], sd = ps->p[1];
  v = 0.5 * relu_mean(1.0 - mu, sd) + 0.5 * relu_mean(1.0 + mu, sd);
  check_fails(c, "the analytic expectation of the input distributions", &v);
}

/* Each shortcut a matrix task's inputs must defeat, as a strided product
 * (see th_matmul) or a transformation of the true result. */
static void shortcuts_matrix(th_ctx *c) {
  const char *t = c->task->name;
  size_t n = (size_t)c->task->args[c->out].numel;
  double *w = sg_calloc(n, sizeof *w);
  check_fails(c, "all zeros", w);
  const float *A = th_arr(c, "A"), *B = th_arr(c, "B");
  if (strcmp(t, "tensor3d_matmul") == 0 || strcmp(t, "tensor4d_matmul") == 0) {
    int is3 = strcmp(t, "tensor3d_matmul") == 0;
    long rows = is3 ? th_dim(c, "N") * th_dim(c, "M")
                    : th_dim(c, "b") * th_dim(c, "i") * th_dim(c, "j");
    long K = th_dim(c, is3 ? "K" : "l"), L = th_dim(c, is3 ? "L" : "k");
    /* The reduction stops one short. */
    for (long r = 0; r < rows; r++)
      for (long l = 0; l < L; l++)
        w[r * L + l] = c->expect[r * L + l] - (double)A[r * K + K - 1] * B[(K - 1) * L + l];
    check_fails(c, "the last term of the reduction dropped", w);
    /* B read as if it were stored (L, K). */
    th_matmul(w, A, K, 1, B, 1, K, rows, L, K);
    check_fails(c, "B indexed transposed", w);
  } else if (strcmp(t, "diag_matmul") == 0) {
    long N = th_dim(c, "N"), M = th_dim(c, "M");
    for (size_t x = 0; x < n; x++)
      w[x] = B[x];
    check_fails(c, "C = B (the diagonal ignored)", w);
    SG_CHECK(M <= N);
    for (long i = 0; i < N; i++)
      for (long j = 0; j < M; j++)
        w[i * M + j] = (double)A[j] * B[i * M + j];
    check_fails(c, "diagonal broadcast along columns (A[j] * B[i][j])", w);
  } else if (strcmp(t, "symmetric_matmul") == 0) {
    long N = th_dim(c, "N");
    th_matmul(w, B, N, 1, A, N, 1, N, N, N);
    check_fails(c, "B @ A instead of A @ B", w);
  } else if (strcmp(t, "upper_triangular_matmul") == 0 ||
             strcmp(t, "lower_triangular_matmul") == 0) {
    long N = th_dim(c, "N");
    int upper = t[0] == 'u';
    /* The full product is the right answer: the inputs are exactly
     * triangular, so triu/tril of A @ B changes nothing. */
    th_matmul(w, A, N, 1, B, N, 1, N, N, N);
    SG_CHECK(th_compare_d(c->task, w, c->expect, n).bad == 0);
    /* The other triangle's mask. */
    th_mask(w, N, !upper);
    check_fails(c, "the other triangle", w);
    /* The k range of the triangular sum missing its end (k = j for upper,
     * k = i for lower) or its start. */
    for (long i = 0; i < N; i++)
      for (long j = 0; j < N; j++) {
        long end = upper ? j : i;
        w[i * N + j] = c->expect[i * N + j] - (double)A[i * N + end] * B[end * N + j];
      }
    check_fails(c, "the last term of the triangular range dropped", w);
    for (long i = 0; i < N; i++)
      for (long j = 0; j < N; j++) {
        long start = upper ? i : j;
        w[i * N + j] =
            c->expect[i * N + j] - (double)A[i * N + start] * B[start * N + j];
      }
    check_fails(c, "the first term of the triangular range dropped", w);
  } else {
    long M = th_dim(c, "M"), K = th_dim(c, "K"), N = th_dim(c, "N");
    /* Every other combination of transposes (same element counts, so a
     * wrong one reads in bounds and returns plausible numbers). */
    struct { long ai, ak, bk, bj; const char *what; } v[4] = {
        {K, 1, N, 1, "A @ B (no transpose)"},
        {1, M, N, 1, "A^T @ B"},
        {K, 1, 1, K, "A @ B^T"},
        {1, M, 1, K, "A^T @ B^T"},
    };
    int right = strcmp(t, "matmul_transposed_a") == 0   ? 1
                : strcmp(t, "matmul_transposed_b") == 0 ? 2
                                                        : 3;
    for (int x = 0; x < 4; x++) {
      th_matmul(w, A, v[x].ai, v[x].ak, B, v[x].bk, v[x].bj, M, N, K);
      th_cmp r = th_compare_d(c->task, w, c->expect, n);
      if (x == right)
        SG_CHECK_MSG(r.bad == 0, "%s: the naive %s disagrees", t, v[x].what);
      else
        SG_CHECK_MSG(r.bad > 0, "%s: the shortcut \"%s\" passes the check", t,
                     v[x].what);
    }
  }
  free(w);
}

static void check_shortcuts(const char *name) {
  th_ctx c;
  th_setup(&c, name, SEED);
  if (strcmp(name, "hinge_loss") == 0)
    shortcuts_hinge(&c);
  else
    shortcuts_matrix(&c);
  th_teardown(&c);
}

#define TASK_TESTS(name)                                                      \
  static void test_##name##_reference_matches_naive(void) {                    \
    check_reference(#name);                                                   \
  }                                                                           \
  static void test_##name##_inputs_defeat_shortcuts(void) {                    \
    check_shortcuts(#name);                                                   \
  }

TASK_TESTS(hinge_loss)
TASK_TESTS(tensor3d_matmul)
TASK_TESTS(tensor4d_matmul)
TASK_TESTS(diag_matmul)
TASK_TESTS(symmetric_matmul)
TASK_TESTS(upper_triangular_matmul)
TASK_TESTS(lower_triangular_matmul)
TASK_TESTS(matmul_transposed_a)
TASK_TESTS(matmul_transposed_b)
TASK_TESTS(matmul_transposed_both)

/* tasks/cpu holds exactly the ten tasks this file checks. */
static void test_every_cpu_task_is_checked(void) {
  DIR *d = opendir(SG_SOURCE_ROOT "/tasks/cpu");
  SG_CHECK(d != NULL);
  size_t seen = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    size_t i = 0;
    while (i < TH_NTASKS && strcmp(th_task_names[i], e->d_name) != 0)
      i++;
    SG_CHECK_MSG(i < TH_NTASKS, "tasks/cpu/%s is not checked here", e->d_name);
    seen++;
  }
  closedir(d);
  SG_CHECK_EQ_INT(seen, TH_NTASKS);
}

/* The check itself: a result off by more than the tolerance is caught, one
 * within it is not, and a NaN never passes. */
static void test_compare_applies_tolerance(void) {
  th_ctx c;
  th_setup(&c, "symmetric_matmul", SEED);
  size_t n = (size_t)c.task->args[c.out].numel;
  double *w = sg_malloc(n * sizeof *w);
  memcpy(w, c.expect, n * sizeof *w);
  SG_CHECK_EQ_INT(th_compare_d(c.task, w, c.expect, n).bad, 0);
  w[7] += 0.5 * (c.task->atol + c.task->rtol * fabs(c.expect[7]));
  SG_CHECK_EQ_INT(th_compare_d(c.task, w, c.expect, n).bad, 0);
  w[7] = c.expect[7] + 2.0 * (c.task->atol + c.task->rtol * fabs(c.expect[7]));
  th_cmp r = th_compare_d(c.task, w, c.expect, n);
  SG_CHECK_EQ_INT(r.bad, 1);
  SG_CHECK_EQ_INT(r.first_bad, 7);
  w[7] = c.expect[7];
  w[9] = NAN;
  SG_CHECK_EQ_INT(th_compare_d(c.task, w, c.expect, n).bad, 1);
  free(w);
  th_teardown(&c);
}

SG_TEST_MAIN(SG_TEST(test_every_cpu_task_is_checked),
             SG_TEST(test_compare_applies_tolerance),
             SG_TEST(test_hinge_loss_reference_matches_naive),
             SG_TEST(test_hinge_loss_inputs_defeat_shortcuts),
             SG_TEST(test_tensor3d_matmul_reference_matches_naive),
             SG_TEST(test_tensor3d_matmul_inputs_defeat_shortcuts),
             SG_TEST(test_tensor4d_matmul_reference_matches_naive),
             SG_TEST(test_tensor4d_matmul_inputs_defeat_shortcuts),
             SG_TEST(test_diag_matmul_reference_matches_naive),
             SG_TEST(test_diag_matmul_inputs_defeat_shortcuts),
             SG_TEST(test_symmetric_matmul_reference_matches_naive),
             SG_TEST(test_symmetric_matmul_inputs_defeat_shortcuts),
             SG_TEST(test_upper_triangular_matmul_reference_matches_naive),
             SG_TEST(test_upper_triangular_matmul_inputs_defeat_shortcuts),
             SG_TEST(test_lower_triangular_matmul_reference_matches_naive),
             SG_TEST(test_lower_triangular_matmul_inputs_defeat_shortcuts),
             SG_TEST(test_matmul_transposed_a_reference_matches_naive),
             SG_TEST(test_matmul_transposed_a_inputs_defeat_shortcuts),
             SG_TEST(test_matmul_transposed_b_reference_matches_naive),
             SG_TEST(test_matmul_transposed_b_inputs_defeat_shortcuts),
             SG_TEST(test_matmul_transposed_both_reference_matches_naive),
             SG_TEST(test_matmul_transposed_both_inputs_defeat_shortcuts))
