/* test_cuda_eval.c: the cuda evaluator through sg_eval.h.
 *
 * Suite unit: the compile stage (needs nvcc, skips without it) and the run
 * stage where no CUDA driver exists (an infra_error that says so, never a
 * crash). Suite gpu (test names gpu_*): every built-in CUDA task's examples
 * through validation, each with the status its name promises; skips where
 * no CUDA device is present. */
#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "eval/sg_cuda_ahead.h"
#include "eval/sg_eval.h"
#include "eval/sg_eval_cuda.h"
#include "eval/sg_sandbox.h"
#include "sg_test.h"
#include "tmpfiles.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>

static void need_nvcc(void) {
  char *nvcc = sg_eval_cuda_find_nvcc();
  if (!nvcc)
    SG_SKIP("nvcc not found: the cuda evaluator's compile stage needs the CUDA toolkit");
  free(nvcc);
}

static bool have_driver(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h)
    dlclose(h);
  return h != NULL;
}

static sg_task *load(const char *name) {
  sg_task *t = NULL;
  sg_err err;
  char *dir = sg_asprintf("%s/tasks/cuda/%s", SG_SOURCE_ROOT, name);
  SG_CHECK_OK(sg_task_load(dir, &t, &err), err);
  free(dir);
  return t;
}

static void compile_text(const sg_task *t, const char *src, sg_eval_build *b,
                         sg_eval_result *r) {
  sg_eval_opts o;
  sg_eval_opts_default(&o);
  o.compile_timeout_s = 180;
  sg_err err;
  sg_err_clear(&err);
  sg_eval_result_init(r);
  memset(b, 0, sizeof *b);
  SG_CHECK_OK(sg_eval_compile(t, src, strlen(src), &o, b, r, &err), err);
}

static void compile_example(const sg_task *t, const char *example, sg_eval_build *b,
                            sg_eval_result *r) {
  char *path = sg_asprintf("%s/examples/%s", t->dir, example);
  char *src;
  sg_err err;
  SG_CHECK_OK(sg_file_read(path, 1 << 20, &src, NULL, &err), err);
  compile_text(t, src, b, r);
  free(src);
  free(path);
}

static void test_compile_ok_builds_both(void) {
  need_nvcc();
  sg_task *t = load("diag_matmul");
  sg_eval_build b;
  sg_eval_result r;
  compile_example(t, "ok-fast.cu", &b, &r);
  SG_CHECK_MSG(r.status == SG_EVAL_OK, "status %s: %s", sg_eval_status_name(r.status),
               r.message ? r.message : "");
  SG_CHECK(b.artifact && access(b.artifact, R_OK) == 0);
  SG_CHECK(b.reference_artifact && access(b.reference_artifact, R_OK) == 0);
  SG_CHECK(r.compile_s > 0);
  sg_eval_build_free(&b);
  sg_eval_result_free(&r);
  sg_task_free(t);
}

static void test_compile_error_names_the_file(void) {
  need_nvcc();
  sg_task *t = load("diag_matmul");
  sg_eval_build b;
  sg_eval_result r;
  compile_example(t, "compile_error-syntax.cu", &b, &r);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_COMPILE_ERROR);
  SG_CHECK_CONTAINS(r.message, "candidate.cu");
  SG_CHECK_CONTAINS(r.message, "error");
  /* No scratch path leaks into what the LLM reads. */
  SG_CHECK(strstr(r.message, "specgen-cuda-") == NULL);
  SG_CHECK(b.artifact == NULL);
  sg_eval_build_free(&b);
  sg_eval_result_free(&r);
  sg_task_free(t);
}

/* A candidate whose signature does not match the task's fails to compile
 * against the shim, with nvcc's words. */
static void test_wrong_signature_is_compile_error(void) {
  need_nvcc();
  sg_task *t = load("diag_matmul");
  sg_eval_build b;
  sg_eval_result r;
  compile_text(t, "extern \"C\" void diag_matmul(const float *A, float *C, int N) {}\n",
               &b, &r);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_COMPILE_ERROR);
  SG_CHECK_CONTAINS(r.message, "diag_matmul");
  sg_eval_build_free(&b);
  sg_eval_result_free(&r);
  sg_task_free(t);
}

/* The prelude that keeps libstdc++'s C++17 special math functions out of
 * the compile takes nothing else away: C++17 in host and device code, the
 * standard library's <cmath>, <type_traits>, <algorithm> and <vector> on
 * the host, CUDA's math on the device. Only a host call to a special math
 * function fails, and says which. */
static void test_cxx17_and_the_standard_library_compile(void) {
  need_nvcc();
  sg_task *t = load("diag_matmul");
  sg_eval_build b;
  sg_eval_result r;
  compile_text(t,
               "#include <cuda_runtime.h>\n#include <cmath>\n#include <algorithm>\n"
               "#include <type_traits>\n#include <vector>\n"
               "template <typename T> __device__ T scale(T a, T b) {\n"
               "  if constexpr (std::is_same_v<T, float>) return a * b * sqrtf(1.f);\n"
               "  else return a * b;\n}\n"
               "__global__ void k(const float *A, const float *B, float *C, int N, int M) {\n"
               "  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
               "  if (i < (size_t)N * M) C[i] = scale(A[i / M], B[i]);\n}\n"
               "extern \"C\" void diag_matmul(const float *A, const float *B, float *C, "
               "int N, int M) {\n"
               "  std::vector<int> v{N, M};\n"
               "  auto [lo, hi] = std::minmax(v[0], v[1]);\n"
               "  int threads = (int)std::max(std::sqrt(65536.0), (double)(lo > hi));\n"
               "  size_t n = (size_t)N * M;\n"
               "  k<<<(unsigned)((n + threads - 1) / threads), threads>>>(A, B, C, N, M);\n}\n",
               &b, &r);
  SG_CHECK_MSG(r.status == SG_EVAL_OK, "status %s: %s", sg_eval_status_name(r.status),
               r.message ? r.message : "");
  sg_eval_build_free(&b);
  sg_eval_result_free(&r);
  compile_text(t,
               "#include <cmath>\n"
               "extern \"C\" void diag_matmul(const float *A, const float *B, float *C, "
               "int N, int M) { (void)std::riemann_zeta(2.0); }\n",
               &b, &r);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_COMPILE_ERROR);
  SG_CHECK_CONTAINS(r.message, "riemann_zeta");
  sg_eval_build_free(&b);
  sg_eval_result_free(&r);
  sg_task_free(t);
}

/* A stand-in ncu: it logs "metrics" or "sections" for what it was asked,
 * refuses the metrics list when $dir/refuse exists (as an ncu that does not
 * know a name does), fails like a crashed target when $dir/crash exists,
 * and otherwise prints a profile recorded on an H200. */
static char *standin_ncu(void) {
  char *d = tmp_dir("sg-ncu");
  char *script = sg_asprintf(
      "#!/bin/bash\n"
      "d=%s; data=%s/tests/gpu/data\n"
      "m=; s=; f=; fd=; prev=\n"
      "for a in \"$@\"; do case \"$a\" in --metrics) m=1;; --section) s=1;;\n"
      "  --section-folder) f=1;; esac; [ \"$prev\" = --go-fd ] && fd=$a; prev=$a; done\n"
      /* an ncu that does not know a name refuses before its target starts */
      "[ -n \"$m\" ] && [ -f $d/refuse ] && { echo metrics >> $d/log; echo folder >> $d/log;"
      " echo '==ERROR== Failed to find metric regex:^sm__pipe_.*$' >&2; exit 1; }\n"
      /* a target started ahead: ready, then its go, as specgen-cuda-run */
      "if [ -n \"$fd\" ]; then echo start >> $d/ahead; printf R >&$fd\n"
      "  read -r seed path <&$fd || exit 4; printf G >&$fd\n"
      "  echo \"go $seed $path\" >> $d/ahead; fi\n"
      "[ -f $d/crash ] && { echo '==ERROR== The application returned an error code (1).' >&2; "
      "echo metrics >> $d/log; exit 1; }\n"
      "if [ -n \"$m\" ]; then\n"
      "  echo metrics >> $d/log; [ -n \"$f\" ] && echo folder >> $d/log\n"
      "  cat $data/ncu_hinge_loss_fast_metrics.csv; exit 0\n"
      "fi\n"
      "[ -n \"$s\" ] && echo sections >> $d/log\n"
      "cat $data/ncu_hinge_loss_fast.csv\n",
      d, SG_SOURCE_ROOT);
  put_file(d, "ncu", script);
  free(script);
  char *ncu = sg_asprintf("%s/ncu", d);
  SG_CHECK(chmod(ncu, 0755) == 0);
  setenv("SPECGEN_NCU", ncu, 1);
  free(ncu);
  return d;
}

static char *read_log(const char *d) {
  char *p = sg_asprintf("%s/log", d), *text = NULL;
  sg_err err;
  if (sg_file_read(p, 1 << 16, &text, NULL, &err) != 0)
    text = sg_strdup("");
  free(p);
  return text;
}

/* hinge_loss's ok-reference compiled into *b, and the stand-in ncu (its
 * directory returned). */
static char *profile_fixture(sg_task **t, sg_eval_build *b) {
  need_nvcc();
  *t = load("hinge_loss");
  sg_eval_result r;
  compile_example(*t, "ok-reference.cu", b, &r);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_OK);
  sg_eval_result_free(&r);
  return standin_ncu();
}

static void profile_fixture_end(char *d, sg_task *t, sg_eval_build *b) {
  sg_err err;
  unsetenv("SPECGEN_NCU");
  sg_rm_rf(d, &err);
  free(d);
  sg_eval_build_free(b);
  sg_task_free(t);
}

/* A profile asks ncu for the metrics list with an empty section folder; a
 * profile that fails for another reason is not asked twice; an ncu that
 * refuses a name of the list is asked again for the sections, and from
 * then on for the sections only. The metrics say which way they came. */
static void test_profile_metrics_then_sections(void) {
  sg_task *t;
  sg_eval_build b;
  sg_eval_result r;
  char *d = profile_fixture(&t, &b);
  sg_eval_opts o;
  sg_eval_opts_default(&o);
  sg_err err;
  const char *expect_log[] = {"metrics\nfolder\n", "metrics\n",
                              "metrics\nfolder\nsections\n", "sections\n"};
  const char *expect_by[] = {"metrics", NULL, "sections", "sections"};
  for (int round = 0; round < 4; round++) {
    char *p = sg_asprintf("%s/log", d);
    unlink(p);
    free(p);
    p = sg_asprintf("%s/crash", d);
    unlink(p);
    free(p);
    if (round == 1)
      put_file(d, "crash", "");
    if (round == 2)
      put_file(d, "refuse", "");
    sg_eval_result_init(&r);
    SG_CHECK_OK(sg_eval_profile(t, &b, &o, &r, &err), err);
    char *log = read_log(d);
    SG_CHECK_MSG(strcmp(log, expect_log[round]) == 0, "round %d: ncu was asked:\n%s",
                 round, log);
    free(log);
    if (expect_by[round]) {
      SG_CHECK_MSG(r.status == SG_EVAL_OK, "round %d: %s", round, r.message ? r.message : "");
      SG_CHECK_STR_EQ(json_string_value(json_object_get(r.metrics, "collected_by")),
                      expect_by[round]);
      SG_CHECK(json_array_size(json_object_get(r.metrics, "kernels")) >= 1);
    } else {
      SG_CHECK(r.status != SG_EVAL_OK);
      SG_CHECK_CONTAINS(r.message, "application returned an error");
    }
    sg_eval_result_free(&r);
  }
  profile_fixture_end(d, t, &b);
}

/* How many lines of $d/ahead start with word. */
static int ahead_count(const char *d, const char *word) {
  char *p = sg_asprintf("%s/ahead", d);
  FILE *f = fopen(p, "r");
  free(p);
  int n = 0;
  char line[4096];
  while (f && fgets(line, sizeof line, f))
    n += strncmp(line, word, strlen(word)) == 0;
  if (f)
    fclose(f);
  return n;
}

/* With runners ahead (a process that validates a sequence), a profile the
 * caller announced goes to ncu started beforehand, which is given the
 * candidate and seed on its go descriptor; one not announced starts now,
 * and none is started after it. Without runners ahead, the candidate is on
 * ncu's command line. */
static void test_profile_runner_started_ahead(void) {
  sg_task *t;
  sg_eval_build b;
  sg_eval_result r;
  char *d = profile_fixture(&t, &b);
  sg_eval_opts o;
  sg_eval_opts_default(&o);
  o.seed = 42;
  sg_err err;
  sg_cuda_ahead_use(true);
  sg_eval_expect_profile(t, &b, &o);
  for (int i = 0; i < 1000 && ahead_count(d, "start") < 1; i++)
    usleep(10000);
  SG_CHECK(ahead_count(d, "start") == 1);
  SG_CHECK(ahead_count(d, "go") == 0); /* it waits for its candidate */
  sg_eval_expect_profile(t, &b, &o);   /* one is waiting: no second */
  char *go = sg_asprintf("go 42 %s", b.artifact);
  for (int round = 0; round < 2; round++) {
    sg_eval_result_init(&r);
    SG_CHECK_OK(sg_eval_profile(t, &b, &o, &r, &err), err);
    SG_CHECK_MSG(r.status == SG_EVAL_OK, "round %d: %s", round, r.message ? r.message : "");
    SG_CHECK_STR_EQ(json_string_value(json_object_get(r.metrics, "collected_by")), "metrics");
    SG_CHECK(json_is_boolean(json_object_get(r.stages, "started_ahead")));
    SG_CHECK(json_is_true(json_object_get(r.stages, "started_ahead")) == (round == 0));
    SG_CHECK(json_is_number(json_object_get(r.stages, "settle_s")));
    SG_CHECK(ahead_count(d, go) == round + 1);
    sg_eval_result_free(&r);
  }
  usleep(200000); /* a runner started after the profile would have logged */
  SG_CHECK(ahead_count(d, "start") == 2);
  /* An ncu that refuses the list: the runner announced with it dies
   * before it is ready; the profile asks for the sections (a runner
   * started now), and the next one announced is asked for them too. */
  put_file(d, "refuse", "");
  sg_eval_expect_profile(t, &b, &o);
  for (int round = 0; round < 2; round++) {
    sg_eval_result_init(&r);
    SG_CHECK_OK(sg_eval_profile(t, &b, &o, &r, &err), err);
    SG_CHECK_MSG(r.status == SG_EVAL_OK, "refused, round %d: %s", round,
                 r.message ? r.message : "");
    SG_CHECK_STR_EQ(json_string_value(json_object_get(r.metrics, "collected_by")),
                    "sections");
    SG_CHECK(json_is_true(json_object_get(r.stages, "started_ahead")) == (round == 1));
    sg_eval_result_free(&r);
    if (round == 0)
      sg_eval_expect_profile(t, &b, &o);
  }
  SG_CHECK(ahead_count(d, go) == 4);
  sg_cuda_ahead_use(false);
  sg_eval_expect_profile(t, &b, &o); /* off: nothing starts */
  sg_eval_result_init(&r);
  SG_CHECK_OK(sg_eval_profile(t, &b, &o, &r, &err), err);
  SG_CHECK(r.status == SG_EVAL_OK);
  SG_CHECK(json_object_get(r.stages, "started_ahead") == NULL);
  sg_eval_result_free(&r);
  SG_CHECK(ahead_count(d, "start") == 4);
  free(go);
  profile_fixture_end(d, t, &b);
}

/* The kernelbench profile the same way: its harness, started under ncu
 * when the profile is announced, gets the candidate's absolute path and
 * the seed on its go line. (The stand-in ncu answers for its target.) */
static void test_profile_kb_runner_started_ahead(void) {
  sg_task *t = NULL;
  sg_err err;
  char *dir = sg_asprintf("%s/tasks/kernelbench/relu", SG_SOURCE_ROOT);
  SG_CHECK_OK(sg_task_load(dir, &t, &err), err);
  free(dir);
  char *d = standin_ncu();
  sg_eval_build b;
  memset(&b, 0, sizeof b);
  b.artifact = sg_asprintf("%s/tasks/kernelbench/relu/examples/ok-load_inline.py",
                           SG_SOURCE_ROOT);
  b.reference_artifact = sg_strdup(t->reference_path);
  b.work_dir = sg_strdup(d);
  sg_eval_opts o;
  sg_eval_opts_default(&o);
  o.seed = 7;
  sg_cuda_ahead_use(true);
  sg_eval_expect_profile(t, &b, &o);
  for (int i = 0; i < 1000 && ahead_count(d, "start") < 1; i++)
    usleep(10000);
  SG_CHECK(ahead_count(d, "start") == 1);
  sg_eval_result r;
  sg_eval_result_init(&r);
  SG_CHECK_OK(sg_eval_profile(t, &b, &o, &r, &err), err);
  SG_CHECK_MSG(r.status == SG_EVAL_OK, "%s", r.message ? r.message : "");
  SG_CHECK(json_is_true(json_object_get(r.stages, "started_ahead")));
  sg_eval_result_free(&r);
  char *go = sg_asprintf("go 7 %s", b.artifact);
  SG_CHECK(ahead_count(d, go) == 1);
  free(go);
  sg_cuda_ahead_use(false);
  sg_eval_result_init(&r);
  SG_CHECK_OK(sg_eval_profile(t, &b, &o, &r, &err), err);
  SG_CHECK(r.status == SG_EVAL_OK);
  SG_CHECK(json_object_get(r.stages, "started_ahead") == NULL);
  sg_eval_result_free(&r);
  SG_CHECK(ahead_count(d, "start") == 1);
  free(b.work_dir); /* the fixture's directory: removed below */
  b.work_dir = NULL;
  profile_fixture_end(d, t, &b);
}

static void test_rules_reject_before_compiling(void) {
  sg_task *t = load("hinge_loss");
  sg_eval_build b;
  sg_eval_result r;
  /* Rejected even without nvcc: the rules read the source. */
  compile_example(t, "rejected-cublas.cu", &b, &r);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_REJECTED);
  SG_CHECK_CONTAINS(r.message, "cuBLAS");
  sg_eval_build_free(&b);
  sg_eval_result_free(&r);
  sg_task_free(t);
}

static void test_no_driver_is_infra_error(void) {
  need_nvcc();
  if (have_driver())
    SG_SKIP("a CUDA driver is present: the no-driver path is not reachable here");
  sg_task *t = load("diag_matmul");
  sg_eval_build b;
  sg_eval_result r;
  compile_example(t, "ok-reference.cu", &b, &r);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_OK);
  sg_eval_opts o;
  sg_eval_opts_default(&o);
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_eval_run(t, &b, &o, &r, &err), err);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_INFRA_ERROR);
  SG_CHECK_CONTAINS(r.message, "libcuda.so.1 not loadable");
  sg_eval_build_free(&b);
  sg_eval_result_free(&r);
  sg_task_free(t);
}

static void test_device_names(void) {
  int d = -1;
  sg_err err;
  SG_CHECK_OK(sg_eval_cuda_parse_device(NULL, &d, &err), err);
  SG_CHECK_EQ_INT(d, 0);
  SG_CHECK_OK(sg_eval_cuda_parse_device("cuda:3", &d, &err), err);
  SG_CHECK_EQ_INT(d, 3);
  SG_CHECK_EQ_INT(sg_eval_cuda_parse_device("cpu:0", &d, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "cpu:0");
  SG_CHECK_EQ_INT(sg_eval_cuda_parse_device("cuda:x", &d, &err), SG_EINVAL);
}

/* Where PyTorch is missing, the kernelbench evaluator cannot evaluate at
 * all: specgen's problem (a negative return naming PyTorch), not the
 * candidate's. */
static void test_kb_without_torch(void) {
  if (system("python3 -c 'import torch' >/dev/null 2>&1") == 0)
    SG_SKIP("PyTorch is installed here: the no-torch path is not reachable");
  sg_task *t = NULL;
  sg_err err;
  char *dir = sg_asprintf("%s/tasks/kernelbench/matmul_transposed_b", SG_SOURCE_ROOT);
  SG_CHECK_OK(sg_task_load(dir, &t, &err), err);
  free(dir);
  SG_CHECK_STR_EQ(t->evaluator, "kernelbench");
  const char *src = "import torch.nn as nn\nclass ModelNew(nn.Module):\n  pass\n";
  sg_eval_opts o;
  sg_eval_opts_default(&o);
  sg_eval_build b;
  sg_eval_result r;
  sg_eval_result_init(&r);
  sg_err_clear(&err);
  int rc = sg_eval_compile(t, src, strlen(src), &o, &b, &r, &err);
  SG_CHECK_EQ_INT(rc, SG_EUNSUPPORTED);
  SG_CHECK_CONTAINS(err.msg, "PyTorch");
  sg_eval_build_free(&b);
  sg_eval_result_free(&r);
  sg_task_free(t);
}

/* Every example of two tasks through the compile stage (nvcc, no GPU): the
 * compile_error ones fail, the rejected ones are refused or compile (when
 * their rule is checked on the device), the rest build. */
static void test_examples_compile(void) {
  need_nvcc();
  const char *check = getenv("SG_GPU_CHECK");
  SG_CHECK_MSG(check != NULL, "SG_GPU_CHECK (specgen-gpu-check's path) is not set");
  char *cmd = sg_asprintf("%s --compile-only --task hinge_loss --task diag_matmul "
                          ">/dev/null", check);
  int rc = system(cmd);
  free(cmd);
  SG_CHECK_MSG(WIFEXITED(rc) && WEXITSTATUS(rc) == 0,
               "an example did not compile as its name says (run specgen-gpu-check "
               "--compile-only --task hinge_loss --task diag_matmul)");
}

/* How a device-side child's ending becomes a result. */
static void outcome(sg_sandbox_end end, int code, int sig, const char *result,
                    const char *err_text, sg_eval_result *r) {
  sg_sandbox_outcome o;
  memset(&o, 0, sizeof o);
  o.end = end;
  o.exit_code = code;
  o.signal = sig;
  o.result = (char *)result;
  o.result_len = strlen(result);
  o.err = (char *)err_text;
  sg_eval_result_init(r);
  sg_eval_cuda_take_outcome(&o, 30, r);
}

static void test_take_outcome(void) {
  sg_eval_result r;
  outcome(SG_SANDBOX_EXITED, 0, 0,
          "{\"status\":\"ok\",\"message\":\"fine\",\"ref_ms\":2.0,\"cand_ms\":0.5,"
          "\"ref_mean_ms\":2.1,\"cand_mean_ms\":0.6,\"max_abs_err\":1e-6,"
          "\"max_rel_err\":2e-6,\"first_mismatch\":-1}", "", &r);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_OK);
  SG_CHECK_STR_EQ(r.message, "fine");
  SG_CHECK_NEAR(r.speedup, 4.0, 1e-12);
  SG_CHECK_NEAR(r.cand_mean_ms, 0.6, 1e-12);
  SG_CHECK_EQ_INT(r.first_mismatch, -1);
  sg_eval_result_free(&r);

  SG_CHECK(r.kernelbench_status == NULL);
  sg_eval_result_free(&r);

  /* Both verdicts: specgen's stricter one and KernelBench's, round trip. */
  outcome(SG_SANDBOX_EXITED, 0, 0,
          "{\"status\":\"numerical_error\",\"message\":\"off\",\"first_mismatch\":7,"
          "\"kernelbench_status\":\"ok\"}",
          "", &r);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_NUMERICAL_ERROR);
  SG_CHECK_EQ_INT(r.first_mismatch, 7);
  SG_CHECK_STR_EQ(r.kernelbench_status, "ok");
  json_t *j = sg_eval_result_to_json(&r);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(j, "kernelbench_status")), "ok");
  sg_eval_result back;
  sg_err err;
  SG_CHECK_OK(sg_eval_result_from_json(j, &back, &err), err);
  SG_CHECK_STR_EQ(back.kernelbench_status, "ok");
  sg_eval_result_free(&back);
  json_decref(j);
  SG_CHECK(isnan(r.speedup));
  sg_eval_result_free(&r);

  /* Killed at the wall clock: timeout, whatever it wrote. */
  outcome(SG_SANDBOX_TIMED_OUT, 0, 9, "", "", &r);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_TIMEOUT);
  SG_CHECK_CONTAINS(r.message, "30 s");
  sg_eval_result_free(&r);

  /* Died without answering: runtime_error with the signal and stderr. */
  outcome(SG_SANDBOX_SIGNALED, 0, 11, "", "free(): invalid pointer", &r);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_RUNTIME_ERROR);
  SG_CHECK_CONTAINS(r.message, "signal 11");
  SG_CHECK_CONTAINS(r.message, "invalid pointer");
  sg_eval_result_free(&r);

  /* A forged or broken answer is no answer. */
  outcome(SG_SANDBOX_EXITED, 0, 0, "{\"status\":\"great\"}", "", &r);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_RUNTIME_ERROR);
  SG_CHECK_CONTAINS(r.message, "without a result");
  sg_eval_result_free(&r);
  outcome(SG_SANDBOX_EXITED, 3, 0, "{\"status\":", "", &r);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_RUNTIME_ERROR);
  sg_eval_result_free(&r);
}

static void test_runner_usage(void) {
  const char *runner = getenv("SPECGEN_CUDA_RUNNER");
  SG_CHECK_MSG(runner != NULL, "SPECGEN_CUDA_RUNNER is not set");
  char *cmd = sg_asprintf("%s --help >/dev/null", runner);
  int rc = system(cmd);
  free(cmd);
  SG_CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
  cmd = sg_asprintf("%s --task x --cand y --mode fast 2>/dev/null", runner);
  rc = system(cmd);
  free(cmd);
  SG_CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
  cmd = sg_asprintf("%s --cand y 2>/dev/null", runner);
  rc = system(cmd);
  free(cmd);
  SG_CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
  /* the reference's library is needed in both modes (its judge's kernels
   * draw the inputs) */
  cmd = sg_asprintf("%s --task x --cand y.so --mode profile 2>/dev/null", runner);
  rc = system(cmd);
  free(cmd);
  SG_CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
  /* A task that does not load: an infra_error answer naming it, in both
   * modes, also for a runner started ahead (a go descriptor, no --cand). */
  const char *forms[] = {"--cand y.so", "--mode profile --cand y.so",
                         "--mode profile --go-fd 9", "--go-fd 9"};
  for (int i = 0; i < 4; i++) {
    cmd = sg_asprintf("%s --task /nonexistent/task %s --ref r.so", runner, forms[i]);
    FILE *f = popen(cmd, "r");
    free(cmd);
    char buf[2048] = "";
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    SG_CHECK_MSG(WIFEXITED(pclose(f)), "%s", forms[i]);
    SG_CHECK_CONTAINS(buf, "\"status\":\"infra_error\"");
    SG_CHECK_CONTAINS(buf, "/nonexistent/task");
  }
}

/* compute-sanitizer's report, in its documented layout, cut for the LLM. */
static void test_sanitizer_summary(void) {
  const char *report =
      "========= COMPUTE-SANITIZER\n"
      "candidate printed this\n"
      "========= Invalid __global__ write of size 4 bytes\n"
      "=========     at diag_kernel(const float *, const float *, float *, int, int)+0x70 in candidate.cu:8\n"
      "=========     by thread (0,0,0) in block (0,0,0)\n"
      "=========     Address 0x7f0000000000 is out of bounds\n"
      "========= \n"
      "========= ERROR SUMMARY: 1 error\n";
  char *s = sg_eval_cuda_sanitizer_summary(report, 3);
  SG_CHECK_CONTAINS(s, "Invalid __global__ write of size 4 bytes\n");
  SG_CHECK_CONTAINS(s, "at diag_kernel(");
  SG_CHECK_CONTAINS(s, "ERROR SUMMARY: 1 error");
  SG_CHECK(strstr(s, "Address 0x7f") == NULL);       /* cut at 3 lines */
  SG_CHECK(strstr(s, "COMPUTE-SANITIZER") == NULL);
  SG_CHECK(strstr(s, "candidate printed") == NULL);
  free(s);
  s = sg_eval_cuda_sanitizer_summary(NULL, 5);
  SG_CHECK_STR_EQ(s, "");
  free(s);
}

/* Asking for the sanitizer where it is not: an error that says so. */
static void test_sanitizer_missing(void) {
  need_nvcc();
  sg_task *t = load("diag_matmul");
  sg_eval_build b;
  sg_eval_result r;
  compile_example(t, "ok-reference.cu", &b, &r);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_OK);
  setenv("SPECGEN_CUDA_SANITIZE", "memcheck", 1);
  setenv("SPECGEN_COMPUTE_SANITIZER", "/nonexistent/compute-sanitizer", 1);
  sg_eval_opts o;
  sg_eval_opts_default(&o);
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_EQ_INT(sg_eval_run(t, &b, &o, &r, &err), SG_EUNSUPPORTED);
  SG_CHECK_CONTAINS(err.msg, "compute-sanitizer is not found");
  sg_eval_build_free(&b);
  sg_eval_result_free(&r);
  sg_task_free(t);
}

/* ---- suite gpu ---- */

static void gpu_examples_have_their_status(void) {
  if (!have_driver())
    SG_SKIP("no CUDA device: libcuda.so.1 not loadable");
  need_nvcc();
  const char *check = getenv("SG_GPU_CHECK");
  SG_CHECK_MSG(check != NULL, "SG_GPU_CHECK (specgen-gpu-check's path) is not set");
  char *cmd = sg_asprintf("%s", check);
  int rc = system(cmd);
  free(cmd);
  SG_CHECK_MSG(WIFEXITED(rc) && WEXITSTATUS(rc) == 0,
               "specgen-gpu-check found examples with an unexpected status");
}

SG_TEST_MAIN({"compile_ok_builds_both", test_compile_ok_builds_both},
             {"profile_runner_started_ahead", test_profile_runner_started_ahead},
             {"profile_kb_runner_started_ahead", test_profile_kb_runner_started_ahead},
             {"profile_metrics_then_sections", test_profile_metrics_then_sections},
             {"cxx17_and_the_standard_library_compile",
              test_cxx17_and_the_standard_library_compile},
             {"compile_error_names_the_file", test_compile_error_names_the_file},
             {"wrong_signature_is_compile_error", test_wrong_signature_is_compile_error},
             {"rules_reject_before_compiling", test_rules_reject_before_compiling},
             {"no_driver_is_infra_error", test_no_driver_is_infra_error},
             {"device_names", test_device_names},
             {"kb_without_torch", test_kb_without_torch},
             {"examples_compile", test_examples_compile},
             {"take_outcome", test_take_outcome},
             {"sanitizer_summary", test_sanitizer_summary},
             {"sanitizer_missing", test_sanitizer_missing},
             {"runner_usage", test_runner_usage},
             {"gpu_examples_have_their_status", gpu_examples_have_their_status})
