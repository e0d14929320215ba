/* sg_llm_server.c: the built-in OpenAI-compatible test server.
 *
 * How it works. libmicrohttpd runs one thread per connection. The access
 * handler gathers the body, parses and checks the request, renders the prompt
 * with a ChatML-like template, asks the model (sg_fakemodel, pure) for the
 * whole answer at once, tokenizes it, and queues a response whose content
 * reader (`gen_read`) emits it token by token: one SSE event per token when
 * streaming, one JSON body at the end when not. Pacing (tokens_per_s, prefill
 * of uncached prompt tokens) and faults happen inside the reader; every wait
 * is sliced into short naps that watch for an abort, a server stop and the
 * client going away (POLLRDHUP on the socket), so a generation stops as soon
 * as nobody wants it, as vLLM and SGLang do.
 *
 * Ownership: a request's state (`req`) and its generation (`gen`) live from
 * the first call of the access handler to the request-completed callback,
 * which frees them; the response has no free callback, so nothing touches a
 * generation after that callback. Live generations are on a list under the
 * server's mutex, for /abort_request.
 *
 * It must never bind anything but what it is told (loopback by default) and
 * never read anything but its task directory.
 *
 * Faults are parsed in llm/sg_llm_fault.c, events and bodies written in
 * sg_server_events.c. Over 800 lines on purpose: the generation loop and
 * the handlers that run it are one state machine.
 */
#include "testserver/sg_llm_server_priv.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_clock.h"
#include "common/sg_hash.h"
#include "testserver/sg_fakemodel.h"
#include "testserver/sg_server_request.h"
#include "testserver/sg_server_tasks.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* ------------------------------------------------------------------------ */
/* Server and generation state                                               */

/* ------------------------------------------------------------------------ */
/* Small helpers                                                             */

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, json_t *j,
                                 const char *hname, const char *hval) {
  char *text = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  size_t len = strlen(text);
  struct MHD_Response *r =
      MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(r, "Content-Type", "application/json");
  if (hname)
    MHD_add_response_header(r, hname, hval);
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

static const char *error_type(unsigned status) {
  switch (status) {
  case 400:
  case 413:
    return "invalid_request_error";
  case 404:
  case 405:
    return "not_found_error";
  case 429:
    return "rate_limit_error";
  default:
    return "server_error";
  }
}

json_t *sg_server_error_json(unsigned status, const char *param, const char *msg) {
  return json_pack("{s:{s:s, s:s, s:s?, s:i}}", "error", "message", msg, "type",
                   error_type(status), "param", param, "code", (int)status);
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status,
                                  const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status,
                                  const char *param, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return send_json(c, status, sg_server_error_json(status, param, msg), NULL, NULL);
}

/* 1: the client closed its end; 0: still there (or unknown). */
static int client_gone(int fd) {
  if (fd < 0)
    return 0;
  struct pollfd p = {.fd = fd, .events = POLLRDHUP};
  if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
    return 1;
  return 0;
}

enum { NAP_OK = 0, NAP_ABORT = 1, NAP_GONE = -1 };

/* Waits until `until_us`, in slices, watching for a stop, the client going
 * away and (when g is not NULL) an abort. */
static int nap_until(sg_llm_server *s, gen *g, int fd, int64_t until_us) {
  for (;;) {
    if (atomic_load(&s->stopping) || client_gone(fd))
      return NAP_GONE;
    if (g && atomic_load(&g->abort_flag))
      return NAP_ABORT;
    int64_t now = sg_clock_now_us();
    if (now >= until_us)
      return NAP_OK;
    int64_t d = until_us - now;
    if (d > NAP_US)
      d = NAP_US;
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)d * 1000};
    nanosleep(&ts, NULL);
  }
}

static int conn_fd(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  return ci ? (int)ci->connect_fd : -1;
}

/* Counts an attempt of the logical request `key` under a fault that fails
 * the first `attempts` attempts; true when this attempt must fail. */
static bool attempt_fails(sg_llm_server *s, uint64_t key, int attempts) {
  if (attempts <= 0)
    return true;
  pthread_mutex_lock(&s->mu);
  attempt *a = NULL;
  for (size_t i = 0; i < ATTEMPT_SLOTS; i++)
    if (s->attempts[i].count > 0 && s->attempts[i].key == key)
      a = &s->attempts[i];
  if (!a) {
    a = &s->attempts[s->attempts_next];
    s->attempts_next = (s->attempts_next + 1) % ATTEMPT_SLOTS;
    a->key = key;
    a->count = 0;
  }
  a->count++;
  bool fail = a->count <= attempts;
  pthread_mutex_unlock(&s->mu);
  return fail;
}

/* ------------------------------------------------------------------------ */
/* The content reader: the generation loop                                   */

/* With concurrency C: how much slower each stream goes now, n / C with n
 * streams live (1 with no more than C). */
static double contention(sg_llm_server *s) {
  double n = (double)atomic_load(&s->generations_active);
  return s->concurrency > 0 && n > s->concurrency ? n / s->concurrency : 1;
}

static void finish(gen *g, const char *reason) {
  g->finish_reason = reason;
  g->state = GS_FINISH;
}

/* Produces the next piece of output into g->out; returns false when the
 * connection must be closed at once. Longer than 80 lines on purpose: the
 * generation's state machine (prefill, tokens, faults, finish) in one
 * switch, each state's step next to the others. */
static bool gen_step(gen *g) {
  sg_llm_server *s = g->s;
  switch (g->state) {
  case GS_PREFILL: {
    int64_t now = sg_clock_now_us();
    if (s->prefill_tokens_per_s > 0 && g->due_us == NULL) { /* a recording paces itself */
      double secs = (double)(g->nprompt - g->cached) / s->prefill_tokens_per_s *
                    contention(s);
      int rc = nap_until(s, g, g->fd, now + (int64_t)(secs * 1e6));
      if (rc == NAP_GONE)
        return false;
      now = sg_clock_now_us();
    }
    g->t_first_us = now;
    g->state = GS_TOKENS;
    return true;
  }
  case GS_TOKENS: {
    const sg_llm_fault *f = &g->fault;
    /* Faults that strike after N streamed chunks (N tokens when not
     * streaming: the body is then cut, delayed or replaced). */
    if ((g->stream ? g->chunks : (int)g->next) == f->after_chunks) {
      if (f->kind == SG_LLM_FAULT_DISCONNECT) {
        g->fault_closed = true;
        return false;
      }
      if (f->kind == SG_LLM_FAULT_MALFORMED && g->stream) {
        sg_buf_puts(&g->out, "data: {\"id\": \"");
        sg_buf_puts(&g->out, g->id);
        sg_buf_puts(&g->out, "\", \"choices\": [{\"delta\": {\"content\": \n\n");
        g->chunks++;
        return true;
      }
      if (f->kind == SG_LLM_FAULT_ERROR_IN_STREAM) {
        sg_server_put_error_event(g, "injected fault: error_in_stream");
        g->state = GS_DONE;
        g->finished = true;
        return true;
      }
      if (f->kind == SG_LLM_FAULT_STALL) {
        g->fault.kind = SG_LLM_FAULT_NONE; /* once */
        int64_t t0 = sg_clock_now_us();
        int rc = nap_until(s, g, g->fd, t0 + (int64_t)(f->seconds * 1e6));
        if (rc == NAP_GONE)
          return false;
        g->t_first_us += sg_clock_now_us() - t0; /* resume the pace after it */
        g->t_last_us += sg_clock_now_us() - t0;
      }
    }
    if (atomic_load(&g->abort_flag)) {
      atomic_fetch_add(&s->generations_aborted, 1);
      finish(g, "abort");
      return true;
    }
    if (g->next >= g->ntoks && g->cut_msg) {
      /* Nothing more was recorded: a client that cut it there while
       * recorded gets the time to cut it again, then the error. */
      int rc = nap_until(s, g, g->fd, sg_clock_now_us() + (int64_t)(s->replay_hold_s * 1e6));
      if (rc == NAP_GONE)
        return false;
      if (rc == NAP_ABORT)
        return true;
      sg_server_put_error_event(g, g->cut_msg);
      g->state = GS_DONE;
      g->finished = true;
      return true;
    }
    if (g->next >= g->ntoks) {
      finish(g, g->hit_length ? "length" : "stop");
      return true;
    }
    if (s->tokens_per_s > 0 || g->due_us) {
      int64_t due = g->due_us ? g->t_first_us + g->due_us[g->next]
                              : g->t_first_us + (int64_t)((double)g->next * 1e6 / s->tokens_per_s);
      if (s->concurrency > 0 && g->due_us == NULL) /* the pace of the streams live now */
        due = g->next == 0 ? g->t_first_us
                           : g->t_last_us + (int64_t)(1e6 * contention(s) / s->tokens_per_s);
      g->t_last_us = due;
      int rc = nap_until(s, g, g->fd, due);
      if (rc == NAP_GONE)
        return false;
      if (rc == NAP_ABORT)
        return true; /* handled on the next step */
    } else if (client_gone(g->fd)) {
      return false;
    }
    if (g->stream)
      sg_server_put_token_event(g, g->next);
    /* The token's KV is cached from now on, as in vLLM. */
    if (g->due_us == NULL) {
      pthread_mutex_lock(&s->mu);
      sg_fm_cache_extend(s->cache, g->cache_handle, &g->toks[g->next].id, 1);
      pthread_mutex_unlock(&s->mu);
    }
    g->next++;
    atomic_fetch_add(&s->tokens_generated, 1);
    return true;
  }
  case GS_FINISH:
    if (g->stream) {
      sg_server_put_finish_events(g);
    } else if (g->fault.kind == SG_LLM_FAULT_MALFORMED) {
      sg_buf_puts(&g->out, "{\"id\": \"");
      sg_buf_puts(&g->out, g->id);
      sg_buf_puts(&g->out, "\", \"choices\": [");
    } else {
      sg_server_put_body(g);
    }
    g->state = GS_DONE;
    g->finished = true;
    return true;
  case GS_DONE:
    return true;
  }
  return false;
}

static void active_remove(sg_llm_server *s, gen *g);

static ssize_t gen_read(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  gen *g = cls;
  while (g->out_off >= g->out.len) {
    sg_buf_reset(&g->out);
    g->out_off = 0;
    if (g->state == GS_DONE) {
      /* Counted here, before the end of the chunked body goes out, so a
       * client that has read the whole answer always finds it counted. */
      if (g->active) {
        if (strcmp(g->finish_reason ? g->finish_reason : "", "abort") != 0)
          atomic_fetch_add(&g->s->generations_completed, 1);
        active_remove(g->s, g);
      }
      return MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (!gen_step(g))
      return MHD_CONTENT_READER_END_WITH_ERROR;
  }
  size_t n = g->out.len - g->out_off;
  if (n > max)
    n = max;
  memcpy(buf, g->out.data + g->out_off, n);
  g->out_off += n;
  return (ssize_t)n;
}

static void gen_free(gen *g) {
  if (!g)
    return;
  free(g->id);
  free(g->model);
  free(g->rid);
  free(g->xrid);
  free(g->text);
  free(g->toks);
  free(g->prompt_ids);
  free(g->due_us);
  free(g->cut_msg);
  sg_buf_free(&g->out);
  free(g);
}

static void active_add(sg_llm_server *s, gen *g) {
  g->active = true;
  pthread_mutex_lock(&s->mu);
  g->next_active = s->active;
  s->active = g;
  pthread_mutex_unlock(&s->mu);
  atomic_fetch_add(&s->generations_active, 1);
}

/* Takes g off the live list (once). */
static void active_remove(sg_llm_server *s, gen *g) {
  if (!g->active)
    return;
  g->active = false;
  pthread_mutex_lock(&s->mu);
  for (gen **p = &s->active; *p; p = &(*p)->next_active)
    if (*p == g) {
      *p = g->next_active;
      break;
    }
  pthread_mutex_unlock(&s->mu);
  atomic_fetch_sub(&s->generations_active, 1);
}

/* ------------------------------------------------------------------------ */
/* Handlers                                                                  */

static enum MHD_Result handle_models(sg_llm_server *s, struct MHD_Connection *c) {
  json_t *j = json_pack("{s:s, s:[{s:s, s:s, s:i, s:s}]}", "object", "list", "data", "id",
                        s->model_name, "object", "model", "created", CREATED_S,
                        "owned_by", "specgen");
  return send_json(c, 200, j, NULL, NULL);
}

/* The counters in Prometheus' text format, with vLLM's names where vLLM has
 * the quantity (clients such as `specgen llm check` read
 * vllm:num_requests_running to see that a cancelled generation stopped). */
static enum MHD_Result handle_metrics(sg_llm_server *s, struct MHD_Connection *c) {
  sg_llm_server_stats st;
  sg_llm_server_stats_get(s, &st);
  sg_buf b;
  sg_buf_init(&b, 0);
  const char *m = s->model_name;
  sg_buf_printf(&b, "# TYPE vllm:num_requests_running gauge\n"
                    "vllm:num_requests_running{model_name=\"%s\"} %llu\n", m,
                (unsigned long long)st.generations_active);
  sg_buf_printf(&b, "# TYPE vllm:prompt_tokens_total counter\n"
                    "vllm:prompt_tokens_total{model_name=\"%s\"} %llu\n", m,
                (unsigned long long)st.prompt_tokens);
  sg_buf_printf(&b, "# TYPE vllm:generation_tokens_total counter\n"
                    "vllm:generation_tokens_total{model_name=\"%s\"} %llu\n", m,
                (unsigned long long)st.tokens_generated);
  const struct {
    const char *name;
    uint64_t v;
  } counters[] = {
      {"requests_total", st.requests_total},
      {"generations_started_total", st.generations_started},
      {"generations_completed_total", st.generations_completed},
      {"generations_cancelled_total", st.generations_cancelled},
      {"generations_aborted_total", st.generations_aborted},
      {"abort_requests_total", st.abort_requests},
      {"faults_injected_total", st.faults_injected},
      {"cached_tokens_total", st.cached_tokens},
  };
  for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++)
    sg_buf_printf(&b, "# TYPE specgen_test_server_%s counter\nspecgen_test_server_%s %llu\n",
                  counters[i].name, counters[i].name, (unsigned long long)counters[i].v);
  size_t len = b.len;
  struct MHD_Response *r =
      MHD_create_response_from_buffer(len, sg_buf_steal(&b), MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4");
  enum MHD_Result ret = MHD_queue_response(c, 200, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result handle_abort(sg_llm_server *s, struct MHD_Connection *c, json_t *body) {
  atomic_fetch_add(&s->abort_requests, 1);
  json_t *rid = json_object_get(body, "rid");
  bool all = json_is_true(json_object_get(body, "abort_all"));
  if (!all && !json_is_string(rid))
    return send_error(c, 400, "rid", "field \"rid\" is missing or not a string "
                                     "(or set \"abort_all\": true)");
  const char *r = json_string_value(rid);
  int n = 0;
  pthread_mutex_lock(&s->mu);
  for (gen *g = s->active; g; g = g->next_active) {
    bool match = all || (g->rid && strcmp(g->rid, r) == 0) ||
                 (g->xrid && strcmp(g->xrid, r) == 0) || strcmp(g->id, r) == 0;
    if (match && !atomic_exchange(&g->abort_flag, true))
      n++;
  }
  pthread_mutex_unlock(&s->mu);
  return send_json(c, 200, json_pack("{s:i}", "aborted", n), NULL, NULL);
}

/* vLLM's /tokenize: {"prompt": text} or {"messages": [...]} (rendered with
 * the chat template and its generation prompt) -> {"count", "max_model_len",
 * "tokens"}. Clients use it to append exact tokens (say "</think>") to a
 * prompt sent as token ids. */
static enum MHD_Result handle_tokenize(struct MHD_Connection *c, json_t *body) {
  sg_buf text;
  sg_buf_init(&text, 0);
  json_t *prompt = json_object_get(body, "prompt");
  if (json_is_string(prompt)) {
    sg_buf_append(&text, json_string_value(prompt), json_string_length(prompt));
  } else if (json_object_get(body, "messages")) {
    json_t *b = json_copy(body);
    if (!json_is_string(json_object_get(b, "model")))
      json_object_set_new(b, "model", json_string("any"));
    sg_server_request r;
    sg_server_request_init(&r);
    if (sg_server_request_parse(b, true, &r) < 0) {
      enum MHD_Result ret = send_error(c, 400, r.param[0] ? r.param : NULL, "%s", r.msg);
      sg_server_request_free(&r);
      json_decref(b);
      sg_buf_free(&text);
      return ret;
    }
    sg_buf_puts(&text, sg_buf_str(&r.prompt));
    sg_server_request_free(&r);
    json_decref(b);
  } else {
    sg_buf_free(&text);
    return send_error(c, 400, "prompt",
                      "field \"prompt\" (a string) or \"messages\" is missing");
  }
  size_t n = sg_fm_tokenize(text.data, text.len, NULL, NULL, 0);
  int32_t *ids = sg_malloc((n ? n : 1) * sizeof *ids);
  sg_fm_tokenize(text.data, text.len, ids, NULL, n);
  json_t *j = json_pack("{s:I, s:i, s:o}", "count", (json_int_t)n, "max_model_len", 1 << 20,
                        "tokens", sg_server_ids_json(ids, n));
  free(ids);
  sg_buf_free(&text);
  return send_json(c, 200, j, NULL, NULL);
}

/* vLLM's /detokenize: {"tokens": [...]} -> {"prompt": text}. */
static enum MHD_Result handle_detokenize(struct MHD_Connection *c, json_t *body) {
  json_t *toks = json_object_get(body, "tokens");
  if (!json_is_array(toks))
    return send_error(c, 400, "tokens", "field \"tokens\" is missing or not an array");
  size_t n = json_array_size(toks);
  sg_buf text;
  sg_buf_init(&text, 0);
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(toks, i);
    json_int_t id = json_integer_value(e);
    char piece[SG_FM_PIECE_MAX];
    size_t pl = json_is_integer(e) && id > 0 && id <= INT32_MAX
                    ? sg_fm_token_piece((int32_t)id, piece)
                    : 0;
    if (pl == 0) {
      sg_buf_free(&text);
      char param[48];
      snprintf(param, sizeof param, "tokens[%zu]", i);
      return send_error(c, 400, param, "field \"%s\" is not a token id of this model", param);
    }
    sg_buf_append(&text, piece, pl);
  }
  json_t *j = json_pack("{s:s%}", "prompt", sg_buf_str(&text), text.len);
  sg_buf_free(&text);
  return send_json(c, 200, j, NULL, NULL);
}

/* The model's answer to p: g's text and tokens, and the response's task,
 * example and prefix-fraction headers (160, 96 and 64 bytes). Frees p. */
static void fake_answer(sg_llm_server *s, const req *rq, sg_server_request *p, bool chat,
                        const char *xrid, gen *g, char *hdr_task, char *hdr_ex, char *hdr_f) {
  /* The answer. */
  sg_fm_request mr = {
      .context = sg_buf_str(&p->context),
      .prompt = sg_buf_str(&p->prompt),
      .thinking = p->thinking,
      .has_seed = p->has_seed,
      .request_seed = p->seed,
      .sample_key = xrid ? xrid : p->rid,
      .reasoning_prefix = p->reasoning_prefix.len ? sg_buf_str(&p->reasoning_prefix) : NULL,
  };
  sg_fm_answer a;
  sg_fakemodel_generate(s->model, &mr, &a);
  uint64_t idh = sg_fnv1a64(rq->body.data, rq->body.len) ^ (xrid ? sg_fnv1a64(xrid, strlen(xrid)) : 0);
  g->id = sg_asprintf("%s-%016llx", chat ? "chatcmpl" : "cmpl", (unsigned long long)idh);

  /* A main generation with traces: the next real trace is its reasoning
   * (the answer stays the model's: a trace's own answer is for another
   * task). */
  const char *reasoning = a.reasoning;
  if (s->traces && p->thinking && p->reasoning_prefix.len == 0) {
    pthread_mutex_lock(&s->mu);
    reasoning = s->traces[s->next_trace++ % s->ntraces];
    pthread_mutex_unlock(&s->mu);
  }
  sg_buf text;
  sg_buf_init(&text, 0);
  sg_buf_puts(&text, reasoning);
  size_t rlen = text.len;
  if (!chat && p->thinking)
    sg_buf_puts(&text, SG_SERVER_TPL_NOTHINK);
  /* a continued answer (an opened code block) goes on where it was left */
  sg_buf_puts(&text, sg_server_answer_after(sg_buf_str(&p->answer_prefix), a.content));
  /* Reasoning and content are tokenized apart, so no token straddles them. */
  size_t nr = sg_fm_tokenize(text.data, rlen, NULL, NULL, 0);
  size_t total = nr + sg_fm_tokenize(text.data + rlen, text.len - rlen, NULL, NULL, 0);
  int32_t *ids = sg_malloc((total ? total : 1) * sizeof *ids);
  size_t *ends = sg_malloc((total ? total : 1) * sizeof *ends);
  sg_fm_tokenize(text.data, rlen, ids, ends, nr);
  sg_fm_tokenize(text.data + rlen, text.len - rlen, ids + nr, ends + nr, total - nr);
  g->toks = sg_malloc((total ? total : 1) * sizeof *g->toks);
  size_t start = 0;
  for (size_t i = 0; i < total; i++) {
    token *tk = &g->toks[i];
    size_t end = i < nr ? ends[i] : rlen + ends[i];
    tk->off = (uint32_t)start;
    tk->len = (uint32_t)(end - start);
    tk->id = ids[i];
    tk->kind = chat && i < nr ? TOK_REASONING : TOK_CONTENT;
    if (tk->kind == TOK_REASONING)
      g->nreasoning++;
    start = end;
  }
  free(ids);
  free(ends);
  g->ntoks = total;
  if (p->max_tokens > 0 && (size_t)p->max_tokens < total) {
    g->ntoks = (size_t)p->max_tokens;
    g->hit_length = true;
  }
  g->text = sg_buf_steal(&text);

  const sg_fm_task *t = a.task >= 0 ? sg_fakemodel_task(s->model, (size_t)a.task) : NULL;
  snprintf(hdr_task, 160, "%s", t ? t->name : "");
  snprintf(hdr_ex, 96, "%s%s%s", a.status, *a.status ? "-" : "", a.label);
  snprintf(hdr_f, 64, "%.4f", a.prefix_fraction);
  sg_fm_answer_free(&a);
  sg_server_request_free(p);
}

static enum MHD_Result handle_completion(sg_llm_server *s, struct MHD_Connection *c,
                                         req *rq, json_t *body, bool chat) {
  /* The fault: the request's header, else the server's. */
  sg_llm_fault fault = s->fault;
  const char *fh = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Specgen-Fault");
  if (fh) {
    sg_err err;
    sg_err_clear(&err);
    if (sg_llm_fault_parse(fh, &fault, &err) < 0)
      return send_error(c, 400, "X-Specgen-Fault", "header X-Specgen-Fault: %s", err.msg);
  }
  const char *xrid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Request-Id");

  sg_server_request p;
  sg_server_request_init(&p);
  if (sg_server_request_parse(body, chat, &p) < 0) {
    enum MHD_Result ret = send_error(c, 400, p.param[0] ? p.param : NULL, "%s", p.msg);
    sg_server_request_free(&p);
    return ret;
  }

  if (fault.kind == SG_LLM_FAULT_STATUS429 || fault.kind == SG_LLM_FAULT_STATUS500) {
    uint64_t key = xrid ? sg_fnv1a64(xrid, strlen(xrid))
                 : p.rid ? sg_fnv1a64(p.rid, strlen(p.rid))
                         : sg_fnv1a64(rq->body.data, rq->body.len);
    key ^= (uint64_t)fault.kind * 0x9e3779b97f4a7c15ULL;
    if (attempt_fails(s, key, fault.attempts)) {
      atomic_fetch_add(&s->faults_injected, 1);
      sg_server_request_free(&p);
      if (fault.kind == SG_LLM_FAULT_STATUS500)
        return send_json(c, 500, sg_server_error_json(500, NULL, "injected fault: status500"), NULL,
                         NULL);
      char ra[32];
      snprintf(ra, sizeof ra, "%.0f", ceil(fault.seconds));
      return send_json(c, 429, sg_server_error_json(429, NULL, "injected fault: status429"),
                       "Retry-After", ra);
    }
    fault.kind = SG_LLM_FAULT_NONE;
  }
  /* a fault for the first N requests only: later ones go through */
  if (fault.kind != SG_LLM_FAULT_NONE && fault.streams > 0 &&
      atomic_fetch_add(&s->fault_streams, 1) >= (uint_fast64_t)fault.streams)
    fault.kind = SG_LLM_FAULT_NONE;

  gen *g = sg_calloc(1, sizeof *g);
  g->s = s;
  g->fd = conn_fd(c);
  g->chat = chat;
  g->stream = p.stream;
  g->include_usage = p.include_usage;
  g->return_token_ids = p.return_token_ids;
  g->model = sg_strdup(p.model);
  g->rid = p.rid ? sg_strdup(p.rid) : NULL;
  g->xrid = xrid ? sg_strdup(xrid) : NULL;
  g->fault = fault;
  sg_buf_init(&g->out, 0);

  /* The prompt's tokens and what the prefix cache holds of them. */
  if (p.prompt_ids) {
    g->prompt_ids = p.prompt_ids;
    g->nprompt = p.nprompt_ids;
    p.prompt_ids = NULL;
  } else {
    g->nprompt = sg_fm_tokenize(p.prompt.data, p.prompt.len, NULL, NULL, 0);
    g->prompt_ids = sg_malloc((g->nprompt ? g->nprompt : 1) * sizeof *g->prompt_ids);
    sg_fm_tokenize(p.prompt.data, p.prompt.len, g->prompt_ids, NULL, g->nprompt);
  }
  pthread_mutex_lock(&s->mu);
  g->cached = sg_fm_cache_lookup_insert(s->cache, g->prompt_ids, g->nprompt, &g->cache_handle);
  pthread_mutex_unlock(&s->mu);
  atomic_fetch_add(&s->prompt_tokens, g->nprompt);
  atomic_fetch_add(&s->cached_tokens, g->cached);

  char hdr_task[160], hdr_ex[96], hdr_f[64] = "";
  if (s->replay) {
    sg_err err;
    sg_err_clear(&err);
    g->id = sg_asprintf("%s-%016llx", chat ? "chatcmpl" : "cmpl",
                        (unsigned long long)sg_fnv1a64(rq->body.data, rq->body.len));
    int rc = sg_server_replay_answer(s, body, p.max_tokens, g, hdr_task, sizeof hdr_task,
                                     hdr_ex, sizeof hdr_ex, &err);
    sg_server_request_free(&p);
    if (rc < 0) {
      gen_free(g);
      return send_error(c, 404, NULL, "%s", err.msg);
    }
  } else {
    fake_answer(s, rq, &p, chat, xrid, g, hdr_task, hdr_ex, hdr_f);
  }

  rq->g = g;
  atomic_fetch_add(&s->generations_started, 1);
  if (fault.kind != SG_LLM_FAULT_NONE)
    atomic_fetch_add(&s->faults_injected, 1);
  active_add(s, g);

  if (fault.kind == SG_LLM_FAULT_SLOW_FIRST_BYTE) {
    int rc = nap_until(s, NULL, g->fd, sg_clock_now_us() + (int64_t)(fault.seconds * 1e6));
    if (rc == NAP_GONE)
      return MHD_NO;
  }

  struct MHD_Response *r =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, gen_read, g, NULL);
  MHD_add_response_header(r, "Content-Type",
                          g->stream ? "text/event-stream" : "application/json");
  if (g->stream)
    MHD_add_response_header(r, "Cache-Control", "no-cache");
  MHD_add_response_header(r, "X-Specgen-Task", hdr_task);
  MHD_add_response_header(r, "X-Specgen-Example", hdr_ex);
  MHD_add_response_header(r, "X-Specgen-Prefix-Fraction", hdr_f);
  enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size,
                                  void **con_cls) {
  (void)version;
  sg_llm_server *s = cls;
  req *rq = *con_cls;
  if (!rq) {
    rq = sg_calloc(1, sizeof *rq);
    sg_buf_init(&rq->body, 0);
    *con_cls = rq;
    atomic_fetch_add(&s->requests_total, 1);
    return MHD_YES;
  }
  if (*upload_size) {
    if (rq->body.len + *upload_size > BODY_MAX_BYTES)
      rq->too_large = true;
    else
      sg_buf_append(&rq->body, upload_data, *upload_size);
    *upload_size = 0;
    return MHD_YES;
  }
  bool post = strcmp(method, "POST") == 0;
  bool get = strcmp(method, "GET") == 0;
  bool is_chat = strcmp(url, "/v1/chat/completions") == 0;
  bool is_cmpl = strcmp(url, "/v1/completions") == 0;
  bool is_abort = strcmp(url, "/abort_request") == 0;
  bool is_tok = strcmp(url, "/tokenize") == 0;
  bool is_detok = strcmp(url, "/detokenize") == 0;
  if (strcmp(url, "/v1/models") == 0 || strcmp(url, "/health") == 0 ||
      strcmp(url, "/metrics") == 0) {
    if (!get)
      return send_error(c, 405, NULL, "%s %s: use GET", method, url);
    if (strcmp(url, "/health") == 0)
      return send_json(c, 200, json_object(), NULL, NULL);
    if (strcmp(url, "/metrics") == 0)
      return handle_metrics(s, c);
    return handle_models(s, c);
  }
  if (!is_chat && !is_cmpl && !is_abort && !is_tok && !is_detok)
    return send_error(c, 404, NULL, "no route %s %s", method, url);
  if (!post)
    return send_error(c, 405, NULL, "%s %s: use POST", method, url);
  if (rq->too_large)
    return send_error(c, 413, NULL, "request body is larger than %u bytes", BODY_MAX_BYTES);
  json_error_t je;
  json_t *body = json_loadb(rq->body.data ? rq->body.data : "", rq->body.len, 0, &je);
  if (!body)
    return send_error(c, 400, NULL, "request body is not valid JSON: line %d column %d: %s",
                      je.line, je.column, je.text);
  if (!json_is_object(body)) {
    json_decref(body);
    return send_error(c, 400, NULL, "request body is not a JSON object");
  }
  enum MHD_Result ret = is_abort   ? handle_abort(s, c, body)
                        : is_tok   ? handle_tokenize(c, body)
                        : is_detok ? handle_detokenize(c, body)
                                   : handle_completion(s, c, rq, body, is_chat);
  json_decref(body);
  return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  (void)c;
  sg_llm_server *s = cls;
  req *rq = *con_cls;
  if (!rq)
    return;
  gen *g = rq->g;
  if (g) {
    /* Still live: it ended before its last byte (a sent answer was counted
     * completed by the reader). */
    if (g->active && !g->fault_closed && toe != MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN)
      atomic_fetch_add(&s->generations_cancelled, 1);
    active_remove(s, g);
    gen_free(g);
  }
  sg_buf_free(&rq->body);
  free(rq);
  *con_cls = NULL;
}

/* ------------------------------------------------------------------------ */
/* Lifecycle                                                                 */

void sg_llm_server_opts_init(sg_llm_server_opts *o) {
  memset(o, 0, sizeof *o);
  o->host = "127.0.0.1";
  o->seed = 1;
  o->reasoning_field = "reasoning_content";
  o->model_name = "specgen-test";
}

int sg_llm_server_start(const sg_llm_server_opts *opts, sg_llm_server **out, sg_err *err) {
  *out = NULL;
  sg_llm_server_opts o;
  sg_llm_server_opts_init(&o);
  if (opts)
    o = *opts;
  const char *host = o.host ? o.host : "127.0.0.1";
  const char *field = o.reasoning_field ? o.reasoning_field : "reasoning_content";
  if (strcmp(field, "reasoning") && strcmp(field, "reasoning_content"))
    return sg_err_set(err, SG_EINVAL,
                      "reasoning_field \"%s\": must be reasoning or reasoning_content", field);
  if (o.port < 0 || o.port > 65535)
    return sg_err_set(err, SG_EINVAL, "port %d: out of range", o.port);
  if (!(o.tokens_per_s >= 0) || !(o.prefill_tokens_per_s >= 0))
    return sg_err_set(err, SG_EINVAL, "tokens_per_s and prefill_tokens_per_s must be >= 0");
  if (o.concurrency < 0)
    return sg_err_set(err, SG_EINVAL, "concurrency %d: must be >= 0", o.concurrency);
  if (o.reasoning_tokens_min < 0 || o.reasoning_tokens_max < 0 ||
      (o.reasoning_tokens_max && o.reasoning_tokens_max < o.reasoning_tokens_min))
    return sg_err_set(err, SG_EINVAL, "reasoning token range %d..%d is not a range",
                      o.reasoning_tokens_min, o.reasoning_tokens_max);

  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                   MHD_USE_POLL;
  struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)o.port);
  } else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)o.port);
    flags |= MHD_USE_IPv6;
  } else {
    return sg_err_set(err, SG_EINVAL, "host \"%s\": not an IPv4 or IPv6 address", host);
  }

  if (!(o.replay_speed >= 0) || !(o.replay_hold_s >= 0))
    return sg_err_set(err, SG_EINVAL, "replay speed and hold must be >= 0");
  sg_replay *replay = NULL;
  int rc = o.replay ? sg_replay_load(o.replay, &replay, err) : 0;
  if (rc < 0)
    return rc;
  char **traces = NULL;
  size_t ntraces = 0;
  if (o.trace && (rc = sg_replay_traces_load(o.trace, &traces, &ntraces, err)) < 0) {
    sg_replay_free(replay);
    return sg_err_prefix(err, "trace");
  }
  sg_fm_task *tasks = NULL;
  size_t ntasks = 0;
  rc = sg_server_tasks_load(o.tasks_root, &tasks, &ntasks, err);
  if (rc < 0) {
    sg_replay_free(replay);
    sg_replay_traces_free(traces, ntraces);
    return rc;
  }
  sg_fm_params mp;
  if (o.model)
    mp = *o.model;
  else
    sg_fm_params_init(&mp);
  if (o.reasoning_tokens_min > 0)
    mp.reasoning_tokens_min = o.reasoning_tokens_min;
  if (o.reasoning_tokens_max > 0)
    mp.reasoning_tokens_max = o.reasoning_tokens_max;
  if (mp.reasoning_tokens_max < mp.reasoning_tokens_min)
    mp.reasoning_tokens_max = mp.reasoning_tokens_min;


  sg_llm_server *s = sg_calloc(1, sizeof *s);
  s->replay = replay;
  s->traces = traces;
  s->ntraces = ntraces;
  s->model = sg_fakemodel_new(&mp, o.seed, tasks, ntasks);
  s->model_name = sg_strdup(o.model_name ? o.model_name : "specgen-test");
  s->reasoning_field = sg_strdup(field);
  s->tokens_per_s = o.tokens_per_s;
  s->prefill_tokens_per_s = o.prefill_tokens_per_s;
  s->concurrency = o.concurrency;
  s->fault = o.fault;
  s->replay_speed = o.replay_speed;
  s->replay_hold_s = o.replay_hold_s;
  s->cache = sg_fm_cache_new(CACHE_PROMPTS);
  pthread_mutex_init(&s->mu, NULL);

  s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
                               (struct sockaddr *)&ss, MHD_OPTION_NOTIFY_COMPLETED,
                               on_completed, s, MHD_OPTION_CONNECTION_LIMIT, 256u,
                               MHD_OPTION_END);
  if (!s->daemon) {
    int e = errno;
    sg_llm_server_stop(s);
    return sg_err_set(err, SG_EIO, "cannot listen on %s port %d: %s", host, o.port,
                      e ? strerror(e) : "libmicrohttpd failed to start");
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
  s->port = di ? di->port : o.port;
  *out = s;
  return 0;
}

int sg_llm_server_port(const sg_llm_server *s) { return s->port; }

int sg_llm_server_ntasks(const sg_llm_server *s) {
  return (int)sg_fakemodel_ntasks(s->model);
}

void sg_llm_server_stop(sg_llm_server *s) {
  if (!s)
    return;
  atomic_store(&s->stopping, true);
  if (s->daemon)
    MHD_stop_daemon(s->daemon);
  assert(s->active == NULL);
  sg_fm_cache_free(s->cache);
  sg_fakemodel_free(s->model);
  sg_replay_free(s->replay);
  sg_replay_traces_free(s->traces, s->ntraces);
  free(s->model_name);
  free(s->reasoning_field);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

void sg_llm_server_stats_get(const sg_llm_server *s, sg_llm_server_stats *o) {
  sg_llm_server *m = (sg_llm_server *)s; /* atomics load from non-const */
  o->requests_total = atomic_load(&m->requests_total);
  o->generations_started = atomic_load(&m->generations_started);
  o->generations_completed = atomic_load(&m->generations_completed);
  o->generations_cancelled = atomic_load(&m->generations_cancelled);
  o->generations_aborted = atomic_load(&m->generations_aborted);
  o->generations_active = atomic_load(&m->generations_active);
  o->abort_requests = atomic_load(&m->abort_requests);
  o->faults_injected = atomic_load(&m->faults_injected);
  o->tokens_generated = atomic_load(&m->tokens_generated);
  o->prompt_tokens = atomic_load(&m->prompt_tokens);
  o->cached_tokens = atomic_load(&m->cached_tokens);
}
