/* test_worker_proto.c: the worker protocol's messages (sg_worker_proto.h):
 * every request and reply parsed and serialized, round trips, and every
 * malformed field rejected with a message naming it. */
#include "common/sg_alloc.h"
#include "pool/sg_jsonl.h"
#include "pool/sg_worker.h"
#include "pool/sg_worker_proto.h"
#include "sg_test.h"

#include <math.h>

static int parse_req(const char *line, sg_worker_request *req, sg_err *err) {
  sg_err_clear(err);
  return sg_worker_request_parse(line, strlen(line), req, err);
}

static void test_request_types_parse(void) {
  static const struct {
    const char *line;
    sg_worker_req_type type;
    const char *id;
  } cases[] = {
      {"{\"type\":\"hello\"}", SG_WREQ_HELLO, NULL},
      {"{\"type\":\"hello\",\"id\":\"h1\",\"protocol\":1}", SG_WREQ_HELLO, "h1"},
      {"{\"type\":\"ping\"}", SG_WREQ_PING, NULL},
      {"{\"type\":\"ping\",\"id\":\"p7\"}", SG_WREQ_PING, "p7"},
      {"{\"type\":\"shutdown\"}", SG_WREQ_SHUTDOWN, NULL},
      {"{\"type\":\"abort\",\"id\":\"r1\"}", SG_WREQ_ABORT, "r1"},
      /* unknown top-level keys are ignored (a newer client's additions) */
      {"{\"type\":\"ping\",\"trace\":{\"x\":1}}", SG_WREQ_PING, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    sg_worker_request req;
    sg_err err;
    SG_CHECK_OK(parse_req(cases[i].line, &req, &err), err);
    SG_CHECK_EQ_INT(req.type, cases[i].type);
    if (cases[i].id)
      SG_CHECK_STR_EQ(req.id, cases[i].id);
    else
      SG_CHECK(req.id == NULL);
    sg_worker_request_free(&req);
  }
}

static void test_validate_and_profile_parse_with_opts(void) {
  sg_worker_request req;
  sg_err err;
  SG_CHECK_OK(parse_req("{\"type\":\"validate\",\"id\":\"r-1\",\"task\":\"hinge_loss\","
                        "\"source\":\"int x;\\nvoid f(void){}\",\"opts\":{\"seed\":42,"
                        "\"trials\":5,\"runs\":7,\"warmups\":0,\"eval_timeout\":2.5}}",
                        &req, &err), err);
  SG_CHECK_EQ_INT(req.type, SG_WREQ_VALIDATE);
  SG_CHECK_STR_EQ(req.id, "r-1");
  SG_CHECK_STR_EQ(req.task, "hinge_loss");
  SG_CHECK_STR_EQ(req.source, "int x;\nvoid f(void){}");
  SG_CHECK_EQ_INT(req.source_len, strlen("int x;\nvoid f(void){}"));
  SG_CHECK_EQ_INT(req.seed, 42);
  SG_CHECK_EQ_INT(req.trials, 5);
  SG_CHECK_EQ_INT(req.runs, 7);
  SG_CHECK_EQ_INT(req.warmups, 0);
  SG_CHECK_NEAR(req.eval_timeout, 2.5, 0);

  sg_eval_opts opts;
  sg_eval_opts_default(&opts);
  sg_worker_request_apply(&req, &opts);
  SG_CHECK_EQ_INT(opts.seed, 42);
  SG_CHECK_EQ_INT(opts.correctness_trials, 5);
  SG_CHECK_EQ_INT(opts.timed_runs, 7);
  SG_CHECK_EQ_INT(opts.warmup_runs, 0);
  SG_CHECK_NEAR(opts.eval_timeout, 2.5, 0);
  sg_worker_request_free(&req);

  /* profile without opts: nothing given, the evaluator's defaults stay */
  SG_CHECK_OK(parse_req("{\"type\":\"profile\",\"id\":\"q\",\"task\":\"/some/dir\","
                        "\"source\":\"x\"}", &req, &err), err);
  SG_CHECK_EQ_INT(req.type, SG_WREQ_PROFILE);
  SG_CHECK_EQ_INT(req.seed, 0);
  SG_CHECK_EQ_INT(req.trials, 0);
  SG_CHECK_EQ_INT(req.warmups, -1);
  sg_eval_opts_default(&opts);
  sg_eval_opts def;
  sg_eval_opts_default(&def);
  sg_worker_request_apply(&req, &opts);
  SG_CHECK(memcmp(&opts, &def, sizeof opts) == 0);
  sg_worker_request_free(&req);

  /* "opts": null is the same as no opts */
  SG_CHECK_OK(parse_req("{\"type\":\"validate\",\"id\":\"q\",\"task\":\"t\","
                        "\"source\":\"x\",\"opts\":null}", &req, &err), err);
  sg_worker_request_free(&req);
}

static void test_request_round_trip(void) {
  sg_worker_request a;
  sg_worker_request_init(&a);
  a.type = SG_WREQ_VALIDATE;
  a.id = sg_strdup("round/1");
  a.task = sg_strdup("cpu/hinge_loss");
  /* a source with a newline, a quote, a NUL-free UTF-8 character */
  a.source = sg_strdup("/* \"q\" \xc3\xa9 */\nvoid f(void) {}\n");
  a.source_len = strlen(a.source);
  a.seed = 9007199254740993ULL;
  a.trials = 4;
  a.runs = 3;
  a.warmups = 2;
  a.eval_timeout = 0.75;
  json_t *j = sg_worker_request_to_json(&a);
  size_t len;
  char *line = sg_jsonl_line(j, &len);
  json_decref(j);
  SG_CHECK(len > 0 && line[len - 1] == '\n');
  SG_CHECK(memchr(line, '\n', len - 1) == NULL);
  sg_worker_request b;
  sg_err err;
  SG_CHECK_OK(sg_worker_request_parse(line, len - 1, &b, &err), err);
  SG_CHECK_EQ_INT(b.type, a.type);
  SG_CHECK_STR_EQ(b.id, a.id);
  SG_CHECK_STR_EQ(b.task, a.task);
  SG_CHECK_STR_EQ(b.source, a.source);
  SG_CHECK(b.seed == a.seed);
  SG_CHECK_EQ_INT(b.trials, a.trials);
  SG_CHECK_EQ_INT(b.runs, a.runs);
  SG_CHECK_EQ_INT(b.warmups, a.warmups);
  SG_CHECK_NEAR(b.eval_timeout, a.eval_timeout, 0);
  free(line);
  sg_worker_request_free(&b);

  /* compile carries the same fields as validate */
  a.type = SG_WREQ_COMPILE;
  j = sg_worker_request_to_json(&a);
  line = sg_jsonl_line(j, &len);
  json_decref(j);
  SG_CHECK_OK(sg_worker_request_parse(line, len - 1, &b, &err), err);
  SG_CHECK_EQ_INT(b.type, SG_WREQ_COMPILE);
  SG_CHECK_STR_EQ(b.task, a.task);
  SG_CHECK_STR_EQ(b.source, a.source);
  SG_CHECK(b.seed == a.seed);
  free(line);
  sg_worker_request_free(&b);

  /* every other type round-trips too */
  for (int t = 0; t < SG_WREQ__COUNT; t++) {
    if (t == SG_WREQ_VALIDATE || t == SG_WREQ_PROFILE || t == SG_WREQ_COMPILE)
      continue;
    sg_worker_request c;
    sg_worker_request_init(&c);
    c.type = (sg_worker_req_type)t;
    c.id = sg_strdup("x");
    j = sg_worker_request_to_json(&c);
    line = sg_jsonl_line(j, &len);
    json_decref(j);
    SG_CHECK_OK(sg_worker_request_parse(line, len - 1, &b, &err), err);
    SG_CHECK_EQ_INT(b.type, t);
    SG_CHECK_STR_EQ(b.id, "x");
    sg_worker_request_free(&b);
    sg_worker_request_free(&c);
    free(line);
  }
  sg_worker_request_free(&a);
}

#define V "{\"type\":\"validate\",\"id\":\"r\",\"task\":\"t\",\"source\":\"s\""

static void test_malformed_requests_name_the_field(void) {
  static const struct {
    const char *line;
    const char *msg;
  } cases[] = {
      {"", "not JSON"},
      {"{", "not JSON"},
      {"{\"type\":\"ping\"} x", "not JSON"},
      {"[1,2]", "expected a JSON object"},
      {"\"ping\"", "expected a JSON object"},
      {"{}", "field \"type\": missing"},
      {"{\"type\":3}", "field \"type\": expected a string"},
      {"{\"type\":\"evaluate\"}", "field \"type\": unknown message type \"evaluate\""},
      {"{\"type\":\"ping\",\"type\":\"ping\"}", "duplicate"},
      {"{\"type\":\"ping\",\"protocol\":2}", "field \"protocol\": this side speaks protocol 1, not 2"},
      {"{\"type\":\"ping\",\"protocol\":\"1\"}", "field \"protocol\": expected an integer"},
      {"{\"type\":\"validate\",\"task\":\"t\",\"source\":\"s\"}", "field \"id\": missing"},
      {"{\"type\":\"abort\"}", "field \"id\": missing"},
      {"{\"type\":\"compile\",\"task\":\"t\",\"source\":\"s\"}", "field \"id\": missing"},
      {"{\"type\":\"compile\",\"id\":\"c\",\"source\":\"s\"}", "field \"task\": missing"},
      {"{\"type\":\"compile\",\"id\":\"c\",\"task\":\"t\"}", "field \"source\": missing"},
      {"{\"type\":\"abort\",\"id\":7}", "field \"id\": expected a string"},
      {"{\"type\":\"abort\",\"id\":\"\"}", "field \"id\": empty"},
      {"{\"type\":\"abort\",\"id\":\"a\\nb\"}", "field \"id\": control character"},
      {"{\"type\":\"ping\",\"id\":null}", "field \"id\": expected a string"},
      {"{\"type\":\"validate\",\"id\":\"r\",\"source\":\"s\"}", "field \"task\": missing"},
      {"{\"type\":\"validate\",\"id\":\"r\",\"task\":1,\"source\":\"s\"}", "field \"task\": expected a string"},
      {"{\"type\":\"validate\",\"id\":\"r\",\"task\":\"\",\"source\":\"s\"}", "field \"task\": empty"},
      {"{\"type\":\"validate\",\"id\":\"r\",\"task\":\"t\"}", "field \"source\": missing"},
      {"{\"type\":\"profile\",\"id\":\"r\",\"task\":\"t\",\"source\":[]}", "field \"source\": expected a string"},
      {"{\"type\":\"profile\",\"id\":\"r\",\"task\":\"t\",\"source\":\"\"}", "field \"source\": empty"},
      {"{\"type\":\"profile\",\"id\":\"r\",\"task\":\"t\",\"source\":\"a\\u0000b\"}", "field \"source\": contains a NUL"},
      {"{\"type\":\"profile\",\"id\":\"r\",\"task\":\"t\\u0000\",\"source\":\"a\"}", "field \"task\": contains a NUL"},
      {V ",\"opts\":[]}", "field \"opts\": expected an object"},
      {V ",\"opts\":{\"seed\":0}}", "field \"opts.seed\": expected an integer from 1"},
      {V ",\"opts\":{\"seed\":-5}}", "field \"opts.seed\""},
      {V ",\"opts\":{\"seed\":1.5}}", "field \"opts.seed\""},
      {V ",\"opts\":{\"trials\":2}}", "field \"opts.trials\": expected an integer from 3 to 1000"},
      {V ",\"opts\":{\"trials\":1001}}", "field \"opts.trials\""},
      {V ",\"opts\":{\"trials\":\"5\"}}", "field \"opts.trials\""},
      {V ",\"opts\":{\"runs\":0}}", "field \"opts.runs\": expected an integer from 1 to 100000"},
      {V ",\"opts\":{\"runs\":100001}}", "field \"opts.runs\""},
      {V ",\"opts\":{\"warmups\":-1}}", "field \"opts.warmups\": expected an integer from 0 to 100000"},
      {V ",\"opts\":{\"eval_timeout\":0}}", "field \"opts.eval_timeout\""},
      {V ",\"opts\":{\"eval_timeout\":-1}}", "field \"opts.eval_timeout\""},
      {V ",\"opts\":{\"eval_timeout\":86401}}", "field \"opts.eval_timeout\""},
      {V ",\"opts\":{\"eval_timeout\":\"5\"}}", "field \"opts.eval_timeout\""},
      {V ",\"opts\":{\"trails\":5}}", "field \"opts.trails\": unknown option"},
      {V ",\"task_files\":[]}", "field \"task_files\": expected an object"},
      {V ",\"task_files\":{}}", "field \"task_files\": 0 files"},
      {V ",\"task_files\":{\"../x\":\"a\"}}", "\"../x\" is not a plain file name"},
      {V ",\"task_files\":{\"a/b\":\"a\"}}", "\"a/b\" is not a plain file name"},
      {V ",\"task_files\":{\"..\":\"a\"}}", "\"..\" is not a plain file name"},
      {V ",\"task_files\":{\"\":\"a\"}}", "is not a plain file name"},
      {V ",\"task_files\":{\"a b\":\"a\"}}", "is not a plain file name"},
      {V ",\"task_files\":{\"task.json\":1}}", "field \"task_files.task.json\": expected a string"},
      {V ",\"task_files\":{\"t.c\":\"a\\u0000b\"}}", "field \"task_files.t.c\": contains a NUL"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    sg_worker_request req;
    sg_err err;
    int rc = parse_req(cases[i].line, &req, &err);
    SG_CHECK_MSG(rc == SG_EPARSE || rc == SG_EINVAL, "case %zu (%s) returned %d",
                 i, cases[i].line, rc);
    SG_CHECK_MSG(strstr(err.msg, cases[i].msg) != NULL,
                 "case %zu (%s): \"%s\" does not contain \"%s\"", i,
                 cases[i].line, err.msg, cases[i].msg);
    sg_worker_request_free(&req);
  }
}

/* task_files: kept whole through a round trip; too many files, or too many
 * bytes together, are refused */
static void test_task_files(void) {
  json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s}}", "type", "validate", "id",
                        "r", "task", "/far/away/t", "source", "s", "task_files",
                        "task.json", "{}", "reference.c", "int x;");
  char *line = json_dumps(j, JSON_COMPACT);
  sg_worker_request req;
  sg_err err;
  SG_CHECK_OK(parse_req(line, &req, &err), err);
  SG_CHECK(req.task_files != NULL);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(req.task_files, "reference.c")),
                  "int x;");
  json_t *back = sg_worker_request_to_json(&req);
  SG_CHECK(json_equal(json_object_get(back, "task_files"), json_object_get(j, "task_files")));
  json_decref(back);
  sg_worker_request_free(&req);
  free(line);
  /* a request without them has none */
  json_object_del(j, "task_files");
  line = json_dumps(j, JSON_COMPACT);
  SG_CHECK_OK(parse_req(line, &req, &err), err);
  SG_CHECK(req.task_files == NULL);
  back = sg_worker_request_to_json(&req);
  SG_CHECK(json_object_get(back, "task_files") == NULL);
  json_decref(back);
  sg_worker_request_free(&req);
  free(line);

  json_t *many = json_object();
  for (int i = 0; i <= SG_WORKER_TASK_FILES_COUNT; i++) {
    char name[16];
    snprintf(name, sizeof name, "f%d.c", i);
    json_object_set_new(many, name, json_string("x"));
  }
  json_object_set_new(j, "task_files", many);
  line = json_dumps(j, JSON_COMPACT);
  SG_CHECK_EQ_INT(parse_req(line, &req, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "65 files");
  sg_worker_request_free(&req);
  free(line);

  char *big = sg_malloc(SG_WORKER_TASK_FILES_MAX / 2 + 1);
  memset(big, 'x', SG_WORKER_TASK_FILES_MAX / 2);
  big[SG_WORKER_TASK_FILES_MAX / 2] = '\0';
  json_object_set_new(j, "task_files", json_pack("{s:s, s:s, s:s}", "task.json", "{}",
                                                 "a.c", big, "b.c", big));
  free(big);
  line = json_dumps(j, JSON_COMPACT);
  SG_CHECK_EQ_INT(parse_req(line, &req, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "bytes, more than");
  sg_worker_request_free(&req);
  free(line);
  json_decref(j);
}

static void test_oversized_fields_rejected(void) {
  /* an id one byte over the cap, and one exactly at it */
  char id[SG_WORKER_ID_MAX + 2];
  memset(id, 'i', sizeof id - 1);
  id[sizeof id - 1] = '\0';
  char *line = sg_asprintf("{\"type\":\"abort\",\"id\":\"%s\"}", id);
  sg_worker_request req;
  sg_err err;
  SG_CHECK(parse_req(line, &req, &err) == SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "field \"id\": longer than 128 bytes");
  sg_worker_request_free(&req);
  free(line);
  id[SG_WORKER_ID_MAX] = '\0';
  line = sg_asprintf("{\"type\":\"abort\",\"id\":\"%s\"}", id);
  SG_CHECK_OK(parse_req(line, &req, &err), err);
  sg_worker_request_free(&req);
  free(line);

  size_t n = SG_WORKER_SOURCE_MAX + 1;
  char *src = sg_malloc(n + 1);
  memset(src, 'x', n);
  src[n] = '\0';
  line = sg_asprintf(V "}");
  free(line);
  line = sg_asprintf("{\"type\":\"validate\",\"id\":\"r\",\"task\":\"t\",\"source\":\"%s\"}", src);
  SG_CHECK(parse_req(line, &req, &err) == SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "field \"source\": longer than");
  sg_worker_request_free(&req);
  free(line);
  free(src);

  char task[SG_WORKER_TASK_MAX + 2];
  memset(task, 't', sizeof task - 1);
  task[sizeof task - 1] = '\0';
  line = sg_asprintf("{\"type\":\"validate\",\"id\":\"r\",\"task\":\"%s\",\"source\":\"s\"}", task);
  SG_CHECK(parse_req(line, &req, &err) == SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "field \"task\": longer than");
  sg_worker_request_free(&req);
  free(line);
}

static void test_failed_parse_keeps_the_id(void) {
  sg_worker_request req;
  sg_err err;
  /* the error reply can name the request whose later field was wrong */
  SG_CHECK(parse_req("{\"type\":\"validate\",\"id\":\"keep-me\",\"task\":\"t\"}",
                     &req, &err) == SG_EINVAL);
  SG_CHECK_STR_EQ(req.id, "keep-me");
  sg_worker_request_free(&req);
  SG_CHECK(parse_req("{\"type\":\"frobnicate\",\"id\":\"k2\"}", &req, &err) == SG_EINVAL);
  SG_CHECK_STR_EQ(req.id, "k2");
  sg_worker_request_free(&req);
  SG_CHECK(parse_req("{\"type\":\"abort\",\"id\":\"\"}", &req, &err) == SG_EINVAL);
  SG_CHECK(req.id == NULL);
  sg_worker_request_free(&req);
}

/* ---- replies ---- */

static void round_trip_reply(sg_worker_reply *a, sg_worker_reply *b) {
  json_t *j = sg_worker_reply_to_json(a);
  size_t len;
  char *line = sg_jsonl_line(j, &len);
  json_decref(j);
  SG_CHECK(line[len - 1] == '\n' && memchr(line, '\n', len - 1) == NULL);
  sg_err err;
  SG_CHECK_OK(sg_worker_reply_parse(line, len - 1, b, &err), err);
  free(line);
  SG_CHECK_EQ_INT(b->type, a->type);
}

static void test_reply_hello_round_trip(void) {
  sg_worker_reply a, b;
  sg_worker_reply_init(&a, SG_WREP_HELLO);
  a.version = sg_strdup("0.1.0");
  a.device = sg_strdup("cuda:3");
  a.evaluators[a.nevaluators++] = sg_strdup("cuda");
  a.evaluators[a.nevaluators++] = sg_strdup("kernelbench");
  a.pid = 4242;
  round_trip_reply(&a, &b);
  SG_CHECK_EQ_INT(b.protocol, SG_WORKER_PROTOCOL);
  SG_CHECK_STR_EQ(b.version, "0.1.0");
  SG_CHECK_STR_EQ(b.device, "cuda:3");
  SG_CHECK_EQ_INT(b.nevaluators, 2);
  SG_CHECK_STR_EQ(b.evaluators[1], "kernelbench");
  SG_CHECK_EQ_INT(b.pid, 4242);
  SG_CHECK(b.id == NULL);
  sg_worker_reply_free(&a);
  sg_worker_reply_free(&b);
}

static void test_reply_progress_round_trip(void) {
  sg_worker_reply a, b;
  sg_worker_reply_init(&a, SG_WREP_STARTED);
  a.id = sg_strdup("s1");
  round_trip_reply(&a, &b);
  SG_CHECK_STR_EQ(b.id, "s1");
  sg_worker_reply_free(&a);
  sg_worker_reply_free(&b);

  sg_worker_reply_init(&a, SG_WREP_COMPILED);
  a.id = sg_strdup("c1");
  a.compile_s = 1.25;
  a.compile_status = SG_EVAL_REJECTED;
  round_trip_reply(&a, &b);
  SG_CHECK_STR_EQ(b.id, "c1");
  SG_CHECK_NEAR(b.compile_s, 1.25, 0);
  SG_CHECK_EQ_INT(b.compile_status, SG_EVAL_REJECTED);
  SG_CHECK(!b.cached);
  sg_worker_reply_free(&a);
  sg_worker_reply_free(&b);

  /* a build found in the build cache says so */
  sg_worker_reply_init(&a, SG_WREP_COMPILED);
  a.id = sg_strdup("c2");
  a.compile_s = 0.5;
  a.cached = true;
  round_trip_reply(&a, &b);
  SG_CHECK(b.cached);
  SG_CHECK_NEAR(b.compile_s, 0.5, 0);
  SG_CHECK_EQ_INT(b.compile_status, SG_EVAL_OK);
  sg_worker_reply_free(&a);
  sg_worker_reply_free(&b);
  {
    const char *l = "{\"type\":\"compiled\",\"id\":\"c3\",\"status\":\"ok\",\"cached\":false}";
    sg_err err;
    SG_CHECK_OK(sg_worker_reply_parse(l, strlen(l), &b, &err), err);
    SG_CHECK(!b.cached);
    sg_worker_reply_free(&b);
  }

  static const sg_worker_reply_type simple[] = {SG_WREP_PONG, SG_WREP_BYE};
  for (size_t i = 0; i < 2; i++) {
    sg_worker_reply_init(&a, simple[i]);
    round_trip_reply(&a, &b);
    SG_CHECK(b.id == NULL);
    sg_worker_reply_free(&a);
    sg_worker_reply_free(&b);
  }
}

static void test_reply_result_round_trip(void) {
  sg_worker_reply a, b;
  sg_worker_reply_init(&a, SG_WREP_RESULT);
  a.id = sg_strdup("r9");
  a.result.status = SG_EVAL_OK;
  a.result.message = sg_strdup("fine\nreally");
  a.result.speedup = 3.5;
  a.result.ref_ms = 7.0;
  a.result.cand_ms = 2.0;
  a.result.compile_s = 0.5;
  a.result.first_mismatch = -1;
  a.result.seed = 77;
  round_trip_reply(&a, &b);
  SG_CHECK_STR_EQ(b.id, "r9");
  SG_CHECK_EQ_INT(b.result.status, SG_EVAL_OK);
  SG_CHECK_STR_EQ(b.result.message, "fine\nreally");
  SG_CHECK_NEAR(b.result.speedup, 3.5, 0);
  SG_CHECK_NEAR(b.result.ref_ms, 7.0, 0);
  SG_CHECK_NEAR(b.result.compile_s, 0.5, 0);
  SG_CHECK(isnan(b.result.run_s));
  SG_CHECK_EQ_INT(b.result.seed, 77);
  sg_worker_reply_free(&a);
  sg_worker_reply_free(&b);
}

static void test_reply_error_round_trip(void) {
  sg_worker_reply a, b;
  sg_worker_reply_init(&a, SG_WREP_ERROR);
  a.line = 12;
  a.id = sg_strdup("e1");
  a.message = sg_strdup("field \"task\": missing");
  round_trip_reply(&a, &b);
  SG_CHECK_EQ_INT(b.line, 12);
  SG_CHECK_STR_EQ(b.id, "e1");
  SG_CHECK_STR_EQ(b.message, "field \"task\": missing");
  SG_CHECK(!b.fatal);
  sg_worker_reply_free(&a);
  sg_worker_reply_free(&b);

  /* no line, no id, fatal */
  sg_worker_reply_init(&a, SG_WREP_ERROR);
  a.message = sg_strdup("bad device");
  a.fatal = true;
  json_t *j = sg_worker_reply_to_json(&a);
  SG_CHECK(json_object_get(j, "line") == NULL);
  SG_CHECK(json_object_get(j, "id") == NULL);
  json_decref(j);
  round_trip_reply(&a, &b);
  SG_CHECK_EQ_INT(b.line, 0);
  SG_CHECK(b.fatal);
  sg_worker_reply_free(&a);
  sg_worker_reply_free(&b);
}

static void test_malformed_replies_name_the_field(void) {
  static const struct {
    const char *line;
    const char *msg;
  } cases[] = {
      {"nope", "reply is not JSON"},
      {"{\"type\":\"welcome\"}", "field \"type\": unknown message type"},
      {"{\"type\":\"started\"}", "field \"id\": missing"},
      {"{\"type\":\"result\",\"id\":\"a\"}", "field \"result\": missing"},
      {"{\"type\":\"result\",\"id\":\"a\",\"result\":{\"status\":\"great\"}}", "field \"result\""},
      {"{\"type\":\"result\",\"id\":\"a\",\"result\":{\"status\":\"ok\",\"speedup\":\"2\"}}", "speedup"},
      {"{\"type\":\"compiled\",\"id\":\"a\",\"status\":\"fine\"}", "field \"status\""},
      {"{\"type\":\"compiled\",\"id\":\"a\",\"compile_s\":\"1\",\"status\":\"ok\"}", "field \"compile_s\""},
      {"{\"type\":\"compiled\",\"id\":\"a\",\"status\":\"ok\",\"cached\":1}", "field \"cached\""},
      {"{\"type\":\"hello\",\"version\":\"v\",\"device\":\"cpu:0\",\"evaluators\":[],\"pid\":1}", "field \"protocol\""},
      {"{\"type\":\"hello\",\"protocol\":1,\"version\":\"v\",\"evaluators\":[],\"pid\":1}", "field \"device\": missing"},
      {"{\"type\":\"hello\",\"protocol\":1,\"version\":\"v\",\"device\":\"cpu:0\",\"evaluators\":\"cpu\",\"pid\":1}", "field \"evaluators\""},
      {"{\"type\":\"hello\",\"protocol\":1,\"version\":\"v\",\"device\":\"cpu:0\",\"evaluators\":[3],\"pid\":1}", "field \"evaluators[0]\""},
      {"{\"type\":\"hello\",\"protocol\":1,\"version\":\"v\",\"device\":\"cpu:0\",\"evaluators\":[]}", "field \"pid\""},
      {"{\"type\":\"error\",\"line\":0,\"message\":\"m\"}", "field \"line\""},
      {"{\"type\":\"error\"}", "field \"message\": missing"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    sg_worker_reply r;
    sg_err err;
    sg_err_clear(&err);
    int rc = sg_worker_reply_parse(cases[i].line, strlen(cases[i].line), &r, &err);
    SG_CHECK_MSG(rc != 0, "case %zu (%s) was accepted", i, cases[i].line);
    SG_CHECK_MSG(strstr(err.msg, cases[i].msg) != NULL,
                 "case %zu (%s): \"%s\" does not contain \"%s\"", i,
                 cases[i].line, err.msg, cases[i].msg);
    sg_worker_reply_free(&r);
  }
}

static void test_type_names_round_trip(void) {
  for (int t = 0; t < SG_WREQ__COUNT; t++)
    SG_CHECK_EQ_INT(sg_worker_req_type_parse(sg_worker_req_type_name((sg_worker_req_type)t)), t);
  for (int t = 0; t < SG_WREP__COUNT; t++)
    SG_CHECK_EQ_INT(sg_worker_reply_type_parse(sg_worker_reply_type_name((sg_worker_reply_type)t)), t);
  SG_CHECK_EQ_INT(sg_worker_req_type_parse("pong"), -1);
  SG_CHECK_EQ_INT(sg_worker_reply_type_parse("ping"), -1);
  SG_CHECK_EQ_INT(sg_worker_req_type_parse(NULL), -1);
}

static void test_device_check(void) {
  sg_err err;
  const char *kind = NULL;
  SG_CHECK_OK(sg_worker_device_check("cpu:0", &kind, &err), err);
  SG_CHECK_STR_EQ(kind, "cpu");
  SG_CHECK_OK(sg_worker_device_check("cuda:7", &kind, &err), err);
  SG_CHECK_STR_EQ(kind, "cuda");
  static const char *const bad[] = {"gpu:0", "cpu", "cpu:", "cpu:-1", "cpu:+1",
                                    "cpu:x", "cpu:1x", "cuda:", "cuda:1024",
                                    "CPU:0", ""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    SG_CHECK_MSG(sg_worker_device_check(bad[i], &kind, &err) == SG_EINVAL,
                 "device \"%s\" was accepted", bad[i]);
    SG_CHECK_CONTAINS(err.msg, "expected cpu:N or cuda:N");
  }
  SG_CHECK(sg_worker_device_check(NULL, &kind, &err) == SG_EINVAL);
  /* a core this process may not use */
  SG_CHECK(sg_worker_device_check("cpu:4000", &kind, &err) == SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "may not use core 4000");
}

SG_TEST_MAIN(SG_TEST(test_request_types_parse),
             SG_TEST(test_validate_and_profile_parse_with_opts),
             SG_TEST(test_request_round_trip),
             SG_TEST(test_malformed_requests_name_the_field),
             SG_TEST(test_oversized_fields_rejected),
             SG_TEST(test_task_files),
             SG_TEST(test_failed_parse_keeps_the_id),
             SG_TEST(test_reply_hello_round_trip),
             SG_TEST(test_reply_progress_round_trip),
             SG_TEST(test_reply_result_round_trip),
             SG_TEST(test_reply_error_round_trip),
             SG_TEST(test_malformed_replies_name_the_field),
             SG_TEST(test_type_names_round_trip),
             SG_TEST(test_device_check))
