/* test_client_replay.c: the client against replayed server streams.
 *
 * A one-connection loopback server in a thread reads the request (kept for
 * the test to inspect: headers, body) and answers with a canned HTTP reply
 * written a few bytes at a time with pauses, so SSE events and <think> tags
 * arrive cut at arbitrary points across socket reads. Streams: inline
 * reasoning as DeepSeek-R1 distills write it on servers without a reasoning
 * parser, and a stream recorded from llama.cpp's llama-server serving
 * SmolLM2-135M (tests/llm/data/llamacpp_smollm2.sse). Requests: the UUID
 * X-Request-Id and the token-limit field each profile sends.
 */
#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_file.h"
#include "llm/sg_llm_generate.h"
#include "sg_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>


typedef struct replay {
  int lfd;
  int port;
  const char *reply; /* whole HTTP reply */
  size_t reply_len;
  size_t piece;      /* bytes per write */
  sg_buf request;    /* what the client sent */
  pthread_t th;
} replay;

static void *serve(void *arg) {
  replay *rp = arg;
  int fd = accept(rp->lfd, NULL, NULL);
  if (fd < 0)
    return NULL;
  char buf[8192];
  /* Read headers and the body (Content-Length). */
  for (;;) {
    ssize_t k = read(fd, buf, sizeof buf);
    if (k <= 0)
      break;
    sg_buf_append(&rp->request, buf, (size_t)k);
    const char *s = sg_buf_str(&rp->request);
    const char *end = strstr(s, "\r\n\r\n");
    if (end) {
      const char *cl = strcasestr(s, "Content-Length:");
      size_t want = cl ? (size_t)atol(cl + 15) : 0;
      if (rp->request.len >= (size_t)(end + 4 - s) + want)
        break;
    }
  }
  for (size_t off = 0; off < rp->reply_len; off += rp->piece) {
    size_t n = rp->reply_len - off < rp->piece ? rp->reply_len - off : rp->piece;
    if (write(fd, rp->reply + off, n) < 0)
      break;
    usleep(200);
  }
  close(fd);
  return NULL;
}

static void replay_start(replay *rp, const char *reply, size_t len, size_t piece) {
  memset(rp, 0, sizeof *rp);
  sg_buf_init(&rp->request, 1u << 20);
  rp->reply = reply;
  rp->reply_len = len;
  rp->piece = piece;
  rp->lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  SG_CHECK(bind(rp->lfd, (struct sockaddr *)&a, sizeof a) == 0);
  socklen_t al = sizeof a;
  SG_CHECK(getsockname(rp->lfd, (struct sockaddr *)&a, &al) == 0);
  rp->port = ntohs(a.sin_port);
  SG_CHECK(listen(rp->lfd, 4) == 0);
  SG_CHECK(pthread_create(&rp->th, NULL, serve, rp) == 0);
}

static void replay_stop(replay *rp) {
  pthread_join(rp->th, NULL);
  close(rp->lfd);
  sg_buf_free(&rp->request);
}

/* An SSE reply whose events carry the given content deltas, then usage (or
 * not), then [DONE]. */
static char *sse_reply(const char *const *deltas, size_t n, bool usage) {
  sg_buf b;
  sg_buf_init(&b, 0);
  sg_buf_printf(&b, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    "Connection: close\r\n\r\n");
  for (size_t i = 0; i < n; i++) {
    json_t *c = json_pack("{s:[{s:i, s:{s:s}, s:n}]}", "choices", "index", 0, "delta",
                          "content", deltas[i], "finish_reason");
    char *s = json_dumps(c, JSON_COMPACT);
    sg_buf_printf(&b, "data: %s\n\n", s);
    free(s);
    json_decref(c);
  }
  sg_buf_printf(&b, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":"
                    "\"stop\"}]}\n\n");
  if (usage)
    sg_buf_printf(&b, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":21,"
                      "\"completion_tokens\":%zu,\"total_tokens\":%zu}}\n\n",
                  n, n + 21);
  sg_buf_printf(&b, "data: [DONE]\n\n");
  char *out = sg_strdup(sg_buf_str(&b));
  sg_buf_free(&b);
  return out;
}

static void request_to(sg_llm_request *q, const replay *rp, char *url, size_t cap,
                       const char *profile) {
  snprintf(url, cap, "http://127.0.0.1:%d", rp->port);
  static const sg_llm_message msg[] = {{"user", "write a kernel", NULL, false}};
  sg_llm_request_init(q);
  q->base_url = url;
  q->model = "m";
  q->messages = msg;
  q->n_messages = 1;
  q->max_tokens = 32;
  q->max_retries = -1;
  q->deadline_s = 30;
  q->provider = sg_llm_provider_get(profile);
}

static int run_replay(const char *reply, size_t piece, const char *profile, int think_mode,
                      sg_llm_generation *g, replay *rp) {
  replay_start(rp, reply, strlen(reply), piece);
  char url[64];
  sg_llm_request q;
  request_to(&q, rp, url, sizeof url, profile);
  q.think_mode = think_mode;
  sg_llm_generate_opts go;
  memset(&go, 0, sizeof go);
  sg_err err;
  int rc = sg_llm_generate(&q, &go, g, &err);
  replay_stop(rp);
  return rc;
}

/* Reasoning inline in content, tags cut across chunks and socket reads at
 * every piece size: the client hands it over as reasoning. */
static void test_inline_think_becomes_reasoning(void) {
  const char *deltas[] = {"<th", "ink>\nLet me tile", " it 16x16.</", "th", "ink",
                          ">\n\n```c\nint k;\n```"};
  char *reply = sse_reply(deltas, 6, true);
  for (size_t piece = 1; piece <= 23; piece += 2) {
    sg_llm_generation g;
    replay rp;
    int rc = run_replay(reply, piece, "llamacpp", 0, &g, &rp);
    SG_CHECK_MSG(rc == 0, "piece %zu: %s", piece, g.message);
    SG_CHECK_STR_EQ(g.reasoning, "\nLet me tile it 16x16.");
    SG_CHECK_STR_EQ(g.content, "\n\n```c\nint k;\n```");
    SG_CHECK_STR_EQ(g.reasoning_field, "content <think>");
    SG_CHECK(!g.usage_estimated);
    SG_CHECK_EQ_INT(g.usage.completion_tokens, 6);
    sg_llm_generation_free(&g);
  }
  free(reply);
}

/* DeepSeek-R1's newer template opens the block in the prompt: the stream
 * has only the closing tag. In detect mode that is content (no opening
 * tag); with think_mode open it is reasoning. */
static void test_r1_template_open_block(void) {
  const char *deltas[] = {"Okay, the loop", " is memory bound.\n</think>", "\n\nint k;"};
  char *reply = sse_reply(deltas, 3, false);
  sg_llm_generation g;
  replay rp;
  SG_CHECK_EQ_INT(run_replay(reply, 5, "llamacpp", SG_LLM_THINK_OPEN, &g, &rp), 0);
  SG_CHECK_STR_EQ(g.reasoning, "Okay, the loop is memory bound.\n");
  SG_CHECK_STR_EQ(g.content, "\n\nint k;");
  /* No usage came: the completion count is the client's, and says so. */
  SG_CHECK(g.usage_estimated);
  SG_CHECK_EQ_INT(g.usage.completion_tokens, 3);
  sg_llm_generation_free(&g);
  SG_CHECK_EQ_INT(run_replay(reply, 5, "llamacpp", SG_LLM_THINK_DETECT, &g, &rp), 0);
  SG_CHECK_STR_EQ(g.reasoning, "");
  SG_CHECK_CONTAINS(g.content, "</think>");
  sg_llm_generation_free(&g);
  free(reply);
}

static const char *header_value(const char *req, const char *name, char *out, size_t cap) {
  const char *h = strcasestr(req, name);
  if (h == NULL)
    return NULL;
  h += strlen(name);
  while (*h == ' ')
    h++;
  size_t n = strcspn(h, "\r\n");
  snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), h);
  return out;
}

/* The request id goes as a UUID where it helps, nowhere else; the limit
 * field is the server's. */
static void test_request_id_and_limit_field_per_profile(void) {
  const char *deltas[] = {"hi"};
  char *reply = sse_reply(deltas, 1, true);
  struct {
    const char *profile;
    bool header;
    const char *limit;
  } rows[] = {{"llamacpp-python", true, "\"max_tokens\":32"},
              {"llamacpp", false, "\"max_tokens\":32"},
              {"vllm", true, "\"max_tokens\":32"},
              {"openai", false, "\"max_completion_tokens\":32"},
              {"generic", true, "\"max_tokens\":32"}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    sg_llm_generation g;
    replay rp;
    replay_start(&rp, reply, strlen(reply), 64);
    char url[64];
    sg_llm_request q;
    request_to(&q, &rp, url, sizeof url, rows[i].profile);
    q.request_id = "specgen-7-w0-g3-12";
    sg_llm_generate_opts go;
    memset(&go, 0, sizeof go);
    sg_err err;
    SG_CHECK_EQ_INT(sg_llm_generate(&q, &go, &g, &err), 0);
    pthread_join(rp.th, NULL);
    const char *req = sg_buf_str(&rp.request);
    char v[128];
    const char *id = header_value(req, "X-Request-Id:", v, sizeof v);
    SG_CHECK_MSG((id != NULL) == rows[i].header, "%s: header %s", rows[i].profile,
                 id ? id : "(none)");
    if (id) {
      SG_CHECK_MSG(sg_llm_is_uuid(id), "%s: '%s' is not a UUID", rows[i].profile, id);
      char want[37];
      sg_llm_request_uuid("specgen-7-w0-g3-12", want);
      SG_CHECK_STR_EQ(id, want);
    }
    SG_CHECK_MSG(strstr(req, rows[i].limit) != NULL, "%s: no %s in %s", rows[i].profile,
                 rows[i].limit, req);
    close(rp.lfd);
    sg_buf_free(&rp.request);
    sg_llm_generation_free(&g);
  }
  free(reply);
}

/* A stream recorded from llama.cpp's llama-server (SmolLM2-135M-Instruct,
 * include_usage): replayed in small pieces it gives the text the server
 * sent, its usage, and finish_reason. */
static void test_recorded_llamacpp_stream(void) {
  char *path = sg_asprintf("%s/tests/llm/data/llamacpp_smollm2.sse", SG_SOURCE_ROOT);
  char *body = NULL;
  size_t len = 0;
  sg_err err;
  if (sg_file_read(path, 1u << 20, &body, &len, &err) < 0)
    SG_FAIL("%s", err.msg);
  free(path);
  char *reply = sg_asprintf("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                            "Connection: close\r\n\r\n%s",
                            body);
  sg_llm_generation g;
  replay rp;
  SG_CHECK_EQ_INT(run_replay(reply, 7, "llamacpp", 0, &g, &rp), 0);
  SG_CHECK(strlen(g.content) > 0);
  SG_CHECK(!g.usage_estimated);
  SG_CHECK(g.usage.completion_tokens > 0);
  SG_CHECK(g.usage.prompt_tokens > 0);
  SG_CHECK(g.finish_reason[0] != '\0');
  /* The deltas the file holds, joined, are the content. */
  sg_buf want;
  sg_buf_init(&want, 0);
  for (const char *p = body; (p = strstr(p, "data: ")) != NULL; p += 6) {
    const char *e = strstr(p, "\n\n");
    json_t *j = json_loadb(p + 6, e ? (size_t)(e - p - 6) : strlen(p + 6), 0, NULL);
    const char *c = json_string_value(json_object_get(
        json_object_get(json_array_get(json_object_get(j, "choices"), 0), "delta"),
        "content"));
    if (c)
      sg_buf_append(&want, c, strlen(c));
    json_decref(j);
  }
  SG_CHECK_STR_EQ(g.content, sg_buf_str(&want));
  sg_buf_free(&want);
  sg_llm_generation_free(&g);
  free(reply);
  free(body);
}

SG_TEST_MAIN(SG_TEST(test_inline_think_becomes_reasoning), SG_TEST(test_r1_template_open_block),
             SG_TEST(test_request_id_and_limit_field_per_profile),
             SG_TEST(test_recorded_llamacpp_stream))
