/* sg_llm_client.c: streamed generations on libcurl multi + libuv.
 *
 * How it works (the classic integration, as in curl's multi-uv example):
 * curl tells us which sockets to watch (sock_cb: a uv_poll per socket, its
 * context attached with curl_multi_assign) and when to wake it (timer_cb: one
 * uv_timer); uv tells curl when a socket is ready or the timer fired
 * (curl_multi_socket_action), and after each action finished transfers are
 * collected (curl_multi_info_read). Bytes of a 2xx event stream go through the
 * stream's SSE parser and chunk interpreter into the callbacks as they arrive;
 * bytes of any other reply are kept (capped) to extract the server's message.
 *
 * Each stream has two uv timers: `watchdog` (absolute deadline and idle
 * timeout) and `kick` (starts an attempt: at once, or after a backoff). Every
 * attempt is started from `kick`, so sg_llm_stream_start may be called from
 * inside any callback.
 *
 * Re-entrancy: user callbacks for deltas run inside curl's write callback,
 * where libcurl forbids removing handles. A stream cancelled there (itself or
 * another) is only marked; its write callback returns 0 so curl drops it, and
 * process_cancels() releases it right after curl_multi_socket_action returns.
 * Terminal callbacks run from collect_done(), outside curl, so they may start
 * or cancel streams freely.
 *
 * Secrets: the Authorization header is built from the environment and lives
 * only in the curl header list; no message here ever formats a header.
 */
#include "llm/sg_llm_client.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_clock.h"
#include "common/sg_rng.h"
#include "llm/sg_sse.h"

#include <assert.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ERR_BODY_MAX (64 * 1024)
#define DEFAULT_DEADLINE_S 1800.0
#define DEFAULT_IDLE_S 120.0
#define DEFAULT_CONNECT_S 10.0
#define DEFAULT_RETRIES 4
#define DEFAULT_BACKOFF_BASE_S 0.5
#define DEFAULT_BACKOFF_MAX_S 30.0
#define ABORT_TIMEOUT_MS 5000L

enum { KIND_STREAM = 1, KIND_ABORT = 2 };

typedef enum stream_state {
  ST_WAITING, /* before an attempt: first start or backoff */
  ST_RUNNING, /* an attempt is in flight */
  ST_DONE     /* terminal callback given or cancelled; handles closing */
} stream_state;

static const char *const k_state_names[] = {"waiting", "running", "done"};

typedef struct sock_ctx {
  uv_poll_t poll;
  curl_socket_t fd;
  sg_llm_client *c;
  struct sock_ctx *prev, *next; /* the client's live (not closing) sockets */
  bool closing;
} sock_ctx;

typedef struct abort_req {
  int kind; /* KIND_ABORT; first, like sg_llm_stream's */
  CURL *easy;
  char *body;
  struct curl_slist *headers;
  struct abort_req *next;
} abort_req;

struct sg_llm_stream {
  int kind; /* KIND_STREAM */
  sg_llm_client *c;
  sg_llm_stream *prev, *next;
  sg_llm_callbacks cb;
  const sg_llm_provider *provider;
  char *url;
  char *body;
  char *rid;
  struct curl_slist *headers;
  double deadline_s, idle_s, connect_s, backoff_base_s, backoff_max_s;
  int max_retries;
  CURL *easy;
  uv_timer_t watchdog;
  uv_timer_t kick;
  int open_timers;
  stream_state state;
  bool cancelled;
  bool released;
  int64_t start_us, deadline_us, progress_us, first_delta_us;
  sg_sse sse;
  sg_llm_think think;   /* splits inline <think> blocks out of content */
  int think_mode;
  uint64_t delta_chunks;/* chunks that carried reasoning or content */
  /* per attempt */
  long http_status;
  bool status_known;
  bool body_is_sse; /* 2xx and not a JSON body */
  sg_buf err_body;
  double retry_after_s;
  int attempts;
  /* a failure found while reading (malformed chunk, error object) */
  int fail_code;
  sg_err fail_err;
  /* results */
  bool got_done;
  bool output_started;
  char finish_reason[32];
  char reasoning_field[32];
  sg_llm_usage usage;
  uint64_t n_completion_ids, n_prompt_ids, reasoning_chunks, content_chunks;
};

struct sg_llm_client {
  uv_loop_t *loop;
  CURLM *multi;
  uv_timer_t timer;
  sg_llm_stream *streams;
  size_t nstreams;
  abort_req *aborts;
  size_t naborts;
  char *auth_header;
  sg_rng rng; /* retry jitter and request ids */
  uint64_t next_id;
  int in_curl;          /* inside curl_multi_socket_action */
  bool cancels_pending; /* a stream was cancelled inside curl */
  bool destroying;
  int open_handles;     /* uv handles whose close callback is pending */
  int64_t io_us;
  sock_ctx *socks;
  size_t max_line_bytes, max_event_bytes; /* SSE caps of every stream */
};

/* The one door for a stream's state (docs/style.md rule 13). Allowed moves:
 *   waiting -> running (an attempt starts)
 *   running -> waiting (a retry is scheduled)
 *   waiting | running -> done (terminal callback, cancel, client destroyed)
 *   done -> done (release after the terminal callback)
 * Set SG_LLM_TRACE=1 in the environment to log every move to stderr. */
static void set_state(sg_llm_stream *s, stream_state to) {
  stream_state from = s->state;
  assert((from == ST_WAITING && to == ST_RUNNING) ||
         (from == ST_RUNNING && to == ST_WAITING) || to == ST_DONE);
  static int trace = -1;
  if (trace < 0)
    trace = getenv("SG_LLM_TRACE") != NULL;
  if (trace && from != to)
    fprintf(stderr, "sg_llm: %s: %s -> %s (attempt %d)\n", s->rid,
            k_state_names[from], k_state_names[to], s->attempts);
  s->state = to;
}

static int g_curl_init_rc = -1;

static void maybe_free_client(sg_llm_client *c) {
  if (c->destroying && c->open_handles == 0) {
    free(c->auth_header);
    free(c);
  }
}

static void client_handle_closed(uv_handle_t *h) {
  sg_llm_client *c = h->data;
  c->open_handles--;
  maybe_free_client(c);
}

static void sock_ctx_closed(uv_handle_t *h) {
  sock_ctx *ctx = h->data;
  sg_llm_client *c = ctx->c;
  free(ctx);
  c->open_handles--;
  maybe_free_client(c);
}

/* ---- curl <-> uv glue ---- */

static void check_done(sg_llm_client *c);
static void process_cancels(sg_llm_client *c);

static void action(sg_llm_client *c, curl_socket_t fd, int flags) {
  int running = 0;
  c->in_curl++;
  curl_multi_socket_action(c->multi, fd, flags, &running);
  c->in_curl--;
  if (c->in_curl == 0) {
    process_cancels(c);
    check_done(c);
  }
}

static void on_poll(uv_poll_t *h, int status, int events) {
  sock_ctx *ctx = h->data;
  int flags = 0;
  if (status < 0)
    flags = CURL_CSELECT_ERR;
  if (events & UV_READABLE)
    flags |= CURL_CSELECT_IN;
  if (events & UV_WRITABLE)
    flags |= CURL_CSELECT_OUT;
  ctx->c->io_us = sg_clock_now_us();
  action(ctx->c, ctx->fd, flags);
}

static void on_curl_timer(uv_timer_t *t) {
  sg_llm_client *c = t->data;
  c->io_us = sg_clock_now_us();
  action(c, CURL_SOCKET_TIMEOUT, 0);
}

static void sock_close(sock_ctx *ctx) {
  sg_llm_client *c = ctx->c;
  assert(!ctx->closing);
  ctx->closing = true;
  if (ctx->prev)
    ctx->prev->next = ctx->next;
  else
    c->socks = ctx->next;
  if (ctx->next)
    ctx->next->prev = ctx->prev;
  uv_poll_stop(&ctx->poll);
  uv_close((uv_handle_t *)&ctx->poll, sock_ctx_closed);
}

static int sock_cb(CURL *e, curl_socket_t fd, int what, void *userp,
                   void *socketp) {
  (void)e;
  sg_llm_client *c = userp;
  sock_ctx *ctx = socketp;
  if (what == CURL_POLL_REMOVE) {
    if (ctx) {
      if (!c->destroying)
        curl_multi_assign(c->multi, fd, NULL);
      sock_close(ctx);
    }
    return 0;
  }
  if (ctx == NULL) {
    ctx = sg_calloc(1, sizeof *ctx);
    ctx->fd = fd;
    ctx->c = c;
    if (uv_poll_init_socket(c->loop, &ctx->poll, fd) != 0) {
      free(ctx);
      return -1;
    }
    ctx->poll.data = ctx;
    c->open_handles++;
    ctx->next = c->socks;
    if (c->socks)
      c->socks->prev = ctx;
    c->socks = ctx;
    curl_multi_assign(c->multi, fd, ctx);
  }
  int ev = 0;
  if (what & CURL_POLL_IN)
    ev |= UV_READABLE;
  if (what & CURL_POLL_OUT)
    ev |= UV_WRITABLE;
  uv_poll_start(&ctx->poll, ev, on_poll);
  return 0;
}

static int timer_cb(CURLM *m, long timeout_ms, void *userp) {
  (void)m;
  sg_llm_client *c = userp;
  if (timeout_ms < 0)
    uv_timer_stop(&c->timer);
  else
    uv_timer_start(&c->timer, on_curl_timer, (uint64_t)timeout_ms, 0);
  return 0;
}

/* ---- the client ---- */

void sg_llm_client_opts_init(sg_llm_client_opts *o) { memset(o, 0, sizeof *o); }

int sg_llm_client_new(uv_loop_t *loop, const sg_llm_client_opts *opts,
                      sg_llm_client **out, sg_err *err) {
  *out = NULL;
  sg_llm_client_opts dflt;
  if (opts == NULL) {
    sg_llm_client_opts_init(&dflt);
    opts = &dflt;
  }
  if (g_curl_init_rc < 0)
    g_curl_init_rc = (int)curl_global_init(CURL_GLOBAL_DEFAULT);
  if (g_curl_init_rc != 0)
    return sg_err_set(err, SG_EIO, "curl_global_init failed");
  sg_llm_client *c = sg_calloc(1, sizeof *c);
  c->loop = loop;
  c->multi = curl_multi_init();
  if (c->multi == NULL) {
    free(c);
    return sg_err_set(err, SG_EIO, "curl_multi_init failed");
  }
  curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
  curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
  curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
  curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
  curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 0L);
  curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, 64L);
  uv_timer_init(loop, &c->timer);
  c->timer.data = c;
  c->open_handles = 1;
  sg_rng_seed(&c->rng, opts->seed ? opts->seed
                                    : (uint64_t)sg_clock_now_us() ^
                                          ((uint64_t)(uintptr_t)c << 16));
  const char *env = opts->api_key_env ? opts->api_key_env : "OPENAI_API_KEY";
  const char *key = env[0] ? getenv(env) : NULL;
  if (key && key[0])
    c->auth_header = sg_asprintf("Authorization: Bearer %s", key);
  c->max_line_bytes = opts->max_line_bytes;
  c->max_event_bytes = opts->max_event_bytes;
  *out = c;
  return 0;
}

size_t sg_llm_client_active(const sg_llm_client *c) { return c->nstreams; }
size_t sg_llm_client_aborts_in_flight(const sg_llm_client *c) {
  return c->naborts;
}

static uint64_t rng_next(sg_llm_client *c) { return sg_rng_next(&c->rng); }

/* ---- stream lifetime ---- */

static void stream_timer_closed(uv_handle_t *h) {
  sg_llm_stream *s = h->data;
  if (--s->open_timers == 0) {
    sg_sse_free(&s->sse);
    sg_buf_free(&s->err_body);
    curl_slist_free_all(s->headers);
    free(s->url);
    free(s->body);
    free(s->rid);
    free(s);
  }
}

static void send_abort(sg_llm_stream *s);

/* Takes s out of the client: its transfer, its timers; memory goes when the
 * timers have closed. Never called inside curl_multi_socket_action. */
static void stream_release(sg_llm_stream *s) {
  sg_llm_client *c = s->c;
  assert(c->in_curl == 0);
  assert(!s->released);
  s->released = true;
  set_state(s, ST_DONE);
  if (s->easy) {
    curl_multi_remove_handle(c->multi, s->easy);
    curl_easy_cleanup(s->easy);
    s->easy = NULL;
  }
  if (s->prev)
    s->prev->next = s->next;
  else
    c->streams = s->next;
  if (s->next)
    s->next->prev = s->prev;
  c->nstreams--;
  uv_timer_stop(&s->watchdog);
  uv_timer_stop(&s->kick);
  uv_close((uv_handle_t *)&s->watchdog, stream_timer_closed);
  uv_close((uv_handle_t *)&s->kick, stream_timer_closed);
}

static void fill_result(sg_llm_stream *s, int code, const char *msg,
                        sg_llm_result *r) {
  memset(r, 0, sizeof *r);
  r->code = code;
  r->message = msg ? msg : "";
  r->http_status = s->http_status;
  r->finish_reason = s->finish_reason;
  r->usage = s->usage;
  if (r->usage.completion_tokens < 0) {
    /* Cut before the usage chunk: count client-side (see the header). */
    r->usage.completion_tokens = s->n_completion_ids > 0
                                     ? (int64_t)s->n_completion_ids
                                     : (int64_t)s->delta_chunks;
    r->usage_estimated = true;
  }
  if (r->usage.prompt_tokens < 0 && s->n_prompt_ids > 0)
    r->usage.prompt_tokens = (int64_t)s->n_prompt_ids;
  r->attempts = s->attempts;
  r->output_started = s->output_started;
  r->reasoning_field = s->reasoning_field;
  r->reasoning_chunks = s->reasoning_chunks;
  r->content_chunks = s->content_chunks;
  r->keepalive_comments = s->sse.comments;
  int64_t now = sg_clock_now_us();
  r->ttft_s = s->first_delta_us ? (double)(s->first_delta_us - s->start_us) / 1e6 : -1;
  r->elapsed_s = (double)(now - s->start_us) / 1e6;
}

/* The one terminal door: exactly one callback, then the stream goes. */
static void stream_end(sg_llm_stream *s, int code, const char *msg) {
  assert(s->state != ST_DONE);
  set_state(s, ST_DONE);
  sg_llm_result r;
  fill_result(s, code, msg, &r);
  if (s->easy) {
    curl_multi_remove_handle(s->c->multi, s->easy);
    curl_easy_cleanup(s->easy);
    s->easy = NULL;
  }
  if (code == 0) {
    if (s->cb.on_finish)
      s->cb.on_finish(s, s->cb.data, &r);
  } else if (s->cb.on_error) {
    s->cb.on_error(s, s->cb.data, &r);
  }
  stream_release(s);
}

static void watchdog_arm(sg_llm_stream *s);

static void on_watchdog(uv_timer_t *t) {
  sg_llm_stream *s = t->data;
  if (s->state == ST_DONE)
    return;
  int64_t now = sg_clock_now_us();
  char msg[256];
  if (now >= s->deadline_us) {
    snprintf(msg, sizeof msg,
             "deadline of %.3g s passed (request %s, %d attempt%s, %llu chunks)",
             s->deadline_s, s->rid, s->attempts, s->attempts == 1 ? "" : "s",
             (unsigned long long)(s->reasoning_chunks + s->content_chunks));
    stream_end(s, SG_ETIMEDOUT, msg);
    return;
  }
  if (s->state == ST_RUNNING && now - s->progress_us >= (int64_t)(s->idle_s * 1e6)) {
    snprintf(msg, sizeof msg,
             "idle timeout: no event for %.3g s (request %s, after %llu chunks)",
             s->idle_s, s->rid,
             (unsigned long long)(s->reasoning_chunks + s->content_chunks));
    stream_end(s, SG_ETIMEDOUT, msg);
    return;
  }
  watchdog_arm(s);
}

static void watchdog_arm(sg_llm_stream *s) {
  int64_t now = sg_clock_now_us();
  int64_t next = s->deadline_us;
  if (s->state == ST_RUNNING) {
    int64_t idle_at = s->progress_us + (int64_t)(s->idle_s * 1e6);
    if (idle_at < next)
      next = idle_at;
  }
  int64_t ms = next > now ? (next - now + 999) / 1000 : 0;
  uv_timer_start(&s->watchdog, on_watchdog, (uint64_t)ms, 0);
}

/* ---- reading a reply ---- */

/* Delivers one piece of reasoning or content text to the caller. */
static void deliver_text(sg_llm_stream *s, bool reasoning, const char *text,
                         size_t len, const char *field) {
  if (s->cancelled || len == 0)
    return;
  if (reasoning) {
    if (s->reasoning_field[0] == '\0')
      snprintf(s->reasoning_field, sizeof s->reasoning_field, "%s", field);
    s->reasoning_chunks++;
  } else {
    s->content_chunks++;
  }
  s->output_started = true;
  if (s->first_delta_us == 0)
    s->first_delta_us = sg_clock_now_us();
  if (reasoning && s->cb.on_reasoning)
    s->cb.on_reasoning(s, s->cb.data, text, len);
  else if (!reasoning && s->cb.on_content)
    s->cb.on_content(s, s->cb.data, text, len);
}

/* The splitter's pieces: reasoning written inline in content. */
static void think_piece(void *data, bool reasoning, const char *text, size_t len) {
  deliver_text(data, reasoning, text, len, "content <think>");
}

static void deliver_chunk(sg_llm_stream *s, const sg_llm_chunk *ch) {
  if (ch->prompt_token_ids && s->n_prompt_ids == 0) {
    s->n_prompt_ids = ch->n_prompt_token_ids;
    if (s->cb.on_token_ids)
      s->cb.on_token_ids(s, s->cb.data, true, ch->prompt_token_ids,
                         ch->n_prompt_token_ids);
    if (s->cancelled)
      return;
  }
  if ((ch->reasoning && ch->reasoning_len > 0) || (ch->content && ch->content_len > 0))
    s->delta_chunks++;
  if (ch->reasoning && ch->reasoning_len > 0) {
    /* The server parses reasoning itself: content is content. */
    sg_llm_think_stop(&s->think, think_piece, s);
    deliver_text(s, true, ch->reasoning, ch->reasoning_len, ch->reasoning_field);
    if (s->cancelled)
      return;
  }
  if (ch->content && ch->content_len > 0) {
    sg_llm_think_feed(&s->think, ch->content, ch->content_len, think_piece, s);
    if (s->cancelled)
      return;
  }
  if (ch->token_ids && ch->n_token_ids > 0) {
    s->n_completion_ids += ch->n_token_ids;
    if (s->cb.on_token_ids)
      s->cb.on_token_ids(s, s->cb.data, false, ch->token_ids, ch->n_token_ids);
    if (s->cancelled)
      return;
  }
  if (ch->finish_reason && s->finish_reason[0] == '\0')
    snprintf(s->finish_reason, sizeof s->finish_reason, "%s", ch->finish_reason);
  if (ch->usage.present) {
    s->usage = ch->usage;
    if (s->cb.on_usage)
      s->cb.on_usage(s, s->cb.data, &ch->usage);
  }
}

static void note_status(sg_llm_stream *s) {
  if (s->status_known)
    return;
  s->status_known = true;
  curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->http_status);
  char *ct = NULL;
  curl_easy_getinfo(s->easy, CURLINFO_CONTENT_TYPE, &ct);
  bool json = ct && strncasecmp(ct, "application/json", 16) == 0;
  s->body_is_sse = s->http_status >= 200 && s->http_status < 300 && !json;
}

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *userp) {
  sg_llm_stream *s = userp;
  size_t n = size * nmemb;
  if (s->cancelled || s->fail_code || s->state != ST_RUNNING)
    return 0;
  note_status(s);
  if (!s->body_is_sse) {
    sg_buf_append(&s->err_body, ptr, n);
    return n;
  }
  const char *p = ptr;
  size_t left = n;
  while (left > 0) {
    size_t used = 0;
    sg_sse_event ev;
    int rc = sg_sse_feed(&s->sse, p, left, &used, &ev, &s->fail_err);
    if (rc < 0) {
      s->fail_code = rc;
      return 0;
    }
    p += used;
    left -= used;
    if (rc != SG_SSE_EVENT)
      break;
    s->progress_us = sg_clock_now_us();
    if (s->got_done)
      continue; /* nothing counts after [DONE] */
    sg_llm_chunk ch;
    rc = sg_llm_chunk_parse(ev.data, ev.data_len, &ch, &s->fail_err);
    if (rc < 0) {
      s->fail_code = rc;
      return 0;
    }
    if (ch.done)
      s->got_done = true;
    else
      deliver_chunk(s, &ch);
    sg_llm_chunk_free(&ch);
    if (s->cancelled)
      return 0;
  }
  return n;
}

static size_t header_cb(char *buf, size_t size, size_t nitems, void *userp) {
  sg_llm_stream *s = userp;
  size_t n = size * nitems;
  if (n > 12 && strncasecmp(buf, "retry-after:", 12) == 0) {
    char tmp[32];
    size_t k = n - 12 < sizeof tmp - 1 ? n - 12 : sizeof tmp - 1;
    memcpy(tmp, buf + 12, k);
    tmp[k] = '\0';
    char *end;
    double v = strtod(tmp, &end);
    /* Seconds only; an HTTP-date falls back to our own backoff. */
    if (end != tmp && v >= 0 && v < 86400)
      s->retry_after_s = v;
  }
  return n;
}

/* ---- attempts and retries ---- */

static void on_kick(uv_timer_t *t);

static void start_attempt(sg_llm_stream *s) {
  sg_llm_client *c = s->c;
  assert(s->easy == NULL && s->state == ST_WAITING);
  sg_sse_reset(&s->sse);
  sg_llm_think_init(&s->think, (sg_llm_think_mode)s->think_mode);
  sg_buf_reset(&s->err_body);
  s->http_status = 0;
  s->status_known = false;
  s->body_is_sse = false;
  s->retry_after_s = -1;
  s->fail_code = 0;
  sg_err_clear(&s->fail_err);
  s->attempts++;
  CURL *e = curl_easy_init();
  if (e == NULL) {
    stream_end(s, SG_EIO, "curl_easy_init failed");
    return;
  }
  curl_easy_setopt(e, CURLOPT_URL, s->url);
  curl_easy_setopt(e, CURLOPT_POST, 1L);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, s->body);
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(s->body));
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, s->headers);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, s);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, s);
  curl_easy_setopt(e, CURLOPT_PRIVATE, s);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(s->connect_s * 1000));
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "identity");
  s->easy = e;
  set_state(s, ST_RUNNING);
  s->progress_us = sg_clock_now_us();
  CURLMcode mc = curl_multi_add_handle(c->multi, e);
  if (mc != CURLM_OK) {
    char msg[128];
    snprintf(msg, sizeof msg, "curl_multi_add_handle: %s", curl_multi_strerror(mc));
    stream_end(s, SG_EIO, msg);
    return;
  }
  watchdog_arm(s);
}

static void on_kick(uv_timer_t *t) {
  sg_llm_stream *s = t->data;
  if (s->state != ST_WAITING)
    return;
  start_attempt(s);
}

/* Retries if policy allows, else ends the stream with (code, msg). */
static void retry_or_end(sg_llm_stream *s, int code, const char *msg) {
  int64_t now = sg_clock_now_us();
  if (s->output_started || s->attempts > s->max_retries) {
    stream_end(s, code, msg);
    return;
  }
  double backoff = s->backoff_base_s;
  for (int i = 1; i < s->attempts && backoff < s->backoff_max_s; i++)
    backoff *= 2;
  if (backoff > s->backoff_max_s)
    backoff = s->backoff_max_s;
  /* Equal jitter: half fixed, half random, so retries of many streams spread
   * out but none comes back at once. */
  double u = (double)(rng_next(s->c) >> 11) / (double)(1ULL << 53);
  double delay = backoff / 2 + u * backoff / 2;
  if (s->retry_after_s > delay)
    delay = s->retry_after_s; /* never earlier than the server asked */
  if (now + (int64_t)(delay * 1e6) >= s->deadline_us) {
    char m[SG_ERR_MSG_MAX];
    snprintf(m, sizeof m, "%s (no retry: waiting %.3g s would pass the deadline)",
             msg, delay);
    stream_end(s, code, m);
    return;
  }
  assert(s->easy == NULL);
  set_state(s, ST_WAITING);
  uv_timer_start(&s->kick, on_kick, (uint64_t)(delay * 1000), 0);
  watchdog_arm(s);
}

static void attempt_done(sg_llm_stream *s, CURLcode res) {
  sg_llm_client *c = s->c;
  note_status(s);
  curl_multi_remove_handle(c->multi, s->easy);
  curl_easy_cleanup(s->easy);
  s->easy = NULL;
  char msg[2 * SG_ERR_MSG_MAX];
  uint64_t chunks = s->reasoning_chunks + s->content_chunks;
  if (s->fail_code) {
    /* A malformed chunk, an error object, an over-long event: the stream
     * itself is wrong; retrying it would not help. */
    snprintf(msg, sizeof msg, "%s (request %s)", s->fail_err.msg, s->rid);
    stream_end(s, s->fail_code, msg);
    return;
  }
  long st = s->http_status;
  if (st == 429 || st >= 500) {
    sg_err e;
    sg_llm_error_from_body(st, sg_buf_str(&s->err_body), s->err_body.len,
                           SG_EHTTP, &e);
    retry_or_end(s, SG_EHTTP, e.msg);
    return;
  }
  if (st != 0 && (st < 200 || st >= 300)) {
    sg_err e;
    sg_llm_error_from_body(st, sg_buf_str(&s->err_body), s->err_body.len,
                           SG_EHTTP, &e);
    stream_end(s, SG_EHTTP, e.msg);
    return;
  }
  if (st != 0 && !s->body_is_sse) {
    sg_err e;
    sg_llm_error_from_body(st, sg_buf_str(&s->err_body), s->err_body.len,
                           SG_EPROTO, &e);
    snprintf(msg, sizeof msg,
             "server replied with a JSON body, not an event stream: %s", e.msg);
    stream_end(s, SG_EPROTO, msg);
    return;
  }
  if (s->got_done || s->finish_reason[0]) {
    sg_llm_think_flush(&s->think, think_piece, s);
    if (s->cancelled)
      return; /* cancelled from the last piece's callback: already released */
    stream_end(s, 0, NULL);
    return;
  }
  if (res != CURLE_OK && st == 0) {
    snprintf(msg, sizeof msg, "connection failed: %s (request %s)",
             curl_easy_strerror(res), s->rid);
    retry_or_end(s, SG_ECONN, msg);
    return;
  }
  snprintf(msg, sizeof msg,
           "stream ended before the generation finished (%s, after %llu "
           "chunks, request %s)",
           res == CURLE_OK ? "connection closed" : curl_easy_strerror(res),
           (unsigned long long)chunks, s->rid);
  retry_or_end(s, SG_ECONN, msg);
}

static void abort_done(sg_llm_client *c, abort_req *a) {
  curl_multi_remove_handle(c->multi, a->easy);
  curl_easy_cleanup(a->easy);
  for (abort_req **pp = &c->aborts; *pp; pp = &(*pp)->next)
    if (*pp == a) {
      *pp = a->next;
      break;
    }
  c->naborts--;
  curl_slist_free_all(a->headers);
  free(a->body);
  free(a);
}

static void check_done(sg_llm_client *c) {
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(c->multi, &left)) != NULL) {
    if (m->msg != CURLMSG_DONE)
      continue;
    void *priv = NULL;
    curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&priv);
    CURLcode res = m->data.result;
    if (*(int *)priv == KIND_ABORT) {
      abort_done(c, priv);
      continue;
    }
    sg_llm_stream *s = priv;
    assert(s->kind == KIND_STREAM && s->state == ST_RUNNING);
    attempt_done(s, res);
  }
}

static void process_cancels(sg_llm_client *c) {
  if (!c->cancels_pending)
    return;
  c->cancels_pending = false;
  sg_llm_stream *s = c->streams;
  while (s) {
    sg_llm_stream *next = s->next;
    if (s->cancelled && !s->released) {
      send_abort(s);
      stream_release(s);
    }
    s = next;
  }
}

/* The abort call's answer is not needed: its status is all that counts. */
static size_t discard_cb(char *ptr, size_t size, size_t nmemb, void *userp) {
  (void)ptr;
  (void)userp;
  return size * nmemb;
}

static void send_abort(sg_llm_stream *s) {
  sg_llm_client *c = s->c;
  if (c->destroying || s->attempts == 0)
    return;
  json_t *b = sg_llm_provider_abort_body(s->provider, s->rid);
  if (b == NULL)
    return;
  abort_req *a = sg_calloc(1, sizeof *a);
  a->kind = KIND_ABORT;
  a->body = json_dumps(b, JSON_COMPACT);
  json_decref(b);
  a->headers = curl_slist_append(NULL, "Content-Type: application/json");
  if (c->auth_header)
    a->headers = curl_slist_append(a->headers, c->auth_header);
  char *url = sg_llm_root_url(s->url, "/abort_request");
  a->easy = curl_easy_init();
  curl_easy_setopt(a->easy, CURLOPT_URL, url);
  curl_easy_setopt(a->easy, CURLOPT_POSTFIELDS, a->body);
  curl_easy_setopt(a->easy, CURLOPT_HTTPHEADER, a->headers);
  curl_easy_setopt(a->easy, CURLOPT_PRIVATE, a);
  curl_easy_setopt(a->easy, CURLOPT_WRITEFUNCTION, discard_cb);
  curl_easy_setopt(a->easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(a->easy, CURLOPT_TIMEOUT_MS, ABORT_TIMEOUT_MS);
  free(url);
  a->next = c->aborts;
  c->aborts = a;
  c->naborts++;
  curl_multi_add_handle(c->multi, a->easy);
}

/* ---- public stream calls ---- */

static char *header_line(const char *name, const char *value) {
  return sg_asprintf("%s: %s", name, value);
}

int sg_llm_stream_start(sg_llm_client *c, const sg_llm_request *r,
                        const sg_llm_callbacks *cb, sg_llm_stream **out,
                        sg_err *err) {
  if (out)
    *out = NULL;
  if (c->destroying)
    return sg_err_set(err, SG_ESTATE, "the LLM client is being destroyed");
  if (r->base_url == NULL || r->base_url[0] == '\0')
    return sg_err_set(err, SG_EINVAL, "request has no base URL");
  const sg_llm_provider *p =
      r->provider ? r->provider : sg_llm_provider_by_kind(SG_LLM_PROVIDER_GENERIC);
  char rid_buf[64];
  const char *rid = r->request_id;
  if (rid == NULL || rid[0] == '\0') {
    snprintf(rid_buf, sizeof rid_buf, "sg-%llx-%llu",
             (unsigned long long)(rng_next(c) & 0xffffffffffULL),
             (unsigned long long)++c->next_id);
    rid = rid_buf;
  }
  sg_llm_request rr = *r;
  rr.request_id = rid;
  json_t *body;
  int rc = sg_llm_provider_body(p, &rr, &body, err);
  if (rc < 0)
    return rc;
  sg_llm_stream *s = sg_calloc(1, sizeof *s);
  s->kind = KIND_STREAM;
  s->c = c;
  if (cb)
    s->cb = *cb;
  s->provider = p;
  s->body = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  s->url = sg_llm_endpoint_url(r->base_url, r->endpoint);
  s->rid = sg_strdup(rid);
  s->think_mode = r->think_mode;
  s->deadline_s = r->deadline_s > 0 ? r->deadline_s : DEFAULT_DEADLINE_S;
  s->idle_s = r->idle_timeout_s > 0 ? r->idle_timeout_s : DEFAULT_IDLE_S;
  s->connect_s = r->connect_timeout_s > 0 ? r->connect_timeout_s : DEFAULT_CONNECT_S;
  s->max_retries = r->max_retries < 0 ? 0 : r->max_retries == 0 ? DEFAULT_RETRIES
                                                                : r->max_retries;
  s->backoff_base_s = r->backoff_base_s > 0 ? r->backoff_base_s : DEFAULT_BACKOFF_BASE_S;
  s->backoff_max_s = r->backoff_max_s > 0 ? r->backoff_max_s : DEFAULT_BACKOFF_MAX_S;
  struct curl_slist *h = NULL;
  h = curl_slist_append(h, "Content-Type: application/json");
  h = curl_slist_append(h, "Accept: text/event-stream");
  h = curl_slist_append(h, "Expect:");
  if (c->auth_header)
    h = curl_slist_append(h, c->auth_header);
  if (p->request_id_header) {
    char uuid[37];
    sg_llm_request_uuid(s->rid, uuid);
    char *line = header_line("X-Request-Id", uuid);
    h = curl_slist_append(h, line);
    free(line);
  }
  for (size_t i = 0; i < r->n_headers; i++)
    h = curl_slist_append(h, r->headers[i]);
  s->headers = h;
  sg_sse_init(&s->sse, c->max_line_bytes, c->max_event_bytes);
  sg_buf_init(&s->err_body, ERR_BODY_MAX);
  sg_llm_usage_init(&s->usage);
  uv_timer_init(c->loop, &s->watchdog);
  uv_timer_init(c->loop, &s->kick);
  s->watchdog.data = s;
  s->kick.data = s;
  s->open_timers = 2;
  s->state = ST_WAITING;
  s->start_us = sg_clock_now_us();
  s->deadline_us = s->start_us + (int64_t)(s->deadline_s * 1e6);
  s->next = c->streams;
  if (c->streams)
    c->streams->prev = s;
  c->streams = s;
  c->nstreams++;
  uv_timer_start(&s->kick, on_kick, 0, 0);
  watchdog_arm(s);
  if (out)
    *out = s;
  return 0;
}

void sg_llm_stream_cancel(sg_llm_stream *s) {
  if (s == NULL || s->cancelled || s->released)
    return;
  s->cancelled = true;
  if (s->c->in_curl) {
    s->c->cancels_pending = true; /* released after the curl call returns */
    return;
  }
  send_abort(s);
  stream_release(s);
}

const char *sg_llm_stream_request_id(const sg_llm_stream *s) { return s->rid; }
int64_t sg_llm_stream_io_us(const sg_llm_stream *s) { return s->c->io_us; }

void sg_llm_client_destroy(sg_llm_client *c) {
  if (c == NULL)
    return;
  assert(c->in_curl == 0);
  c->destroying = true;
  while (c->streams) {
    c->streams->cancelled = true;
    stream_release(c->streams);
  }
  while (c->aborts)
    abort_done(c, c->aborts);
  /* May report sockets to remove: sock_cb closes their polls. */
  curl_multi_cleanup(c->multi);
  c->multi = NULL;
  /* Sockets curl closed without telling us: their polls go too. */
  while (c->socks)
    sock_close(c->socks);
  uv_timer_stop(&c->timer);
  uv_close((uv_handle_t *)&c->timer, client_handle_closed);
}
