/* test_eval_cli.c: `specgen eval` and `specgen tasks` end to end: each kind
 * of misbehaving candidate (tests/eval/data/sandbox/) comes back with the
 * right status while the evaluator carries on; exit codes and messages for
 * bad usage, unknown tasks, invalid tasks and unreadable candidates. */
#include "common/sg_alloc.h"
#include "sg_test.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#define DATA SG_SOURCE_ROOT "/tests/eval/data"
#define VADD DATA "/tasks/cpu/vector_add"

/* Runs a shell command line; returns its exit code and stdout (+ stderr
 * when merge), cut at 4 MiB (sg_test_sh). */
static int run(const char *cmd, char **out) {
  return sg_test_sh(cmd, out);
}

/* `specgen eval --json` of a sandbox candidate on vector_add. */
static json_t *eval_json(const char *candidate, const char *extra) {
  char *cmd = sg_asprintf("%s eval --task %s %s/sandbox/%s --json --warmups 0 "
                          "--runs 2 %s",
                          SG_TEST_SPECGEN, VADD, DATA, candidate, extra ? extra : "");
  char *out = NULL;
  int code = run(cmd, &out);
  SG_CHECK_MSG(code == 0, "%s exited %d: %s", cmd, code, out);
  json_error_t je;
  json_t *j = json_loads(out, 0, &je);
  SG_CHECK_MSG(j, "not JSON (%s): %s", je.text, out);
  free(cmd);
  free(out);
  return j;
}

static const char *str(const json_t *j, const char *key) {
  return json_string_value(json_object_get(j, key));
}

static void expect(const char *candidate, const char *extra, const char *status,
                   const char *in_message) {
  json_t *j = eval_json(candidate, extra);
  SG_CHECK_MSG(strcmp(str(j, "status"), status) == 0, "%s: status %s, want %s: %s",
               candidate, str(j, "status"), status, str(j, "message"));
  if (in_message)
    SG_CHECK_CONTAINS(str(j, "message"), in_message);
  SG_CHECK(json_is_null(json_object_get(j, "speedup")) == (strcmp(status, "ok") != 0));
  json_decref(j);
}

static void skip_unless_x86_64(void) {
#if !defined(__x86_64__)
  SG_SKIP("this candidate makes raw x86-64 system calls");
#endif
}

static void test_endless_loop_is_timeout(void) {
  expect("spin.c", "--eval-timeout 1", "timeout", "the kernel ran for more than 1 s in total (wall clock) during correctness check 1 of 3, in the candidate");
}

/* The kernel's budget is kept inside the child: drawing two_ends' 16M inputs
 * (four sets) takes far longer than the 0.2 s the kernel is given, yet the
 * kernel, which reads two values, passes. */
static void test_timeout_budget_excludes_inputs_and_reference(void) {
  char *cmd = sg_asprintf("%s eval --task %s/two_ends %s/two_ends/reference.c "
                          "--eval-timeout 0.2 --json --runs 3 --warmups 0",
                          SG_TEST_SPECGEN, DATA, DATA);
  char *out = NULL;
  SG_CHECK_EQ_INT(run(cmd, &out), 0);
  json_t *j = json_loads(out, 0, NULL);
  SG_CHECK(j);
  SG_CHECK_MSG(strcmp(str(j, "status"), "ok") == 0, "%s", out);
  /* the evaluation took longer than the kernel's budget: inputs did not count */
  SG_CHECK_MSG(json_number_value(json_object_get(j, "run_s")) > 0.2,
               "run_s %.3f: this test needs inputs slower than the budget",
               json_number_value(json_object_get(j, "run_s")));
  json_decref(j);
  free(out);
  free(cmd);
}

static void test_fork_bomb_is_rejected(void) {
  skip_unless_x86_64();
  expect("fork_bomb.c", NULL, "rejected", "SIGSYS");
}

static void test_endless_allocation_is_runtime_error(void) {
#if defined(__SANITIZE_ADDRESS__)
  /* specgen built with AddressSanitizer: the worker sets the address-space
   * bound itself (sg_sandbox.h); the sanitizer's allocator then reports, and
   * the report needs a system call the filter refuses: rejected, a failure
   * all the same, and the bound held (no timeout). */
  json_t *j = eval_json("alloc_forever.c", "--eval-timeout 60");
  const char *st = str(j, "status");
  SG_CHECK_MSG(strcmp(st, "rejected") == 0 || strcmp(st, "runtime_error") == 0,
               "alloc_forever.c: status %s: %s", st, str(j, "message"));
  SG_CHECK_CONTAINS(str(j, "message"), "AddressSanitizer: allocator is out of memory");
  json_decref(j);
#else
  expect("alloc_forever.c", NULL, "runtime_error", "killed by SIGSEGV (segmentation fault)");
#endif
}

/* Opening a file for writing is a system call the kernel's filter refuses
 * (before there was one, RLIMIT_FSIZE ended it with SIGXFSZ). */
static void test_huge_file_is_runtime_error(void) {
  skip_unless_x86_64();
  expect("huge_file.c", NULL, "rejected", "killed by SIGSYS");
}

static void test_segfault_and_abort(void) {
  expect("segv.c", NULL, "runtime_error",
         "killed by SIGSEGV (segmentation fault) during correctness check 1 of 3, in the candidate");
  expect("abort.c", NULL, "runtime_error", "killed by SIGABRT (aborted)");
  expect("abort.c", NULL, "runtime_error", "vector_add: giving up on n=4096");
  expect("constructor.c", NULL, "runtime_error", "while loading the kernel");
}

static void test_early_exits(void) {
  expect("exit0.c", NULL, "runtime_error", "exited with code 0 before reporting a result");
  expect("exit3.c", NULL, "runtime_error", "exited with code 3 before reporting a result");
}

static void test_closed_stdout_and_chatter_are_fine(void) {
  expect("close_stdout.c", NULL, "ok", "correct on 3 random input sets");
  expect("chatty.c", NULL, "ok", NULL);
}

static void test_network_is_refused(void) {
  expect("socket_libc.c", NULL, "rejected", "`socket`, which uses the network");
  skip_unless_x86_64();
  expect("socket_raw.c", NULL, "rejected", "SIGSYS");
}

static void test_killing_the_parent_is_refused(void) {
  skip_unless_x86_64();
  expect("kill_parent.c", NULL, "rejected", "SIGSYS");
}

static void test_json_keys_and_isolation(void) {
  char *cmd = sg_asprintf("%s eval --task %s %s/examples/ok-unrolled.c --json --seed 7",
                          SG_TEST_SPECGEN, VADD, VADD);
  char *out = NULL;
  SG_CHECK_EQ_INT(run(cmd, &out), 0);
  json_t *j = json_loads(out, 0, NULL);
  SG_CHECK(j);
  const char *keys[] = {"status", "message", "speedup", "ref_ms", "cand_ms",
                        "compile_s", "run_s", "ref_mean_ms", "cand_mean_ms",
                        "max_abs_err", "max_rel_err", "first_mismatch",
                        "network_isolated"};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
    SG_CHECK_MSG(json_object_get(j, keys[i]), "key %s missing", keys[i]);
  SG_CHECK_STR_EQ(str(j, "status"), "ok");
  SG_CHECK(json_number_value(json_object_get(j, "speedup")) > 0);
  SG_CHECK(json_number_value(json_object_get(j, "ref_ms")) > 0);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(j, "seed")), 7);
  SG_CHECK(json_is_true(json_object_get(j, "network_isolated")));
  json_decref(j);
  free(out);
  free(cmd);
  /* the human report */
  cmd = sg_asprintf("%s eval --task %s %s/examples/numerical_error-skips_last.c",
                    SG_TEST_SPECGEN, VADD, VADD);
  SG_CHECK_EQ_INT(run(cmd, &out), 0);
  SG_CHECK_CONTAINS(out, "status     numerical_error");
  SG_CHECK_CONTAINS(out, "element 4095 (index [4095] of shape 4096) was never written");
  free(out);
  free(cmd);
}

static void test_bad_usage_exits_2(void) {
  struct { const char *args; const char *msg; } cases[] = {
      {"eval " VADD "/examples/ok-reference.c", "--task is required"},
      {"eval --task " VADD, "the candidate file is missing"},
      {"eval --task no_such_task x.c", "unknown task \"no_such_task\""},
      {"eval --task " VADD " /no/such/candidate.c", "/no/such/candidate.c"},
      {"eval --task " VADD " " VADD "/examples/ok-reference.c --trials 2", "--trials 2"},
      {"eval --task " VADD " " VADD "/examples/ok-reference.c --eval-timeout -1", "--eval-timeout"},
      {"eval --task " VADD " " VADD "/examples/ok-reference.c --seed abc", "--seed abc"},
      {"eval --task " VADD " " VADD "/examples/ok-reference.c --bogus", "--bogus"},
      {"eval --task " VADD " " VADD "/examples/ok-reference.c --device cpu:9999", "cpu:9999"},
      {"eval --task " VADD " " VADD "/examples/ok-reference.c --device tpu:0", "tpu:0"},
      {"eval --task " DATA " x.c", DATA "/task.json"},
      {"tasks --bogus", "--bogus"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *cmd = sg_asprintf("SPECGEN_TASKS_DIR=%s/tasks %s %s 2>&1", DATA,
                            SG_TEST_SPECGEN, cases[i].args);
    char *out = NULL;
    int code = run(cmd, &out);
    SG_CHECK_MSG(code == 2, "%s: exit %d, want 2: %s", cases[i].args, code, out);
    SG_CHECK_CONTAINS(out, cases[i].msg);
    free(out);
    free(cmd);
  }
  char *out = NULL;
  char *cmd = sg_asprintf("%s eval --help", SG_TEST_SPECGEN);
  SG_CHECK_EQ_INT(run(cmd, &out), 0);
  SG_CHECK_CONTAINS(out, "--task NAME|DIR");
  free(out);
  free(cmd);
}

static void test_tasks_command(void) {
  char *cmd = sg_asprintf("SPECGEN_TASKS_DIR=%s/tasks %s tasks --json", DATA,
                          SG_TEST_SPECGEN);
  char *out = NULL;
  SG_CHECK_EQ_INT(run(cmd, &out), 0);
  json_t *j = json_loads(out, 0, NULL);
  SG_CHECK(json_is_array(j));
  SG_CHECK_EQ_INT(json_array_size(j), 2);
  json_t *t = json_array_get(j, 1);
  SG_CHECK_STR_EQ(str(t, "name"), "vector_add");
  SG_CHECK_STR_EQ(str(t, "evaluator"), "cpu");
  SG_CHECK_STR_EQ(str(t, "entry"), "vector_add");
  SG_CHECK_CONTAINS(str(t, "description"), "alpha * (a + b)");
  SG_CHECK_CONTAINS(str(t, "dir"), "/tests/eval/data/tasks/cpu/vector_add");
  SG_CHECK_CONTAINS(str(t, "signature"), "void vector_add(");
  json_decref(j);
  free(out);
  free(cmd);
  cmd = sg_asprintf("SPECGEN_TASKS_DIR=%s/tasks %s tasks", DATA, SG_TEST_SPECGEN);
  SG_CHECK_EQ_INT(run(cmd, &out), 0);
  SG_CHECK_CONTAINS(out, "NAME");
  SG_CHECK_CONTAINS(out, "upper_matvec  cpu");
  free(out);
  free(cmd);
  /* the built-in tasks' long descriptions are cut so each row stays short */
  cmd = sg_asprintf("%s tasks", SG_TEST_SPECGEN);
  SG_CHECK_EQ_INT(run(cmd, &out), 0);
  for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"))
    SG_CHECK_MSG(strlen(line) <= 120, "row longer than 120 characters: %s", line);
  free(out);
  free(cmd);
  /* a qualified name picks the evaluator's task */
  cmd = sg_asprintf("SPECGEN_TASKS_DIR=%s/tasks %s eval --task cpu/vector_add %s/examples/ok-reference.c --runs 1 --warmups 0 --json",
                    DATA, SG_TEST_SPECGEN, VADD);
  SG_CHECK_EQ_INT(run(cmd, &out), 0);
  SG_CHECK_CONTAINS(out, "\"task\": \"vector_add\"");
  free(out);
  free(cmd);
  /* names resolve through the same root */
  cmd = sg_asprintf("SPECGEN_TASKS_DIR=%s/tasks %s eval --task vector_add %s/examples/ok-reference.c --runs 1 --warmups 0 --json",
                    DATA, SG_TEST_SPECGEN, VADD);
  SG_CHECK_EQ_INT(run(cmd, &out), 0);
  SG_CHECK_CONTAINS(out, "\"status\": \"ok\"");
  free(out);
  free(cmd);
}

SG_TEST_MAIN(SG_TEST(test_endless_loop_is_timeout),
             SG_TEST(test_timeout_budget_excludes_inputs_and_reference), SG_TEST(test_fork_bomb_is_rejected),
             SG_TEST(test_endless_allocation_is_runtime_error),
             SG_TEST(test_huge_file_is_runtime_error), SG_TEST(test_segfault_and_abort),
             SG_TEST(test_early_exits), SG_TEST(test_closed_stdout_and_chatter_are_fine),
             SG_TEST(test_network_is_refused), SG_TEST(test_killing_the_parent_is_refused),
             SG_TEST(test_json_keys_and_isolation), SG_TEST(test_bad_usage_exits_2),
             SG_TEST(test_tasks_command))
