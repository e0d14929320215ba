/* test_eval_run.c: the cpu evaluator end to end through the library: the
 * timing protocol (counts and alternation, from the child's own log), seeded
 * inputs, the options it refuses, compile diagnostics and symbol rules on
 * real compiler output, and kernels that cheat. */
#include "common/sg_stats.h"
#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_file.h"
#include "eval/sg_eval.h"
#include "eval/sg_eval_cpu.h"
#include "eval/sg_eval_cpu_judge.h"
#include "sg_test.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/stat.h>

#define VADD SG_SOURCE_ROOT "/tests/eval/data/tasks/cpu/vector_add"

static sg_task *load_vadd(void) {
  sg_task *t = NULL;
  sg_err err;
  SG_CHECK_OK(sg_task_load(VADD, &t, &err), err);
  return t;
}

static char *example(const char *name) {
  char *path = sg_asprintf(VADD "/examples/%s", name);
  char *src = NULL;
  sg_err err;
  SG_CHECK_OK(sg_file_read(path, 1 << 20, &src, NULL, &err), err);
  free(path);
  return src;
}

static void quick_opts(sg_eval_opts *o) {
  sg_eval_opts_default(o);
  o->warmup_runs = 0;
  o->timed_runs = 1;
  o->eval_timeout = 30;
}

/* Validates src; returns the result (caller frees). */
static sg_eval_result validate(const sg_task *t, const char *src,
                               const sg_eval_opts *o) {
  sg_eval_result r;
  sg_eval_result_init(&r);
  sg_err err;
  SG_CHECK_OK(sg_eval_validate(t, src, strlen(src), o, &r, &err), err);
  return r;
}

static void check_protocol(int warmups, int runs) {
  sg_task *t = load_vadd();
  char *src = example("ok-reference.c");
  sg_eval_opts o;
  sg_eval_opts_default(&o);
  o.warmup_runs = warmups;
  o.timed_runs = runs;
  sg_eval_build b;
  sg_eval_result r;
  sg_eval_result_init(&r);
  sg_err err;
  SG_CHECK_OK(sg_eval_compile(t, src, strlen(src), &o, &b, &r, &err), err);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_OK);
  json_t *log = NULL;
  SG_CHECK_OK(sg_eval_cpu_run_logged(t, &b, &o, &r, &log, &err), err);
  SG_CHECK_MSG(r.status == SG_EVAL_OK, "status %s: %s", sg_eval_status_name(r.status), r.message);
  SG_CHECK(log != NULL);
  /* warm-ups then timed runs, each a reference call then a candidate call */
  sg_buf want;
  sg_buf_init(&want, 0);
  for (int i = 0; i < warmups; i++)
    sg_buf_puts(&want, "rc");
  for (int i = 0; i < runs; i++)
    sg_buf_puts(&want, "RC");
  SG_CHECK_STR_EQ(json_string_value(json_object_get(log, "order")), sg_buf_str(&want));
  SG_CHECK_EQ_INT(json_array_size(json_object_get(log, "ref_ns")), runs);
  SG_CHECK_EQ_INT(json_array_size(json_object_get(log, "cand_ns")), runs);
  /* timed on the judge's side, the workers' idle CPU watched */
  SG_CHECK(json_is_integer(json_object_get(log, "max_gap_ns")));
  SG_CHECK(json_is_integer(json_object_get(log, "ref_max_gap_ns")));
  SG_CHECK(json_is_number(json_object_get(json_object_get(log, "phase_s"), "setup")));
  /* the medians are of those runs */
  size_t nr = (size_t)runs;
  double *x = sg_malloc(nr * sizeof *x);
  for (size_t i = 0; i < nr; i++)
    x[i] = (double)json_integer_value(json_array_get(json_object_get(log, "ref_ns"), i)) / 1e6;
  SG_CHECK_NEAR(r.ref_ms, sg_stats_median(x, nr), 1e-12);
  SG_CHECK_NEAR(r.ref_mean_ms, sg_stats_mean(x, nr), 1e-12);
  SG_CHECK_NEAR(r.speedup, r.ref_ms / r.cand_ms, 1e-12);
  SG_CHECK(r.seed != 0);
  SG_CHECK(r.run_s > 0 && r.compile_s > 0);
  free(x);
  sg_buf_free(&want);
  json_decref(log);
  sg_eval_build_free(&b);
  sg_eval_result_free(&r);
  free(src);
  sg_task_free(t);
}

static void test_timing_protocol_default_10_and_40(void) { check_protocol(10, 40); }
static void test_timing_protocol_other_counts(void) { check_protocol(3, 5); }

static void test_seed_reproduces_inputs(void) {
  sg_task *t = load_vadd();
  char *src = example("numerical_error-no_alpha.c");
  sg_eval_opts o;
  quick_opts(&o);
  o.seed = 5;
  sg_eval_result a = validate(t, src, &o), b = validate(t, src, &o);
  o.seed = 6;
  sg_eval_result c = validate(t, src, &o);
  SG_CHECK_EQ_INT(a.status, SG_EVAL_NUMERICAL_ERROR);
  SG_CHECK_EQ_INT(a.seed, 5);
  SG_CHECK_STR_EQ(a.message, b.message);
  SG_CHECK(strcmp(a.message, c.message) != 0);
  SG_CHECK_EQ_INT(a.first_mismatch, 0);
  SG_CHECK(a.max_abs_err > 0.1);
  sg_eval_result_free(&a);
  sg_eval_result_free(&b);
  sg_eval_result_free(&c);
  free(src);
  sg_task_free(t);
}

static void test_refused_options(void) {
  sg_task *t = load_vadd();
  char *src = example("ok-reference.c");
  sg_eval_opts o;
  quick_opts(&o);
  sg_eval_result r;
  sg_eval_result_init(&r);
  sg_err err;
  o.correctness_trials = 2;
  SG_CHECK_EQ_INT(sg_eval_validate(t, src, strlen(src), &o, &r, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "correctness_trials");
  quick_opts(&o);
  o.device = "cuda:0";
  SG_CHECK_EQ_INT(sg_eval_validate(t, src, strlen(src), &o, &r, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "cuda:0");
  o.device = "cpu:4095";
  SG_CHECK_EQ_INT(sg_eval_validate(t, src, strlen(src), &o, &r, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "cpu:4095: no such core");
  sg_eval_result_free(&r);
  free(src);
  sg_task_free(t);
}

static void test_compile_error_keeps_candidate_lines(void) {
  sg_task *t = load_vadd();
  const char *src =
      "/* line 1 */\n"
      "void vector_add(const float *a, const float *b, float *out, float alpha, int n) {\n"
      "  for (int i = 0; i < n; i++)\n"
      "    out[i] = alpha * (a[i] + b[i]) + undeclared_thing;\n"
      "}\n";
  sg_eval_opts o;
  quick_opts(&o);
  sg_eval_result r = validate(t, src, &o);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_COMPILE_ERROR);
  SG_CHECK_CONTAINS(r.message, "candidate.c:4:");
  SG_CHECK_CONTAINS(r.message, "undeclared_thing");
  SG_CHECK(isnan(r.speedup));
  sg_eval_result_free(&r);

  /* a flood of errors is cut to the first 20 diagnostics and about 4 KB */
  sg_buf b;
  sg_buf_init(&b, 0);
  sg_buf_puts(&b, "void vector_add(const float *a, const float *b, float *out, float alpha, int n) {\n");
  for (int i = 0; i < 60; i++)
    sg_buf_printf(&b, "  int x%d = missing_%d;\n", i, i);
  sg_buf_puts(&b, "}\n");
  r = validate(t, sg_buf_str(&b), &o);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_COMPILE_ERROR);
  SG_CHECK_CONTAINS(r.message, "candidate.c:2:");
  SG_CHECK_CONTAINS(r.message, "more diagnostics not shown");
  SG_CHECK_MSG(strlen(r.message) < 4096 + 200, "message of %zu bytes", strlen(r.message));
  sg_eval_result_free(&r);
  sg_buf_free(&b);
  sg_task_free(t);
}

static void test_link_rules(void) {
  sg_task *t = load_vadd();
  sg_eval_opts o;
  quick_opts(&o);
  const char *no_entry = "void vector_add2(void) {}\n";
  sg_eval_result r = validate(t, no_entry, &o);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_COMPILE_ERROR);
  SG_CHECK_CONTAINS(r.message, "does not define the entry function `vector_add`");
  sg_eval_result_free(&r);
  const char *undefined =
      "void helper_that_does_not_exist(float *);\n"
      "void vector_add(const float *a, const float *b, float *out, float alpha, int n) {\n"
      "  (void)a; (void)b; (void)alpha; (void)n; helper_that_does_not_exist(out);\n}\n";
  r = validate(t, undefined, &o);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_COMPILE_ERROR);
  SG_CHECK_CONTAINS(r.message, "undefined reference to `helper_that_does_not_exist`");
  sg_eval_result_free(&r);
  const char *libm =
      "#include <math.h>\n"
      "void vector_add(const float *a, const float *b, float *out, float alpha, int n) {\n"
      "  for (int i = 0; i < n; i++) out[i] = alpha * (a[i] + b[i]) + 0 * sqrtf(fabsf(a[i]));\n}\n";
  r = validate(t, libm, &o);
  SG_CHECK_MSG(r.status == SG_EVAL_OK, "%s", r.message);
  sg_eval_result_free(&r);
  sg_task_free(t);
}

static void test_cheats_are_caught(void) {
  sg_task *t = load_vadd();
  sg_eval_opts o;
  quick_opts(&o);
  o.warmup_runs = 2;
  o.timed_runs = 4;
  /* remembers its answer per output pointer */
  const char *cache =
      "static const float *seen[16]; static int nseen;\n"
      "void vector_add(const float *a, const float *b, float *out, float alpha, int n) {\n"
      "  for (int k = 0; k < nseen; k++) if (seen[k] == a) return;\n"
      "  if (nseen < 16) seen[nseen++] = a;\n"
      "  for (int i = 0; i < n; i++) out[i] = alpha * (a[i] + b[i]);\n}\n";
  sg_eval_result r = validate(t, cache, &o);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_NUMERICAL_ERROR);
  SG_CHECK_CONTAINS(r.message, "was never written");
  sg_eval_result_free(&r);
  /* returns early after printing why: the wrong result comes with what it
   * printed, so the LLM sees that its own check fired */
  const char *prints =
      "#include <stdio.h>\n"
      "void vector_add(const float *a, const float *b, float *out, float alpha, int n) {\n"
      "  if (a[0] != 0) { printf(\"Error: input a is not zero-based\\n\"); return; }\n"
      "  for (int i = 0; i < n; i++) out[i] = alpha * (a[i] + b[i]);\n}\n";
  r = validate(t, prints, &o);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_NUMERICAL_ERROR);
  SG_CHECK_CONTAINS(r.message, "was never written");
  SG_CHECK_CONTAINS(r.message, "\nstdout (last ");
  SG_CHECK_CONTAINS(r.message, "Error: input a is not zero-based");
  sg_eval_result_free(&r);
  /* scribbles on an input: its inputs are mapped read-only */
  const char *scribble =
      "void vector_add(const float *a, const float *b, float *out, float alpha, int n) {\n"
      "  for (int i = 0; i < n; i++) out[i] = alpha * (a[i] + b[i]);\n"
      "  ((float *)b)[7] = 0;\n}\n";
  r = validate(t, scribble, &o);
  SG_CHECK_EQ_INT(r.status, SG_EVAL_RUNTIME_ERROR);
  SG_CHECK_CONTAINS(r.message, "killed by SIGSEGV");
  SG_CHECK_CONTAINS(r.message, "inputs are read-only");
  sg_eval_result_free(&r);
  sg_task_free(t);
}

/* The worker is the program of its own when this program runs from the
 * build tree, and this executable run again when it is set not to be; both
 * evaluate alike. A kernel's constructor prints the file the worker was
 * exec'd from (AT_EXECFN: no system call) and its argv[0] before crashing,
 * so the message says which program ran. */
/* The gap rule: the reference's gaps are the noise floor the candidate's
 * are measured above; the floor counts only up to 20 ms. */
static void test_gap_rule_above_the_reference_floor(void) {
  const int64_t ms = 1000000;
  /* a quiet machine: one gap over 2 ms counts, the second rejects */
  sg_eval_cpu_gaps g = {0};
  sg_eval_cpu_gaps_reference(&g, ms / 100);
  SG_CHECK(!sg_eval_cpu_gaps_candidate(&g, ms / 50));
  SG_CHECK(!sg_eval_cpu_gaps_candidate(&g, 3 * ms));
  SG_CHECK_EQ_INT(g.over, 1);
  SG_CHECK(sg_eval_cpu_gaps_candidate(&g, 3 * ms));
  /* one gap over 20 ms rejects alone */
  g = (sg_eval_cpu_gaps){0};
  SG_CHECK(sg_eval_cpu_gaps_candidate(&g, 21 * ms));
  /* a noisy machine: the reference's own gaps reach 4 ms, so an honest
   * candidate's 2-5 ms gaps are noise, every one of them */
  g = (sg_eval_cpu_gaps){0};
  sg_eval_cpu_gaps_reference(&g, 4 * ms);
  for (int i = 0; i < 50; i++)
    SG_CHECK(!sg_eval_cpu_gaps_candidate(&g, (2 + i % 4) * ms));
  SG_CHECK_EQ_INT(g.over, 0);
  /* ... but a kernel that works 3 ms beyond the floor is caught */
  SG_CHECK(!sg_eval_cpu_gaps_candidate(&g, 7 * ms));
  SG_CHECK(sg_eval_cpu_gaps_candidate(&g, 7 * ms));
  /* the floor only rises, and only up to 20 ms: a reference gap of 1 s
   * does not excuse a 25 ms gap twice */
  g = (sg_eval_cpu_gaps){0};
  sg_eval_cpu_gaps_reference(&g, 1000 * ms);
  sg_eval_cpu_gaps_reference(&g, ms);
  SG_CHECK_EQ_INT(g.ref_floor_ns, 1000 * ms);
  SG_CHECK(!sg_eval_cpu_gaps_candidate(&g, 21 * ms));
  SG_CHECK(!sg_eval_cpu_gaps_candidate(&g, 23 * ms));
  SG_CHECK(sg_eval_cpu_gaps_candidate(&g, 23 * ms));
  SG_CHECK(sg_eval_cpu_gaps_candidate(&g, 41 * ms));
}

static void test_worker_program_and_fallback(void) {
  const char *prog = sg_eval_cpu_worker_program();
  SG_CHECK(prog != NULL);
  if (!prog)
    return;
  size_t pl = strlen(prog), nl = strlen("/specgen-eval-worker");
  SG_CHECK(pl > nl && strcmp(prog + pl - nl, "/specgen-eval-worker") == 0);
  SG_CHECK(access(prog, X_OK) == 0);
  sg_task *t = load_vadd();
  sg_eval_opts o;
  quick_opts(&o);
  char *ok = example("ok-reference.c");
  const char *tell =
      "#include <stdio.h>\n#include <sys/auxv.h>\n"
      "__attribute__((constructor)) static void who(int argc, char **argv) {\n"
      "  fprintf(stderr, \"exec=[%s] argv0=[%s]\\n\", (const char *)getauxval(AT_EXECFN),\n"
      "          argc > 0 ? argv[0] : \"\");\n}\n"
      "void vector_add(const float *a, const float *b, float *out, float alpha, int n) {\n"
      "  (void)a; (void)b; (void)out; (void)alpha; (void)n;\n"
      "  *(volatile int *)0 = 1;\n}\n";
  for (int way = 0; way < 2; way++) {
    sg_eval_cpu_worker_program_set(way == 0 ? prog : NULL);
    sg_eval_result r = validate(t, ok, &o);
    SG_CHECK_EQ_INT(r.status, SG_EVAL_OK);
    sg_eval_result_free(&r);
    r = validate(t, tell, &o);
    SG_CHECK_EQ_INT(r.status, SG_EVAL_RUNTIME_ERROR);
    char *want = sg_asprintf("exec=[%s] argv0=[specgen-eval-worker]",
                             way == 0 ? prog : "/proc/self/exe");
    SG_CHECK_CONTAINS(r.message, want);
    free(want);
    sg_eval_result_free(&r);
  }
  sg_eval_cpu_worker_program_set(prog);
  free(ok);
  sg_task_free(t);
}

static void test_scratch_is_removed(void) {
  sg_task *t = load_vadd();
  char dir[] = "/tmp/sg_evalwd_XXXXXX";
  SG_CHECK(mkdtemp(dir));
  char *src = example("ok-reference.c");
  sg_eval_opts o;
  quick_opts(&o);
  o.work_dir = dir;
  sg_eval_build b;
  sg_eval_result r;
  sg_eval_result_init(&r);
  sg_err err;
  SG_CHECK_OK(sg_eval_compile(t, src, strlen(src), &o, &b, &r, &err), err);
  SG_CHECK(strncmp(b.work_dir, dir, strlen(dir)) == 0);
  struct stat st;
  SG_CHECK(stat(b.artifact, &st) == 0 && stat(b.reference_artifact, &st) == 0);
  char *keep = sg_strdup(b.work_dir);
  sg_eval_build_free(&b);
  SG_CHECK(stat(keep, &st) != 0);
  SG_CHECK(stat(dir, &st) == 0); /* the root given stays */
  free(keep);
  sg_rm_rf(dir, &err);
  sg_eval_result_free(&r);
  free(src);
  sg_task_free(t);
}

static void test_broken_reference_is_a_task_error(void) {
  char dir[] = "/tmp/sg_evalref_XXXXXX";
  SG_CHECK(mkdtemp(dir));
  char *cmd = sg_asprintf("cp -r " VADD "/task.json %s/ && echo 'void vector_add(' > %s/reference.c", dir, dir);
  SG_CHECK(system(cmd) == 0);
  sg_task *t = NULL;
  sg_err err;
  SG_CHECK_OK(sg_task_load(dir, &t, &err), err);
  char *src = example("ok-reference.c");
  sg_eval_opts o;
  quick_opts(&o);
  sg_eval_result r;
  sg_eval_result_init(&r);
  SG_CHECK_EQ_INT(sg_eval_validate(t, src, strlen(src), &o, &r, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "reference.c does not compile");
  sg_eval_result_free(&r);
  sg_task_free(t);
  free(src);
  sg_rm_rf(dir, &err);
  free(cmd);
}

/* The reference is read once, when the task is loaded: the evaluator
 * builds the text the prompt showed, not what the file holds by the time
 * a candidate arrives (here broken after the load). */
static void test_reference_is_the_text_loaded(void) {
  char dir[] = "/tmp/sg_evalref_XXXXXX";
  SG_CHECK(mkdtemp(dir));
  char *cmd = sg_asprintf("cp -r " VADD "/task.json " VADD "/reference.c %s/", dir);
  SG_CHECK(system(cmd) == 0);
  sg_task *t = NULL;
  sg_err err;
  SG_CHECK_OK(sg_task_load(dir, &t, &err), err);
  char *ref = sg_asprintf("%s/reference.c", dir);
  SG_CHECK_OK(sg_file_write(ref, "void vector_add(", 16, &err), err);
  char *src = example("ok-reference.c");
  sg_eval_opts o;
  quick_opts(&o);
  sg_eval_result r;
  sg_eval_result_init(&r);
  SG_CHECK_OK(sg_eval_validate(t, src, strlen(src), &o, &r, &err), err);
  SG_CHECK_MSG(r.status == SG_EVAL_OK, "status %s: %s", sg_eval_status_name(r.status),
               r.message ? r.message : "");
  sg_eval_result_free(&r);
  sg_task_free(t);
  free(src);
  free(ref);
  sg_rm_rf(dir, &err);
  free(cmd);
}

/* Where the kernel refuses network namespaces (simulated by a filter that
 * fails unshare with EPERM), the evaluation still completes and says so. */
static void test_without_network_namespace(void) {
#if defined(__x86_64__) || defined(__aarch64__)
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {.len = sizeof f / sizeof *f, .filter = f};
  SG_CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
  SG_CHECK(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0);
  sg_task *t = load_vadd();
  char *src = example("ok-reference.c");
  sg_eval_opts o;
  quick_opts(&o);
  sg_eval_result r = validate(t, src, &o);
  SG_CHECK_MSG(r.status == SG_EVAL_OK, "%s", r.message);
  SG_CHECK(!r.network_isolated);
  SG_CHECK_CONTAINS(r.message, "network not isolated: unshare(CLONE_NEWNET): Operation not permitted");
  SG_CHECK_CONTAINS(r.message, "user namespace refused");
  json_t *j = sg_eval_result_to_json(&r);
  SG_CHECK(json_is_false(json_object_get(j, "network_isolated")));
  /* every refusal is in the result; the judge still runs apart */
  json_t *iso = json_object_get(j, "isolation");
  SG_CHECK(json_is_false(json_object_get(iso, "user")));
  SG_CHECK(json_is_false(json_object_get(iso, "pid")));
  SG_CHECK(json_is_true(json_object_get(iso, "separate_judge")));
  SG_CHECK_STR_EQ(json_string_value(json_object_get(iso, "seccomp")), "allowlist");
  if (geteuid() == 0) /* root drops to nobody even without namespaces */
    SG_CHECK(json_is_true(json_object_get(iso, "unprivileged")));
  json_decref(j);
  sg_eval_result_free(&r);
  free(src);
  sg_task_free(t);
#else
  SG_SKIP("no seccomp filter for this architecture in the test");
#endif
}

SG_TEST_MAIN(SG_TEST(test_timing_protocol_default_10_and_40),
             SG_TEST(test_timing_protocol_other_counts),
             SG_TEST(test_seed_reproduces_inputs), SG_TEST(test_refused_options),
             SG_TEST(test_compile_error_keeps_candidate_lines),
             SG_TEST(test_link_rules), SG_TEST(test_cheats_are_caught),
             SG_TEST(test_gap_rule_above_the_reference_floor),
             SG_TEST(test_scratch_is_removed),
             SG_TEST(test_worker_program_and_fallback),
             SG_TEST(test_broken_reference_is_a_task_error), SG_TEST(test_reference_is_the_text_loaded),
             SG_TEST(test_without_network_namespace))
