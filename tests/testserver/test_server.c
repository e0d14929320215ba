/* test_server.c: the built-in test LLM server over real loopback HTTP
 * (libcurl's easy interface), in-process, and `specgen llm serve` as a
 * program. Every wait is bounded; pacing is off except where a test needs a
 * generation long enough to interrupt. */
#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_clock.h"
#include "common/sg_file.h"
#include "testserver/sg_fakemodel.h"
#include "testserver/sg_llm_server.h"
#include "testserver/sg_server_request.h"
#include "sg_test.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>

/* ---- fixture: two small tasks in a temporary directory ---- */

static char fixture_dir[64];

static void write_file(const char *dir, const char *name, const char *text) {
  char *p = sg_asprintf("%s/%s", dir, name);
  sg_err err;
  SG_CHECK_OK(sg_file_write(p, text, strlen(text), &err), err);
  free(p);
}

static void write_task(const char *name, const char *op) {
  char *dir = sg_asprintf("%s/cpu/%s", fixture_dir, name);
  char *ex = sg_asprintf("%s/examples", dir);
  sg_err err;
  SG_CHECK_OK(sg_mkdir_p(ex, &err), err);
  char *json = sg_asprintf(
      "{\"name\": \"%s\", \"evaluator\": \"cpu\", \"language\": \"c\",\n"
      " \"description\": \"elementwise %s of two vectors\", \"entry\": \"%s\",\n"
      " \"signature\": \"void %s(const float *a, const float *b, float *out, int n)\",\n"
      " \"args\": [\n"
      "  {\"name\": \"a\", \"kind\": \"input\", \"dtype\": \"float32\", \"shape\": [4096],\n"
      "   \"init\": {\"dist\": \"normal\", \"mean\": 0, \"std\": 1}},\n"
      "  {\"name\": \"b\", \"kind\": \"input\", \"dtype\": \"float32\", \"shape\": [4096],\n"
      "   \"init\": {\"dist\": \"normal\", \"mean\": 0, \"std\": 1}},\n"
      "  {\"name\": \"out\", \"kind\": \"output\", \"dtype\": \"float32\", \"shape\": [4096]},\n"
      "  {\"name\": \"n\", \"kind\": \"scalar\", \"dtype\": \"int32\", \"value\": 4096}],\n"
      " \"tolerance\": {\"atol\": 1e-5, \"rtol\": 1e-5}, \"reference\": \"reference.c\"}\n",
      name, op, name, name);
  write_file(dir, "task.json", json);
  char *ref = sg_asprintf("void %s(const float *a, const float *b, float *out, int n) {\n"
                          "  for (int i = 0; i < n; i++)\n    out[i] = a[i] %s b[i];\n}\n",
                          name, strcmp(op, "add") == 0 ? "+" : "*");
  write_file(dir, "reference.c", ref);
  write_file(ex, "ok-reference.c", ref);
  char *fast = sg_asprintf("/* FAST */\n%s", ref);
  write_file(ex, "ok-fast.c", fast);
  write_file(ex, "compile_error-syntax.c", "void broken( {\n");
  write_file(ex, "numerical_error-wrong.c", "/* WRONG */ void wrong(void) {}\n");
  free(fast);
  free(ref);
  free(json);
  free(ex);
  free(dir);
}

static void fixture_make(void) {
  snprintf(fixture_dir, sizeof fixture_dir, "/tmp/sg_test_server.XXXXXX");
  SG_CHECK(mkdtemp(fixture_dir) != NULL);
  write_task("toy_add", "add");
  write_task("toy_mul", "mul");
}

static void fixture_remove(void) {
  sg_err err;
  sg_rm_rf(fixture_dir, &err);
  fixture_dir[0] = '\0';
}

static sg_llm_server *start(sg_llm_server_opts *o) {
  if (!fixture_dir[0])
    fixture_make();
  o->tasks_root = fixture_dir;
  if (!o->reasoning_tokens_min) {
    o->reasoning_tokens_min = 150;
    o->reasoning_tokens_max = 300;
  }
  sg_llm_server *s = NULL;
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_llm_server_start(o, &s, &err), err);
  SG_CHECK(sg_llm_server_port(s) > 0);
  SG_CHECK_EQ_INT(sg_llm_server_ntasks(s), 2);
  return s;
}

static sg_llm_server *start_default(void) {
  sg_llm_server_opts o;
  sg_llm_server_opts_init(&o);
  return start(&o);
}

static void stop(sg_llm_server *s) {
  sg_llm_server_stop(s);
  fixture_remove();
}

/* ---- HTTP ---- */

typedef struct resp {
  long status;
  CURLcode rc;
  sg_buf body;
  sg_buf headers;
  double first_byte_s, total_s;
  int stop_after_events; /* >0: hang up after this many SSE events */
} resp;

static size_t count_events(const sg_buf *b) {
  size_t n = 0;
  for (const char *p = strstr(sg_buf_str(b), "\n\n"); p; p = strstr(p + 2, "\n\n"))
    n++;
  return n;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud) {
  resp *r = ud;
  sg_buf_append(&r->body, data, size * nmemb);
  if (r->stop_after_events > 0 && count_events(&r->body) >= (size_t)r->stop_after_events)
    return 0; /* the client goes away */
  return size * nmemb;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud) {
  resp *r = ud;
  sg_buf_append(&r->headers, data, size * nmemb);
  return size * nmemb;
}

/* POST (body not NULL) or GET to path; extra headers as "Name: value". */
static void http(sg_llm_server *s, const char *path, const char *body, const char *h1,
                 const char *h2, resp *r) {
  int stop_after = r->stop_after_events;
  memset(r, 0, sizeof *r);
  r->stop_after_events = stop_after;
  sg_buf_init(&r->body, 0);
  sg_buf_init(&r->headers, 0);
  CURL *c = curl_easy_init();
  char *url = sg_asprintf("http://127.0.0.1:%d%s", sg_llm_server_port(s), path);
  struct curl_slist *hl = curl_slist_append(NULL, "Content-Type: application/json");
  if (h1)
    hl = curl_slist_append(hl, h1);
  if (h2)
    hl = curl_slist_append(hl, h2);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
  if (body)
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  r->rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
  curl_easy_getinfo(c, CURLINFO_STARTTRANSFER_TIME, &r->first_byte_s);
  curl_easy_getinfo(c, CURLINFO_TOTAL_TIME, &r->total_s);
  curl_slist_free_all(hl);
  free(url);
  curl_easy_cleanup(c);
}

static void resp_free(resp *r) {
  sg_buf_free(&r->body);
  sg_buf_free(&r->headers);
}

static json_t *body_json(const resp *r) {
  json_error_t je;
  json_t *j = json_loads(sg_buf_str(&r->body), 0, &je);
  SG_CHECK_MSG(j != NULL, "body is not JSON: %s: %.200s", je.text, sg_buf_str(&r->body));
  return j;
}

/* The header's value (a copy the caller frees), or NULL. */
static char *header(const resp *r, const char *name) {
  size_t nl = strlen(name);
  for (const char *p = sg_buf_str(&r->headers); *p;) {
    const char *eol = strstr(p, "\r\n");
    if (!eol)
      break;
    if (strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
      const char *v = p + nl + 1;
      while (*v == ' ')
        v++;
      return sg_strndup(v, (size_t)(eol - v));
    }
    p = eol + 2;
  }
  return NULL;
}

/* The SSE stream, split. */
typedef struct stream {
  json_t *events[8192]; /* parsed data payloads (NULL: not JSON) */
  size_t n;
  size_t malformed;
  bool done;      /* ended with data: [DONE] */
  bool after_done; /* anything after [DONE] */
} stream;

static void parse_stream(const resp *r, stream *st) {
  memset(st, 0, sizeof *st);
  const char *p = sg_buf_str(&r->body);
  while (*p) {
    const char *end = strstr(p, "\n\n");
    if (!end)
      break;
    SG_CHECK_MSG(strncmp(p, "data: ", 6) == 0, "event without data: %.40s", p);
    char *payload = sg_strndup(p + 6, (size_t)(end - p - 6));
    if (st->done)
      st->after_done = true;
    if (strcmp(payload, "[DONE]") == 0) {
      st->done = true;
    } else {
      SG_CHECK(st->n < 8192);
      json_t *j = json_loads(payload, 0, NULL);
      if (!j)
        st->malformed++;
      st->events[st->n++] = j;
    }
    free(payload);
    p = end + 2;
  }
}

static void stream_free(stream *st) {
  for (size_t i = 0; i < st->n; i++)
    json_decref(st->events[i]);
}

static json_t *choice0(json_t *ev) { return json_array_get(json_object_get(ev, "choices"), 0); }

static const char *jstr(json_t *o, const char *k) {
  return json_string_value(json_object_get(o, k));
}

/* Concatenates the stream's reasoning (field rfield) and content deltas. */
static void stream_text(const stream *st, const char *rfield, sg_buf *reasoning, sg_buf *content,
                        const char **finish) {
  for (size_t i = 0; i < st->n; i++) {
    json_t *c = choice0(st->events[i]);
    if (!c)
      continue;
    json_t *d = json_object_get(c, "delta");
    const char *r = jstr(d, rfield);
    const char *t = d ? jstr(d, "content") : jstr(c, "text");
    if (r)
      sg_buf_puts(reasoning, r);
    if (t)
      sg_buf_puts(content, t);
    if (json_is_string(json_object_get(c, "finish_reason")) && finish)
      *finish = jstr(c, "finish_reason");
  }
}

#define CHAT(extra)                                                                     \
  "{\"model\": \"m\", \"messages\": [{\"role\": \"system\", \"content\": \"You write "     \
  "fast kernels.\"}, {\"role\": \"user\", \"content\": \"Optimize toy_add.\"}]" extra "}"

static void wait_for(sg_llm_server *s, bool (*cond)(const sg_llm_server_stats *), const char *what) {
  for (int i = 0; i < 1000; i++) { /* 10 s at most */
    sg_llm_server_stats st;
    sg_llm_server_stats_get(s, &st);
    if (cond(&st))
      return;
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  SG_FAIL("timed out waiting for %s", what);
}

static bool one_cancelled_none_active(const sg_llm_server_stats *st) {
  return st->generations_cancelled == 1 && st->generations_active == 0;
}

static bool one_completed_none_active(const sg_llm_server_stats *st) {
  return st->generations_completed == 1 && st->generations_active == 0;
}

static void expect_error(sg_llm_server *s, const char *path, const char *body, long status,
                         const char *param, const char *in_message);

/* ---- reading requests (pure) ---- */

typedef struct req_case {
  const char *name;
  bool chat;
  const char *body;
  const char *prompt, *context, *reasoning_prefix;
  bool thinking;
} req_case;

#define SYS_USER "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n"
#define GEN "<|im_start|>assistant\n<think>\n"
#define MSGS "[{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}"

static void requests_render_prompt_context_and_thinking(void) {
  static const req_case cases[] = {
      {"chat", true, "{\"model\": \"m\", \"messages\": " MSGS "]}", SYS_USER GEN,
       SYS_USER GEN, "", true},
      {"chat thinking off", true,
       "{\"model\": \"m\", \"thinking\": false, \"messages\": " MSGS "]}",
       SYS_USER GEN "\n</think>\n\n", SYS_USER GEN, "", false},
      {"content parts", true,
       "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": [{\"type\": "
       "\"text\", \"text\": \"a\"}, {\"type\": \"text\", \"text\": \"b\"}]}]}",
       "<|im_start|>user\nab<|im_end|>\n" GEN, "<|im_start|>user\nab<|im_end|>\n" GEN, "",
       true},
      {"open reasoning continues", true,
       "{\"model\": \"m\", \"messages\": " MSGS
       ", {\"role\": \"assistant\", \"reasoning_content\": \"R1\"}]}",
       SYS_USER GEN "R1", SYS_USER GEN, "R1", true},
      {"reasoning with content is closed", true,
       "{\"model\": \"m\", \"messages\": " MSGS
       ", {\"role\": \"assistant\", \"reasoning\": \"R1\", \"content\": \"C\"}]}",
       SYS_USER GEN "R1\n</think>\n\nC", SYS_USER GEN, "R1", false},
      {"think tags closed", true,
       "{\"model\": \"m\", \"messages\": " MSGS
       ", {\"role\": \"assistant\", \"content\": \"<think>\\nR2\\n</think>\\n\\n\"}]}",
       SYS_USER GEN "R2\n</think>\n\n", SYS_USER GEN, "R2", false},
      {"think tags open", true,
       "{\"model\": \"m\", \"messages\": " MSGS
       ", {\"role\": \"assistant\", \"content\": \"<think>\\nR3\"}]}",
       SYS_USER GEN "R3", SYS_USER GEN, "R3", true},
      {"completions plain", false, "{\"model\": \"m\", \"prompt\": \"hi\"}", "hi", "hi", "",
       false},
      {"completions open think", false,
       "{\"model\": \"m\", \"prompt\": \"P<think>\\nR4\"}", "P<think>\nR4", "P<think>\n",
       "R4", true},
      {"completions closed think", false,
       "{\"model\": \"m\", \"prompt\": \"P<think>\\nR5\\n</think>\\n\\n\"}",
       "P<think>\nR5\n</think>\n\n", "P<think>\n", "", false},
      {"completions switch wins", false,
       "{\"model\": \"m\", \"chat_template_kwargs\": {\"enable_thinking\": false}, "
       "\"prompt\": \"P<think>\\nR6\"}",
       "P<think>\nR6", "P<think>\n", "R6", false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const req_case *c = &cases[i];
    json_error_t je;
    json_t *body = json_loads(c->body, 0, &je);
    SG_CHECK_MSG(body != NULL, "%s: %s", c->name, je.text);
    sg_server_request r;
    sg_server_request_init(&r);
    SG_CHECK_MSG(sg_server_request_parse(body, c->chat, &r) == 0, "%s: %s", c->name, r.msg);
    SG_CHECK_MSG(strcmp(sg_buf_str(&r.prompt), c->prompt) == 0, "%s: prompt \"%s\"", c->name,
                 sg_buf_str(&r.prompt));
    SG_CHECK_MSG(strcmp(sg_buf_str(&r.context), c->context) == 0, "%s: context \"%s\"",
                 c->name, sg_buf_str(&r.context));
    SG_CHECK_MSG(strcmp(sg_buf_str(&r.reasoning_prefix), c->reasoning_prefix) == 0,
                 "%s: reasoning prefix \"%s\"", c->name, sg_buf_str(&r.reasoning_prefix));
    SG_CHECK_MSG(r.thinking == c->thinking, "%s: thinking %d", c->name, r.thinking);
    sg_server_request_free(&r);
    json_decref(body);
  }
}

static void request_fields_are_read(void) {
  json_t *body = json_loads(
      "{\"model\": \"mm\", \"prompt\": \"x\", \"stream\": true, \"seed\": 9, \"rid\": \"q\","
      " \"max_tokens\": 5, \"max_completion_tokens\": 7, \"return_token_ids\": true,"
      " \"stream_options\": {\"include_usage\": true}}",
      0, NULL);
  sg_server_request r;
  sg_server_request_init(&r);
  SG_CHECK_EQ_INT(sg_server_request_parse(body, false, &r), 0);
  SG_CHECK(r.stream && r.include_usage && r.return_token_ids && r.has_seed && r.seed == 9);
  SG_CHECK_EQ_INT(r.max_tokens, 7); /* max_completion_tokens wins */
  SG_CHECK_STR_EQ(r.model, "mm");
  SG_CHECK_STR_EQ(r.rid, "q");
  sg_server_request_free(&r);
  json_decref(body);
  body = json_loads("{\"model\": \"m\", \"prompt\": \"x\", \"seed\": 1.5}", 0, NULL);
  sg_server_request_init(&r);
  SG_CHECK_EQ_INT(sg_server_request_parse(body, false, &r), SG_EINVAL);
  SG_CHECK_STR_EQ(r.param, "seed");
  sg_server_request_free(&r);
  json_decref(body);
}

/* ---- endpoints ---- */

static void models_lists_the_model(void) {
  sg_llm_server *s = start_default();
  resp r = {0};
  http(s, "/v1/models", NULL, NULL, NULL, &r);
  SG_CHECK_EQ_INT(r.status, 200);
  json_t *j = body_json(&r);
  SG_CHECK_STR_EQ(jstr(j, "object"), "list");
  SG_CHECK_STR_EQ(jstr(json_array_get(json_object_get(j, "data"), 0), "id"), "specgen-test");
  json_decref(j);
  resp_free(&r);
  http(s, "/health", NULL, NULL, NULL, &r);
  SG_CHECK_EQ_INT(r.status, 200);
  resp_free(&r);
  http(s, "/metrics", NULL, NULL, NULL, &r);
  SG_CHECK_EQ_INT(r.status, 200);
  SG_CHECK_CONTAINS(sg_buf_str(&r.body), "\nvllm:num_requests_running{model_name=\"specgen-test\"} 0\n");
  SG_CHECK_CONTAINS(sg_buf_str(&r.body), "\nspecgen_test_server_requests_total 3\n");
  resp_free(&r);
  stop(s);
}

static void chat_stream_sends_reasoning_then_content_then_usage(void) {
  sg_llm_server *s = start_default();
  resp r = {0};
  http(s, "/v1/chat/completions",
       CHAT(", \"stream\": true, \"stream_options\": {\"include_usage\": true}"), NULL, NULL, &r);
  SG_CHECK_EQ_INT(r.status, 200);
  char *ct = header(&r, "Content-Type");
  SG_CHECK_STR_EQ(ct, "text/event-stream");
  free(ct);
  stream st;
  parse_stream(&r, &st);
  SG_CHECK(st.done && !st.after_done && st.malformed == 0);
  SG_CHECK(st.n > 100);
  /* All reasoning deltas come before the first content delta. */
  bool seen_content = false;
  size_t nreason = 0, ntok = 0;
  for (size_t i = 0; i < st.n; i++) {
    json_t *d = json_object_get(choice0(st.events[i]), "delta");
    SG_CHECK(jstr(d, "reasoning") == NULL); /* the other field name is not used */
    if (jstr(d, "reasoning_content")) {
      SG_CHECK(!seen_content);
      nreason++;
      ntok++;
    }
    if (jstr(d, "content") && *jstr(d, "content")) {
      seen_content = true;
      ntok++;
    }
  }
  SG_CHECK(seen_content && nreason > 100);
  SG_CHECK_STR_EQ(jstr(json_object_get(choice0(st.events[0]), "delta"), "role"), "assistant");
  sg_buf rb, cb;
  sg_buf_init(&rb, 0);
  sg_buf_init(&cb, 0);
  const char *finish = NULL;
  stream_text(&st, "reasoning_content", &rb, &cb, &finish);
  SG_CHECK_STR_EQ(finish, "stop");
  SG_CHECK_CONTAINS(sg_buf_str(&rb), "toy_add");
  SG_CHECK_CONTAINS(sg_buf_str(&cb), "```c\n");
  /* The last event holds the usage and no choices. */
  json_t *last = st.events[st.n - 1];
  SG_CHECK_EQ_INT(json_array_size(json_object_get(last, "choices")), 0);
  json_t *u = json_object_get(last, "usage");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(u, "completion_tokens")), ntok);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(
                      json_object_get(u, "completion_tokens_details"), "reasoning_tokens")),
                  nreason);
  SG_CHECK(json_integer_value(json_object_get(u, "prompt_tokens")) > 10);
  /* The request-completed callback may run just after the client has read
   * the last byte. */
  wait_for(s, one_completed_none_active, "the request to complete");
  sg_llm_server_stats ss;
  sg_llm_server_stats_get(s, &ss);
  SG_CHECK_EQ_INT(ss.tokens_generated, ntok);
  sg_buf_free(&rb);
  sg_buf_free(&cb);
  stream_free(&st);
  resp_free(&r);
  stop(s);
}

static void stream_without_include_usage_has_no_usage_event(void) {
  sg_llm_server *s = start_default();
  resp r = {0};
  http(s, "/v1/chat/completions", CHAT(", \"stream\": true"), NULL, NULL, &r);
  stream st;
  parse_stream(&r, &st);
  SG_CHECK(st.done);
  for (size_t i = 0; i < st.n; i++)
    SG_CHECK(json_object_get(st.events[i], "usage") == NULL);
  stream_free(&st);
  resp_free(&r);
  stop(s);
}

static void reasoning_field_option_names_the_delta_field(void) {
  sg_llm_server_opts o;
  sg_llm_server_opts_init(&o);
  o.reasoning_field = "reasoning";
  sg_llm_server *s = start(&o);
  resp r = {0};
  http(s, "/v1/chat/completions", CHAT(", \"stream\": true"), NULL, NULL, &r);
  stream st;
  parse_stream(&r, &st);
  sg_buf rb, cb, rc2, cb2;
  sg_buf_init(&rb, 0), sg_buf_init(&cb, 0), sg_buf_init(&rc2, 0), sg_buf_init(&cb2, 0);
  stream_text(&st, "reasoning", &rb, &cb, NULL);
  stream_text(&st, "reasoning_content", &rc2, &cb2, NULL);
  SG_CHECK(rb.len > 200);
  SG_CHECK_EQ_INT(rc2.len, 0);
  stream_free(&st);
  resp_free(&r);
  /* Non-streaming: message.reasoning. */
  http(s, "/v1/chat/completions", CHAT(""), NULL, NULL, &r);
  json_t *j = body_json(&r);
  json_t *msg = json_object_get(choice0(j), "message");
  SG_CHECK_STR_EQ(jstr(msg, "reasoning"), sg_buf_str(&rb));
  SG_CHECK(json_object_get(msg, "reasoning_content") == NULL);
  json_decref(j);
  resp_free(&r);
  sg_buf_free(&rb), sg_buf_free(&cb), sg_buf_free(&rc2), sg_buf_free(&cb2);
  stop(s);
}

static void nonstreaming_chat_matches_the_stream_and_has_usage(void) {
  sg_llm_server *s = start_default();
  resp a = {0}, b = {0};
  http(s, "/v1/chat/completions", CHAT(""), NULL, NULL, &a);
  http(s, "/v1/chat/completions", CHAT(", \"stream\": true"), NULL, NULL, &b);
  SG_CHECK_EQ_INT(a.status, 200);
  char *ct = header(&a, "Content-Type");
  SG_CHECK_STR_EQ(ct, "application/json");
  free(ct);
  json_t *j = body_json(&a);
  SG_CHECK_STR_EQ(jstr(j, "object"), "chat.completion");
  json_t *c = choice0(j);
  SG_CHECK_STR_EQ(jstr(c, "finish_reason"), "stop");
  json_t *msg = json_object_get(c, "message");
  stream st;
  parse_stream(&b, &st);
  sg_buf rb, cb;
  sg_buf_init(&rb, 0), sg_buf_init(&cb, 0);
  stream_text(&st, "reasoning_content", &rb, &cb, NULL);
  SG_CHECK_STR_EQ(jstr(msg, "reasoning_content"), sg_buf_str(&rb));
  SG_CHECK_STR_EQ(jstr(msg, "content"), sg_buf_str(&cb));
  json_t *u = json_object_get(j, "usage");
  SG_CHECK(json_integer_value(json_object_get(u, "completion_tokens")) > 100);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(u, "total_tokens")),
                  json_integer_value(json_object_get(u, "completion_tokens")) +
                      json_integer_value(json_object_get(u, "prompt_tokens")));
  sg_buf_free(&rb), sg_buf_free(&cb);
  stream_free(&st);
  json_decref(j);
  resp_free(&a);
  resp_free(&b);
  stop(s);
}

static void completions_take_a_string_or_token_ids(void) {
  sg_llm_server *s = start_default();
  const char *prompt = "Write the toy_mul kernel.\n";
  size_t n = sg_fm_tokenize(prompt, strlen(prompt), NULL, NULL, 0);
  int32_t ids[64];
  SG_CHECK(n < 64);
  sg_fm_tokenize(prompt, strlen(prompt), ids, NULL, n);
  sg_buf ib;
  sg_buf_init(&ib, 0);
  for (size_t i = 0; i < n; i++)
    sg_buf_printf(&ib, "%s%d", i ? "," : "", ids[i]);
  char *b1 = sg_asprintf("{\"model\": \"m\", \"prompt\": \"Write the toy_mul kernel.\\n\"}");
  char *b2 = sg_asprintf("{\"model\": \"m\", \"prompt\": [%s]}", sg_buf_str(&ib));
  resp r1 = {0}, r2 = {0};
  http(s, "/v1/completions", b1, NULL, NULL, &r1);
  http(s, "/v1/completions", b2, NULL, NULL, &r2);
  SG_CHECK_EQ_INT(r1.status, 200);
  SG_CHECK_EQ_INT(r2.status, 200);
  json_t *j1 = body_json(&r1), *j2 = body_json(&r2);
  SG_CHECK_STR_EQ(jstr(j1, "object"), "text_completion");
  const char *t1 = jstr(choice0(j1), "text"), *t2 = jstr(choice0(j2), "text");
  SG_CHECK_STR_EQ(t1, t2);
  /* No open <think> block: a plain prompt is answered at once. */
  SG_CHECK(strncmp(t1, "```", 3) == 0 || strstr(t1, "```c\n") != NULL);
  SG_CHECK(strstr(t1, "</think>") == NULL);
  char *task = header(&r1, "X-Specgen-Task");
  SG_CHECK_STR_EQ(task, "toy_mul");
  free(task);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(j2, "usage"),
                                                     "prompt_tokens")), n);
  SG_CHECK(json_object_get(choice0(j2), "prompt_token_ids") == NULL); /* not asked */
  json_decref(j1), json_decref(j2);
  resp_free(&r1), resp_free(&r2);
  /* A prompt ending inside <think> keeps reasoning, closes it, then answers. */
  http(s, "/v1/completions",
       "{\"model\": \"m\", \"stream\": true, \"prompt\": \"toy_add please\\n<think>\\n\"}",
       NULL, NULL, &r1);
  stream st;
  parse_stream(&r1, &st);
  sg_buf rb, cb;
  sg_buf_init(&rb, 0), sg_buf_init(&cb, 0);
  stream_text(&st, "reasoning_content", &rb, &cb, NULL);
  SG_CHECK_EQ_INT(rb.len, 0);
  SG_CHECK_CONTAINS(sg_buf_str(&cb), "\n</think>\n\n");
  SG_CHECK_CONTAINS(strstr(sg_buf_str(&cb), "</think>"), "```c\n");
  SG_CHECK_STR_EQ(jstr(st.events[0], "object"), "text_completion");
  sg_buf_free(&rb), sg_buf_free(&cb);
  stream_free(&st);
  resp_free(&r1);
  /* With return_token_ids, the prompt's ids come back in the choice (as
   * vLLM's completions do), equal to those sent. */
  char *b3 = sg_asprintf("{\"model\": \"m\", \"max_tokens\": 3, \"return_token_ids\": true, "
                         "\"prompt\": [%s]}", sg_buf_str(&ib));
  http(s, "/v1/completions", b3, NULL, NULL, &r1);
  j1 = body_json(&r1);
  json_t *pids = json_object_get(choice0(j1), "prompt_token_ids");
  SG_CHECK_EQ_INT(json_array_size(pids), n);
  for (size_t i = 0; i < n; i++)
    SG_CHECK_EQ_INT(json_integer_value(json_array_get(pids, i)), ids[i]);
  SG_CHECK_EQ_INT(json_array_size(json_object_get(choice0(j1), "token_ids")), 3);
  json_decref(j1);
  resp_free(&r1);
  free(b3);
  free(b1), free(b2);
  sg_buf_free(&ib);
  stop(s);
}

static void tokenize_and_detokenize_round_trip(void) {
  sg_llm_server *s = start_default();
  resp r = {0};
  http(s, "/tokenize", "{\"model\": \"m\", \"prompt\": \"\\n</think>\\n\\n\"}", NULL, NULL, &r);
  SG_CHECK_EQ_INT(r.status, 200);
  json_t *j = body_json(&r);
  json_t *toks = json_object_get(j, "tokens");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(j, "count")), json_array_size(toks));
  char *ts = json_dumps(toks, JSON_COMPACT);
  char *dbody = sg_asprintf("{\"tokens\": %s}", ts);
  free(ts);
  resp r2 = {0};
  http(s, "/detokenize", dbody, NULL, NULL, &r2);
  json_t *j2 = body_json(&r2);
  SG_CHECK_STR_EQ(jstr(j2, "prompt"), "\n</think>\n\n");
  json_decref(j2);
  resp_free(&r2);
  free(dbody);
  json_decref(j);
  resp_free(&r);
  /* Messages are rendered as the chat endpoint renders them: their count is
   * the chat answer's prompt_tokens. */
  http(s, "/tokenize", CHAT(""), NULL, NULL, &r);
  j = body_json(&r);
  long count = (long)json_integer_value(json_object_get(j, "count"));
  json_decref(j);
  resp_free(&r);
  http(s, "/v1/chat/completions", CHAT(", \"max_tokens\": 1"), NULL, NULL, &r);
  j = body_json(&r);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(j, "usage"),
                                                     "prompt_tokens")), count);
  json_decref(j);
  resp_free(&r);
  expect_error(s, "/tokenize", "{\"model\": \"m\"}", 400, "prompt", NULL);
  expect_error(s, "/detokenize", "{\"tokens\": [23134208, 0]}", 400, "tokens[1]", NULL);
  expect_error(s, "/detokenize", "{}", 400, "tokens", NULL);
  stop(s);
}

static void return_token_ids_gives_ids_that_decode_to_the_text(void) {
  sg_llm_server *s = start_default();
  resp r = {0};
  http(s, "/v1/chat/completions",
       CHAT(", \"stream\": true, \"return_token_ids\": true, \"stream_options\": "
            "{\"include_usage\": true}"),
       NULL, NULL, &r);
  stream st;
  parse_stream(&r, &st);
  json_t *pids = json_object_get(st.events[0], "prompt_token_ids");
  SG_CHECK(json_is_array(pids));
  size_t np = json_array_size(pids);
  int32_t *ids = sg_malloc(np * sizeof *ids);
  for (size_t i = 0; i < np; i++)
    ids[i] = (int32_t)json_integer_value(json_array_get(pids, i));
  sg_buf prompt;
  sg_buf_init(&prompt, 0);
  sg_err err;
  SG_CHECK_OK(sg_fm_detokenize(ids, np, &prompt, &err), err);
  SG_CHECK_CONTAINS(sg_buf_str(&prompt), "Optimize toy_add.");
  SG_CHECK_CONTAINS(sg_buf_str(&prompt), "<think>\n");
  free(ids);
  size_t ntok = 0;
  for (size_t i = 0; i < st.n; i++) {
    json_t *c = choice0(st.events[i]);
    json_t *tids = json_object_get(c, "token_ids");
    json_t *d = json_object_get(c, "delta");
    const char *piece = jstr(d, "reasoning_content") ? jstr(d, "reasoning_content")
                                                      : jstr(d, "content");
    if (!piece || !*piece)
      continue;
    SG_CHECK_EQ_INT(json_array_size(tids), 1);
    char buf[SG_FM_PIECE_MAX];
    size_t pl = sg_fm_token_piece((int32_t)json_integer_value(json_array_get(tids, 0)), buf);
    SG_CHECK(pl == strlen(piece) && memcmp(buf, piece, pl) == 0);
    ntok++;
  }
  json_t *u = json_object_get(st.events[st.n - 1], "usage");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(u, "prompt_tokens")), np);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(u, "completion_tokens")), ntok);
  stream_free(&st);
  resp_free(&r);
  /* Non-streaming: the ids of the whole answer. */
  http(s, "/v1/chat/completions", CHAT(", \"return_token_ids\": true"), NULL, NULL, &r);
  json_t *j = body_json(&r);
  SG_CHECK_EQ_INT(json_array_size(json_object_get(choice0(j), "token_ids")), ntok);
  SG_CHECK_EQ_INT(json_array_size(json_object_get(j, "prompt_token_ids")), np);
  json_decref(j);
  resp_free(&r);
  sg_buf_free(&prompt);
  stop(s);
}

static long cached_of(const resp *r) {
  json_t *j = body_json(r);
  long v = (long)json_integer_value(json_object_get(
      json_object_get(json_object_get(j, "usage"), "prompt_tokens_details"), "cached_tokens"));
  json_decref(j);
  return v;
}

static void cached_tokens_count_the_shared_prefix_in_blocks_of_16(void) {
  sg_llm_server *s = start_default();
  sg_buf sys;
  sg_buf_init(&sys, 0);
  for (int i = 0; i < 40; i++)
    sg_buf_printf(&sys, "Rule %d: kernels must be correct and fast. ", i);
  char *b1 = sg_asprintf("{\"model\": \"m\", \"max_tokens\": 4, \"messages\": [{\"role\": "
                         "\"system\", \"content\": \"%s\"}, {\"role\": \"user\", \"content\": "
                         "\"toy_add\"}]}", sg_buf_str(&sys));
  char *b2 = sg_asprintf("{\"model\": \"m\", \"max_tokens\": 4, \"messages\": [{\"role\": "
                         "\"system\", \"content\": \"%s\"}, {\"role\": \"user\", \"content\": "
                         "\"toy_mul, different question\"}]}", sg_buf_str(&sys));
  resp r1 = {0}, r2 = {0};
  http(s, "/v1/chat/completions", b1, NULL, NULL, &r1);
  http(s, "/v1/chat/completions", b2, NULL, NULL, &r2);
  SG_CHECK_EQ_INT(cached_of(&r1), 0);
  long c2 = cached_of(&r2);
  /* The shared part: the system message and the start of the user turn. */
  const char *shared = sg_asprintf("<|im_start|>system\n%s<|im_end|>\n<|im_start|>user\n",
                                   sg_buf_str(&sys));
  size_t lcp = sg_fm_tokenize(shared, strlen(shared), NULL, NULL, 0);
  SG_CHECK_MSG(c2 > 0 && c2 % 16 == 0 && (size_t)c2 <= lcp && (size_t)c2 > lcp - 16,
               "cached %ld of a %zu-token shared prefix", c2, lcp);
  free((void *)shared);
  sg_llm_server_stats st;
  sg_llm_server_stats_get(s, &st);
  SG_CHECK_EQ_INT(st.cached_tokens, c2);
  resp_free(&r1), resp_free(&r2);
  free(b1), free(b2);
  sg_buf_free(&sys);
  stop(s);
}

/* A fork sends the prompt plus the reasoning so far: the generated tokens
 * are in the cache too (as in vLLM), so nearly all of it hits. */
static void fork_prompts_hit_the_cache_for_generated_tokens(void) {
  sg_llm_server *s = start_default();
  resp r = {0};
  http(s, "/v1/chat/completions", CHAT(""), NULL, NULL, &r);
  json_t *j = body_json(&r);
  const char *full = jstr(json_object_get(choice0(j), "message"), "reasoning_content");
  long p0 = (long)json_integer_value(json_object_get(json_object_get(j, "usage"), "prompt_tokens"));
  size_t nr = sg_fm_tokenize(full, strlen(full), NULL, NULL, 0);
  json_t *body = json_pack(
      "{s:s, s:[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}], s:{s:b}}", "model", "m", "messages",
      "role", "system", "content", "You write fast kernels.", "role", "user", "content",
      "Optimize toy_add.", "role", "assistant", "reasoning_content", full,
      "chat_template_kwargs", "enable_thinking", 0);
  char *text = json_dumps(body, JSON_COMPACT);
  resp r2 = {0};
  http(s, "/v1/chat/completions", text, NULL, NULL, &r2);
  json_t *j2 = body_json(&r2);
  json_t *u = json_object_get(j2, "usage");
  long cached = (long)json_integer_value(
      json_object_get(json_object_get(u, "prompt_tokens_details"), "cached_tokens"));
  long known = p0 + (long)nr; /* the first prompt and all it generated */
  SG_CHECK_MSG(cached % 16 == 0 && cached > known - 32 && cached <= known,
               "cached %ld of the %ld tokens known", cached, known);
  json_decref(j2);
  resp_free(&r2);
  free(text);
  json_decref(body);
  json_decref(j);
  resp_free(&r);
  stop(s);
}

static void cached_prompt_gets_its_first_token_sooner(void) {
  sg_llm_server_opts o;
  sg_llm_server_opts_init(&o);
  o.prefill_tokens_per_s = 2000; /* ~1500 prompt tokens: ~0.75 s cold */
  sg_llm_server *s = start(&o);
  sg_buf sys;
  sg_buf_init(&sys, 0);
  for (int i = 0; i < 120; i++)
    sg_buf_printf(&sys, "Rule %d: be fast. ", i);
  char *b = sg_asprintf("{\"model\": \"m\", \"stream\": true, \"max_tokens\": 2, \"messages\": "
                        "[{\"role\": \"user\", \"content\": \"toy_add %s\"}]}",
                        sg_buf_str(&sys));
  resp r1 = {0}, r2 = {0};
  int64_t t0 = sg_clock_now_us();
  http(s, "/v1/chat/completions", b, NULL, NULL, &r1);
  int64_t t1 = sg_clock_now_us();
  http(s, "/v1/chat/completions", b, NULL, NULL, &r2);
  int64_t t2 = sg_clock_now_us();
  double cold = (double)(t1 - t0) / 1e6, warm = (double)(t2 - t1) / 1e6;
  SG_CHECK_MSG(cold > 0.5 && warm < cold / 2, "cold %.3f s, warm %.3f s", cold, warm);
  resp_free(&r1), resp_free(&r2);
  free(b);
  sg_buf_free(&sys);
  stop(s);
}

static void same_seed_gives_the_same_bytes(void) {
  sg_llm_server_opts o;
  sg_llm_server_opts_init(&o);
  o.seed = 42;
  const char *req = CHAT(", \"stream\": true, \"seed\": 7");
  sg_llm_server *s1 = start(&o);
  resp a = {0}, b = {0}, c = {0};
  http(s1, "/v1/chat/completions", req, NULL, NULL, &a);
  sg_llm_server_stop(s1);
  sg_llm_server *s2 = start(&o);
  http(s2, "/v1/chat/completions", req, NULL, NULL, &b);
  sg_llm_server_stop(s2);
  o.seed = 43;
  sg_llm_server *s3 = start(&o);
  http(s3, "/v1/chat/completions", req, NULL, NULL, &c);
  SG_CHECK(a.body.len > 1000);
  SG_CHECK_STR_EQ(sg_buf_str(&a.body), sg_buf_str(&b.body));
  SG_CHECK(strcmp(sg_buf_str(&a.body), sg_buf_str(&c.body)) != 0);
  resp_free(&a), resp_free(&b), resp_free(&c);
  stop(s3);
}

static void thinking_off_answers_at_once_with_a_kernel(void) {
  sg_llm_server *s = start_default();
  const char *bodies[] = {
      CHAT(", \"chat_template_kwargs\": {\"enable_thinking\": false}"),
      CHAT(", \"chat_template_kwargs\": {\"thinking\": false}"),
      CHAT(", \"thinking\": false"),
      CHAT(", \"thinking\": {\"type\": \"disabled\"}"),
  };
  for (size_t i = 0; i < 4; i++) {
    resp r = {0};
    http(s, "/v1/chat/completions", bodies[i], NULL, NULL, &r);
    SG_CHECK_EQ_INT(r.status, 200);
    json_t *j = body_json(&r);
    json_t *msg = json_object_get(choice0(j), "message");
    SG_CHECK(json_is_null(json_object_get(msg, "reasoning_content")));
    SG_CHECK_CONTAINS(jstr(msg, "content"), "```c\n");
    SG_CHECK_EQ_INT(json_integer_value(json_object_get(
                        json_object_get(json_object_get(j, "usage"), "completion_tokens_details"),
                        "reasoning_tokens")), 0);
    json_decref(j);
    resp_free(&r);
  }
  /* Explicitly on is the same as the default. */
  resp r = {0};
  http(s, "/v1/chat/completions", CHAT(", \"thinking\": {\"type\": \"enabled\"}"), NULL, NULL,
       &r);
  json_t *j = body_json(&r);
  SG_CHECK(jstr(json_object_get(choice0(j), "message"), "reasoning_content") != NULL);
  json_decref(j);
  resp_free(&r);
  stop(s);
}

/* A fork: the same conversation plus the first `frac` of the reasoning as a
 * final assistant message, thinking off. Returns the X-Specgen-Example. */
static char *fork_example(sg_llm_server *s, const char *reasoning, double frac, int k,
                          double *f_out) {
  size_t cut = (size_t)(frac * (double)strlen(reasoning));
  json_t *body = json_pack(
      "{s:s, s:b, s:[{s:s, s:s}, {s:s, s:s}, {s:s, s:s#, s:s}], s:{s:b}}", "model", "m",
      "stream", 0, "messages", "role", "system", "content", "You write fast kernels.", "role",
      "user", "content", "Optimize toy_add.", "role", "assistant", "reasoning_content",
      reasoning, (int)cut, "content", "", "chat_template_kwargs", "enable_thinking", 0);
  char *text = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  char hdr[64];
  snprintf(hdr, sizeof hdr, "X-Request-Id: fork-%d", k);
  resp r = {0};
  http(s, "/v1/chat/completions", text, hdr, NULL, &r);
  SG_CHECK_EQ_INT(r.status, 200);
  char *f = header(&r, "X-Specgen-Prefix-Fraction");
  *f_out = atof(f);
  free(f);
  char *ex = header(&r, "X-Specgen-Example");
  json_t *j = body_json(&r);
  SG_CHECK(json_is_null(json_object_get(json_object_get(choice0(j), "message"),
                                        "reasoning_content")));
  json_decref(j);
  resp_free(&r);
  free(text);
  return ex;
}

static void forks_with_the_reasoning_prefix_write_valid_kernels(void) {
  sg_llm_server *s = start_default();
  resp r = {0};
  http(s, "/v1/chat/completions", CHAT(""), NULL, NULL, &r);
  json_t *j = body_json(&r);
  char *reasoning = sg_strdup(jstr(json_object_get(choice0(j), "message"), "reasoning_content"));
  json_decref(j);
  resp_free(&r);
  int valid0 = 0, valid1 = 0, n = 30;
  for (int k = 0; k < n; k++) {
    double f;
    char *ex = fork_example(s, reasoning, 0.0, k, &f);
    SG_CHECK(f < 0.01);
    valid0 += strncmp(ex, "ok-", 3) == 0;
    free(ex);
    ex = fork_example(s, reasoning, 1.0, k, &f);
    SG_CHECK_NEAR(f, 1.0, 1e-9);
    valid1 += strncmp(ex, "ok-", 3) == 0;
    free(ex);
  }
  SG_CHECK_MSG(valid0 <= 6 && valid1 >= 22, "valid: %d/%d without, %d/%d with the prefix",
               valid0, n, valid1, n);
  free(reasoning);
  stop(s);
}

static void continued_final_message_resumes_the_reasoning(void) {
  sg_llm_server *s = start_default();
  resp r = {0};
  http(s, "/v1/chat/completions", CHAT(""), NULL, NULL, &r);
  json_t *j = body_json(&r);
  const char *full = jstr(json_object_get(choice0(j), "message"), "reasoning_content");
  size_t cut = strlen(full) / 2;
  json_t *body = json_pack(
      "{s:s, s:[{s:s, s:s}, {s:s, s:s}, {s:s, s:s#}]}", "model", "m", "messages", "role",
      "system", "content", "You write fast kernels.", "role", "user", "content",
      "Optimize toy_add.", "role", "assistant", "reasoning_content", full, (int)cut);
  char *text = json_dumps(body, JSON_COMPACT);
  resp r2 = {0};
  http(s, "/v1/chat/completions", text, NULL, NULL, &r2);
  json_t *j2 = body_json(&r2);
  SG_CHECK_STR_EQ(jstr(json_object_get(choice0(j2), "message"), "reasoning_content"),
                  full + cut);
  json_decref(j2);
  json_decref(body);
  free(text);
  json_decref(j);
  resp_free(&r), resp_free(&r2);
  stop(s);
}

/* The final assistant message as vLLM and SGLang clients send it: the
 * reasoning inside <think>...</think> at the start of its content. */
/* A fork's request for toy_add: its assistant message (content) continued,
 * thinking off. */
static json_t *fork_body(const char *content) {
  return json_pack("{s:s, s:[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}], s:b, s:b, s:{s:b}}", "model",
                   "m", "messages", "role", "system", "content", "You write fast kernels.",
                   "role", "user", "content", "Optimize toy_add.", "role", "assistant",
                   "content", content, "continue_final_message", 1, "add_generation_prompt",
                   0, "chat_template_kwargs", "enable_thinking", 0);
}

static void think_tags_in_a_continued_message_are_its_reasoning(void) {
  sg_llm_server *s = start_default();
  resp r = {0};
  http(s, "/v1/chat/completions", CHAT(""), NULL, NULL, &r);
  json_t *j = body_json(&r);
  const char *full = jstr(json_object_get(choice0(j), "message"), "reasoning_content");
  /* Closed: a fork, answered at once, with the whole trace found (f = 1). */
  char *content = sg_asprintf("<think>\n%s\n</think>\n\n", full);
  json_t *body = fork_body(content);
  char *text = json_dumps(body, JSON_COMPACT);
  resp r2 = {0};
  http(s, "/v1/chat/completions", text, NULL, NULL, &r2);
  char *f = header(&r2, "X-Specgen-Prefix-Fraction");
  SG_CHECK_STR_EQ(f, "1.0000");
  free(f);
  json_t *j2 = body_json(&r2);
  SG_CHECK(json_is_null(json_object_get(json_object_get(choice0(j2), "message"),
                                        "reasoning_content")));
  json_decref(j2);
  resp_free(&r2);
  free(text);
  json_decref(body);
  free(content);
  /* Open, thinking on: the reasoning goes on from where it stopped. */
  size_t cut = strlen(full) / 3;
  content = sg_asprintf("<think>\n%.*s", (int)cut, full);
  body = json_pack("{s:s, s:[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}], s:b}", "model", "m",
                   "messages", "role", "system", "content", "You write fast kernels.", "role",
                   "user", "content", "Optimize toy_add.", "role", "assistant", "content",
                   content, "continue_final_message", 1);
  text = json_dumps(body, JSON_COMPACT);
  http(s, "/v1/chat/completions", text, NULL, NULL, &r2);
  j2 = body_json(&r2);
  SG_CHECK_STR_EQ(jstr(json_object_get(choice0(j2), "message"), "reasoning_content"),
                  full + cut);
  json_decref(j2);
  resp_free(&r2);
  free(text);
  json_decref(body);
  free(content);
  /* Closed, its answer begun with an opened code block: the code goes on
   * inside it (sg_server_answer_after). */
  content = sg_asprintf("<think>\n%s\n</think>\n\n```c\n", full);
  body = fork_body(content);
  text = json_dumps(body, JSON_COMPACT);
  http(s, "/v1/chat/completions", text, NULL, NULL, &r2);
  j2 = body_json(&r2);
  const char *answer = jstr(json_object_get(choice0(j2), "message"), "content");
  int fences = 0; /* the closing one only */
  for (const char *q = answer ? strstr(answer, "```") : NULL; q; q = strstr(q + 3, "```"))
    fences++;
  SG_CHECK_MSG(answer != NULL && fences == 1 && strstr(answer, "toy_add"), "answer: %s",
               answer ? answer : "(none)");
  json_decref(j2);
  resp_free(&r2);
  free(text);
  json_decref(body);
  free(content);
  json_decref(j);
  resp_free(&r);
  stop(s);
}

/* A continued message whose answer opened a code block after the reasoning
 * ("```c\n", a client's prefill): the answer goes
 * on inside that block, the code and its closing fence, not a second
 * opening fence. Without an open block the answer is whole. Served: in
 * think_tags_in_a_continued_message_are_its_reasoning. */
static void continued_answer_in_an_open_block_goes_on_with_the_code(void) {
  SG_CHECK_STR_EQ(sg_server_answer_after("```c\n", "Here.\n```c\nvoid f(void) {}\n```\n"),
                  "void f(void) {}\n```\n");
  SG_CHECK_STR_EQ(sg_server_answer_after("", "Here.\n```c\nX\n```\n"), "Here.\n```c\nX\n```\n");
  SG_CHECK_STR_EQ(sg_server_answer_after("```c\nA\n```\n", "B"), "B"); /* closed again */
  SG_CHECK_STR_EQ(sg_server_answer_after("Code:\n```\n", "no block"), "no block");
  SG_CHECK_STR_EQ(sg_server_answer_after("```c\n", "```c"), "");
  SG_CHECK_STR_EQ(sg_server_answer_after("x ```c\n", "A\n```\nB"), "A\n```\nB"); /* not a line */
}

static void max_tokens_stops_with_length(void) {
  sg_llm_server *s = start_default();
  resp r = {0};
  http(s, "/v1/chat/completions",
       CHAT(", \"max_tokens\": 7, \"stream\": true, \"stream_options\": {\"include_usage\": true}"),
       NULL, NULL, &r);
  stream st;
  parse_stream(&r, &st);
  const char *finish = NULL;
  sg_buf rb, cb;
  sg_buf_init(&rb, 0), sg_buf_init(&cb, 0);
  stream_text(&st, "reasoning_content", &rb, &cb, &finish);
  SG_CHECK_STR_EQ(finish, "length");
  json_t *u = json_object_get(st.events[st.n - 1], "usage");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(u, "completion_tokens")), 7);
  sg_buf_free(&rb), sg_buf_free(&cb);
  stream_free(&st);
  resp_free(&r);
  stop(s);
}

/* ---- faults ---- */

static void fault_disconnect_closes_after_n_chunks(void) {
  sg_llm_server *s = start_default();
  resp r = {0};
  http(s, "/v1/chat/completions", CHAT(", \"stream\": true"), "X-Specgen-Fault: disconnect:3",
       NULL, &r);
  SG_CHECK(r.rc != CURLE_OK); /* the chunked body never ended */
  stream st;
  parse_stream(&r, &st);
  SG_CHECK_EQ_INT(st.n, 3);
  SG_CHECK(!st.done);
  sg_llm_server_stats ss;
  sg_llm_server_stats_get(s, &ss);
  SG_CHECK_EQ_INT(ss.faults_injected, 1);
  SG_CHECK_EQ_INT(ss.generations_cancelled, 0); /* the server hung up, not the client */
  stream_free(&st);
  resp_free(&r);
  stop(s);
}

/* disconnect:N:K cuts the first K streams the server takes, then none:
 * one server restart's worth of cut streams. */
static void fault_disconnect_for_the_first_streams_only(void) {
  sg_llm_server_opts o;
  sg_llm_server_opts_init(&o);
  sg_err err;
  SG_CHECK_OK(sg_llm_fault_parse("disconnect:3:1", &o.fault, &err), err);
  sg_llm_server *s = start(&o);
  for (int i = 0; i < 3; i++) {
    resp r = {0};
    http(s, "/v1/chat/completions", CHAT(", \"stream\": true, \"max_tokens\": 8"), NULL,
         NULL, &r);
    stream st;
    parse_stream(&r, &st);
    if (i == 0) {
      SG_CHECK(r.rc != CURLE_OK);
      SG_CHECK(!st.done);
    } else {
      SG_CHECK_MSG(r.rc == CURLE_OK && st.done, "stream %d was cut", i);
    }
    stream_free(&st);
    resp_free(&r);
  }
  sg_llm_server_stats ss;
  sg_llm_server_stats_get(s, &ss);
  SG_CHECK_EQ_INT(ss.faults_injected, 1);
  stop(s);
}

static void fault_status429_fails_the_first_attempts_of_a_request(void) {
  sg_llm_server *s = start_default();
  const char *fault = "X-Specgen-Fault: status429:1:2";
  long want[] = {429, 429, 200, 200};
  for (int i = 0; i < 4; i++) {
    resp r = {0};
    http(s, "/v1/chat/completions", CHAT(", \"max_tokens\": 3"), fault, "X-Request-Id: job-7",
         &r);
    SG_CHECK_EQ_INT(r.status, want[i]);
    if (r.status == 429) {
      char *ra = header(&r, "Retry-After");
      SG_CHECK_STR_EQ(ra, "1");
      free(ra);
      json_t *j = body_json(&r);
      SG_CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(j, "error"), "code")),
                      429);
      json_decref(j);
    }
    resp_free(&r);
  }
  /* Another request id starts over; without an id, the body names it. */
  resp r = {0};
  http(s, "/v1/chat/completions", CHAT(", \"max_tokens\": 3"), fault, "X-Request-Id: job-8", &r);
  SG_CHECK_EQ_INT(r.status, 429);
  resp_free(&r);
  for (int i = 0; i < 3; i++) {
    http(s, "/v1/chat/completions", CHAT(", \"max_tokens\": 3, \"rid\": \"r9\""), fault, NULL,
         &r);
    SG_CHECK_EQ_INT(r.status, i < 2 ? 429 : 200);
    resp_free(&r);
  }
  /* Without a count, every attempt fails. */
  for (int i = 0; i < 3; i++) {
    http(s, "/v1/chat/completions", CHAT(""), "X-Specgen-Fault: status429:0", NULL, &r);
    SG_CHECK_EQ_INT(r.status, 429);
    resp_free(&r);
  }
  stop(s);
}

static void fault_status500_from_the_server_options(void) {
  sg_llm_server_opts o;
  sg_llm_server_opts_init(&o);
  sg_err err;
  SG_CHECK_OK(sg_llm_fault_parse("status500:1", &o.fault, &err), err);
  sg_llm_server *s = start(&o);
  resp r = {0};
  http(s, "/v1/completions", "{\"model\": \"m\", \"prompt\": \"toy_add\", \"max_tokens\": 2}",
       NULL, NULL, &r);
  SG_CHECK_EQ_INT(r.status, 500);
  json_t *j = body_json(&r);
  SG_CHECK_STR_EQ(jstr(json_object_get(j, "error"), "type"), "server_error");
  json_decref(j);
  resp_free(&r);
  http(s, "/v1/completions", "{\"model\": \"m\", \"prompt\": \"toy_add\", \"max_tokens\": 2}",
       NULL, NULL, &r);
  SG_CHECK_EQ_INT(r.status, 200);
  resp_free(&r);
  stop(s);
}

static void fault_stall_pauses_mid_stream_then_resumes(void) {
  sg_llm_server *s = start_default();
  resp r = {0};
  http(s, "/v1/chat/completions", CHAT(", \"stream\": true, \"max_tokens\": 10"),
       "X-Specgen-Fault: stall:0.6:2", NULL, &r);
  SG_CHECK_EQ_INT(r.rc, CURLE_OK);
  SG_CHECK_MSG(r.first_byte_s < 0.5 && r.total_s >= 0.55, "first byte %.3f s, total %.3f s",
               r.first_byte_s, r.total_s);
  stream st;
  parse_stream(&r, &st);
  SG_CHECK(st.done && st.n == 11);
  stream_free(&st);
  resp_free(&r);
  stop(s);
}

static void fault_stall_ends_when_the_client_gives_up(void) {
  sg_llm_server *s = start_default();
  resp r = {0};
  r.stop_after_events = 2; /* gives up once the stall begins */
  int64_t t0 = sg_clock_now_us();
  http(s, "/v1/chat/completions", CHAT(", \"stream\": true"), "X-Specgen-Fault: stall:60:2",
       NULL, &r);
  SG_CHECK(r.rc == CURLE_WRITE_ERROR);
  wait_for(s, one_cancelled_none_active, "the stalled generation to end");
  SG_CHECK((sg_clock_now_us() - t0) < 10 * 1000000);
  resp_free(&r);
  stop(s);
}

static void fault_malformed_sends_one_chunk_that_is_not_json(void) {
  sg_llm_server *s = start_default();
  resp r = {0};
  http(s, "/v1/chat/completions", CHAT(", \"stream\": true, \"max_tokens\": 6"),
       "X-Specgen-Fault: malformed:1", NULL, &r);
  stream st;
  parse_stream(&r, &st);
  SG_CHECK_EQ_INT(st.malformed, 1);
  SG_CHECK(st.events[1] == NULL && st.events[0] != NULL);
  SG_CHECK(st.done);
  stream_free(&st);
  resp_free(&r);
  stop(s);
}

static void fault_slow_first_byte_delays_the_response(void) {
  sg_llm_server *s = start_default();
  resp r = {0};
  http(s, "/v1/chat/completions", CHAT(", \"stream\": true, \"max_tokens\": 3"),
       "X-Specgen-Fault: slow_first_byte:0.5", NULL, &r);
  SG_CHECK_EQ_INT(r.status, 200);
  SG_CHECK_MSG(r.first_byte_s >= 0.45, "first byte after %.3f s", r.first_byte_s);
  stream st;
  parse_stream(&r, &st);
  SG_CHECK(st.done);
  stream_free(&st);
  resp_free(&r);
  stop(s);
}

static void fault_error_in_stream_sends_an_error_chunk(void) {
  sg_llm_server *s = start_default();
  resp r = {0};
  http(s, "/v1/chat/completions", CHAT(", \"stream\": true"), "X-Specgen-Fault: error_in_stream:4",
       NULL, &r);
  SG_CHECK_EQ_INT(r.status, 200);
  stream st;
  parse_stream(&r, &st);
  SG_CHECK_EQ_INT(st.n, 5);
  json_t *e = json_object_get(st.events[4], "error");
  SG_CHECK(json_is_object(e));
  SG_CHECK_CONTAINS(jstr(e, "message"), "error_in_stream");
  SG_CHECK(st.done);
  stream_free(&st);
  resp_free(&r);
  stop(s);
}

static void faults_apply_to_nonstreaming_answers(void) {
  sg_llm_server *s = start_default();
  resp r = {0};
  http(s, "/v1/chat/completions", CHAT(""), "X-Specgen-Fault: disconnect:5", NULL, &r);
  SG_CHECK(r.rc != CURLE_OK);
  SG_CHECK_EQ_INT(r.body.len, 0);
  resp_free(&r);
  http(s, "/v1/chat/completions", CHAT(""), "X-Specgen-Fault: error_in_stream:5", NULL, &r);
  SG_CHECK_EQ_INT(r.rc, CURLE_OK);
  json_t *j = body_json(&r);
  SG_CHECK_CONTAINS(jstr(json_object_get(j, "error"), "message"), "error_in_stream");
  SG_CHECK(json_object_get(j, "choices") == NULL);
  json_decref(j);
  resp_free(&r);
  http(s, "/v1/chat/completions", CHAT(""), "X-Specgen-Fault: malformed", NULL, &r);
  SG_CHECK_EQ_INT(r.rc, CURLE_OK);
  SG_CHECK(r.body.len > 0 && json_loads(sg_buf_str(&r.body), 0, NULL) == NULL);
  resp_free(&r);
  http(s, "/v1/chat/completions", CHAT(", \"max_tokens\": 8"), "X-Specgen-Fault: stall:0.5:4",
       NULL, &r);
  SG_CHECK_EQ_INT(r.status, 200);
  SG_CHECK_MSG(r.total_s >= 0.45, "answered after %.3f s", r.total_s);
  json_t *j2 = body_json(&r);
  SG_CHECK_STR_EQ(jstr(choice0(j2), "finish_reason"), "length");
  json_decref(j2);
  resp_free(&r);
  stop(s);
}

static void client_leaving_before_a_slow_first_byte_is_counted(void) {
  sg_llm_server *s = start_default();
  CURL *c = curl_easy_init();
  char *url = sg_asprintf("http://127.0.0.1:%d/v1/chat/completions", sg_llm_server_port(s));
  struct curl_slist *hl = curl_slist_append(NULL, "X-Specgen-Fault: slow_first_byte:30");
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, CHAT(""));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 300L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  SG_CHECK_EQ_INT(curl_easy_perform(c), CURLE_OPERATION_TIMEDOUT);
  curl_easy_cleanup(c);
  curl_slist_free_all(hl);
  free(url);
  wait_for(s, one_cancelled_none_active, "the server to notice the client left");
  stop(s);
}

static void fault_specs_are_checked(void) {
  sg_llm_fault f;
  sg_err err;
  SG_CHECK_OK(sg_llm_fault_parse("status429:2.5:3", &f, &err), err);
  SG_CHECK(f.kind == SG_LLM_FAULT_STATUS429 && f.seconds == 2.5 && f.attempts == 3);
  SG_CHECK_OK(sg_llm_fault_parse("disconnect:0", &f, &err), err);
  SG_CHECK(f.kind == SG_LLM_FAULT_DISCONNECT && f.after_chunks == 0 && f.streams == 0);
  SG_CHECK_STR_EQ(sg_llm_fault_name(f.kind), "disconnect");
  SG_CHECK_OK(sg_llm_fault_parse("error_in_stream:40:1", &f, &err), err);
  SG_CHECK(f.kind == SG_LLM_FAULT_ERROR_IN_STREAM && f.after_chunks == 40 && f.streams == 1);
  SG_CHECK_OK(sg_llm_fault_parse("none", &f, &err), err);
  SG_CHECK(f.kind == SG_LLM_FAULT_NONE);
  const char *bad[] = {"explode", "stall", "stall:x", "disconnect:-1", "disconnect:1.5",
                       "status500:1:2", "slow_first_byte", "status429:1:2:3",
                       "disconnect:3:x", "disconnect:3:-1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    sg_err_clear(&err);
    SG_CHECK_MSG(sg_llm_fault_parse(bad[i], &f, &err) == SG_EINVAL, "%s accepted", bad[i]);
    SG_CHECK_CONTAINS(err.msg, bad[i]);
  }
  /* A bad per-request header is a bad request naming the header. */
  sg_llm_server *s = start_default();
  resp r = {0};
  http(s, "/v1/chat/completions", CHAT(""), "X-Specgen-Fault: explode", NULL, &r);
  SG_CHECK_EQ_INT(r.status, 400);
  SG_CHECK_CONTAINS(sg_buf_str(&r.body), "X-Specgen-Fault");
  resp_free(&r);
  stop(s);
}

/* ---- cancellation ---- */

static void client_disconnect_stops_the_generation(void) {
  sg_llm_server_opts o;
  sg_llm_server_opts_init(&o);
  o.tokens_per_s = 400; /* 600+ tokens: at least 1.5 s if nobody stopped it */
  o.reasoning_tokens_min = 600;
  o.reasoning_tokens_max = 700;
  sg_llm_server *s = start(&o);
  resp r = {0};
  r.stop_after_events = 3;
  http(s, "/v1/chat/completions", CHAT(", \"stream\": true"), NULL, NULL, &r);
  SG_CHECK(r.rc == CURLE_WRITE_ERROR);
  wait_for(s, one_cancelled_none_active, "the server to notice the client left");
  sg_llm_server_stats st;
  sg_llm_server_stats_get(s, &st);
  SG_CHECK_MSG(st.tokens_generated < 100, "%llu tokens generated after the client left",
               (unsigned long long)st.tokens_generated);
  SG_CHECK_EQ_INT(st.generations_completed, 0);
  resp_free(&r);
  stop(s);
}

typedef struct bg {
  sg_llm_server *s;
  const char *body;
  const char *h1;
  resp r;
} bg;

static void *bg_run(void *arg) {
  bg *b = arg;
  http(b->s, "/v1/chat/completions", b->body, b->h1, NULL, &b->r);
  return NULL;
}

static bool generating(const sg_llm_server_stats *st) {
  return st->generations_active == 1 && st->tokens_generated >= 5;
}

/* Contention (opts.concurrency C): with n > C streams live each goes at
 * rate x C / n. Two streams of 400 tokens at 400 tokens/s: with C = 1 they
 * share the rate (each takes about 2 s, its pace a lower bound), with C = 2
 * each keeps it (about 1 s; 1.8 s of slack for a busy machine). */
static void contention_two_streams(int concurrency, double *slowest_s) {
  sg_llm_server_opts o;
  sg_llm_server_opts_init(&o);
  o.tokens_per_s = 400;
  o.concurrency = concurrency;
  o.reasoning_tokens_min = 600;
  o.reasoning_tokens_max = 700;
  sg_llm_server *s = start(&o);
  bg b[2];
  pthread_t th[2];
  for (int i = 0; i < 2; i++) {
    memset(&b[i], 0, sizeof b[i]);
    b[i].s = s;
    b[i].body = CHAT(", \"max_tokens\": 400, \"stream\": true");
    SG_CHECK(pthread_create(&th[i], NULL, bg_run, &b[i]) == 0);
  }
  *slowest_s = 0;
  for (int i = 0; i < 2; i++) {
    pthread_join(th[i], NULL);
    SG_CHECK_EQ_INT(b[i].r.status, 200);
    if (b[i].r.total_s > *slowest_s)
      *slowest_s = b[i].r.total_s;
    resp_free(&b[i].r);
  }
  stop(s);
}

static void concurrency_slows_the_streams_beyond_it(void) {
  double one = 0, two = 0;
  contention_two_streams(1, &one);
  SG_CHECK_MSG(one >= 1.9, "C = 1: the slower of two streams took %.2f s, want >= 1.9", one);
  contention_two_streams(2, &two);
  SG_CHECK_MSG(two >= 0.95 && two < 1.8, "C = 2: the slower took %.2f s, want about 1",
               two);
  sg_llm_server_opts o;
  sg_llm_server_opts_init(&o);
  o.concurrency = -1;
  sg_llm_server *bad = NULL;
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_EQ_INT(sg_llm_server_start(&o, &bad, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "concurrency");
}

static void abort_by(const char *body, const char *h1, const char *abort_body) {
  sg_llm_server_opts o;
  sg_llm_server_opts_init(&o);
  o.tokens_per_s = 300;
  o.reasoning_tokens_min = 600;
  o.reasoning_tokens_max = 700;
  sg_llm_server *s = start(&o);
  bg b = {.s = s, .body = body, .h1 = h1};
  pthread_t th;
  SG_CHECK(pthread_create(&th, NULL, bg_run, &b) == 0);
  wait_for(s, generating, "the generation to start");
  resp r = {0};
  http(s, "/metrics", NULL, NULL, NULL, &r);
  SG_CHECK_CONTAINS(sg_buf_str(&r.body), "vllm:num_requests_running{model_name=\"specgen-test\"} 1\n");
  resp_free(&r);
  http(s, "/abort_request", abort_body, NULL, NULL, &r);
  SG_CHECK_EQ_INT(r.status, 200);
  json_t *j = body_json(&r);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(j, "aborted")), 1);
  json_decref(j);
  resp_free(&r);
  pthread_join(th, NULL);
  stream st;
  parse_stream(&b.r, &st);
  const char *finish = NULL;
  sg_buf rb, cb;
  sg_buf_init(&rb, 0), sg_buf_init(&cb, 0);
  stream_text(&st, "reasoning_content", &rb, &cb, &finish);
  SG_CHECK_STR_EQ(finish, "abort");
  SG_CHECK(st.done);
  SG_CHECK_EQ_INT(cb.len, 0); /* stopped while still reasoning */
  sg_llm_server_stats ss;
  sg_llm_server_stats_get(s, &ss);
  SG_CHECK_EQ_INT(ss.abort_requests, 1);
  SG_CHECK_EQ_INT(ss.generations_aborted, 1);
  SG_CHECK_EQ_INT(ss.generations_completed, 0);
  SG_CHECK(ss.tokens_generated < 600);
  sg_buf_free(&rb), sg_buf_free(&cb);
  stream_free(&st);
  resp_free(&b.r);
  stop(s);
}

static void abort_request_stops_the_generation_by_rid(void) {
  abort_by(CHAT(", \"stream\": true, \"rid\": \"job-1\""), NULL, "{\"rid\": \"job-1\"}");
}

static void abort_request_matches_the_request_id_header(void) {
  abort_by(CHAT(", \"stream\": true"), "X-Request-Id: hdr-2", "{\"rid\": \"hdr-2\"}");
}

static bool four_generating(const sg_llm_server_stats *st) {
  return st->generations_active >= 4 && st->tokens_generated >= 40;
}

static bool all_done_8(const sg_llm_server_stats *st) {
  return st->generations_active == 0 && st->generations_completed + st->generations_aborted == 8;
}

/* Eight streams at once, four of them aborted by id: the live list, the
 * counters and the prefix cache stay consistent under concurrency. */
static void concurrent_streams_and_aborts_stay_consistent(void) {
  sg_llm_server_opts o;
  sg_llm_server_opts_init(&o);
  o.tokens_per_s = 300;
  o.reasoning_tokens_min = 600;
  o.reasoning_tokens_max = 700;
  sg_llm_server *s = start(&o);
  bg b[8];
  char *bodies[8];
  pthread_t th[8];
  for (int i = 0; i < 8; i++) {
    bool long_one = i < 4;
    bodies[i] = sg_asprintf("{\"model\": \"m\", \"stream\": true, \"rid\": \"c%d\",%s "
                            "\"messages\": [{\"role\": \"user\", \"content\": \"toy_add %d\"}]}",
                            i, long_one ? "" : " \"max_tokens\": 30,", i);
    memset(&b[i], 0, sizeof b[i]);
    b[i].s = s;
    b[i].body = bodies[i];
    if (i == 4)
      wait_for(s, four_generating, "the long streams to start");
    SG_CHECK(pthread_create(&th[i], NULL, bg_run, &b[i]) == 0);
  }
  for (int i = 0; i < 4; i++) {
    char ab[64];
    snprintf(ab, sizeof ab, "{\"rid\": \"c%d\"}", i);
    resp r = {0};
    http(s, "/abort_request", ab, NULL, NULL, &r);
    SG_CHECK_EQ_INT(r.status, 200);
    resp_free(&r);
  }
  for (int i = 0; i < 8; i++)
    pthread_join(th[i], NULL);
  wait_for(s, all_done_8, "all eight to end");
  for (int i = 0; i < 8; i++) {
    stream st;
    parse_stream(&b[i].r, &st);
    const char *finish = NULL;
    sg_buf rb, cb;
    sg_buf_init(&rb, 0), sg_buf_init(&cb, 0);
    stream_text(&st, "reasoning_content", &rb, &cb, &finish);
    SG_CHECK_STR_EQ(finish, i < 4 ? "abort" : "length");
    SG_CHECK(st.done);
    sg_buf_free(&rb), sg_buf_free(&cb);
    stream_free(&st);
    resp_free(&b[i].r);
    free(bodies[i]);
  }
  sg_llm_server_stats ss;
  sg_llm_server_stats_get(s, &ss);
  SG_CHECK_EQ_INT(ss.generations_aborted, 4);
  SG_CHECK_EQ_INT(ss.generations_completed, 4);
  SG_CHECK_EQ_INT(ss.generations_cancelled, 0);
  stop(s);
}

static void abort_request_checks_its_body(void) {
  sg_llm_server *s = start_default();
  resp r = {0};
  http(s, "/abort_request", "{\"id\": 3}", NULL, NULL, &r);
  SG_CHECK_EQ_INT(r.status, 400);
  json_t *j = body_json(&r);
  SG_CHECK_STR_EQ(jstr(json_object_get(j, "error"), "param"), "rid");
  json_decref(j);
  resp_free(&r);
  http(s, "/abort_request", "{\"rid\": \"nobody\"}", NULL, NULL, &r);
  SG_CHECK_EQ_INT(r.status, 200);
  SG_CHECK_CONTAINS(sg_buf_str(&r.body), "\"aborted\":0");
  resp_free(&r);
  stop(s);
}

/* ---- bad requests ---- */

static void expect_error(sg_llm_server *s, const char *path, const char *body, long status,
                         const char *param, const char *in_message) {
  resp r = {0};
  http(s, path, body, NULL, NULL, &r);
  SG_CHECK_MSG(r.status == status, "%s %s: status %ld, want %ld", path, body ? body : "(GET)",
               r.status, status);
  json_t *j = body_json(&r);
  json_t *e = json_object_get(j, "error");
  SG_CHECK(json_is_object(e));
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(e, "code")), status);
  if (param)
    SG_CHECK_STR_EQ(jstr(e, "param"), param);
  if (in_message)
    SG_CHECK_CONTAINS(jstr(e, "message"), in_message);
  json_decref(j);
  resp_free(&r);
}

static void bad_requests_get_errors_naming_the_field(void) {
  sg_llm_server *s = start_default();
  const char *chat = "/v1/chat/completions";
  expect_error(s, chat, "{\"model\": ", 400, NULL, "not valid JSON");
  expect_error(s, chat, "[1, 2]", 400, NULL, "not a JSON object");
  expect_error(s, chat, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}", 400,
               "model", "model");
  expect_error(s, chat, "{\"model\": \"m\"}", 400, "messages", "messages");
  expect_error(s, chat, "{\"model\": \"m\", \"messages\": []}", 400, "messages", NULL);
  expect_error(s, chat, "{\"model\": \"m\", \"messages\": [{\"role\": \"pirate\"}]}", 400,
               "messages[0].role", NULL);
  expect_error(s, chat, "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": 5}]}",
               400, "messages[0].content", NULL);
  expect_error(s, chat, CHAT(", \"stream\": \"yes\""), 400, "stream", NULL);
  expect_error(s, chat, CHAT(", \"max_tokens\": 0"), 400, "max_tokens", NULL);
  expect_error(s, chat, CHAT(", \"n\": 2"), 400, "n", NULL);
  expect_error(s, "/v1/completions", "{\"model\": \"m\"}", 400, "prompt", NULL);
  expect_error(s, "/v1/completions", "{\"model\": \"m\", \"prompt\": [23134208, 5]}", 400,
               "prompt[1]", NULL);
  expect_error(s, "/v1/completions", "{\"model\": \"m\", \"prompt\": [\"a\", \"b\"]}", 400,
               "prompt", "batches");
  expect_error(s, "/v1/nothing", "{}", 404, NULL, "no route");
  expect_error(s, chat, NULL, 405, NULL, "POST");
  sg_llm_server_stats st;
  sg_llm_server_stats_get(s, &st);
  SG_CHECK_EQ_INT(st.generations_started, 0);
  SG_CHECK_EQ_INT(st.requests_total, 15);
  stop(s);
}

static void start_rejects_bad_options(void) {
  sg_llm_server_opts o;
  sg_llm_server *s = NULL;
  sg_err err;
  sg_llm_server_opts_init(&o);
  o.reasoning_field = "thoughts";
  SG_CHECK_EQ_INT(sg_llm_server_start(&o, &s, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "thoughts");
  sg_llm_server_opts_init(&o);
  o.host = "localhost.invalid";
  SG_CHECK_EQ_INT(sg_llm_server_start(&o, &s, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "localhost.invalid");
  sg_llm_server_opts_init(&o);
  o.tasks_root = "/nonexistent/tasks";
  SG_CHECK_EQ_INT(sg_llm_server_start(&o, &s, &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "/nonexistent/tasks");
  SG_CHECK(s == NULL);
  /* A port in use. */
  sg_llm_server *a = start_default();
  sg_llm_server_opts_init(&o);
  o.tasks_root = "";
  o.port = sg_llm_server_port(a);
  SG_CHECK_EQ_INT(sg_llm_server_start(&o, &s, &err), SG_EIO);
  SG_CHECK(s == NULL);
  stop(a);
}

/* ---- the program ---- */

static void serve_command_prints_its_address_and_stops_on_sigterm(void) {
  fixture_make();
  int out[2];
  SG_CHECK(pipe(out) == 0);
  pid_t pid = fork();
  SG_CHECK(pid >= 0);
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 2);
    execl(SG_TEST_SPECGEN, SG_TEST_SPECGEN, "llm", "serve", "--port", "0", "--tasks",
          fixture_dir, "--tokens-per-s", "0", "--seed", "5", (char *)NULL);
    _exit(127);
  }
  close(out[1]);
  FILE *f = fdopen(out[0], "r");
  char line[256] = "";
  SG_CHECK(fgets(line, sizeof line, f) != NULL);
  int port = 0;
  SG_CHECK_MSG(sscanf(line, "listening on http://127.0.0.1:%d", &port) == 1, "first line: %s",
               line);
  /* A request through it, with a stand-in server handle for the helper. */
  CURL *c = curl_easy_init();
  char *url = sg_asprintf("http://127.0.0.1:%d/v1/models", port);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  resp r = {0};
  sg_buf_init(&r.body, 0);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
  SG_CHECK_EQ_INT(curl_easy_perform(c), CURLE_OK);
  SG_CHECK_CONTAINS(sg_buf_str(&r.body), "specgen-test");
  curl_easy_cleanup(c);
  free(url);
  sg_buf_free(&r.body);
  SG_CHECK(kill(pid, SIGTERM) == 0);
  int st;
  SG_CHECK(waitpid(pid, &st, 0) == pid);
  SG_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  SG_CHECK(fgets(line, sizeof line, f) != NULL);
  SG_CHECK_CONTAINS(line, "stopped: 1 requests");
  fclose(f);
  fixture_remove();
}

static void serve_command_json_reports_address_and_counters(void) {
  fixture_make();
  int out[2];
  SG_CHECK(pipe(out) == 0);
  pid_t pid = fork();
  SG_CHECK(pid >= 0);
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    execl(SG_TEST_SPECGEN, SG_TEST_SPECGEN, "llm", "serve", "--json", "--tasks", fixture_dir,
          (char *)NULL);
    _exit(127);
  }
  close(out[1]);
  FILE *f = fdopen(out[0], "r");
  char line[512] = "";
  SG_CHECK(fgets(line, sizeof line, f) != NULL);
  json_t *j = json_loads(line, 0, NULL);
  SG_CHECK_MSG(j != NULL, "not JSON: %s", line);
  SG_CHECK(strncmp(jstr(j, "listening"), "http://127.0.0.1:", 17) == 0);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(j, "tasks")), 2);
  json_decref(j);
  SG_CHECK(kill(pid, SIGINT) == 0);
  int st;
  SG_CHECK(waitpid(pid, &st, 0) == pid);
  SG_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  SG_CHECK(fgets(line, sizeof line, f) != NULL);
  j = json_loads(line, 0, NULL);
  SG_CHECK_MSG(j != NULL, "not JSON: %s", line);
  SG_CHECK_STR_EQ(jstr(j, "stopped_by"), "SIGINT");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(j, "requests_total")), 0);
  json_decref(j);
  fclose(f);
  fixture_remove();
}

static int run_specgen(const char *a1, const char *a2, char *err_out, size_t n) {
  int pe[2];
  SG_CHECK(pipe(pe) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pe[1], 2);
    close(pe[0]);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    execl(SG_TEST_SPECGEN, SG_TEST_SPECGEN, "llm", "serve", a1, a2, (char *)NULL);
    _exit(127);
  }
  close(pe[1]);
  ssize_t k = read(pe[0], err_out, n - 1);
  err_out[k > 0 ? k : 0] = '\0';
  close(pe[0]);
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void serve_command_rejects_bad_flags_naming_them(void) {
  char e[512];
  SG_CHECK_EQ_INT(run_specgen("--reasoning-field", "thoughts", e, sizeof e), 2);
  SG_CHECK_CONTAINS(e, "--reasoning-field");
  SG_CHECK_EQ_INT(run_specgen("--fault", "explode", e, sizeof e), 2);
  SG_CHECK_CONTAINS(e, "--fault");
  SG_CHECK_EQ_INT(run_specgen("--port", "70000", e, sizeof e), 2);
  SG_CHECK_CONTAINS(e, "--port");
  SG_CHECK_EQ_INT(run_specgen("--tasks", "/nonexistent/tasks", e, sizeof e), 2);
  SG_CHECK_CONTAINS(e, "/nonexistent/tasks");
  SG_CHECK_EQ_INT(run_specgen("--help", NULL, e, sizeof e), 0);
}

SG_TEST_MAIN(SG_TEST(requests_render_prompt_context_and_thinking),
             SG_TEST(request_fields_are_read), SG_TEST(models_lists_the_model),
             SG_TEST(chat_stream_sends_reasoning_then_content_then_usage),
             SG_TEST(stream_without_include_usage_has_no_usage_event),
             SG_TEST(reasoning_field_option_names_the_delta_field),
             SG_TEST(nonstreaming_chat_matches_the_stream_and_has_usage),
             SG_TEST(completions_take_a_string_or_token_ids),
             SG_TEST(tokenize_and_detokenize_round_trip),
             SG_TEST(return_token_ids_gives_ids_that_decode_to_the_text),
             SG_TEST(cached_tokens_count_the_shared_prefix_in_blocks_of_16),
             SG_TEST(fork_prompts_hit_the_cache_for_generated_tokens),
             SG_TEST(cached_prompt_gets_its_first_token_sooner),
             SG_TEST(same_seed_gives_the_same_bytes),
             SG_TEST(thinking_off_answers_at_once_with_a_kernel),
             SG_TEST(forks_with_the_reasoning_prefix_write_valid_kernels),
             SG_TEST(continued_final_message_resumes_the_reasoning),
             SG_TEST(think_tags_in_a_continued_message_are_its_reasoning),
             SG_TEST(continued_answer_in_an_open_block_goes_on_with_the_code),
             SG_TEST(max_tokens_stops_with_length),
             SG_TEST(fault_disconnect_closes_after_n_chunks),
             SG_TEST(fault_disconnect_for_the_first_streams_only),
             SG_TEST(fault_status429_fails_the_first_attempts_of_a_request),
             SG_TEST(fault_status500_from_the_server_options),
             SG_TEST(fault_stall_pauses_mid_stream_then_resumes),
             SG_TEST(fault_stall_ends_when_the_client_gives_up),
             SG_TEST(fault_malformed_sends_one_chunk_that_is_not_json),
             SG_TEST(fault_slow_first_byte_delays_the_response),
             SG_TEST(fault_error_in_stream_sends_an_error_chunk),
             SG_TEST(fault_specs_are_checked),
             SG_TEST(faults_apply_to_nonstreaming_answers),
             SG_TEST(client_leaving_before_a_slow_first_byte_is_counted),
             SG_TEST(client_disconnect_stops_the_generation),
             SG_TEST(concurrency_slows_the_streams_beyond_it),
             SG_TEST(abort_request_stops_the_generation_by_rid),
             SG_TEST(abort_request_matches_the_request_id_header),
             SG_TEST(concurrent_streams_and_aborts_stay_consistent),
             SG_TEST(abort_request_checks_its_body),
             SG_TEST(bad_requests_get_errors_naming_the_field),
             SG_TEST(start_rejects_bad_options),
             SG_TEST(serve_command_prints_its_address_and_stops_on_sigterm),
             SG_TEST(serve_command_json_reports_address_and_counters),
             SG_TEST(serve_command_rejects_bad_flags_naming_them))
