/* test_client.c: the streaming LLM client against the test server over real
 * loopback HTTP, with every fault the server can inject.
 *
 * The server (sg_llm_server) runs in-process on its own threads; the client
 * runs on a libuv loop in the test's thread. Every loop run is bounded by the
 * requests' own deadlines and by a guard timer.
 */
#include "llm/sg_llm_client.h"
#include "llm/sg_llm_generate.h"
#include "testserver/sg_llm_server.h"
#include "sg_test.h"

#include "common/sg_buf.h"
#include "common/sg_clock.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <uv.h>

typedef struct outcome {
  sg_buf reasoning, content;
  int ended;           /* terminal callbacks seen */
  int finished;        /* ... of which on_finish */
  int code;
  char message[2048];
  char finish_reason[32];
  char reasoning_field[32];
  sg_llm_usage usage;
  bool usage_estimated;
  int attempts;
  double ttft_s, elapsed_s;
  size_t prompt_ids, completion_ids;
  int usage_calls;
  int deltas;          /* reasoning + content callbacks */
  int cancel_after;    /* cancel the stream in the delta callback number N */
  bool cancelled;
  uint64_t keepalives;
} outcome;

static void outcome_init(outcome *o) {
  memset(o, 0, sizeof *o);
  sg_buf_init(&o->reasoning, 0);
  sg_buf_init(&o->content, 0);
  o->code = 999;
}

static void maybe_cancel(sg_llm_stream *s, outcome *o) {
  o->deltas++;
  if (o->cancel_after > 0 && o->deltas == o->cancel_after) {
    o->cancelled = true;
    sg_llm_stream_cancel(s);
  }
}

static void on_reasoning(sg_llm_stream *s, void *d, const char *t, size_t n) {
  outcome *o = d;
  SG_CHECK(!o->cancelled);
  sg_buf_append(&o->reasoning, t, n);
  maybe_cancel(s, o);
}

static void on_content(sg_llm_stream *s, void *d, const char *t, size_t n) {
  outcome *o = d;
  SG_CHECK(!o->cancelled);
  sg_buf_append(&o->content, t, n);
  maybe_cancel(s, o);
}

static void on_ids(sg_llm_stream *s, void *d, bool prompt, const int32_t *ids,
                   size_t n) {
  (void)s;
  (void)ids;
  outcome *o = d;
  SG_CHECK(!o->cancelled);
  if (prompt)
    o->prompt_ids += n;
  else
    o->completion_ids += n;
}

static void on_usage(sg_llm_stream *s, void *d, const sg_llm_usage *u) {
  (void)s;
  (void)u;
  outcome *o = d;
  SG_CHECK(!o->cancelled);
  o->usage_calls++;
}

static void on_end(outcome *o, const sg_llm_result *r) {
  SG_CHECK(!o->cancelled);
  SG_CHECK_EQ_INT(o->ended, 0);
  o->ended++;
  o->code = r->code;
  snprintf(o->message, sizeof o->message, "%s", r->message);
  snprintf(o->finish_reason, sizeof o->finish_reason, "%s", r->finish_reason);
  snprintf(o->reasoning_field, sizeof o->reasoning_field, "%s", r->reasoning_field);
  o->usage = r->usage;
  o->usage_estimated = r->usage_estimated;
  o->attempts = r->attempts;
  o->ttft_s = r->ttft_s;
  o->elapsed_s = r->elapsed_s;
  o->keepalives = r->keepalive_comments;
}

static void on_finish(sg_llm_stream *s, void *d, const sg_llm_result *r) {
  (void)s;
  outcome *o = d;
  SG_CHECK_EQ_INT(r->code, 0);
  o->finished++;
  on_end(o, r);
}

static void on_error(sg_llm_stream *s, void *d, const sg_llm_result *r) {
  (void)s;
  SG_CHECK(r->code < 0);
  on_end(d, r);
}

static sg_llm_callbacks callbacks_for(outcome *o) {
  sg_llm_callbacks cb = {o,      on_reasoning, on_content, on_ids,
                         on_usage, on_finish,  on_error};
  return cb;
}

/* ---- fixture ---- */

static sg_llm_server *g_server;
static char g_base[64];

static void server_start(double tokens_per_s, int rmin, int rmax,
                         const char *reasoning_field) {
  sg_llm_server_opts so;
  sg_llm_server_opts_init(&so);
  so.tokens_per_s = tokens_per_s;
  so.prefill_tokens_per_s = 0;
  so.reasoning_tokens_min = rmin;
  so.reasoning_tokens_max = rmax;
  so.reasoning_field = reasoning_field;
  sg_err err;
  SG_CHECK_OK(sg_llm_server_start(&so, &g_server, &err), err);
  snprintf(g_base, sizeof g_base, "http://127.0.0.1:%d", sg_llm_server_port(g_server));
}

static const sg_llm_message k_msgs[] = {
    {"system", "You write fast CUDA kernels.", NULL, false},
    {"user", "Write a kernel for the hinge loss.", NULL, false},
};

static void request_for(sg_llm_request *r) {
  sg_llm_request_init(r);
  r->base_url = g_base;
  r->model = "specgen-test";
  r->messages = k_msgs;
  r->n_messages = 2;
  r->max_tokens = 4096;
  r->deadline_s = 20;
  r->idle_timeout_s = 10;
  r->backoff_base_s = 0.05;
  r->backoff_max_s = 0.2;
}

static void guard_cb(uv_timer_t *t) { uv_stop(t->loop); }

/* Runs the loop until no stream is left (or a 30 s guard). */
static void run_until_idle(uv_loop_t *loop, sg_llm_client *c) {
  uv_timer_t guard;
  uv_timer_init(loop, &guard);
  uv_timer_start(&guard, guard_cb, 30000, 0);
  for (int i = 0; i < 100000 && sg_llm_client_active(c) > 0; i++)
    uv_run(loop, UV_RUN_ONCE);
  SG_CHECK_MSG(sg_llm_client_active(c) == 0, "streams still active at the guard");
  uv_close((uv_handle_t *)&guard, NULL);
  uv_run(loop, UV_RUN_NOWAIT);
}

static void client_close(uv_loop_t *loop, sg_llm_client *c) {
  sg_llm_client_destroy(c);
  uv_run(loop, UV_RUN_DEFAULT);
  SG_CHECK_EQ_INT(uv_loop_close(loop), 0);
}

/* One request with the header `X-Specgen-Fault: fault` (NULL: none). */
static void run_one(sg_llm_request *r, const char *fault, outcome *o) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  sg_llm_client *c;
  sg_err err;
  SG_CHECK_OK(sg_llm_client_new(&loop, NULL, &c, &err), err);
  char hdr[128];
  const char *hdrs[1];
  if (fault) {
    snprintf(hdr, sizeof hdr, "X-Specgen-Fault: %s", fault);
    hdrs[0] = hdr;
    r->headers = hdrs;
    r->n_headers = 1;
  }
  sg_llm_callbacks cb = callbacks_for(o);
  SG_CHECK_OK(sg_llm_stream_start(c, r, &cb, NULL, &err), err);
  run_until_idle(&loop, c);
  client_close(&loop, c);
  r->headers = NULL;
  r->n_headers = 0;
}

static void stats(sg_llm_server_stats *st) { sg_llm_server_stats_get(g_server, st); }

/* ---- tests ---- */

static void test_client_streams_reasoning_then_content(void) {
  server_start(0, 30, 60, "reasoning_content");
  sg_llm_request r;
  request_for(&r);
  outcome o;
  outcome_init(&o);
  run_one(&r, NULL, &o);
  SG_CHECK_MSG(o.code == 0, "error: %s", o.message);
  SG_CHECK_EQ_INT(o.finished, 1);
  SG_CHECK(o.reasoning.len > 0);
  SG_CHECK(o.content.len > 0);
  SG_CHECK_STR_EQ(o.reasoning_field, "reasoning_content");
  SG_CHECK_STR_EQ(o.finish_reason, "stop");
  SG_CHECK(!o.usage_estimated);
  SG_CHECK(o.usage.prompt_tokens > 0);
  SG_CHECK(o.usage.completion_tokens > 0);
  SG_CHECK_EQ_INT(o.usage_calls, 1);
  SG_CHECK_EQ_INT(o.attempts, 1);
  SG_CHECK(o.ttft_s >= 0 && o.ttft_s <= o.elapsed_s);
  sg_llm_server_stats st;
  stats(&st);
  SG_CHECK_EQ_INT(st.tokens_generated, o.usage.completion_tokens);
  SG_CHECK_EQ_INT(st.generations_completed, 1);
  sg_llm_server_stop(g_server);
}

static void test_client_reads_reasoning_field_too(void) {
  server_start(0, 20, 30, "reasoning");
  sg_llm_request r;
  request_for(&r);
  outcome o;
  outcome_init(&o);
  run_one(&r, NULL, &o);
  SG_CHECK_MSG(o.code == 0, "error: %s", o.message);
  SG_CHECK_STR_EQ(o.reasoning_field, "reasoning");
  SG_CHECK(o.reasoning.len > 0);
  sg_llm_server_stop(g_server);
}

static void test_client_completions_endpoint_with_token_ids(void) {
  server_start(0, 20, 30, NULL);
  sg_llm_request r;
  request_for(&r);
  r.provider = sg_llm_provider_get("vllm");
  r.endpoint = SG_LLM_ENDPOINT_COMPLETIONS;
  r.prompt = "<|user|>Write a kernel for the hinge loss.<|assistant|>";
  r.return_token_ids = true;
  outcome o;
  outcome_init(&o);
  run_one(&r, NULL, &o);
  SG_CHECK_MSG(o.code == 0, "error: %s", o.message);
  SG_CHECK(o.content.len + o.reasoning.len > 0);
  SG_CHECK(o.prompt_ids > 0);
  SG_CHECK_EQ_INT((int64_t)o.completion_ids, o.usage.completion_tokens);
  SG_CHECK_EQ_INT((int64_t)o.prompt_ids, o.usage.prompt_tokens);
  sg_llm_server_stop(g_server);
}

static void test_client_disconnect_mid_stream_is_error_without_retry(void) {
  server_start(0, 30, 60, NULL);
  sg_llm_request r;
  request_for(&r);
  outcome o;
  outcome_init(&o);
  run_one(&r, "disconnect:6", &o);
  SG_CHECK_EQ_INT(o.code, SG_ECONN);
  SG_CHECK_CONTAINS(o.message, "stream ended before the generation finished");
  SG_CHECK_EQ_INT(o.attempts, 1); /* output had started: never retried */
  SG_CHECK(o.usage_estimated);
  SG_CHECK(o.usage.completion_tokens > 0);
  SG_CHECK_EQ_INT(o.usage.completion_tokens, o.deltas);
  sg_llm_server_stats st;
  stats(&st);
  SG_CHECK_EQ_INT(st.generations_started, 1);
  sg_llm_server_stop(g_server);
}

static void test_client_retries_429_honouring_retry_after(void) {
  server_start(0, 20, 30, NULL);
  sg_llm_request r;
  request_for(&r);
  r.request_id = "req-429";
  outcome o;
  outcome_init(&o);
  run_one(&r, "status429:1:1", &o);
  SG_CHECK_MSG(o.code == 0, "error: %s", o.message);
  SG_CHECK_EQ_INT(o.attempts, 2);
  /* The backoff alone is at most 0.05 s; the server asked for 1 s. */
  SG_CHECK_MSG(o.elapsed_s >= 1.0, "retried after %.3f s", o.elapsed_s);
  sg_llm_server_stop(g_server);
}

static void test_client_retries_500_then_succeeds(void) {
  server_start(0, 20, 30, NULL);
  sg_llm_request r;
  request_for(&r);
  outcome o;
  outcome_init(&o);
  run_one(&r, "status500:2", &o);
  SG_CHECK_MSG(o.code == 0, "error: %s", o.message);
  SG_CHECK_EQ_INT(o.attempts, 3);
  SG_CHECK(o.content.len > 0);
  /* Equal jitter: the waits are at least 0.025 s then 0.05 s. */
  SG_CHECK_MSG(o.elapsed_s >= 0.075, "retried after %.3f s", o.elapsed_s);
  sg_llm_server_stop(g_server);
}

static void test_client_gives_up_after_max_retries_with_server_message(void) {
  server_start(0, 20, 30, NULL);
  sg_llm_request r;
  request_for(&r);
  r.max_retries = 2;
  outcome o;
  outcome_init(&o);
  run_one(&r, "status500", &o);
  SG_CHECK_EQ_INT(o.code, SG_EHTTP);
  SG_CHECK_EQ_INT(o.attempts, 3);
  SG_CHECK_CONTAINS(o.message, "HTTP 500: ");
  SG_CHECK_EQ_INT(o.deltas, 0);
  sg_llm_server_stop(g_server);
}

static void test_client_no_retry_when_disabled(void) {
  server_start(0, 20, 30, NULL);
  sg_llm_request r;
  request_for(&r);
  r.max_retries = -1;
  outcome o;
  outcome_init(&o);
  run_one(&r, "status429:0", &o);
  SG_CHECK_EQ_INT(o.code, SG_EHTTP);
  SG_CHECK_EQ_INT(o.attempts, 1);
  SG_CHECK_CONTAINS(o.message, "HTTP 429");
  sg_llm_server_stop(g_server);
}

static void test_client_stall_hits_idle_timeout(void) {
  server_start(0, 30, 60, NULL);
  sg_llm_request r;
  request_for(&r);
  r.idle_timeout_s = 0.4;
  outcome o;
  outcome_init(&o);
  run_one(&r, "stall:30:4", &o);
  SG_CHECK_EQ_INT(o.code, SG_ETIMEDOUT);
  SG_CHECK_CONTAINS(o.message, "idle timeout");
  SG_CHECK(o.elapsed_s >= 0.4 && o.elapsed_s < 5);
  SG_CHECK(o.deltas > 0);
  sg_llm_server_stop(g_server);
}

static void test_client_malformed_chunk_is_clear_error(void) {
  server_start(0, 30, 60, NULL);
  sg_llm_request r;
  request_for(&r);
  outcome o;
  outcome_init(&o);
  run_one(&r, "malformed:3", &o);
  SG_CHECK_EQ_INT(o.code, SG_EPARSE);
  SG_CHECK_CONTAINS(o.message, "malformed chunk");
  SG_CHECK_EQ_INT(o.attempts, 1);
  sg_llm_server_stop(g_server);
}

static void test_client_error_object_mid_stream(void) {
  server_start(0, 30, 60, NULL);
  sg_llm_request r;
  request_for(&r);
  outcome o;
  outcome_init(&o);
  run_one(&r, "error_in_stream:3", &o);
  SG_CHECK_EQ_INT(o.code, SG_EHTTP);
  SG_CHECK_CONTAINS(o.message, "server error in stream: ");
  sg_llm_server_stop(g_server);
}

static void test_client_slow_first_byte_past_deadline_times_out(void) {
  server_start(0, 20, 30, NULL);
  sg_llm_request r;
  request_for(&r);
  r.deadline_s = 0.6;
  outcome o;
  outcome_init(&o);
  run_one(&r, "slow_first_byte:3", &o);
  SG_CHECK_EQ_INT(o.code, SG_ETIMEDOUT);
  SG_CHECK_CONTAINS(o.message, "deadline of 0.6 s passed");
  SG_CHECK(o.elapsed_s >= 0.6 && o.elapsed_s < 2.5);
  sg_llm_server_stop(g_server);
}

static void test_client_slow_first_byte_within_deadline_succeeds(void) {
  server_start(0, 20, 30, NULL);
  sg_llm_request r;
  request_for(&r);
  r.deadline_s = 10;
  outcome o;
  outcome_init(&o);
  run_one(&r, "slow_first_byte:0.5", &o);
  SG_CHECK_MSG(o.code == 0, "error: %s", o.message);
  SG_CHECK_MSG(o.ttft_s >= 0.5, "ttft %.3f", o.ttft_s);
  sg_llm_server_stop(g_server);
}

static void wait_for_stat(uint64_t *(*field)(sg_llm_server_stats *), uint64_t want) {
  for (int i = 0; i < 300; i++) {
    sg_llm_server_stats st;
    stats(&st);
    if (*field(&st) >= want)
      return;
    usleep(10000);
  }
  SG_FAIL("server counter did not reach %llu in 3 s", (unsigned long long)want);
}

static uint64_t *f_cancelled(sg_llm_server_stats *s) { return &s->generations_cancelled; }
static uint64_t *f_abort_requests(sg_llm_server_stats *s) { return &s->abort_requests; }

static void test_client_cancel_mid_stream_stops_generation(void) {
  server_start(200, 2000, 2000, NULL);
  sg_llm_request r;
  request_for(&r);
  outcome o;
  outcome_init(&o);
  o.cancel_after = 5;
  run_one(&r, NULL, &o);
  SG_CHECK(o.cancelled);
  SG_CHECK_EQ_INT(o.ended, 0);  /* no terminal callback after a cancel */
  SG_CHECK_EQ_INT(o.deltas, 5); /* and no delta either */
  wait_for_stat(f_cancelled, 1);
  sg_llm_server_stats st;
  stats(&st);
  SG_CHECK(st.tokens_generated < 2000);
  SG_CHECK_EQ_INT(st.generations_completed, 0);
  SG_CHECK_EQ_INT(st.abort_requests, 0); /* generic profile: no abort call */
  sg_llm_server_stop(g_server);
}

static void test_client_sglang_cancel_posts_abort_request(void) {
  server_start(200, 2000, 2000, NULL);
  sg_llm_request r;
  request_for(&r);
  r.provider = sg_llm_provider_get("sglang");
  r.request_id = "rid-cancel-1";
  outcome o;
  outcome_init(&o);
  o.cancel_after = 3;
  run_one(&r, NULL, &o);
  SG_CHECK(o.cancelled);
  SG_CHECK_EQ_INT(o.ended, 0);
  wait_for_stat(f_abort_requests, 1);
  sg_llm_server_stats st;
  stats(&st);
  SG_CHECK_EQ_INT(st.abort_requests, 1);
  SG_CHECK_EQ_INT(st.generations_completed, 0);
  sg_llm_server_stop(g_server);
}

static void cancel_other(sg_llm_stream *s, void *d, const char *t, size_t n) {
  (void)t;
  (void)n;
  sg_llm_stream **other = d;
  if (*other) {
    sg_llm_stream_cancel(*other);
    *other = NULL;
  }
  (void)s;
}

static void test_client_cancel_other_stream_from_callback(void) {
  server_start(100, 400, 400, NULL);
  uv_loop_t loop;
  uv_loop_init(&loop);
  sg_llm_client *c;
  sg_err err;
  SG_CHECK_OK(sg_llm_client_new(&loop, NULL, &c, &err), err);
  sg_llm_request r;
  request_for(&r);
  outcome victim;
  outcome_init(&victim);
  sg_llm_callbacks vcb = callbacks_for(&victim);
  sg_llm_stream *vs;
  SG_CHECK_OK(sg_llm_stream_start(c, &r, &vcb, &vs, &err), err);
  sg_llm_stream *target = vs;
  sg_llm_callbacks kcb = {0};
  kcb.data = &target;
  kcb.on_reasoning = cancel_other;
  r.max_tokens = 4096;
  SG_CHECK_OK(sg_llm_stream_start(c, &r, &kcb, NULL, &err), err);
  /* The killer's first reasoning delta cancels the victim; then cancel the
   * killer too, once the victim is gone. */
  uv_timer_t guard;
  uv_timer_init(&loop, &guard);
  uv_timer_start(&guard, guard_cb, 20000, 0);
  for (int i = 0; i < 100000 && sg_llm_client_active(c) == 2; i++)
    uv_run(&loop, UV_RUN_ONCE);
  SG_CHECK(target == NULL);
  SG_CHECK_EQ_INT(sg_llm_client_active(c), 1);
  SG_CHECK_EQ_INT(victim.ended, 0);
  uv_close((uv_handle_t *)&guard, NULL);
  client_close(&loop, c);
  sg_llm_server_stop(g_server);
}

typedef struct many {
  int finished, failed;
} many;

static void many_finish(sg_llm_stream *s, void *d, const sg_llm_result *r) {
  (void)s;
  (void)r;
  ((many *)d)->finished++;
}

static void many_error(sg_llm_stream *s, void *d, const sg_llm_result *r) {
  (void)s;
  fprintf(stdout, "# stream failed: %s\n", r->message);
  ((many *)d)->failed++;
}

static void test_client_many_concurrent_streams_one_loop(void) {
  server_start(100, 40, 60, NULL);
  uv_loop_t loop;
  uv_loop_init(&loop);
  sg_llm_client *c;
  sg_err err;
  SG_CHECK_OK(sg_llm_client_new(&loop, NULL, &c, &err), err);
  many m = {0, 0};
  sg_llm_callbacks cb = {0};
  cb.data = &m;
  cb.on_finish = many_finish;
  cb.on_error = many_error;
  sg_llm_request r;
  request_for(&r);
  r.max_tokens = 80;
  enum { N = 64 };
  for (int i = 0; i < N; i++)
    SG_CHECK_OK(sg_llm_stream_start(c, &r, &cb, NULL, &err), err);
  SG_CHECK_EQ_INT(sg_llm_client_active(c), N);
  int64_t t0 = sg_clock_now_us();
  run_until_idle(&loop, c);
  double wall_s = (double)(sg_clock_now_us() - t0) / 1e6;
  SG_CHECK_EQ_INT(m.failed, 0);
  SG_CHECK_EQ_INT(m.finished, N);
  /* At 100 tokens/s each stream takes about 0.8 s; run one after another
   * they would take over 50 s. */
  SG_CHECK_MSG(wall_s < 15, "64 streams took %.1f s", wall_s);
  sg_llm_server_stats st;
  stats(&st);
  SG_CHECK_EQ_INT(st.generations_completed, N);
  client_close(&loop, c);
  sg_llm_server_stop(g_server);
}

static void test_client_connection_refused_retries_then_fails(void) {
  /* A port nobody listens on: bind, read the port, close. */
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  SG_CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
  socklen_t len = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &len);
  close(fd);
  snprintf(g_base, sizeof g_base, "http://127.0.0.1:%d", ntohs(a.sin_port));
  sg_llm_request r;
  request_for(&r);
  r.max_retries = 2;
  outcome o;
  outcome_init(&o);
  run_one(&r, NULL, &o);
  SG_CHECK_EQ_INT(o.code, SG_ECONN);
  SG_CHECK_EQ_INT(o.attempts, 3);
  SG_CHECK_CONTAINS(o.message, "connection failed");
}

/* A one-shot HTTP server that records the request and answers 500. */
typedef struct capture {
  int lfd;
  char request[8192];
} capture;

static void *capture_main(void *arg) {
  capture *cap = arg;
  int fd = accept(cap->lfd, NULL, NULL);
  if (fd < 0)
    return NULL;
  size_t n = 0;
  for (int i = 0; i < 100 && n < sizeof cap->request - 1; i++) {
    ssize_t k = read(fd, cap->request + n, sizeof cap->request - 1 - n);
    if (k <= 0)
      break;
    n += (size_t)k;
    cap->request[n] = '\0';
    char *hdr_end = strstr(cap->request, "\r\n\r\n");
    if (hdr_end && strstr(cap->request, "}"))
      break;
  }
  const char *body = "{\"error\":{\"message\":\"invalid api key given\"}}";
  char reply[512];
  snprintf(reply, sizeof reply,
           "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
           "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
           strlen(body), body);
  ssize_t w = send(fd, reply, strlen(reply), MSG_NOSIGNAL);
  (void)w;
  close(fd);
  return NULL;
}

static void test_client_api_key_sent_but_never_in_messages(void) {
  setenv("SG_TEST_LLM_KEY", "sk-test-SECRET-4242", 1);
  capture cap;
  memset(&cap, 0, sizeof cap);
  cap.lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  SG_CHECK(bind(cap.lfd, (struct sockaddr *)&a, sizeof a) == 0);
  SG_CHECK(listen(cap.lfd, 4) == 0);
  socklen_t len = sizeof a;
  getsockname(cap.lfd, (struct sockaddr *)&a, &len);
  pthread_t th;
  pthread_create(&th, NULL, capture_main, &cap);
  snprintf(g_base, sizeof g_base, "http://127.0.0.1:%d", ntohs(a.sin_port));
  uv_loop_t loop;
  uv_loop_init(&loop);
  sg_llm_client_opts co;
  sg_llm_client_opts_init(&co);
  co.api_key_env = "SG_TEST_LLM_KEY";
  sg_llm_client *c;
  sg_err err;
  SG_CHECK_OK(sg_llm_client_new(&loop, &co, &c, &err), err);
  sg_llm_request r;
  request_for(&r);
  outcome o;
  outcome_init(&o);
  sg_llm_callbacks cb = callbacks_for(&o);
  SG_CHECK_OK(sg_llm_stream_start(c, &r, &cb, NULL, &err), err);
  run_until_idle(&loop, c);
  client_close(&loop, c);
  pthread_join(th, NULL);
  close(cap.lfd);
  SG_CHECK_CONTAINS(cap.request, "Authorization: Bearer sk-test-SECRET-4242");
  SG_CHECK_EQ_INT(o.code, SG_EHTTP);
  SG_CHECK_CONTAINS(o.message, "HTTP 401: invalid api key given");
  SG_CHECK(strstr(o.message, "SECRET") == NULL);
}

static void test_client_rejects_unexpressible_request_without_callback(void) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  sg_llm_client *c;
  sg_err err;
  SG_CHECK_OK(sg_llm_client_new(&loop, NULL, &c, &err), err);
  snprintf(g_base, sizeof g_base, "http://127.0.0.1:1");
  sg_llm_request r;
  request_for(&r);
  r.provider = sg_llm_provider_get("openai");
  r.no_think = true;
  outcome o;
  outcome_init(&o);
  sg_llm_callbacks cb = callbacks_for(&o);
  sg_llm_stream *s = (sg_llm_stream *)&o;
  SG_CHECK_EQ_INT(sg_llm_stream_start(c, &r, &cb, &s, &err), SG_EUNSUPPORTED);
  SG_CHECK(s == NULL);
  SG_CHECK_EQ_INT(sg_llm_client_active(c), 0);
  uv_run(&loop, UV_RUN_NOWAIT);
  SG_CHECK_EQ_INT(o.ended, 0);
  client_close(&loop, c);
}

static void test_client_disconnect_before_output_is_retried(void) {
  server_start(0, 30, 60, NULL);
  sg_llm_request r;
  request_for(&r);
  r.max_retries = 2;
  outcome o;
  outcome_init(&o);
  /* Every attempt is cut before its first chunk: retried, then given up. */
  run_one(&r, "disconnect:0", &o);
  SG_CHECK_EQ_INT(o.code, SG_ECONN);
  SG_CHECK_EQ_INT(o.attempts, 3);
  SG_CHECK_EQ_INT(o.deltas, 0);
  sg_llm_server_stats st;
  stats(&st);
  SG_CHECK_EQ_INT(st.generations_started, 3);
  sg_llm_server_stop(g_server);
}

/* A raw server that answers 200 with an event stream of keep-alive comments
 * only, one every 50 ms, for up to 5 s. */
typedef struct keepalive_srv {
  int lfd;
} keepalive_srv;

static void *keepalive_main(void *arg) {
  keepalive_srv *k = arg;
  int fd = accept(k->lfd, NULL, NULL);
  if (fd < 0)
    return NULL;
  char req[4096];
  ssize_t n = read(fd, req, sizeof req);
  (void)n;
  const char *hdr = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    "Connection: close\r\n\r\n";
  if (send(fd, hdr, strlen(hdr), MSG_NOSIGNAL) < 0) {
    close(fd);
    return NULL;
  }
  for (int i = 0; i < 100; i++) {
    if (send(fd, ": keep-alive\n\n", 14, MSG_NOSIGNAL) < 0)
      break;
    usleep(50000);
  }
  close(fd);
  return NULL;
}

static void keepalive_run(double idle_s, double deadline_s, outcome *o) {
  keepalive_srv k;
  k.lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  SG_CHECK(bind(k.lfd, (struct sockaddr *)&a, sizeof a) == 0);
  SG_CHECK(listen(k.lfd, 4) == 0);
  socklen_t len = sizeof a;
  getsockname(k.lfd, (struct sockaddr *)&a, &len);
  pthread_t th;
  pthread_create(&th, NULL, keepalive_main, &k);
  snprintf(g_base, sizeof g_base, "http://127.0.0.1:%d", ntohs(a.sin_port));
  sg_llm_request r;
  request_for(&r);
  r.idle_timeout_s = idle_s;
  r.deadline_s = deadline_s;
  r.max_retries = -1;
  outcome_init(o);
  run_one(&r, NULL, o);
  shutdown(k.lfd, SHUT_RDWR);
  pthread_join(th, NULL);
  close(k.lfd);
}

static void test_client_keepalives_do_not_reset_idle_timer(void) {
  outcome o;
  keepalive_run(0.3, 20, &o);
  SG_CHECK_EQ_INT(o.code, SG_ETIMEDOUT);
  SG_CHECK_CONTAINS(o.message, "idle timeout");
  SG_CHECK_MSG(o.elapsed_s < 2, "took %.3f s", o.elapsed_s);
  SG_CHECK_MSG(o.keepalives >= 2, "%llu keep-alives", (unsigned long long)o.keepalives);
}

static void test_client_keepalives_do_not_extend_deadline(void) {
  outcome o;
  keepalive_run(10, 0.5, &o);
  SG_CHECK_EQ_INT(o.code, SG_ETIMEDOUT);
  SG_CHECK_CONTAINS(o.message, "deadline of 0.5 s passed");
  SG_CHECK_MSG(o.elapsed_s >= 0.5 && o.elapsed_s < 2.5, "took %.3f s", o.elapsed_s);
}

static void test_client_token_fork_hits_prefix_cache(void) {
  server_start(0, 120, 160, NULL);
  sg_err err;
  /* The main generation, with token ids (vLLM's return_token_ids). */
  sg_llm_request r;
  request_for(&r);
  r.provider = sg_llm_provider_get("vllm");
  r.return_token_ids = true;
  sg_llm_generation g;
  SG_CHECK_OK(sg_llm_generate(&r, NULL, &g, &err), err);
  SG_CHECK(g.n_prompt_ids > 0);
  SG_CHECK(g.n_completion_ids >= 64);
  SG_CHECK_EQ_INT((int64_t)g.n_prompt_ids, g.usage.prompt_tokens);
  /* /tokenize of the same messages gives the same prompt ids. */
  int32_t *tok;
  size_t ntok;
  SG_CHECK_OK(sg_llm_tokenize(g_base, "specgen-test", NULL, k_msgs, 2, true, NULL, 10,
                              &tok, &ntok, &err), err);
  SG_CHECK_EQ_INT(ntok, g.n_prompt_ids);
  SG_CHECK(memcmp(tok, g.prompt_ids, ntok * sizeof *tok) == 0);
  free(tok);
  /* The end-of-thinking tokens, exactly. */
  int32_t *end;
  size_t nend;
  SG_CHECK_OK(sg_llm_tokenize(g_base, "specgen-test", "</think>\n\n", NULL, 0, false,
                              NULL, 10, &end, &nend, &err), err);
  SG_CHECK(nend > 0);
  /* The fork: prompt ids + the first 64 reasoning ids + end of thinking. */
  size_t n;
  int32_t *ids = sg_llm_fork_token_prompt(g.prompt_ids, g.n_prompt_ids,
                                          g.completion_ids, 64, end, nend, &n);
  sg_llm_request f;
  request_for(&f);
  f.provider = sg_llm_provider_get("vllm");
  f.endpoint = SG_LLM_ENDPOINT_COMPLETIONS;
  f.prompt_token_ids = ids;
  f.n_prompt_token_ids = n;
  f.max_tokens = 32;
  sg_llm_generation fg;
  SG_CHECK_OK(sg_llm_generate(&f, NULL, &fg, &err), err);
  SG_CHECK_EQ_INT(fg.usage.prompt_tokens, (int64_t)n);
  /* Everything up to the end-of-thinking tokens is a cache hit, in whole
   * 16-token blocks. */
  int64_t shared = (int64_t)(g.n_prompt_ids + 64);
  SG_CHECK_MSG(fg.usage.cached_tokens >= shared / 16 * 16,
               "fork of %zu tokens: %lld cached, %lld shared", n,
               (long long)fg.usage.cached_tokens, (long long)shared);
  sg_llm_generation_free(&fg);
  sg_llm_generation_free(&g);
  free(ids);
  free(end);
  sg_llm_server_stop(g_server);
}

static void test_tokenize_error_names_server_message(void) {
  server_start(0, 20, 30, NULL);
  int32_t *ids;
  size_t n;
  sg_err err;
  /* Neither prompt nor messages: the server says which field is missing. */
  SG_CHECK_EQ_INT(sg_llm_tokenize(g_base, "specgen-test", NULL, NULL, 0, false, NULL,
                                  10, &ids, &n, &err), SG_EHTTP);
  SG_CHECK_CONTAINS(err.msg, "tokenize: HTTP 400");
  SG_CHECK(ids == NULL && n == 0);
  sg_llm_server_stop(g_server);
}

static void test_client_event_over_cap_is_error(void) {
  server_start(0, 20, 30, NULL);
  uv_loop_t loop;
  uv_loop_init(&loop);
  sg_llm_client_opts co;
  sg_llm_client_opts_init(&co);
  co.max_event_bytes = 64; /* every chunk of the test server is longer */
  sg_llm_client *c;
  sg_err err;
  SG_CHECK_OK(sg_llm_client_new(&loop, &co, &c, &err), err);
  sg_llm_request r;
  request_for(&r);
  outcome o;
  outcome_init(&o);
  sg_llm_callbacks cb = callbacks_for(&o);
  SG_CHECK_OK(sg_llm_stream_start(c, &r, &cb, NULL, &err), err);
  run_until_idle(&loop, c);
  client_close(&loop, c);
  SG_CHECK_EQ_INT(o.code, SG_EFULL);
  SG_CHECK_CONTAINS(o.message, "SSE event data longer than 64 bytes");
  SG_CHECK_EQ_INT(o.attempts, 1);
  sg_llm_server_stop(g_server);
}

SG_TEST_MAIN(SG_TEST(test_client_streams_reasoning_then_content),
             SG_TEST(test_client_reads_reasoning_field_too),
             SG_TEST(test_client_completions_endpoint_with_token_ids),
             SG_TEST(test_client_disconnect_mid_stream_is_error_without_retry),
             SG_TEST(test_client_retries_429_honouring_retry_after),
             SG_TEST(test_client_retries_500_then_succeeds),
             SG_TEST(test_client_gives_up_after_max_retries_with_server_message),
             SG_TEST(test_client_no_retry_when_disabled),
             SG_TEST(test_client_stall_hits_idle_timeout),
             SG_TEST(test_client_malformed_chunk_is_clear_error),
             SG_TEST(test_client_error_object_mid_stream),
             SG_TEST(test_client_slow_first_byte_past_deadline_times_out),
             SG_TEST(test_client_slow_first_byte_within_deadline_succeeds),
             SG_TEST(test_client_cancel_mid_stream_stops_generation),
             SG_TEST(test_client_sglang_cancel_posts_abort_request),
             SG_TEST(test_client_cancel_other_stream_from_callback),
             SG_TEST(test_client_many_concurrent_streams_one_loop),
             SG_TEST(test_client_connection_refused_retries_then_fails),
             SG_TEST(test_client_api_key_sent_but_never_in_messages),
             SG_TEST(test_client_rejects_unexpressible_request_without_callback),
             SG_TEST(test_client_disconnect_before_output_is_retried),
             SG_TEST(test_client_keepalives_do_not_reset_idle_timer),
             SG_TEST(test_client_keepalives_do_not_extend_deadline),
             SG_TEST(test_client_token_fork_hits_prefix_cache),
             SG_TEST(test_tokenize_error_names_server_message),
             SG_TEST(test_client_event_over_cap_is_error))
