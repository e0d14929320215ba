/* test_cuda_check.c: the cuda evaluator's pure pieces (sg_cuda_check.h):
 * statistics, the candidate rules and the launcher shim. Needs no GPU. */
#include "common/sg_stats.h"
#include "common/sg_alloc.h"
#include "eval/sg_cuda_check.h"
#include "sg_test.h"

#include <stdlib.h>

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

SG_TEST_MAIN({"index_and_stats", test_index_and_stats},
             {"candidate_rules", test_candidate_rules},
             {"shim", test_shim})
