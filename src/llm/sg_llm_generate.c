/* sg_llm_generate.c: one generation to its end on a private loop. */
#include "llm/sg_llm_generate.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"

#include <curl/curl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_TEXT (16u << 20)
#define MAX_IDS (1u << 22)

typedef struct run {
  const sg_llm_generate_opts *o;
  sg_llm_generation *g;
  sg_buf reasoning, content;
  int deltas;
  bool ended, cancelled;
  int32_t *pids, *cids;
  size_t np, nc, capc;
  sg_llm_stream *stream;
} run;

static void count_delta(run *u, sg_llm_stream *s) {
  u->deltas++;
  if (u->o->cancel_after_deltas > 0 && u->deltas == u->o->cancel_after_deltas &&
      !u->cancelled) {
    u->cancelled = true;
    sg_llm_stream_cancel(s);
  }
}

static void on_reasoning(sg_llm_stream *s, void *d, const char *t, size_t n) {
  run *u = d;
  sg_buf_append(&u->reasoning, t, n);
  if (u->o->on_reasoning)
    u->o->on_reasoning(u->o->data, t, n);
  count_delta(u, s);
}

static void on_content(sg_llm_stream *s, void *d, const char *t, size_t n) {
  run *u = d;
  sg_buf_append(&u->content, t, n);
  if (u->o->on_content)
    u->o->on_content(u->o->data, t, n);
  count_delta(u, s);
}

static void on_ids(sg_llm_stream *s, void *d, bool prompt, const int32_t *ids,
                   size_t n) {
  (void)s;
  run *u = d;
  if (prompt) {
    if (u->pids == NULL && n <= MAX_IDS) {
      u->pids = sg_malloc((n ? n : 1) * sizeof *ids);
      memcpy(u->pids, ids, n * sizeof *ids);
      u->np = n;
    }
    return;
  }
  if (u->nc + n > MAX_IDS)
    return;
  if (u->nc + n > u->capc) {
    u->capc = (u->nc + n) * 2;
    u->cids = sg_realloc(u->cids, u->capc * sizeof *ids);
  }
  memcpy(u->cids + u->nc, ids, n * sizeof *ids);
  u->nc += n;
}

static void on_end(sg_llm_stream *s, void *d, const sg_llm_result *r) {
  (void)s;
  run *u = d;
  sg_llm_generation *g = u->g;
  u->ended = true;
  g->code = r->code;
  snprintf(g->message, sizeof g->message, "%s", r->message);
  g->http_status = r->http_status;
  snprintf(g->finish_reason, sizeof g->finish_reason, "%s", r->finish_reason);
  snprintf(g->reasoning_field, sizeof g->reasoning_field, "%s", r->reasoning_field);
  g->usage = r->usage;
  g->usage_estimated = r->usage_estimated;
  g->attempts = r->attempts;
  g->reasoning_chunks = r->reasoning_chunks;
  g->content_chunks = r->content_chunks;
  g->ttft_s = r->ttft_s;
  g->elapsed_s = r->elapsed_s;
}

int sg_llm_generate(const sg_llm_request *r, const sg_llm_generate_opts *opts,
                    sg_llm_generation *out, sg_err *err) {
  sg_llm_generate_opts dflt;
  if (opts == NULL) {
    memset(&dflt, 0, sizeof dflt);
    opts = &dflt;
  }
  memset(out, 0, sizeof *out);
  sg_llm_usage_init(&out->usage);
  out->ttft_s = -1;
  run u;
  memset(&u, 0, sizeof u);
  u.o = opts;
  u.g = out;
  size_t cap = opts->max_text_bytes ? opts->max_text_bytes : DEFAULT_MAX_TEXT;
  sg_buf_init(&u.reasoning, cap);
  sg_buf_init(&u.content, cap);
  uv_loop_t loop;
  uv_loop_init(&loop);
  sg_llm_client *c;
  int rc = sg_llm_client_new(&loop, opts->client, &c, err);
  if (rc == 0) {
    sg_llm_callbacks cb = {&u, on_reasoning, on_content, on_ids, NULL, on_end, on_end};
    rc = sg_llm_stream_start(c, r, &cb, &u.stream, err);
    if (rc == 0) {
      /* Every stream ends: its deadline bounds the loop. */
      while (!u.ended && !u.cancelled && sg_llm_client_active(c) > 0)
        uv_run(&loop, UV_RUN_ONCE);
      /* Let a cancellation's abort call (SGLang) go out before closing. */
      for (int i = 0; i < 10000 && sg_llm_client_aborts_in_flight(c) > 0; i++)
        uv_run(&loop, UV_RUN_ONCE);
    }
    sg_llm_client_destroy(c);
    uv_run(&loop, UV_RUN_DEFAULT);
  }
  uv_loop_close(&loop);
  if (rc == 0 && u.cancelled) {
    out->code = SG_ECANCELED;
    snprintf(out->message, sizeof out->message, "cancelled after %d deltas", u.deltas);
    out->reasoning_chunks = out->content_chunks = 0;
  } else if (rc < 0) {
    out->code = rc;
    snprintf(out->message, sizeof out->message, "%s", err ? err->msg : "");
  }
  out->reasoning = sg_buf_steal(&u.reasoning);
  out->content = sg_buf_steal(&u.content);
  out->prompt_ids = u.pids;
  out->n_prompt_ids = u.np;
  out->completion_ids = u.cids;
  out->n_completion_ids = u.nc;
  if (out->ttft_s >= 0 && out->elapsed_s > out->ttft_s &&
      out->usage.completion_tokens > 0)
    out->tokens_per_s = (double)out->usage.completion_tokens / (out->elapsed_s - out->ttft_s);
  if (out->code != 0)
    return sg_err_set(err, out->code, "%s", out->message);
  return 0;
}

void sg_llm_generation_free(sg_llm_generation *g) {
  if (g == NULL)
    return;
  free(g->reasoning);
  free(g->content);
  free(g->prompt_ids);
  free(g->completion_ids);
  memset(g, 0, sizeof *g);
}

static size_t collect_cb(char *ptr, size_t size, size_t nmemb, void *userp) {
  sg_buf_append(userp, ptr, size * nmemb);
  return size * nmemb;
}

int sg_llm_tokenize(const char *base_url, const char *model, const char *text,
                    const sg_llm_message *msgs, size_t n_msgs,
                    bool add_special_tokens, const sg_llm_client_opts *client,
                    double timeout_s, int32_t **ids, size_t *n_ids, sg_err *err) {
  *ids = NULL;
  *n_ids = 0;
  if (base_url == NULL || model == NULL)
    return sg_err_set(err, SG_EINVAL, "tokenize: no base URL or model");
  json_t *b = json_object();
  json_object_set_new(b, "model", json_string(model));
  if (text) {
    json_object_set_new(b, "prompt", json_string(text));
    json_object_set_new(b, "add_special_tokens", json_boolean(add_special_tokens));
  } else {
    json_t *arr = json_array();
    for (size_t i = 0; i < n_msgs; i++) {
      json_t *m = json_object();
      json_object_set_new(m, "role", json_string(msgs[i].role ? msgs[i].role : "user"));
      json_object_set_new(m, "content",
                          json_string(msgs[i].content ? msgs[i].content : ""));
      json_array_append_new(arr, m);
    }
    json_object_set_new(b, "messages", arr);
  }
  char *body = json_dumps(b, JSON_COMPACT);
  json_decref(b);
  char *url = sg_llm_root_url(base_url, "/tokenize");
  const char *env = client && client->api_key_env ? client->api_key_env : "OPENAI_API_KEY";
  const char *key = env[0] ? getenv(env) : NULL;
  char *auth = key && key[0] ? sg_asprintf("Authorization: Bearer %s", key) : NULL;
  struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
  if (auth)
    h = curl_slist_append(h, auth);
  sg_buf reply;
  sg_buf_init(&reply, 64u << 20);
  CURL *e = curl_easy_init();
  int rc = 0;
  if (e == NULL) {
    rc = sg_err_set(err, SG_EIO, "curl_easy_init failed");
    goto out;
  }
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)((timeout_s > 0 ? timeout_s : 30) * 1000));
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect_cb);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &reply);
  CURLcode cc = curl_easy_perform(e);
  long status = 0;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  if (cc != CURLE_OK) {
    rc = sg_err_set(err, SG_ECONN, "tokenize: %s", curl_easy_strerror(cc));
    goto out;
  }
  if (status < 200 || status >= 300) {
    rc = sg_llm_error_from_body(status, sg_buf_str(&reply), reply.len, SG_EHTTP, err);
    sg_err_prefix(err, "tokenize");
    goto out;
  }
  json_t *j = json_loadb(sg_buf_str(&reply), reply.len, 0, NULL);
  json_t *toks = json_object_get(j, "tokens");
  if (!json_is_array(toks)) {
    rc = sg_err_set(err, SG_EPROTO, "tokenize: the reply has no \"tokens\" array");
    if (j)
      json_decref(j);
    goto out;
  }
  size_t n = json_array_size(toks);
  int32_t *out = sg_malloc((n ? n : 1) * sizeof *out);
  for (size_t i = 0; i < n; i++) {
    json_t *t = json_array_get(toks, i);
    if (!json_is_integer(t) || json_integer_value(t) < 0 ||
        json_integer_value(t) > INT32_MAX) {
      free(out);
      json_decref(j);
      rc = sg_err_set(err, SG_EPROTO, "tokenize: tokens[%zu] is not a token id", i);
      goto out;
    }
    out[i] = (int32_t)json_integer_value(t);
  }
  json_decref(j);
  *ids = out;
  *n_ids = n;
out:
  if (e)
    curl_easy_cleanup(e);
  curl_slist_free_all(h);
  free(auth);
  free(url);
  free(body);
  sg_buf_free(&reply);
  return rc;
}
