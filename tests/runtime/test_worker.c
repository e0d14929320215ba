/* test_worker.c: `specgen worker --device cpu:0` driven through real pipes
 * (docs/protocol.md): the hello, validations of the hinge_loss examples that
 * end ok, compile_error and timeout, aborts of running and queued requests,
 * malformed lines, shutdown, end of input, and a worker killed with SIGKILL
 * mid-request, seen as the end of its output. Then the build cache: a
 * `--compile-only` worker compiling ok, compile_error and rejected
 * examples, a device worker finding the build (cached: true) or compiling a
 * source it has not seen, two compile workers racing on one source, a
 * corrupt entry taken as a miss, and compile requests refused where they
 * cannot be served.
 *
 * Each test makes itself a child subreaper, so every process the worker
 * started (its evaluation process, the compiler, the candidate) that outlives
 * its parent is handed to the test; no_descendants_left() then checks that
 * nothing the worker started keeps running after an abort or a kill.
 */
#include "common/sg_file.h"
#include "pool/sg_task_files.h"
#include "worker_client.h"

#include <dirent.h>

static void w_start(wproc *w) {
  char *args[] = {"--device", "cpu:0", NULL};
  w_start_args(w, args, false);
}

static char *example(const char *name) {
  char *path = sg_asprintf("%s/tasks/cpu/hinge_loss/examples/%s", SG_SOURCE_ROOT, name);
  char *src = NULL;
  sg_err err;
  SG_CHECK_OK(sg_file_read(path, 1 << 20, &src, NULL, &err), err);
  free(path);
  return src;
}

/* A validate request for a hinge_loss example, with small options. */
static json_t *validate(const char *id, const char *ex, double timeout_s) {
  char *src = example(ex);
  json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:{s:i, s:i, s:i, s:f}}", "type",
                        "validate", "id", id, "task", "hinge_loss", "source", src,
                        "opts", "runs", 1, "warmups", 0, "seed", 11,
                        "eval_timeout", timeout_s);
  free(src);
  return j;
}

/* A request of type for a hinge_loss example (compile or validate), the
 * task named with its evaluator, as a compile worker needs. */
static json_t *request(const char *type, const char *id, const char *ex) {
  json_t *j = validate(id, ex, 60);
  json_object_set_new(j, "type", json_string(type));
  json_object_set_new(j, "task", json_string("cpu/hinge_loss"));
  return j;
}

/* A fresh build cache directory (removed by rm_cache). */
static char *new_cache(void) {
  const char *t = getenv("TMPDIR");
  char *d = sg_asprintf("%s/sg-test-cache-XXXXXX", t && *t ? t : "/tmp");
  SG_CHECK(mkdtemp(d) != NULL);
  return d;
}

static void rm_cache(char *d) {
  sg_err err;
  SG_CHECK_OK(sg_rm_rf(d, &err), err);
  free(d);
}

/* Entries in a cache (16-hex-digit directories); *tmp gets the number of
 * anything else there (a writer's leftovers). The first entry's name goes
 * to first (17 bytes) when given. */
static int cache_entries(const char *dir, int *tmp, char *first) {
  DIR *d = opendir(dir);
  SG_CHECK(d != NULL);
  int n = 0, other = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if (strlen(e->d_name) == 16 && strspn(e->d_name, "0123456789abcdef") == 16) {
      if (first && n == 0)
        memcpy(first, e->d_name, 17);
      n++;
    } else {
      other++;
    }
  }
  closedir(d);
  if (tmp)
    *tmp = other;
  return n;
}

static void start_compile_worker(wproc *w, const char *cache, bool capture_err) {
  char *args[] = {"--compile-only", "--build-cache", (char *)cache, NULL};
  w_start_args(w, args, capture_err);
}

static void start_cached_device_worker(wproc *w, const char *cache,
                                       bool capture_err) {
  char *args[] = {"--device", "cpu:0", "--build-cache", (char *)cache, NULL};
  w_start_args(w, args, capture_err);
}

/* started, compiled (checked: status, and cached unless cached < 0),
 * result; the result's status. */
static char *expect_evaluation(wproc *w, const char *id, const char *compile_status,
                               int cached) {
  w_expect_free(w, "started", id);
  json_t *c = w_expect(w, "compiled", id);
  SG_CHECK_STR_EQ(str(c, "status"), compile_status);
  SG_CHECK_MSG(cached < 0 || json_is_true(json_object_get(c, "cached")) == cached,
               "request %s: cached is %s, expected %s", id,
               json_is_true(json_object_get(c, "cached")) ? "true" : "absent",
               cached ? "true" : "absent");
  SG_CHECK(json_number_value(json_object_get(c, "compile_s")) > 0);
  json_decref(c);
  json_t *r = w_expect(w, "result", id);
  char *st = sg_strdup(result_status(r));
  json_decref(r);
  return st;
}

/* ---- tests ---- */

static void test_hello_then_shutdown(void) {
  wproc w;
  w_start(&w);
  json_t *h = w_expect(&w, "hello", NULL);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(h, "protocol")), SG_WORKER_PROTOCOL);
  SG_CHECK_STR_EQ(str(h, "device"), "cpu:0");
  json_t *ev = json_object_get(h, "evaluators");
  SG_CHECK_EQ_INT(json_array_size(ev), 1);
  SG_CHECK_STR_EQ(json_string_value(json_array_get(ev, 0)), "cpu");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(h, "pid")), w.pid);
  json_decref(h);
  w_send(&w, "{\"type\":\"hello\",\"id\":\"h\"}\n");
  w_expect_free(&w, "hello", "h");
  w_send(&w, "{\"type\":\"ping\",\"id\":\"p1\"}\n{\"type\":\"ping\"}\n");
  w_expect_free(&w, "pong", "p1");
  h = w_expect(&w, "pong", NULL);
  SG_CHECK(json_object_get(h, "id") == NULL);
  json_decref(h);
  w_send(&w, "{\"type\":\"shutdown\"}\n");
  w_expect_free(&w, "bye", NULL);
  SG_CHECK(w_recv(&w) == NULL);
  int st = w_wait(&w);
  SG_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  no_descendants_left();
}

static void test_validate_ok_and_broken_examples(void) {
  wproc w;
  w_start(&w);
  w_expect_free(&w, "hello", NULL);
  /* two requests at once: they queue and run in order */
  w_send_json(&w, validate("ok", "ok-fast.c", 60));
  w_send_json(&w, validate("ce", "compile_error-missing_semicolon.c", 60));

  w_expect_free(&w, "started", "ok");
  json_t *c = w_expect(&w, "compiled", "ok");
  SG_CHECK_STR_EQ(str(c, "status"), "ok");
  SG_CHECK(json_number_value(json_object_get(c, "compile_s")) > 0);
  json_decref(c);
  json_t *r = w_expect(&w, "result", "ok");
  SG_CHECK_STR_EQ(result_status(r), "ok");
  json_t *res = json_object_get(r, "result");
  SG_CHECK(json_number_value(json_object_get(res, "speedup")) > 0);
  SG_CHECK(json_number_value(json_object_get(res, "compile_s")) > 0);
  SG_CHECK(json_number_value(json_object_get(res, "run_s")) > 0);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(res, "seed")), 11);
  json_decref(r);

  w_expect_free(&w, "started", "ce");
  c = w_expect(&w, "compiled", "ce");
  SG_CHECK_STR_EQ(str(c, "status"), "compile_error");
  json_decref(c);
  r = w_expect(&w, "result", "ce");
  SG_CHECK_STR_EQ(result_status(r), "compile_error");
  SG_CHECK_CONTAINS(str(json_object_get(r, "result"), "message"), "error");
  /* no device stage after a failed compile */
  SG_CHECK(json_is_null(json_object_get(json_object_get(r, "result"), "run_s")));
  json_decref(r);

  w_send(&w, "{\"type\":\"shutdown\"}\n");
  w_expect_free(&w, "bye", NULL);
  SG_CHECK(WIFEXITED(w_wait(&w)));
  no_descendants_left();
}

static void test_timeout_option_applies(void) {
  wproc w;
  w_start(&w);
  w_expect_free(&w, "hello", NULL);
  w_send_json(&w, validate("t", "timeout-unstarted_workers.c", 1.0));
  w_expect_free(&w, "started", "t");
  w_expect_free(&w, "compiled", "t");
  json_t *r = w_expect(&w, "result", "t");
  SG_CHECK_STR_EQ(result_status(r), "timeout");
  json_decref(r);
  close(w.in); /* end of input ends it too */
  SG_CHECK(w_recv(&w) == NULL);
  SG_CHECK(WIFEXITED(w_wait(&w)));
  no_descendants_left();
}

static void test_abort_running_and_queued(void) {
  char scratch[] = "/tmp/sg-test-worker-XXXXXX";
  SG_CHECK(mkdtemp(scratch) != NULL);
  char *args[] = {"--device", "cpu:0", "--work-dir", scratch, NULL};
  wproc w;
  w_start_args(&w, args, false);
  w_expect_free(&w, "hello", NULL);
  /* spins until its 120 s timeout unless aborted */
  w_send_json(&w, validate("spin", "timeout-unstarted_workers.c", 120));
  w_send_json(&w, validate("next", "ok-fast.c", 60));
  w_expect_free(&w, "started", "spin");
  w_expect_free(&w, "compiled", "spin");
  /* now the candidate runs; the worker still answers */
  w_send(&w, "{\"type\":\"ping\",\"id\":\"alive\"}\n");
  w_expect_free(&w, "pong", "alive");
  /* a queued request: withdrawn without running */
  w_send(&w, "{\"type\":\"abort\",\"id\":\"next\"}\n");
  json_t *r = w_expect(&w, "result", "next");
  SG_CHECK_STR_EQ(result_status(r), "aborted");
  SG_CHECK_CONTAINS(str(json_object_get(r, "result"), "message"), "before it ran");
  json_decref(r);
  /* the running one: killed */
  w_send(&w, "{\"type\":\"abort\",\"id\":\"spin\"}\n");
  r = w_expect(&w, "result", "spin");
  SG_CHECK_STR_EQ(result_status(r), "aborted");
  SG_CHECK_CONTAINS(str(json_object_get(r, "result"), "message"), "while it ran");
  SG_CHECK(json_number_value(json_object_get(json_object_get(r, "result"), "compile_s")) > 0);
  json_decref(r);
  /* an abort of something no longer there is an error, and it carries on */
  w_send(&w, "{\"type\":\"abort\",\"id\":\"spin\"}\n");
  r = w_expect(&w, "error", "spin");
  SG_CHECK_CONTAINS(str(r, "message"), "no queued or running request has id \"spin\"");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(r, "line")), 6);
  json_decref(r);
  /* and it evaluates the next request normally */
  w_send_json(&w, validate("after", "ok-fast.c", 60));
  w_expect_free(&w, "started", "after");
  w_expect_free(&w, "compiled", "after");
  r = w_expect(&w, "result", "after");
  SG_CHECK_STR_EQ(result_status(r), "ok");
  json_decref(r);
  SG_CHECK(!dir_empty(scratch)); /* the worker's scratch directory */
  w_send(&w, "{\"type\":\"shutdown\"}\n");
  w_expect_free(&w, "bye", NULL);
  SG_CHECK(WIFEXITED(w_wait(&w)));
  no_descendants_left();
  /* every request's scratch and the worker's own are gone */
  SG_CHECK(dir_empty(scratch));
  rmdir(scratch);
}

static void test_shutdown_aborts_running_and_queued(void) {
  wproc w;
  w_start(&w);
  w_expect_free(&w, "hello", NULL);
  w_send_json(&w, validate("a", "timeout-unstarted_workers.c", 120));
  w_send_json(&w, validate("b", "ok-fast.c", 60));
  w_expect_free(&w, "started", "a");
  w_expect_free(&w, "compiled", "a");
  w_send(&w, "{\"type\":\"shutdown\"}\n");
  json_t *r = w_expect(&w, "result", "a");
  SG_CHECK_STR_EQ(result_status(r), "aborted");
  json_decref(r);
  r = w_expect(&w, "result", "b");
  SG_CHECK_STR_EQ(result_status(r), "aborted");
  json_decref(r);
  w_expect_free(&w, "bye", NULL);
  SG_CHECK(w_recv(&w) == NULL);
  int st = w_wait(&w);
  SG_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  no_descendants_left();
}

static void expect_error(wproc *w, long long line, const char *id, const char *msg) {
  json_t *e = w_expect(w, "error", id);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(e, "line")), line);
  SG_CHECK_CONTAINS(str(e, "message"), msg);
  if (!id)
    SG_CHECK(json_object_get(e, "id") == NULL);
  json_decref(e);
}

static void test_malformed_lines_get_errors_and_it_carries_on(void) {
  wproc w;
  w_start(&w);
  w_expect_free(&w, "hello", NULL);
  w_send(&w, "this is not json\n"                                        /* 1 */
             "\n"                                                        /* 2: blank, skipped */
             "{}\n"                                                      /* 3 */
             "{\"type\":\"evaluate\",\"id\":\"x1\"}\n"                   /* 4 */
             "{\"type\":\"validate\",\"id\":\"x2\",\"task\":\"hinge_loss\"}\n" /* 5 */
             "{\"type\":\"validate\",\"id\":\"x3\",\"task\":\"no_such_task\",\"source\":\"s\"}\n" /* 6 */
             "{\"type\":\"validate\",\"id\":\"x4\",\"task\":\"cuda/hinge_loss\",\"source\":\"s\"}\n" /* 7 */
             "{\"type\":\"validate\",\"id\":\"x5\",\"task\":\"hinge_loss\",\"source\":\"s\",\"opts\":{\"runs\":0}}\n" /* 8 */
             "{\"type\":\"ping\",\"protocol\":99}\n"                     /* 9 */
             "{\"type\":\"abort\",\"id\":\"nobody\"}\r\n"                /* 10, CRLF */
             "{\"type\":\"ping\",\"id\":\"still-here\"}\n");             /* 11 */
  expect_error(&w, 1, NULL, "not JSON");
  expect_error(&w, 3, NULL, "field \"type\": missing");
  expect_error(&w, 4, "x1", "unknown message type \"evaluate\"");
  expect_error(&w, 5, "x2", "field \"source\": missing");
  expect_error(&w, 6, "x3", "field \"task\"");
  expect_error(&w, 7, "x4", "task cuda/hinge_loss needs the cuda evaluator");
  expect_error(&w, 8, "x5", "field \"opts.runs\"");
  expect_error(&w, 9, NULL, "field \"protocol\"");
  expect_error(&w, 10, "nobody", "no queued or running request");
  w_expect_free(&w, "pong", "still-here");
  /* the same id twice while the first is queued or running */
  w_send_json(&w, validate("dup", "timeout-unstarted_workers.c", 120));
  w_expect_free(&w, "started", "dup");
  w_send_json(&w, validate("dup", "ok-fast.c", 60));
  expect_error(&w, 13, "dup", "already queued or running");
  w_send(&w, "{\"type\":\"abort\",\"id\":\"dup\"}\n");
  /* the abort may land before or after the compile ends */
  json_t *r = w_recv(&w);
  SG_CHECK(r != NULL);
  if (strcmp(str(r, "type"), "compiled") == 0) {
    json_decref(r);
    r = w_expect(&w, "result", "dup");
  }
  SG_CHECK_STR_EQ(str(r, "type"), "result");
  SG_CHECK_STR_EQ(result_status(r), "aborted");
  json_decref(r);
  w_send(&w, "{\"type\":\"shutdown\"}\n");
  w_expect_free(&w, "bye", NULL);
  SG_CHECK(WIFEXITED(w_wait(&w)));
  no_descendants_left();
}

static void test_overlong_line_is_an_error(void) {
  wproc w;
  w_start(&w);
  w_expect_free(&w, "hello", NULL);
  size_t n = SG_WORKER_LINE_MAX + 1000;
  char *big = sg_malloc(n + 2);
  memset(big, 'x', n);
  big[n] = '\n';
  big[n + 1] = '\0';
  w_send(&w, big);
  free(big);
  w_send(&w, "{\"type\":\"ping\",\"id\":\"p\"}\n");
  expect_error(&w, 1, NULL, "line longer than");
  w_expect_free(&w, "pong", "p");
  w_send(&w, "{\"type\":\"shutdown\"}\n");
  w_expect_free(&w, "bye", NULL);
  SG_CHECK(WIFEXITED(w_wait(&w)));
}

static void test_profile_on_cpu_is_an_infra_error(void) {
  wproc w;
  w_start(&w);
  w_expect_free(&w, "hello", NULL);
  json_t *j = validate("prof", "ok-fast.c", 60);
  json_object_set_new(j, "type", json_string("profile"));
  w_send_json(&w, j);
  w_expect_free(&w, "started", "prof");
  w_expect_free(&w, "compiled", "prof");
  json_t *r = w_expect(&w, "result", "prof");
  SG_CHECK_STR_EQ(result_status(r), "infra_error");
  SG_CHECK_CONTAINS(str(json_object_get(r, "result"), "message"), "no hardware profiling");
  json_decref(r);
  w_send(&w, "{\"type\":\"shutdown\"}\n");
  w_expect_free(&w, "bye", NULL);
  SG_CHECK(WIFEXITED(w_wait(&w)));
}

static void test_end_of_input_mid_request_ends_the_worker(void) {
  wproc w;
  w_start(&w);
  w_expect_free(&w, "hello", NULL);
  w_send_json(&w, validate("spin", "timeout-unstarted_workers.c", 120));
  w_expect_free(&w, "started", "spin");
  w_expect_free(&w, "compiled", "spin");
  close(w.in);
  json_t *r = w_expect(&w, "result", "spin");
  SG_CHECK_STR_EQ(result_status(r), "aborted");
  json_decref(r);
  SG_CHECK(w_recv(&w) == NULL);
  w.in = open("/dev/null", O_RDONLY); /* for w_wait's close */
  int st = w_wait(&w);
  SG_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  no_descendants_left();
}

static void test_sigterm_stops_like_shutdown(void) {
  char scratch[] = "/tmp/sg-test-worker-XXXXXX";
  SG_CHECK(mkdtemp(scratch) != NULL);
  char *args[] = {"--device", "cpu:0", "--work-dir", scratch, NULL};
  wproc w;
  w_start_args(&w, args, false);
  w_expect_free(&w, "hello", NULL);
  w_send_json(&w, validate("spin", "timeout-unstarted_workers.c", 120));
  w_send_json(&w, validate("queued", "ok-fast.c", 60));
  w_expect_free(&w, "started", "spin");
  w_expect_free(&w, "compiled", "spin");
  SG_CHECK(kill(w.pid, SIGTERM) == 0);
  json_t *r = w_expect(&w, "result", "spin");
  SG_CHECK_STR_EQ(result_status(r), "aborted");
  json_decref(r);
  r = w_expect(&w, "result", "queued");
  SG_CHECK_STR_EQ(result_status(r), "aborted");
  json_decref(r);
  w_expect_free(&w, "bye", NULL);
  SG_CHECK(w_recv(&w) == NULL);
  int st = w_wait(&w);
  SG_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  no_descendants_left();
  SG_CHECK(dir_empty(scratch));
  rmdir(scratch);
}

static void test_sigkill_mid_request_is_seen_as_end_of_output(void) {
  wproc w;
  w_start(&w);
  w_expect_free(&w, "hello", NULL);
  w_send_json(&w, validate("spin", "timeout-unstarted_workers.c", 120));
  w_expect_free(&w, "started", "spin");
  w_expect_free(&w, "compiled", "spin");
  SG_CHECK(kill(w.pid, SIGKILL) == 0);
  SG_CHECK(w_recv(&w) == NULL);
  int st = w_wait(&w);
  SG_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  /* the evaluation child and the spinning candidate died with it */
  no_descendants_left();
}

static void test_bad_usage(void) {
  static const struct {
    char *args[4];
    const char *msg;
  } cases[] = {
      {{NULL}, "--device is required"},
      {{"--device", "gpu:0", NULL}, "expected cpu:N or cuda:N"},
      {{"--device", "cpu:4000", NULL}, "may not use core 4000"},
      {{"--device", "cpu:0", "--bogus", NULL}, "unknown option '--bogus', or it lacks its value"},
      {{"--device", "cpu:0", "extra", NULL}, "unexpected argument 'extra'"},
      {{"--compile-only", "--device", "cpu:0", NULL}, "exclude each other"},
      {{"--compile-only", "--build-cache", "", NULL}, "--build-cache: empty"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    for (int json_errors = 0; json_errors < 2; json_errors++) {
      char *args[6] = {NULL};
      int n = 0;
      for (int k = 0; cases[i].args[k]; k++)
        args[n++] = cases[i].args[k];
      if (json_errors)
        args[n++] = "--json-errors";
      wproc w;
      w_start_args(&w, args, true);
      json_t *e = w_recv(&w);
      if (json_errors) {
        SG_CHECK_MSG(e != NULL, "case %zu: no error line on stdout", i);
        SG_CHECK_STR_EQ(str(e, "type"), "error");
        SG_CHECK(json_is_true(json_object_get(e, "fatal")));
        SG_CHECK_CONTAINS(str(e, "message"), cases[i].msg);
        json_decref(e);
        SG_CHECK(w_recv(&w) == NULL);
      } else {
        SG_CHECK_MSG(e == NULL, "case %zu: stdout is not empty", i);
      }
      /* the message is on stderr either way (it is short: the pipe holds it) */
      char errtext[8192];
      ssize_t k = read(w.err, errtext, sizeof errtext - 1);
      errtext[k > 0 ? k : 0] = '\0';
      SG_CHECK_CONTAINS(errtext, cases[i].msg);
      int st = w_wait(&w);
      SG_CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 2, "case %zu: exit status", i);
    }
  }
}


static void test_compile_only_worker_fills_the_cache(void) {
  char *cache = new_cache();
  wproc w;
  start_compile_worker(&w, cache, false);
  json_t *h = w_expect(&w, "hello", NULL);
  SG_CHECK_STR_EQ(str(h, "device"), "compile");
  json_t *ev = json_object_get(h, "evaluators");
  SG_CHECK_EQ_INT(json_array_size(ev), 3);
  SG_CHECK_STR_EQ(json_string_value(json_array_get(ev, 0)), "cpu");
  SG_CHECK_STR_EQ(json_string_value(json_array_get(ev, 1)), "cuda");
  SG_CHECK_STR_EQ(json_string_value(json_array_get(ev, 2)), "kernelbench");
  json_decref(h);

  w_send_json(&w, request("compile", "c-ok", "ok-fast.c"));
  char *st = expect_evaluation(&w, "c-ok", "ok", false);
  SG_CHECK_STR_EQ(st, "ok");
  free(st);
  int tmp = 0;
  SG_CHECK_EQ_INT(cache_entries(cache, &tmp, NULL), 1);
  SG_CHECK_EQ_INT(tmp, 0);

  /* a second compile of the same source finds the build */
  w_send_json(&w, request("compile", "c-again", "ok-fast.c"));
  st = expect_evaluation(&w, "c-again", "ok", true);
  SG_CHECK_STR_EQ(st, "ok");
  free(st);

  w_send_json(&w, request("compile", "c-bad", "compile_error-missing_semicolon.c"));
  st = expect_evaluation(&w, "c-bad", "compile_error", false);
  SG_CHECK_STR_EQ(st, "compile_error");
  free(st);
  w_send_json(&w, request("compile", "c-rej", "rejected-pthreads.c"));
  st = expect_evaluation(&w, "c-rej", "rejected", false);
  SG_CHECK_STR_EQ(st, "rejected");
  free(st);
  /* only builds that compiled are stored */
  SG_CHECK_EQ_INT(cache_entries(cache, &tmp, NULL), 1);

  /* a bare name resolves cpu first (as sg_task_load does): the same task,
   * so the same entry */
  json_t *bare = request("compile", "c-bare", "ok-fast.c");
  json_object_set_new(bare, "task", json_string("hinge_loss"));
  w_send_json(&w, bare);
  st = expect_evaluation(&w, "c-bare", "ok", true);
  SG_CHECK_STR_EQ(st, "ok");
  free(st);
  json_t *e;

  /* no device: validate and profile are refused, naming why */
  w_send_json(&w, request("validate", "v", "ok-fast.c"));
  e = w_expect(&w, "error", "v");
  SG_CHECK_CONTAINS(str(e, "message"), "only compiles (--compile-only)");
  json_decref(e);
  w_send_json(&w, request("profile", "p", "ok-fast.c"));
  e = w_expect(&w, "error", "p");
  SG_CHECK_CONTAINS(str(e, "message"), "holds no device");
  json_decref(e);
  shutdown_ok(&w);

  /* a device worker finds the build; a source it has not seen compiles */
  start_cached_device_worker(&w, cache, false);
  w_expect_free(&w, "hello", NULL);
  w_send_json(&w, request("validate", "v-hit", "ok-fast.c"));
  st = expect_evaluation(&w, "v-hit", "ok", true);
  SG_CHECK_STR_EQ(st, "ok");
  free(st);
  w_send_json(&w, request("validate", "v-miss", "ok-reference.c"));
  st = expect_evaluation(&w, "v-miss", "ok", false);
  SG_CHECK_STR_EQ(st, "ok");
  free(st);
  /* and stores what it compiled */
  SG_CHECK_EQ_INT(cache_entries(cache, &tmp, NULL), 2);
  SG_CHECK_EQ_INT(tmp, 0);
  w_send_json(&w, request("validate", "v-hit2", "ok-reference.c"));
  st = expect_evaluation(&w, "v-hit2", "ok", true);
  SG_CHECK_STR_EQ(st, "ok");
  free(st);
  /* a build found in the cache still runs the candidate: a broken kernel
   * is caught as before */
  w_send_json(&w, request("compile", "c-num", "numerical_error-no_clamp.c"));
  st = expect_evaluation(&w, "c-num", "ok", false);
  SG_CHECK_STR_EQ(st, "ok");
  free(st);
  w_send_json(&w, request("validate", "v-num", "numerical_error-no_clamp.c"));
  st = expect_evaluation(&w, "v-num", "ok", true);
  SG_CHECK_STR_EQ(st, "numerical_error");
  free(st);
  shutdown_ok(&w);
  no_descendants_left();
  rm_cache(cache);
}

/* A task sent as its files: the worker loads it from them, not from the
 * path the client named (which this host does not have), written once
 * under the build cache, where a compile worker and a device worker of the
 * host find the same directory (the build is shared). */
static void test_task_travels_as_its_files(void) {
  char *cache = new_cache();
  json_t *files = NULL;
  sg_err err;
  char *dir = sg_asprintf("%s/tasks/cpu/hinge_loss", SG_SOURCE_ROOT);
  SG_CHECK_OK(sg_task_files_read(dir, &files, &err), err);
  free(dir);
  wproc c, d;
  start_compile_worker(&c, cache, false);
  json_decref(w_expect(&c, "hello", NULL));
  json_t *j = request("compile", "f-1", "ok-fast.c");
  json_object_set_new(j, "task", json_string("/nowhere/on/this/host/hinge_loss"));
  json_object_set(j, "task_files", files);
  w_send_json(&c, j);
  char *st = expect_evaluation(&c, "f-1", "ok", false);
  SG_CHECK_STR_EQ(st, "ok");
  free(st);
  shutdown_ok(&c);
  start_cached_device_worker(&d, cache, false);
  json_decref(w_expect(&d, "hello", NULL));
  j = validate("f-2", "ok-fast.c", 60);
  json_object_set_new(j, "task", json_string("/nowhere/on/this/host/hinge_loss"));
  json_object_set(j, "task_files", files);
  w_send_json(&d, j);
  st = expect_evaluation(&d, "f-2", "ok", true); /* the compile worker's build */
  SG_CHECK_STR_EQ(st, "ok");
  free(st);
  /* files that make no task: an error naming the field, and it carries on */
  j = validate("f-3", "ok-fast.c", 60);
  json_object_set_new(j, "task_files", json_pack("{s:s, s:s}", "a.c", "x", "b.c", "y"));
  w_send_json(&d, j);
  json_t *e = w_expect(&d, "error", "f-3");
  SG_CHECK_CONTAINS(str(e, "message"), "task_files");
  SG_CHECK_CONTAINS(str(e, "message"), "task.json");
  json_decref(e);
  shutdown_ok(&d);
  char *tasks = sg_asprintf("%s/tasks", cache);
  int tmp = 0;
  SG_CHECK_EQ_INT(cache_entries(tasks, &tmp, NULL), 1); /* one task, no leftovers */
  SG_CHECK_EQ_INT(tmp, 0);
  free(tasks);
  json_decref(files);
  rm_cache(cache);
}

static void test_compile_needs_a_build_cache(void) {
  wproc w;
  w_start(&w);
  w_expect_free(&w, "hello", NULL);
  w_send_json(&w, request("compile", "c", "ok-fast.c"));
  json_t *e = w_expect(&w, "error", "c");
  SG_CHECK_CONTAINS(str(e, "message"), "no build cache (--build-cache DIR)");
  json_decref(e);
  shutdown_ok(&w);
}

static void test_racing_compile_workers_leave_one_entry(void) {
  char *cache = new_cache();
  for (int round = 0; round < 3; round++) {
    wproc a, b;
    start_compile_worker(&a, cache, false);
    start_compile_worker(&b, cache, false);
    w_expect_free(&a, "hello", NULL);
    w_expect_free(&b, "hello", NULL);
    /* both start before either can have stored (each compile takes far
     * longer than the two writes) */
    const char *ex = round == 0 ? "ok-fast.c" : round == 1 ? "ok-reference.c"
                                                            : "numerical_error-no_clamp.c";
    json_t *ja = request("compile", "a", ex), *jb = request("compile", "b", ex);
    w_send_json(&a, ja);
    w_send_json(&b, jb);
    /* either may find the other's entry (cached), if it came second */
    char *sa = expect_evaluation(&a, "a", "ok", -1);
    char *sb = expect_evaluation(&b, "b", "ok", -1);
    SG_CHECK_STR_EQ(sa, "ok");
    SG_CHECK_STR_EQ(sb, "ok");
    free(sa);
    free(sb);
    shutdown_ok(&a);
    shutdown_ok(&b);
    int tmp = -1;
    SG_CHECK_EQ_INT(cache_entries(cache, &tmp, NULL), round + 1);
    SG_CHECK_EQ_INT(tmp, 0); /* the loser removed its copy */
  }
  no_descendants_left();
  rm_cache(cache);
}

static void test_corrupt_entry_is_a_miss(void) {
  char *cache = new_cache();
  wproc w;
  start_compile_worker(&w, cache, false);
  w_expect_free(&w, "hello", NULL);
  w_send_json(&w, request("compile", "c", "ok-fast.c"));
  char *st = expect_evaluation(&w, "c", "ok", false);
  SG_CHECK_STR_EQ(st, "ok");
  free(st);
  shutdown_ok(&w);
  char name[17];
  SG_CHECK_EQ_INT(cache_entries(cache, NULL, name), 1);
  char *meta = sg_asprintf("%s/%s/build.json", cache, name);
  char *so = sg_asprintf("%s/%s/candidate.so", cache, name);
  for (int k = 0; k < 2; k++) {
    if (k == 0) {
      /* truncated JSON */
      SG_CHECK(truncate(meta, 10) == 0);
    } else {
      sg_err err;
      SG_CHECK_OK(sg_file_write(meta, "{\"format\":1}", 12, &err), err);
      SG_CHECK(unlink(so) == 0 || errno == ENOENT);
    }
    start_cached_device_worker(&w, cache, true);
    w_expect_free(&w, "hello", NULL);
    char *id = sg_asprintf("v%d", k);
    w_send_json(&w, request("validate", id, "ok-fast.c"));
    st = expect_evaluation(&w, id, "ok", false);
    SG_CHECK_STR_EQ(st, "ok");
    free(st);
    free(id);
    w_send(&w, "{\"type\":\"shutdown\"}\n");
    w_expect_free(&w, "bye", NULL);
    /* one line in the log says why the entry was passed over */
    sg_buf log;
    sg_buf_init(&log, 1 << 20);
    char chunk[4096];
    ssize_t n;
    while ((n = read(w.err, chunk, sizeof chunk)) > 0 || (n < 0 && errno == EINTR))
      if (n > 0)
        sg_buf_append(&log, chunk, (size_t)n);
    SG_CHECK_CONTAINS(sg_buf_str(&log), "build cache: ");
    SG_CHECK_CONTAINS(sg_buf_str(&log), k == 0 ? "not JSON" : "field \"key\"");
    sg_buf_free(&log);
    int wst = w_wait(&w);
    SG_CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
  }
  free(meta);
  free(so);
  no_descendants_left();
  rm_cache(cache);
}

SG_TEST_MAIN(SG_TEST(test_hello_then_shutdown),
             SG_TEST(test_validate_ok_and_broken_examples),
             SG_TEST(test_timeout_option_applies),
             SG_TEST(test_abort_running_and_queued),
             SG_TEST(test_shutdown_aborts_running_and_queued),
             SG_TEST(test_malformed_lines_get_errors_and_it_carries_on),
             SG_TEST(test_overlong_line_is_an_error),
             SG_TEST(test_profile_on_cpu_is_an_infra_error),
             SG_TEST(test_task_travels_as_its_files),
             SG_TEST(test_end_of_input_mid_request_ends_the_worker),
             SG_TEST(test_sigterm_stops_like_shutdown),
             SG_TEST(test_sigkill_mid_request_is_seen_as_end_of_output),
             SG_TEST(test_bad_usage),
             SG_TEST(test_compile_only_worker_fills_the_cache),
             SG_TEST(test_compile_needs_a_build_cache),
             SG_TEST(test_racing_compile_workers_leave_one_entry),
             SG_TEST(test_corrupt_entry_is_a_miss))
