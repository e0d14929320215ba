/* test_worker_ahead.c: a `specgen worker --device cuda:0` keeps one
 * evaluation process, so a runner started ahead by one request serves the
 * next (docs/protocol.md, docs/gpu.md "Runners started ahead"), on a
 * machine without a GPU.
 *
 * nvcc and specgen-cuda-run are stand-in scripts ($SPECGEN_NVCC,
 * $SPECGEN_CUDA_RUNNER): the "compiler" copies the candidate's source into
 * its "library", and the "runner" speaks the go channel as the real one
 * does ('R' when ready, a "SEED PATH" line, 'G'), logs what it saw, and
 * answers ok, or hangs when the candidate carries the line "//MODE hang".
 * A stand-in ncu logs how many runners are alive when it starts.
 *
 * Each test is a child subreaper (worker_client.h): a runner that outlived
 * the process that started it would be handed to the test, and
 * no_descendants_left() would wait for it in vain.
 */
#include "common/sg_file.h"
#include "worker_client.h"

#include <dirent.h>
#include <sys/stat.h>

static const char *fake_nvcc =
    "#!/bin/bash\n"
    "while [ $# -gt 0 ]; do case $1 in -o) out=$2; shift;; *.cu) src=$1;; esac;"
    " shift; done\n"
    "d=${src%/*}\n"
    "if [ -f \"$d/candidate.cu\" ]; then printf '%s\\n' \"$(<\"$d/candidate.cu\")\" > \"$out\";"
    " else echo reference > \"$out\"; fi\n";

static const char *fake_runner =
    "#!/bin/bash\n"
    "d=$FAKE_DIR\n"
    "while [ $# -gt 0 ]; do case $1 in --go-fd) fd=$2; shift;; esac; shift; done\n"
    "echo \"start $$\" >> $d/log\n"
    "printf R >&$fd\n"
    "read -r seed path <&$fd || exit 4\n"
    "printf G >&$fd\n"
    "echo \"go $$\" >> $d/log\n"
    "while read -r a b; do [ \"$a\" = //MODE ] && mode=$b; done < \"$path\"\n"
    "[ \"$mode\" = hang ] && exec sleep 120\n"
    "printf '{\"status\":\"ok\",\"message\":\"fake run\",\"ref_ms\":2,\"cand_ms\":1,"
    "\"go_wait_s\":0}' >&$SG_RESULT_FD\n";

/* Writes "ncu ref" when the profile target was given the reference's
 * library (it draws the inputs with its generator); a target started ahead
 * (--go-fd) logs "ncu-ahead" and takes its go as the runner does. Then it
 * counts the validation runners of the log alive and writes "ncu alive=N". */
static const char *fake_ncu =
    "#!/bin/bash\n"
    "d=$FAKE_DIR\n"
    "prev=; fd=; for a in \"$@\"; do [ \"$prev\" = --ref ] && [ -f \"$a\" ] && echo \"ncu ref\" >> $d/log;"
    " [ \"$prev\" = --go-fd ] && fd=$a; prev=$a; done\n"
    "if [ -n \"$fd\" ]; then echo \"ncu-ahead $$\" >> $d/log; printf R >&$fd\n"
    "  read -r seed path <&$fd || exit 4; printf G >&$fd; fi\n"
    "n=0\n"
    "while read -r what pid; do [ $what = start ] && kill -0 $pid 2>/dev/null && n=$((n+1));"
    " done < $d/log\n"
    "echo \"ncu alive=$n\" >> $d/log\n";

static char *fake_dir;

static void put_script(const char *name, const char *text, const char *env) {
  char *p = sg_asprintf("%s/%s", fake_dir, name);
  sg_err err;
  SG_CHECK_OK(sg_file_write(p, text, strlen(text), &err), err);
  SG_CHECK(chmod(p, 0755) == 0);
  setenv(env, p, 1);
  free(p);
}

static void setup(void) {
  const char *t = getenv("TMPDIR");
  fake_dir = sg_asprintf("%s/sg-worker-ahead-XXXXXX", t && *t ? t : "/tmp");
  SG_CHECK(mkdtemp(fake_dir) != NULL);
  put_script("nvcc", fake_nvcc, "SPECGEN_NVCC");
  put_script("runner", fake_runner, "SPECGEN_CUDA_RUNNER");
  put_script("ncu", fake_ncu, "SPECGEN_NCU");
  setenv("FAKE_DIR", fake_dir, 1);
  /* the stand-in reference goes to a cache of this test's own */
  char *cache = sg_asprintf("%s/xdg", fake_dir);
  setenv("XDG_CACHE_HOME", cache, 1);
  free(cache);
  unsetenv("SPECGEN_CUDA_AHEAD");
  unsetenv("SPECGEN_CUDA_SANITIZE");
  unsetenv("SPECGEN_WORKER_EVAL_MAX");
}

static void teardown(void) {
  sg_err err;
  SG_CHECK_OK(sg_rm_rf(fake_dir, &err), err);
  free(fake_dir);
  fake_dir = NULL;
}

/* The lines of the log that start with what. */
static int log_count(const char *what) {
  char *path = sg_asprintf("%s/log", fake_dir);
  char *text = NULL;
  sg_err err;
  int n = 0;
  if (sg_file_read(path, 1 << 20, &text, NULL, &err) == 0)
    for (const char *p = text; (p = strstr(p, what)) != NULL; p++)
      n += p == text || p[-1] == '\n';
  free(text);
  free(path);
  return n;
}

static void wait_log(const char *what, int n) {
  double deadline = now_s() + RECV_LIMIT_S;
  while (log_count(what) < n) {
    SG_CHECK_MSG(now_s() < deadline, "the log never had %d \"%s\" lines", n, what);
    usleep(10000);
  }
}

static char *source(const char *mode) {
  char *path = sg_asprintf("%s/tasks/cuda/hinge_loss/examples/ok-fast.cu", SG_SOURCE_ROOT);
  char *src = NULL;
  sg_err err;
  SG_CHECK_OK(sg_file_read(path, 1 << 20, &src, NULL, &err), err);
  free(path);
  char *s = sg_asprintf("%s\n//MODE %s\n", src, mode);
  free(src);
  return s;
}

static void send_request(wproc *w, const char *type, const char *id, const char *mode) {
  char *src = source(mode);
  w_send_json(w, json_pack("{s:s, s:s, s:s, s:s, s:{s:i, s:i, s:i}}", "type", type, "id",
                           id, "task", "hinge_loss", "source", src, "opts", "runs", 1,
                           "warmups", 0, "seed", 5));
  free(src);
}

/* started, compiled, result: the result (owned). */
static json_t *evaluation(wproc *w, const char *id) {
  w_expect_free(w, "started", id);
  w_expect_free(w, "compiled", id);
  return w_expect(w, "result", id);
}

/* A validation of a candidate that runs: ok, and whether a runner started
 * ahead served it. */
static bool validated_ahead(wproc *w, const char *id) {
  send_request(w, "validate", id, "run");
  json_t *r = evaluation(w, id);
  json_t *res = json_object_get(r, "result");
  SG_CHECK_STR_EQ(str(res, "status"), "ok");
  bool ahead = json_is_true(json_object_get(json_object_get(res, "stages"), "started_ahead"));
  json_decref(r);
  return ahead;
}

static char *work_dir(void) {
  char *d = sg_asprintf("%s/work", fake_dir);
  SG_CHECK(mkdir(d, 0700) == 0);
  return d;
}

/* The stand-ins, and a `--device cuda:0` worker with its scratch under
 * *work (for finish) and eval_max as its $SPECGEN_WORKER_EVAL_MAX (NULL:
 * its default). */
static void begin(wproc *w, char **work, const char *eval_max) {
  setup();
  if (eval_max)
    setenv("SPECGEN_WORKER_EVAL_MAX", eval_max, 1);
  *work = work_dir();
  char *args[] = {"--device", "cuda:0", "--work-dir", *work, NULL};
  w_start_args(w, args, false);
  w_expect_free(w, "hello", NULL);
}

/* The worker's child (its evaluation process), or -1 when it has none. */
static pid_t child_of(pid_t parent) {
  DIR *d = opendir("/proc");
  SG_CHECK(d != NULL);
  pid_t found = -1;
  for (struct dirent *e; found < 0 && (e = readdir(d));) {
    char *path = sg_asprintf("/proc/%s/stat", e->d_name);
    char *text = NULL;
    sg_err err;
    if (e->d_name[0] >= '1' && e->d_name[0] <= '9' &&
        sg_file_read(path, 4096, &text, NULL, &err) == 0) {
      const char *close_paren = strrchr(text, ')');
      char state;
      int ppid;
      if (close_paren && sscanf(close_paren + 1, " %c %d", &state, &ppid) == 2 &&
          ppid == parent)
        found = (pid_t)atoi(e->d_name);
    }
    free(text);
    free(path);
  }
  closedir(d);
  return found;
}

/* Whether a request.json waits in a request's directory under work
 * (work/WORKER/rN/). */
static bool request_waits(const char *work) {
  char *cmd = sg_asprintf("ls '%s'/*/r*/request.json >/dev/null 2>&1", work);
  int rc = system(cmd);
  free(cmd);
  return rc == 0;
}

/* The worker's end, and nothing it started left, its scratch gone. */
static void finish(wproc *w, char *work) {
  shutdown_ok(w);
  no_descendants_left();
  SG_CHECK(dir_empty(work));
  free(work);
}

/* ---- tests ---- */

static void test_second_request_is_served_ahead(void) {
  char *work;
  wproc w;
  begin(&w, &work, NULL);
  SG_CHECK(!validated_ahead(&w, "a"));
  SG_CHECK(validated_ahead(&w, "b"));
  SG_CHECK(validated_ahead(&w, "c"));
  /* a's runner, then one started ahead at each one's ready */
  SG_CHECK_EQ_INT(log_count("go "), 3);
  wait_log("start ", 4); /* (the last one starts as c ends) */
  SG_CHECK_EQ_INT(log_count("start "), 4);
  finish(&w, work); /* and the runner waiting ahead is gone */
  teardown();
}

/* A worker whose second request ("h", after "a") hangs on the runner
 * started ahead for it; returns its evaluation process. */
static pid_t hanging_on_the_runner_ahead(wproc *w, char **work) {
  begin(w, work, NULL);
  SG_CHECK(!validated_ahead(w, "a"));
  send_request(w, "validate", "h", "hang");
  w_expect_free(w, "started", "h");
  w_expect_free(w, "compiled", "h");
  wait_log("go ", 2); /* its runner has its go: the candidate runs */
  pid_t eval = child_of(w->pid);
  SG_CHECK(eval > 0);
  return eval;
}

/* An abort stops the request it hits, not the process: the request's
 * runner dies, the one kept ahead for the next request lives on and
 * serves it. */
static void test_abort_mid_run_keeps_the_runner_ahead(void) {
  char *work;
  wproc w;
  pid_t eval = hanging_on_the_runner_ahead(&w, &work);
  wait_log("start ", 3); /* the next one waits ahead */
  w_send(&w, "{\"type\":\"abort\",\"id\":\"h\"}\n");
  json_t *r = w_expect(&w, "result", "h");
  SG_CHECK_STR_EQ(result_status(r), "aborted");
  SG_CHECK_CONTAINS(str(json_object_get(r, "result"), "message"), "while it ran");
  json_decref(r);
  /* the same process serves the next request, on the runner kept ahead */
  SG_CHECK(validated_ahead(&w, "n1"));
  SG_CHECK(child_of(w.pid) == eval);
  SG_CHECK_EQ_INT(log_count("go "), 3);
  /* an abort of a finished request: an error, as before */
  w_send(&w, "{\"type\":\"abort\",\"id\":\"n1\"}\n");
  json_decref(w_expect(&w, "error", "n1"));
  finish(&w, work); /* no runner is left: the hung one died with its abort */
  teardown();
}

/* A process that does not stop an aborted request in time (here: stopped)
 * is killed, runners and all; the client had its result at once, and the
 * next request gets a fresh process. */
static void test_abort_unanswered_kills_the_process(void) {
  char *work;
  wproc w;
  pid_t eval = hanging_on_the_runner_ahead(&w, &work);
  SG_CHECK(kill(eval, SIGSTOP) == 0);
  w_send(&w, "{\"type\":\"abort\",\"id\":\"h\"}\n");
  json_t *r = w_expect(&w, "result", "h");
  SG_CHECK_STR_EQ(result_status(r), "aborted");
  json_decref(r);
  /* queued behind the abort: runs once the process is gone (5 s) */
  SG_CHECK(!validated_ahead(&w, "n1"));
  SG_CHECK(kill(eval, 0) != 0 && errno == ESRCH); /* killed and reaped */
  SG_CHECK(child_of(w.pid) != eval);
  finish(&w, work);
  teardown();
}

static void test_eval_process_dying_is_an_infra_error(void) {
  char *work;
  wproc w;
  begin(&w, &work, NULL);
  send_request(&w, "validate", "h", "hang");
  w_expect_free(&w, "started", "h");
  w_expect_free(&w, "compiled", "h");
  wait_log("go ", 1);
  pid_t eval = child_of(w.pid);
  SG_CHECK(eval > 0 && kill(eval, SIGKILL) == 0);
  json_t *r = w_expect(&w, "result", "h");
  SG_CHECK_STR_EQ(result_status(r), "infra_error");
  SG_CHECK_CONTAINS(str(json_object_get(r, "result"), "message"),
                    "the evaluation process was killed by signal 9");
  json_decref(r);
  SG_CHECK(!validated_ahead(&w, "n1"));
  /* dying while idle: seen (reaped), then the next request starts a
   * fresh one */
  eval = child_of(w.pid);
  SG_CHECK(eval > 0 && kill(eval, SIGKILL) == 0);
  double deadline = now_s() + RECV_LIMIT_S;
  while (child_of(w.pid) > 0)
    SG_CHECK_MSG(now_s() < deadline, "the worker did not reap its evaluation process");
  SG_CHECK(!validated_ahead(&w, "n2"));
  /* dying idle with a request already handed on (stopped, so it never
   * takes it): the request goes to a fresh one */
  eval = child_of(w.pid);
  SG_CHECK(eval > 0 && kill(eval, SIGSTOP) == 0);
  send_request(&w, "validate", "n3", "run");
  w_expect_free(&w, "started", "n3");
  while (!request_waits(work))
    SG_CHECK_MSG(now_s() < deadline, "the request was not handed on");
  SG_CHECK(kill(eval, SIGKILL) == 0);
  w_expect_free(&w, "compiled", "n3");
  json_t *res = w_expect(&w, "result", "n3");
  SG_CHECK_STR_EQ(result_status(res), "ok");
  json_decref(res);
  SG_CHECK(validated_ahead(&w, "n4"));
  finish(&w, work);
  teardown();
}

static void test_recycled_after_its_requests(void) {
  char *work;
  wproc w;
  begin(&w, &work, "2");
  SG_CHECK(!validated_ahead(&w, "a"));
  SG_CHECK(validated_ahead(&w, "b"));
  pid_t eval = child_of(w.pid);
  SG_CHECK(!validated_ahead(&w, "c")); /* a fresh process */
  SG_CHECK(child_of(w.pid) != eval);
  SG_CHECK(validated_ahead(&w, "d"));
  finish(&w, work);
  teardown();
}

/* Builds from the build cache name their reference inside their own
 * entries; the runner is shared all the same. */
static void test_cached_builds_share_the_runner(void) {
  setup();
  char *work = work_dir();
  char *cache = sg_asprintf("%s/cache", fake_dir);
  wproc c;
  char *cargs[] = {"--compile-only", "--build-cache", cache, NULL};
  w_start_args(&c, cargs, false);
  w_expect_free(&c, "hello", NULL);
  wproc w;
  char *args[] = {"--device", "cuda:0", "--build-cache", cache, "--work-dir", work, NULL};
  w_start_args(&w, args, false);
  w_expect_free(&w, "hello", NULL);
  const char *modes[] = {"run", "run again"};
  for (int i = 0; i < 2; i++) {
    char *src = source(modes[i]);
    w_send_json(&c, json_pack("{s:s, s:s, s:s, s:s}", "type", "compile", "id", "k",
                              "task", "cuda/hinge_loss", "source", src));
    json_t *r = evaluation(&c, "k");
    SG_CHECK_STR_EQ(result_status(r), "ok");
    json_decref(r);
    w_send_json(&w, json_pack("{s:s, s:s, s:s, s:s, s:{s:i, s:i}}", "type", "validate",
                              "id", "v", "task", "hinge_loss", "source", src, "opts",
                              "runs", 1, "warmups", 0));
    free(src);
    w_expect_free(&w, "started", "v");
    json_t *comp = w_expect(&w, "compiled", "v");
    SG_CHECK(json_is_true(json_object_get(comp, "cached")));
    json_decref(comp);
    r = w_expect(&w, "result", "v");
    json_t *res = json_object_get(r, "result");
    SG_CHECK_STR_EQ(str(res, "status"), "ok");
    SG_CHECK(json_is_true(json_object_get(json_object_get(res, "stages"), "started_ahead")) ==
             (i == 1));
    json_decref(r);
  }
  shutdown_ok(&c);
  finish(&w, work);
  free(cache);
  teardown();
}

/* A profile waits until the runner started ahead is ready (idle) and
 * keeps it: the validation after the profile is served by it. */
static void test_profile_keeps_the_idle_runner_ahead(void) {
  char *work;
  wproc w;
  begin(&w, &work, NULL);
  SG_CHECK(!validated_ahead(&w, "a"));
  wait_log("start ", 2); /* one waits ahead */
  send_request(&w, "profile", "p", "run");
  json_t *r = evaluation(&w, "p");
  json_decref(r); /* (the stand-in ncu measures nothing) */
  SG_CHECK_EQ_INT(log_count("ncu alive=1"), 1);
  SG_CHECK_EQ_INT(log_count("ncu ref"), 1);
  SG_CHECK(validated_ahead(&w, "b"));
  finish(&w, work);
  teardown();
}

/* Whether a profile's result says a runner started ahead served it. */
static bool profiled_ahead(wproc *w, const char *id) {
  send_request(w, "profile", id, "run");
  json_t *r = evaluation(w, id);
  json_t *st = json_object_get(json_object_get(r, "result"), "stages");
  SG_CHECK(json_is_boolean(json_object_get(st, "started_ahead")));
  bool ahead = json_is_true(json_object_get(st, "started_ahead"));
  json_decref(r);
  return ahead;
}

/* Once a worker has profiled a task, a validation of that task starts the
 * profile's runner (ncu over a runner with a go descriptor) beside it, and
 * the profile after it is served by that one. */
static void test_validation_starts_the_next_profile_ahead(void) {
  char *work;
  wproc w;
  begin(&w, &work, NULL);
  SG_CHECK(!validated_ahead(&w, "a"));
  SG_CHECK(!profiled_ahead(&w, "p1")); /* nothing told it a profile comes */
  SG_CHECK_EQ_INT(log_count("ncu-ahead "), 1);
  SG_CHECK(validated_ahead(&w, "b"));
  wait_log("ncu-ahead ", 2); /* started beside b */
  SG_CHECK(profiled_ahead(&w, "p2"));
  SG_CHECK_EQ_INT(log_count("ncu-ahead "), 2);
  finish(&w, work);
  teardown();
}

SG_TEST_MAIN(SG_TEST(test_second_request_is_served_ahead),
             SG_TEST(test_abort_mid_run_keeps_the_runner_ahead),
             SG_TEST(test_abort_unanswered_kills_the_process),
             SG_TEST(test_eval_process_dying_is_an_infra_error),
             SG_TEST(test_recycled_after_its_requests),
             SG_TEST(test_cached_builds_share_the_runner),
             SG_TEST(test_profile_keeps_the_idle_runner_ahead),
             SG_TEST(test_validation_starts_the_next_profile_ahead))
