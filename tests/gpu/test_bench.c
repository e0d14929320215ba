/* test_bench.c: `specgen bench` (sg_bench.h and the command): the paper
 * suite's order, finding candidates and examples, the table, the summary and
 * the JSON, and a real run of the command over two devices (the cpu
 * evaluator, so that it runs anywhere). */
#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_clock.h"
#include "common/sg_file.h"
#include "eval/sg_bench.h"
#include "sg_test.h"
#include "tmpfiles.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define DATA SG_SOURCE_ROOT "/tests/eval/data"
#define VADD DATA "/tasks/cpu/vector_add"

static void test_paper_suite(void) {
  setenv("SPECGEN_TASKS_DIR", SG_SOURCE_ROOT "/tasks", 1);
  sg_bench b = {.rows = NULL};
  sg_err err;
  SG_CHECK_OK(sg_bench_add_tasks(&b, "paper", &err), err);
  SG_CHECK_EQ_INT(b.n, 20);
  if (b.n == 20) {
    SG_CHECK_STR_EQ(b.rows[0].label, "T1");
    SG_CHECK_STR_EQ(b.rows[0].task->name, "tensor3d_matmul");   /* level1/10 */
    SG_CHECK_STR_EQ(b.rows[9].task->name, "hinge_loss");        /* level1/100 */
    SG_CHECK_STR_EQ(b.rows[10].label, "T11");
    SG_CHECK_STR_EQ(b.rows[19].label, "T20");
    SG_CHECK_STR_EQ(b.rows[19].task->name, "relu_self_attention"); /* level3/50 */
    for (size_t i = 1; i < b.n; i++)
      SG_CHECK(sg_bench_paper_rank(b.rows[i - 1].task) < sg_bench_paper_rank(b.rows[i].task));
    for (size_t i = 0; i < b.n; i++) {
      SG_CHECK_STR_EQ(b.rows[i].task->evaluator, "cuda");
      char *ex = sg_bench_find_example(b.rows[i].task, "ok-fast,ok-fused");
      SG_CHECK_MSG(ex != NULL, "%s has no ok-fast or ok-fused", b.rows[i].task->name);
      free(ex);
    }
  }
  sg_bench_free(&b);
}

static void test_find_candidate(void) {
  char *d = tmp_dir("sg-bench");
  sg_task *t = NULL;
  sg_err err;
  /* a KernelBench file as the task: 19_ReLU */
  put_file(d, "19_ReLU.py", "class Model(nn.Module):\n  pass\ndef get_inputs():\n  return []\n"
                       "def get_init_inputs():\n  return []\n");
  char *cands = sg_asprintf("%s/cands", d);
  SG_CHECK_OK(sg_mkdir_p(cands, &err), err);
  char *task = sg_asprintf("%s/19_ReLU.py", d);
  SG_CHECK_OK(sg_task_load(task, &t, &err), err);
  SG_CHECK(sg_bench_find_candidate(t, cands) == NULL);
  put_file(cands, "190_Other.py", "");
  put_file(cands, "19_ReLU_v2.cu", "");
  SG_CHECK(sg_bench_find_candidate(t, cands) == NULL);
  put_file(cands, "19_new.py", "");
  char *c = sg_bench_find_candidate(t, cands);
  SG_CHECK(c && strstr(c, "/19_new.py"));
  free(c);
  put_file(cands, "19_ReLU.py", "");
  c = sg_bench_find_candidate(t, cands);
  SG_CHECK(c && strstr(c, "/19_ReLU.py"));
  free(c);
  sg_task_free(t);
  SG_CHECK_OK(sg_task_load(VADD, &t, &err), err);
  SG_CHECK(sg_bench_find_candidate(t, cands) == NULL);
  put_file(cands, "vector_add.c", "");
  c = sg_bench_find_candidate(t, cands);
  SG_CHECK(c && strstr(c, "/vector_add.c"));
  free(c);
  /* a run directory's best kernels */
  char *run = sg_asprintf("%s/run", d), *best = sg_asprintf("%s/run/best", d);
  SG_CHECK_OK(sg_mkdir_p(best, &err), err);
  put_file(best, "vector_add.c", "");
  SG_CHECK(sg_bench_find_candidate(t, run) == NULL); /* no summary.json: not a run */
  put_file(run, "summary.json", "{}");
  c = sg_bench_find_candidate(t, run);
  SG_CHECK(c && strstr(c, "/run/best/vector_add.c"));
  free(c);
  free(run);
  free(best);
  sg_task_free(t);
  free(task);
  free(cands);
  sg_rm_rf(d, &err);
  free(d);
}

static void test_table_and_summary(void) {
  sg_bench b = {.rows = NULL};
  sg_err err;
  SG_CHECK_OK(sg_bench_add_tasks(&b, VADD, &err), err);
  SG_CHECK_OK(sg_bench_add_tasks(&b, VADD, &err), err);
  SG_CHECK_OK(sg_bench_add_tasks(&b, VADD, &err), err);
  SG_CHECK_EQ_INT(b.n, 3);
  b.rows[0].candidate = sg_strdup("/x/a.c");
  b.rows[0].evaluated = true;
  b.rows[0].result.status = SG_EVAL_OK;
  b.rows[0].result.speedup = 4.0;
  b.rows[0].result.kernelbench_status = sg_strdup("ok");
  b.rows[0].wall_s = 1.5;
  b.rows[1].candidate = sg_strdup("/x/b.c");
  b.rows[1].evaluated = true;
  b.rows[1].result.status = SG_EVAL_NUMERICAL_ERROR;
  b.rows[1].result.kernelbench_status = sg_strdup("ok");
  b.rows[1].wall_s = 0.5;
  SG_CHECK(!sg_bench_failed(&b));
  sg_buf out;
  sg_buf_init(&out, 0);
  sg_bench_table(&b, &out);
  sg_bench_summary(&b, &out);
  const char *s = sg_buf_str(&out);
  SG_CHECK_CONTAINS(s, "numerical_error");
  SG_CHECK_CONTAINS(s, "missing");
  SG_CHECK_CONTAINS(s, "4.000x");
  SG_CHECK_CONTAINS(s, "3 tasks, 2 candidates evaluated (1 missing): 1 correct by "
                       "specgen's check, 2 by KernelBench's");
  SG_CHECK_CONTAINS(s, "geometric mean speedup of the correct ones 4.000x");
  json_t *j = sg_bench_json(&b);
  json_t *sum = json_object_get(j, "summary");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(sum, "ok")), 1);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(sum, "kernelbench_ok")), 2);
  SG_CHECK_EQ_INT(json_array_size(json_object_get(j, "rows")), 3);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(
                      json_array_get(json_object_get(j, "rows"), 2), "status")),
                  "missing");
  /* every status printed is counted */
  SG_CHECK_CONTAINS(s, "statuses: ok 1, numerical_error 1, missing 1");
  json_t *st = json_object_get(sum, "statuses");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(st, "missing")), 1);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(sum, "infra_error")), 0);
  json_decref(j);
  sg_buf_free(&out);
  /* an evaluator's own infra_error (a reference out of device memory, say)
   * is counted as one and fails the run */
  b.rows[2].candidate = sg_strdup("/x/c.c");
  b.rows[2].evaluated = true;
  b.rows[2].result.status = SG_EVAL_INFRA_ERROR;
  SG_CHECK(sg_bench_failed(&b));
  sg_buf_init(&out, 0);
  sg_bench_summary(&b, &out);
  SG_CHECK_CONTAINS(sg_buf_str(&out), "1 not evaluated (infra_error)");
  SG_CHECK_CONTAINS(sg_buf_str(&out), "statuses: ok 1, numerical_error 1, infra_error 1");
  j = sg_bench_json(&b);
  sum = json_object_get(j, "summary");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(sum, "infra_error")), 1);
  SG_CHECK_EQ_INT(json_integer_value(
                      json_object_get(json_object_get(sum, "statuses"), "infra_error")), 1);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(
                      json_array_get(json_object_get(j, "rows"), 2), "status")),
                  "infra_error");
  json_decref(j);
  sg_buf_free(&out);
  sg_bench_free(&b);
}

/* --self-check: each KernelBench task's reference, given back as ModelNew
 * or with its output perturbed, as a Python file that parses. */
static void test_self_check(void) {
  char *d = tmp_dir("sg-bench-self");
  sg_err err;
  put_file(d, "19_ReLU.py", "import torch\nimport torch.nn as nn\n\n"
                       "class Model(nn.Module):\n    def forward(self, x):\n"
                       "        return torch.relu(x)\n\ndef get_inputs():\n    return []\n\n"
                       "def get_init_inputs():\n    return []\n");
  char *task = sg_asprintf("%s/19_ReLU.py", d), *cands = sg_asprintf("%s/cands", d);
  SG_CHECK_OK(sg_mkdir_p(cands, &err), err);
  const char *modes[] = {"same", "wrong"};
  const char *want[] = {"\nModelNew = Model\n", "class ModelNew(Model):"};
  for (int m = 0; m < 2; m++) {
    sg_bench b = {.rows = NULL};
    SG_CHECK_OK(sg_bench_add_tasks(&b, task, &err), err);
    SG_CHECK_OK(sg_bench_self_check(&b, modes[m], cands, &err), err);
    SG_CHECK_STR_EQ(b.self_check, modes[m]);
    char *src = NULL;
    size_t len = 0;
    SG_CHECK_OK(sg_file_read(b.rows[0].candidate, 1 << 20, &src, &len, &err), err);
    SG_CHECK_CONTAINS(src, "return torch.relu(x)");
    SG_CHECK_CONTAINS(src, want[m]);
    free(src);
    char *cmd = sg_asprintf("python3 -c 'import ast,sys; ast.parse(open(sys.argv[1]).read())' "
                            "%s", b.rows[0].candidate);
    SG_CHECK_MSG(system(cmd) == 0, "%s does not parse", b.rows[0].candidate);
    free(cmd);
    sg_buf out;
    sg_buf_init(&out, 0);
    sg_bench_table(&b, &out);
    SG_CHECK_CONTAINS(sg_buf_str(&out), "heavy-operator rule is off");
    sg_buf_free(&out);
    json_t *j = sg_bench_json(&b);
    SG_CHECK_STR_EQ(json_string_value(json_object_get(json_object_get(j, "summary"),
                                                      "self_check")), modes[m]);
    json_decref(j);
    sg_bench_free(&b);
  }
  sg_bench b = {.rows = NULL};
  SG_CHECK_OK(sg_bench_add_tasks(&b, task, &err), err);
  SG_CHECK_EQ_INT(sg_bench_self_check(&b, "fast", cands, &err), SG_EINVAL);
  SG_CHECK_OK(sg_bench_add_tasks(&b, VADD, &err), err);
  SG_CHECK_EQ_INT(sg_bench_self_check(&b, "same", cands, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "vector_add is a cpu task");
  SG_CHECK(b.self_check == NULL);
  sg_bench_free(&b);
  /* the command refuses a cpu task, and a mode it does not know (exit 2) */
  char *cmd = sg_asprintf("%s bench %s --self-check same 2>/dev/null", SG_TEST_SPECGEN, VADD);
  int st = system(cmd);
  SG_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2);
  free(cmd);
  cmd = sg_asprintf("%s bench %s --self-check maybe 2>/dev/null", SG_TEST_SPECGEN, task);
  st = system(cmd);
  SG_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2);
  free(cmd);
  free(task);
  free(cands);
  sg_rm_rf(d, &err);
  free(d);
}

/* Runs cmd (a shell line that writes d/out.json), checks its exit status
 * against want and returns the JSON (NULL, a failed check, if none). */
static json_t *run_for_json(const char *cmd, const char *d, int want) {
  int st = system(cmd);
  SG_CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == want, "%s: %d", cmd, st);
  char *path = sg_asprintf("%s/out.json", d);
  json_error_t je;
  json_t *j = json_load_file(path, 0, &je);
  free(path);
  SG_CHECK_MSG(j != NULL, "no JSON: %s", je.text);
  return j;
}

/* d/level1 with three KernelBench-shaped tasks 1_A, 2_B, 3_C (each the
 * same ReLU model); returns its path (caller frees). */
static char *three_task_level(const char *d) {
  sg_err err;
  char *kb = sg_asprintf("%s/level1", d);
  SG_CHECK_OK(sg_mkdir_p(kb, &err), err);
  const char *model = "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                      "    def forward(self, x):\n        return torch.relu(x)\n\n"
                      "def get_inputs():\n    return []\n\n"
                      "def get_init_inputs():\n    return []\n";
  put_file(kb, "1_A.py", model);
  put_file(kb, "2_B.py", model);
  put_file(kb, "3_C.py", model);
  return kb;
}

/* --self-check both: one validation per task decides both rows. The
 * kernelbench harness is a stand-in (SPECGEN_PYTHON; no PyTorch or GPU
 * needed) that speaks the go channel and answers the same candidate ok
 * and the wrong one by task: 1_A caught, 2_B undecided (its validation
 * ended first), 3_C an infra_error for both. Each judge takes 0.5 s to
 * start and 1_A's validation 2 s: the judges of 2_B and 3_C both start
 * while 1_A runs (two rows ahead), so neither row waits for its judge,
 * while 1_A (started at its go) waits for all of its start-up
 * (stages.judge_wait_s). */
static void test_self_check_both(void) {
  char *d = tmp_dir("sg-bench-both");
  sg_err err;
  char *kb = three_task_level(d);
  put_file(d, "python",
           "#!/bin/bash\n"
           "mode=validate; fd=; wrong=0\n"
           "while [ $# -gt 0 ]; do case $1 in --task) task=$(basename $2 .py); shift;;"
           " --mode) mode=$2; shift;; --go-fd) fd=$2; shift;; --also-wrong) wrong=1;;"
           " esac; shift; done\n"
           "echo \"$mode $task also_wrong=$wrong\" >> $FAKE_DIR/log\n"
           "if [ -n \"$fd\" ]; then sleep 0.5; printf R >&$fd;"
           " read -r seed path <&$fd || exit 4; printf G >&$fd; fi\n"
           "[ $mode/$task = validate/1_A ] && sleep 2\n"
           "case $mode/$task in\n"
           "compile/*) r='{\"status\":\"ok\",\"message\":\"imported\"}';;\n"
           "*/1_A) r='{\"status\":\"ok\",\"message\":\"fake\",\"ref_ms\":1,\"cand_ms\":1,"
           "\"stages\":{\"wrong_s\":0.75},"
           "\"kernelbench_status\":\"ok\",\"self_check_wrong\":{\"status\":\"numerical_error\","
           "\"message\":\"output 0 differs\",\"kernelbench_status\":\"numerical_error\","
           "\"max_abs_err\":0.5}}';;\n"
           "*/2_B) r='{\"status\":\"numerical_error\",\"message\":\"same differs\","
           "\"self_check_wrong\":{\"status\":\"undecided\",\"message\":\"not decided: "
           "the validation of the same candidate ended first\"}}';;\n"
           "*) r='{\"status\":\"infra_error\",\"message\":\"CUDA out of memory\"}';;\n"
           "esac\n"
           "printf '%s' \"$r\" >&$SG_RESULT_FD\n");
  char *cmd = sg_asprintf("chmod +x %s/python", d);
  SG_CHECK(system(cmd) == 0);
  free(cmd);
  cmd = sg_asprintf("cd %s && FAKE_DIR=%s SPECGEN_PYTHON=%s/python XDG_CACHE_HOME=%s/xdg "
                    "SPECGEN_SHM_DIR=%s %s bench %s --self-check both --devices cuda:0 --json "
                    "2>err > out.json",
                    d, d, d, d, d, SG_TEST_SPECGEN, kb);
  /* 3_C's infra_error and 2_B's wrong row not evaluated: exit 1 */
  json_t *j = run_for_json(cmd, d, 1);
  free(cmd);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(j, "self_check")), "both");
  json_t *same = json_object_get(j, "same"), *wrong = json_object_get(j, "wrong");
  const char *want_same[] = {"ok", "numerical_error", "infra_error"};
  const char *want_wrong[] = {"numerical_error", "not_run", "infra_error"};
  for (size_t i = 0; i < 3; i++) {
    json_t *rs = json_array_get(json_object_get(same, "rows"), i);
    json_t *rw = json_array_get(json_object_get(wrong, "rows"), i);
    SG_CHECK_STR_EQ(json_string_value(json_object_get(rs, "status")), want_same[i]);
    SG_CHECK_STR_EQ(json_string_value(json_object_get(rw, "status")), want_wrong[i]);
    SG_CHECK_STR_EQ(json_string_value(json_object_get(rw, "task")),
                    json_string_value(json_object_get(rs, "task")));
  }
  json_t *w0 = json_array_get(json_object_get(wrong, "rows"), 0);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(w0, "kernelbench_status")),
                  "numerical_error");
  SG_CHECK_CONTAINS(json_string_value(json_object_get(w0, "message")), "output 0 differs");
  SG_CHECK_CONTAINS(json_string_value(json_object_get(
                        json_array_get(json_object_get(wrong, "rows"), 1), "message")),
                    "not decided");
  /* the validation: the run stage less the wrong candidate's checks */
  json_t *s0 = json_array_get(json_object_get(same, "rows"), 0);
  double run0 = json_number_value(json_object_get(s0, "run_s"));
  SG_CHECK_MSG(run0 > 2 && fabs(json_number_value(json_object_get(s0, "validation_s")) -
                                (run0 - 0.75)) < 1e-9,
               "run_s %g, validation_s %g", run0,
               json_number_value(json_object_get(s0, "validation_s")));
  SG_CHECK(json_object_get(json_array_get(json_object_get(same, "rows"), 1),
                           "validation_s") == NULL); /* no wrong_s: none */
  for (size_t i = 0; i < 3; i++) {
    json_t *st = json_object_get(json_array_get(json_object_get(same, "rows"), i), "stages");
    json_t *w = json_object_get(st, "judge_wait_s");
    double v = json_number_value(w);
    SG_CHECK_MSG(json_is_number(w) && (i == 0 ? v >= 0.4 : v < 0.3),
                 "row %zu: judge_wait_s %g", i, v);
    SG_CHECK_MSG(json_is_true(json_object_get(st, "started_ahead")) == (i > 0),
                 "row %zu: started ahead?", i);
  }
  json_t *ss = json_object_get(same, "summary"), *ws = json_object_get(wrong, "summary");
  SG_CHECK_STR_EQ(json_string_value(json_object_get(ss, "self_check")), "same");
  SG_CHECK_STR_EQ(json_string_value(json_object_get(ws, "self_check")), "wrong");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(ss, "ok")), 1);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(ws, "ok")), 0);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(ws, "infra_error")), 1);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(ws, "statuses"),
                                                     "numerical_error")), 1);
  json_decref(j);
  /* each task's validation once, with --also-wrong; its compile without */
  char *log = NULL;
  char *path = sg_asprintf("%s/log", d);
  SG_CHECK_OK(sg_file_read(path, 1 << 20, &log, NULL, &err), err);
  free(path);
  for (int t = 0; t < 3; t++) {
    char name[8], want[64];
    snprintf(name, sizeof name, "%d_%c", t + 1, 'A' + t);
    snprintf(want, sizeof want, "validate %s also_wrong=1\n", name);
    const char *at = strstr(log, want);
    SG_CHECK_MSG(at && !strstr(at + 1, want), "not one \"%s\" in:\n%s", want, log);
    snprintf(want, sizeof want, "compile %s also_wrong=0\n", name);
    SG_CHECK_MSG(strstr(log, want) != NULL, "no \"%s\" in:\n%s", want, log);
  }
  free(log);
  /* the progress line gives both verdicts */
  char *errtext = NULL;
  path = sg_asprintf("%s/err", d);
  SG_CHECK_OK(sg_file_read(path, 1 << 20, &errtext, NULL, &err), err);
  free(path);
  SG_CHECK_CONTAINS(errtext, "1_A: ok 1x (KernelBench: ok), ");
  SG_CHECK_CONTAINS(errtext, " s (validation ");
  SG_CHECK_CONTAINS(errtext, "; wrong: numerical_error (KernelBench: numerical_error)\n");
  SG_CHECK_CONTAINS(errtext, "; wrong: not_run\n");
  free(errtext);
  free(kb);
  sg_rm_rf(d, &err);
  free(d);
}

/* A candidate out of CUDA memory while specgen's judge for the next task,
 * started ahead, holds the device is not the candidate's runtime_error: the
 * task is validated once more alone, and out of memory again, alone, it is
 * the retry's own verdict (here the candidate's runtime_error) with both
 * reasons. The stand-in harness holds a shared lock
 * while it lives, runs out of memory on 1_A's first try and on every try
 * of 2_B, and on a retry only where another harness still lives (the judge
 * ahead not ended). */
static void test_oom_beside_a_judge_ahead(void) {
  char *d = tmp_dir("sg-bench-oom");
  sg_err err;
  char *kb = three_task_level(d);
  put_file(d, "python",
           "#!/bin/bash\n"
           "mode=validate; fd=\n"
           "while [ $# -gt 0 ]; do case $1 in --task) task=$(basename $2 .py); shift;;"
           " --mode) mode=$2; shift;; --go-fd) fd=$2; shift;; esac; shift; done\n"
           "exec 9>>$FAKE_DIR/live; flock -s 9\n"
           "if [ -n \"$fd\" ]; then printf R >&$fd; read -r seed path <&$fd || exit 4;"
           " printf G >&$fd; fi\n"
           "oom='{\"status\":\"runtime_error\",\"message\":\"the candidate raised an "
           "exception: torch.OutOfMemoryError: CUDA out of memory.\"}'\n"
           "ok='{\"status\":\"ok\",\"message\":\"fake\",\"ref_ms\":1,\"cand_ms\":1}'\n"
           "r=$ok\n"
           "if [ $mode = validate ]; then\n"
           "  echo \"validate $task\" >> $FAKE_DIR/log\n"
           "  n=$(grep -c \"^validate $task$\" $FAKE_DIR/log)\n"
           "  flock -u 9; exec 8>>$FAKE_DIR/live\n"
           "  alone=0; flock -x -n 8 && alone=1\n"
           "  [ $task = 2_B ] && r=$oom\n"
           "  [ $task = 1_A ] && { [ $n = 1 ] || [ $alone = 0 ]; } && sleep 0.3 && r=$oom\n"
           "fi\n"
           "printf '%s' \"$r\" >&$SG_RESULT_FD\n");
  char *cmd = sg_asprintf("chmod +x %s/python", d);
  SG_CHECK(system(cmd) == 0);
  free(cmd);
  cmd = sg_asprintf("cd %s && FAKE_DIR=%s SPECGEN_PYTHON=%s/python XDG_CACHE_HOME=%s/xdg "
                    "SPECGEN_SHM_DIR=%s %s bench %s --self-check same --devices cuda:0 --json "
                    "2>err > out.json",
                    d, d, d, d, d, SG_TEST_SPECGEN, kb);
  json_t *j = run_for_json(cmd, d, 0); /* no infra_error: exit 0 */
  free(cmd);
  json_t *rows = json_object_get(j, "rows");
  const char *want[] = {"ok", "runtime_error", "ok"};
  for (size_t i = 0; i < 3; i++) {
    json_t *row = json_array_get(rows, i);
    SG_CHECK_STR_EQ(json_string_value(json_object_get(row, "status")), want[i]);
    bool retried = json_is_true(
        json_object_get(json_object_get(row, "stages"), "oom_retried_alone"));
    SG_CHECK_MSG(retried == (i < 2), "row %zu: retried %d", i, (int)retried);
  }
  const char *m = json_string_value(json_object_get(json_array_get(rows, 1), "message"));
  SG_CHECK_CONTAINS(m, "beside specgen's judge started ahead");
  SG_CHECK_CONTAINS(m, "again on a retry alone");
  json_decref(j);
  char *log = NULL, *path = sg_asprintf("%s/log", d);
  SG_CHECK_OK(sg_file_read(path, 1 << 20, &log, NULL, &err), err);
  free(path);
  SG_CHECK_MSG(strcmp(log, "validate 1_A\nvalidate 1_A\nvalidate 2_B\nvalidate 2_B\n"
                           "validate 3_C\n") == 0,
               "the validations:\n%s", log);
  free(log);
  free(kb);
  sg_rm_rf(d, &err);
  free(d);
}

/* The command for real: a folder of task directories, two devices, JSON. */
static void test_command(void) {
  char *d = tmp_dir("sg-bench");
  sg_err err;
  char *tasks = sg_asprintf("%s/tasks", d), *cands = sg_asprintf("%s/cands", d);
  SG_CHECK_OK(sg_mkdir_p(tasks, &err), err);
  SG_CHECK_OK(sg_mkdir_p(cands, &err), err);
  char *cmd = sg_asprintf("cp -r %s %s/a && cp -r %s %s/b && sed -i "
                          "'s/\"name\": \"vector_add\"/\"name\": \"other\"/' %s/b/task.json",
                          VADD, tasks, VADD, tasks, tasks);
  SG_CHECK(system(cmd) == 0);
  free(cmd);
  char *ref = NULL;
  size_t len = 0;
  SG_CHECK_OK(sg_file_read(VADD "/reference.c", 1 << 20, &ref, &len, &err), err);
  put_file(cands, "vector_add.c", ref);
  free(ref);
  cmd = sg_asprintf("%s bench %s --cands %s --devices cpu:0,cpu:1 --json --runs 2 "
                    "--warmups 0 2>/dev/null", SG_TEST_SPECGEN, tasks, cands);
  FILE *p = popen(cmd, "r");
  SG_CHECK(p != NULL);
  sg_buf b;
  sg_buf_init(&b, 1 << 20);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, p)) > 0)
    sg_buf_append(&b, chunk, n);
  int st = pclose(p);
  SG_CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: %d", cmd, st);
  json_error_t je;
  json_t *j = json_loads(sg_buf_str(&b), 0, &je);
  SG_CHECK_MSG(j != NULL, "not JSON: %s", sg_buf_str(&b));
  json_t *rows = json_object_get(j, "rows");
  SG_CHECK_EQ_INT(json_array_size(rows), 2);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(json_array_get(rows, 0), "status")), "ok");
  SG_CHECK_STR_EQ(json_string_value(json_object_get(json_array_get(rows, 1), "status")),
                  "missing");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(j, "summary"), "ok")), 1);
  json_decref(j);
  sg_buf_free(&b);
  free(cmd);
  /* bad usage */
  cmd = sg_asprintf("%s bench %s 2>/dev/null", SG_TEST_SPECGEN, tasks);
  st = system(cmd);
  SG_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2);
  free(cmd);
  cmd = sg_asprintf("%s bench nosuchtask --cands %s 2>/dev/null", SG_TEST_SPECGEN, cands);
  st = system(cmd);
  SG_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2);
  free(cmd);
  free(tasks);
  free(cands);
  sg_rm_rf(d, &err);
  free(d);
}

/* Stand-ins for nvcc and the runner in d (no GPU needed): the "compiler"
 * copies the source, the "runner" speaks the go channel, logs its task
 * ("start T", "go T") in d/log and its pid in d/pids, makes IPC files for
 * itself and for a "server" of its own (listed in specgen-ipc-pids, as a
 * kernelbench judge lists its servers), runs after_go (a shell line) and
 * answers ok. */
static void put_fakes(const char *d, const char *after_go) {
  put_file(d, "nvcc",
           "#!/bin/bash\n"
           "while [ $# -gt 0 ]; do case $1 in -o) out=$2; shift;; esac; shift; done\n"
           "echo lib > \"$out\"\n");
  char *runner = sg_asprintf(
      "#!/bin/bash\n"
      "while [ $# -gt 0 ]; do case $1 in --task) task=${2##*/}; shift;;"
      " --go-fd) fd=$2; shift;; esac; shift; done\n"
      "echo \"start $task\" >> $FAKE_DIR/log\n"
      "echo $$ >> $FAKE_DIR/pids\n"
      "[ -n \"$SPECGEN_SHM_DIR\" ] && touch $SPECGEN_SHM_DIR/torch_$$_1_0 "
      "$SPECGEN_SHM_DIR/cuda.shm.0.$(printf %%x $$).1\n"
      /* a server of its own, listed as a kernelbench judge lists its own */
      "sleep 1000 & srv=$!; echo \"$$ $srv\" > specgen-ipc-pids\n"
      "[ -n \"$SPECGEN_SHM_DIR\" ] && touch $SPECGEN_SHM_DIR/torch_${srv}_1_0 "
      "$SPECGEN_SHM_DIR/cuda.shm.0.$(printf %%x $srv).1\n"
      "printf R >&$fd\n"
      "read -r seed path <&$fd || exit 4\n"
      "printf G >&$fd\n"
      "echo \"go $task\" >> $FAKE_DIR/log\n"
      "%s\n"
      "printf '{\"status\":\"ok\",\"message\":\"fake\",\"ref_ms\":2,\"cand_ms\":1,"
      "\"speedup\":2,\"go_wait_s\":0}' >&$SG_RESULT_FD\n",
      after_go);
  put_file(d, "runner", runner);
  free(runner);
  char *cmd = sg_asprintf("chmod +x %s/nvcc %s/runner", d, d);
  SG_CHECK(system(cmd) == 0);
  free(cmd);
}

/* On a device, every row is another task: while one row runs, the next
 * two rows' runners start ahead (sg_eval_expect, sg_eval_expect_then), and
 * after the last none. nvcc and the runner are stand-ins (no GPU needed):
 * the "compiler" copies the source, the "runner" speaks the go channel and
 * logs its task; hinge_loss's run logs whether mlp's runner (two rows on)
 * started while it ran (waiting for it up to 10 s). */
static void test_runners_ahead_follow_the_rows(void) {
  char *d = tmp_dir("sg-bench-ahead");
  put_fakes(d, "[ $task = hinge_loss ] && for i in $(seq 200); do "
               "grep -q 'start mlp' $FAKE_DIR/log && { echo 'mlp ahead' >> $FAKE_DIR/log; "
               "break; }; sleep 0.05; done");
  char *cmd = sg_asprintf(
      "cd %s && FAKE_DIR=%s SPECGEN_NVCC=%s/nvcc "
      "SPECGEN_CUDA_RUNNER=%s/runner XDG_CACHE_HOME=%s/xdg SPECGEN_TASKS_DIR=%s/tasks "
      "%s bench cuda/hinge_loss cuda/diag_matmul cuda/mlp --examples ok-reference "
      "--devices cuda:0 --json 2>/dev/null > out.json",
      d, d, d, d, d, SG_SOURCE_ROOT, SG_TEST_SPECGEN);
  json_t *j = run_for_json(cmd, d, 0);
  free(cmd);
  json_t *rows = json_object_get(j, "rows");
  SG_CHECK_EQ_INT(json_array_size(rows), 3);
  for (size_t i = 0; i < json_array_size(rows); i++) {
    json_t *row = json_array_get(rows, i);
    SG_CHECK_STR_EQ(json_string_value(json_object_get(row, "status")), "ok");
    bool ahead = json_is_true(
        json_object_get(json_object_get(row, "stages"), "started_ahead"));
    SG_CHECK_MSG(ahead == (i > 0), "row %zu: started ahead %d", i, (int)ahead);
  }
  json_decref(j);
  /* one runner per row, each for its own task: none wasted */
  char *path = sg_asprintf("%s/log", d);
  char *log = NULL;
  sg_err err;
  SG_CHECK_OK(sg_file_read(path, 1 << 20, &log, NULL, &err), err);
  const char *want[] = {"start hinge_loss\n", "go hinge_loss\n", "start diag_matmul\n",
                        "go diag_matmul\n", "start mlp\n", "go mlp\n", "mlp ahead\n"};
  size_t lines = 0;
  for (const char *q = log; *q; q++)
    lines += *q == '\n';
  SG_CHECK_MSG(lines == 7, "the runners' log:\n%s", log);
  for (size_t i = 0; i < 7; i++) {
    const char *at = strstr(log, want[i]);
    SG_CHECK_MSG(at && (at == log || at[-1] == '\n'), "no \"%s\" in:\n%s", want[i], log);
  }
  /* each row's runner started before that row's go */
  SG_CHECK(strstr(log, "start diag_matmul") < strstr(log, "go diag_matmul"));
  SG_CHECK(strstr(log, "start mlp") < strstr(log, "go mlp"));
  /* two rows ahead: mlp's runner started during hinge_loss's run */
  SG_CHECK(strstr(log, "mlp ahead") && strstr(log, "mlp ahead") < strstr(log, "go diag_matmul"));
  free(log);
  free(path);
  sg_rm_rf(d, &err);
  free(d);
}

/* Whether pid runs (a zombie, ended but not yet reaped, does not). */
static bool runs(pid_t pid) {
  char path[64], *stat = NULL;
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  sg_err err;
  if (sg_file_read(path, 4096, &stat, NULL, &err))
    return false;
  const char *paren = strrchr(stat, ')');
  bool alive = paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
  free(stat);
  return alive;
}

/* A bench stopped by SIGTERM (a time limit) still prints its JSON: the rows
 * done, the row in flight and those after it not_run, exit status 1; and
 * no runner outlives it. Once with the signal for the whole process group
 * (what timeout(1) sends), once for the parent alone, which passes it on.
 * The stand-in runner of diag_matmul never answers. */
static void stopped_once(const char *d, bool group) {
  char *cmd = sg_asprintf(
      "cd %s && rm -rf log pids out.json xdg shm && mkdir shm; SPECGEN_SHM_DIR=$PWD/shm "
      "FAKE_DIR=%s SPECGEN_NVCC=%s/nvcc "
      "SPECGEN_CUDA_RUNNER=%s/runner XDG_CACHE_HOME=%s/xdg SPECGEN_TASKS_DIR=%s/tasks "
      "setsid %s bench cuda/hinge_loss cuda/diag_matmul cuda/mlp --examples ok-reference "
      "--devices cuda:0 --json 2>/dev/null > out.json & p=$!; "
      "for i in $(seq 600); do grep -q 'go diag_matmul' log 2>/dev/null && break; "
      "sleep 0.1; done; kill -TERM %s$p; wait $p",
      d, d, d, d, d, SG_SOURCE_ROOT, SG_TEST_SPECGEN, group ? "-" : "");
  double t0 = sg_clock_now_s();
  int st = system(cmd);
  double took = sg_clock_now_s() - t0;
  SG_CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 1, "%s: %d", cmd, st);
  SG_CHECK_MSG(took < 50, "the stopped bench took %.1f s", took); /* not the 100-s sleep */
  free(cmd);
  char *path = sg_asprintf("%s/out.json", d);
  json_error_t je;
  json_t *j = json_load_file(path, 0, &je);
  free(path);
  SG_CHECK_MSG(j != NULL, "no JSON after the stop (group %d)", (int)group);
  json_t *rows = json_object_get(j, "rows");
  SG_CHECK_EQ_INT(json_array_size(rows), 3);
  const char *want[] = {"ok", "not_run", "not_run"};
  for (size_t i = 0; i < json_array_size(rows) && i < 3; i++)
    SG_CHECK_STR_EQ(json_string_value(json_object_get(json_array_get(rows, i), "status")),
                    want[i]);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(j, "summary"), "ok")), 1);
  json_decref(j);
  /* every runner it started has ended */
  path = sg_asprintf("%s/pids", d);
  char *pids = NULL;
  sg_err err;
  SG_CHECK_OK(sg_file_read(path, 1 << 20, &pids, NULL, &err), err);
  free(path);
  int n = 0;
  for (char *q = pids, *end; *q; q = end + (*end != 0)) {
    pid_t pid = (pid_t)strtol(q, &end, 10);
    if (end == q)
      break;
    SG_CHECK_MSG(pid > 0 && !runs(pid), "runner %d still runs", (int)pid);
    n++;
  }
  SG_CHECK_MSG(n >= 2, "the runners' pids:\n%s", pids ? pids : "");
  free(pids);
  /* nor their CUDA IPC files, the killed ones' too, their servers' included */
  cmd = sg_asprintf("test -z \"$(ls -A %s/shm)\"", d);
  SG_CHECK_MSG(system(cmd) == 0, "files left: %s", cmd);
  free(cmd);
}

static void test_stopped_bench_reports(void) {
  char *d = tmp_dir("sg-bench-stop");
  put_fakes(d, "[ $task = diag_matmul ] && sleep 100");
  stopped_once(d, true);
  stopped_once(d, false);
  sg_err err;
  sg_rm_rf(d, &err);
  free(d);
}

SG_TEST_MAIN({"paper_suite", test_paper_suite},
             {"stopped_bench_reports", test_stopped_bench_reports},
             {"runners_ahead_follow_the_rows", test_runners_ahead_follow_the_rows},
             {"find_candidate", test_find_candidate},
             {"table_and_summary", test_table_and_summary},
             {"self_check", test_self_check},
             {"self_check_both", test_self_check_both},
             {"oom_beside_a_judge_ahead", test_oom_beside_a_judge_ahead},
             {"command", test_command})
