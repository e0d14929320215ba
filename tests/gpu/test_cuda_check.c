/* test_cuda_check.c: the cuda evaluator's pure pieces (sg_cuda_check.h):
 * input drawing, element-wise comparison, statistics, the candidate rules
 * and the launcher shim. Needs no GPU. */
#include "common/sg_stats.h"
#include "common/sg_alloc.h"
#include "eval/sg_cuda_check.h"
#include "sg_test.h"

#include <stdlib.h>

static sg_task_arg matrix(const char *dist, const char *structure, int64_t n) {
  sg_task_arg a;
  memset(&a, 0, sizeof a);
  a.name = "A";
  a.kind = SG_ARG_INPUT;
  a.dtype = SG_DTYPE_F32;
  a.ndims = 2;
  a.shape[0] = a.shape[1] = n;
  a.numel = n * n;
  snprintf(a.init.dist, sizeof a.init.dist, "%s", dist);
  a.init.p[0] = 0;
  a.init.p[1] = 1;
  snprintf(a.init.structure, sizeof a.init.structure, "%s", structure);
  return a;
}

static void test_rng_is_deterministic(void) {
  sg_rng a, b;
  sg_rng_seed(&a, 42);
  sg_rng_seed(&b, 42);
  for (int i = 0; i < 1000; i++)
    SG_CHECK(sg_rng_next(&a) == sg_rng_next(&b));
  sg_rng_seed(&b, 43);
  SG_CHECK(sg_rng_next(&a) != sg_rng_next(&b));
  double s = 0, s2 = 0;
  for (int i = 0; i < 100000; i++) {
    double u = sg_rng_uniform(&a);
    SG_CHECK(u >= 0 && u < 1);
    double z = sg_cuda_rng_normal(&a);
    s += z;
    s2 += z * z;
  }
  SG_CHECK_NEAR(s / 100000, 0, 0.02);
  SG_CHECK_NEAR(s2 / 100000, 1, 0.02);
}

/* Threads fill whole chunks; the values must not depend on the split. */
static void test_fill_independent_of_split(void) {
  sg_task_arg a = matrix("normal", "", 2048); /* 4 chunks */
  float *one = sg_malloc((size_t)a.numel * 4), *parts = sg_malloc((size_t)a.numel * 4);
  sg_cuda_fill_input(&a, one, 7, 0);
  int64_t c = SG_CUDA_FILL_CHUNK;
  sg_cuda_fill_range(&a, parts, 7, 0, 2 * c, a.numel);
  sg_cuda_fill_range(&a, parts, 7, 0, 0, c);
  sg_cuda_fill_range(&a, parts, 7, 0, c, 2 * c);
  SG_CHECK(memcmp(one, parts, (size_t)a.numel * 4) == 0);
  /* Another seed or another argument gives other values. */
  sg_cuda_fill_input(&a, parts, 8, 0);
  SG_CHECK(memcmp(one, parts, (size_t)a.numel * 4) != 0);
  sg_cuda_fill_input(&a, parts, 7, 1);
  SG_CHECK(memcmp(one, parts, (size_t)a.numel * 4) != 0);
  free(one);
  free(parts);
}

static void test_fill_structures(void) {
  const int n = 64;
  float *m = sg_malloc(n * n * 4);
  sg_task_arg a = matrix("uniform", "symmetric", n);
  a.init.p[0] = 1;
  a.init.p[1] = 2;
  sg_cuda_fill_input(&a, m, 1, 0);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      SG_CHECK(m[i * n + j] == m[j * n + i]);
      SG_CHECK(m[i * n + j] >= 1 && m[i * n + j] < 2);
    }
  a = matrix("normal", "upper", n);
  sg_cuda_fill_input(&a, m, 1, 0);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      SG_CHECK(j >= i ? m[i * n + j] != 0 : m[i * n + j] == 0);
  a = matrix("normal", "lower", n);
  sg_cuda_fill_input(&a, m, 1, 0);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      SG_CHECK(j <= i ? m[i * n + j] != 0 : m[i * n + j] == 0);
  double vals[2] = {-1, 1};
  a = matrix("choice", "", n);
  a.init.values = vals;
  a.init.nvalues = 2;
  sg_cuda_fill_input(&a, m, 1, 0);
  int neg = 0;
  for (int i = 0; i < n * n; i++) {
    SG_CHECK(m[i] == -1 || m[i] == 1);
    neg += m[i] < 0;
  }
  SG_CHECK(neg > n * n / 3 && neg < 2 * n * n / 3);
  free(m);
}

static void test_compare(void) {
  float ref[5] = {1, 2, 3, 4, NAN}, cand[5] = {1, 2, 3, 4, NAN};
  sg_cuda_cmp c;
  sg_cuda_compare(SG_DTYPE_F32, ref, cand, 5, 1e-3, 1e-3, &c);
  SG_CHECK_EQ_INT(c.bad, 0);
  SG_CHECK_EQ_INT(c.first_bad, -1);
  cand[2] = 3.01f; /* outside 1e-3 + 1e-3 * 3 */
  cand[3] = NAN;   /* the poison left in place */
  sg_cuda_compare(SG_DTYPE_F32, ref, cand, 5, 1e-3, 1e-3, &c);
  SG_CHECK_EQ_INT(c.bad, 2);
  SG_CHECK_EQ_INT(c.unwritten, 1);
  SG_CHECK_EQ_INT(c.first_bad, 2);
  SG_CHECK_NEAR(c.first_cand, 3.01, 1e-6);
  SG_CHECK_NEAR(c.first_ref, 3, 0);
  SG_CHECK(isinf(c.max_abs));
  cand[3] = 4;
  cand[2] = 3.0045f; /* outside atol + rtol * |ref| = 0.004 */
  sg_cuda_compare(SG_DTYPE_F32, ref, cand, 5, 1e-3, 1e-3, &c);
  SG_CHECK_EQ_INT(c.bad, 1);
  SG_CHECK_EQ_INT(c.first_bad, 2);
  sg_cuda_compare(SG_DTYPE_F32, ref, cand, 5, 1e-3, 2e-3, &c); /* 0.007 */
  SG_CHECK_EQ_INT(c.bad, 0);
  SG_CHECK_NEAR(c.max_abs, 0.0045, 1e-6);
  SG_CHECK_NEAR(c.max_rel, 0.0045 / 3, 1e-6);
  double r64[2] = {INFINITY, 1}, c64[2] = {INFINITY, -INFINITY};
  sg_cuda_compare(SG_DTYPE_F64, r64, c64, 2, 1, 1, &c);
  SG_CHECK_EQ_INT(c.bad, 1);
  SG_CHECK_EQ_INT(c.first_bad, 1);
  int32_t ri[3] = {1, 2, 3}, ci[3] = {1, 2, 4};
  sg_cuda_compare(SG_DTYPE_I32, ri, ci, 3, 0, 0, &c);
  SG_CHECK_EQ_INT(c.bad, 1);
}

static void test_index_and_stats(void) {
  sg_task_arg a;
  memset(&a, 0, sizeof a);
  a.ndims = 3;
  a.shape[0] = 2;
  a.shape[1] = 3;
  a.shape[2] = 4;
  char buf[64];
  SG_CHECK_STR_EQ(sg_task_index_str(&a, 0, buf, sizeof buf), "[0, 0, 0]");
  SG_CHECK_STR_EQ(sg_task_index_str(&a, 23, buf, sizeof buf), "[1, 2, 3]");
  SG_CHECK_STR_EQ(sg_task_index_str(&a, 13, buf, sizeof buf), "[1, 0, 1]");
  double v[5] = {5, 1, 4, 2, 3};
  SG_CHECK_NEAR(sg_stats_mean(v, 5), 3, 0);
  SG_CHECK_NEAR(sg_stats_median(v, 5), 3, 0);
  double w[4] = {4, 1, 3, 2};
  SG_CHECK_NEAR(sg_stats_median(w, 4), 2.5, 0);
  SG_CHECK(isnan(sg_stats_median(w, 0)));
}

static bool forbidden(const char *src, char *why) {
  return sg_cuda_source_forbidden(src, strlen(src), why, 256);
}

static void test_candidate_rules(void) {
  char why[256];
  SG_CHECK(forbidden("#include <cublas_v2.h>\n", why));
  SG_CHECK_CONTAINS(why, "cuBLAS");
  SG_CHECK(forbidden("void f(){ cublasSgemm(h, ...); }", why));
  SG_CHECK(forbidden("void f(){ void *p = dlopen(\"x.so\", 2); }", why));
  SG_CHECK_CONTAINS(why, "dlopen");
  SG_CHECK(forbidden("void f(){ dlopen(\"libcublas.so\", 2); }", why));
  SG_CHECK_CONTAINS(why, "dlopen");
  SG_CHECK(forbidden("void f(){ dlsym (p, \"sym\"); }", why));
  SG_CHECK(forbidden("void f(){ system(\"ls\"); }", why));
  SG_CHECK(forbidden("#include <cudnn.h>", why));
  SG_CHECK(forbidden("#include \"cutlass/gemm.h\"", why));
  SG_CHECK(forbidden("const char *lib = \"libcublasLt.so\";", why));
  SG_CHECK(forbidden("void f(){ execvp(a, b); }", why));
  /* Comments may speak of them; identifiers that merely contain the words
   * are fine. */
  SG_CHECK(!forbidden("// faster than cuBLAS, no dlopen() here\n"
                      "/* cublasSgemm would be cheating */ __global__ void k(){}",
                      why));
  SG_CHECK(!forbidden("int systematic = 1; int my_system(int); float subsystem(float x);",
                      why));
  SG_CHECK(!forbidden("__global__ void forked_tile(float *p) { p[0] = 1; }", why));
}

static void test_shim(void) {
  sg_task_arg args[4];
  memset(args, 0, sizeof args);
  args[0] = (sg_task_arg){.name = "A", .kind = SG_ARG_INPUT, .dtype = SG_DTYPE_F32};
  args[1] = (sg_task_arg){.name = "C", .kind = SG_ARG_OUTPUT, .dtype = SG_DTYPE_F64};
  args[2] = (sg_task_arg){.name = "n", .kind = SG_ARG_SCALAR, .dtype = SG_DTYPE_I32};
  args[3] = (sg_task_arg){.name = "m", .kind = SG_ARG_SCALAR, .dtype = SG_DTYPE_I64};
  sg_task t;
  memset(&t, 0, sizeof t);
  t.entry = "my_kernel";
  t.args = args;
  t.nargs = 4;
  sg_buf b;
  sg_buf_init(&b, 0);
  sg_cuda_shim(&t, "candidate.cu", &b);
  SG_CHECK_CONTAINS(b.data, "#include \"candidate.cu\"");
  SG_CHECK_CONTAINS(b.data, "extern \"C\"");
  SG_CHECK_CONTAINS(b.data, "void sg_launch(void **a)");
  SG_CHECK_CONTAINS(b.data, "my_kernel((float *)a[0], (double *)a[1], "
                            "*(const int *)a[2], *(const long long *)a[3]);");
  sg_buf_free(&b);
}

SG_TEST_MAIN({"rng_is_deterministic", test_rng_is_deterministic},
             {"fill_independent_of_split", test_fill_independent_of_split},
             {"fill_structures", test_fill_structures},
             {"compare", test_compare},
             {"index_and_stats", test_index_and_stats},
             {"candidate_rules", test_candidate_rules},
             {"shim", test_shim})
