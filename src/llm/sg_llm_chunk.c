/* sg_llm_chunk.c: OpenAI-style streaming chunk interpreter (see the header).
 *
 * Lenient where servers differ harmlessly (a null field is an absent field,
 * unknown fields are ignored), strict where a wrong type would make us
 * misread the stream (a non-string content is a malformed chunk, not an
 * empty one: no silent fallback).
 */
#include "llm/sg_llm_chunk.h"

#include "common/sg_alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How much of the server's text an error message quotes. */
#define QUOTE_MAX 300

void sg_llm_usage_init(sg_llm_usage *u) {
  u->present = false;
  u->prompt_tokens = u->completion_tokens = u->total_tokens = -1;
  u->cached_tokens = u->reasoning_tokens = -1;
}

void sg_llm_chunk_free(sg_llm_chunk *c) {
  if (c == NULL)
    return;
  free(c->token_ids);
  free(c->prompt_token_ids);
  if (c->root_)
    json_decref(c->root_);
  memset(c, 0, sizeof *c);
}

/* Copies at most QUOTE_MAX bytes of s, replacing control bytes, for quoting. */
static void quote(char *out, size_t cap, const char *s, size_t n) {
  size_t k = 0;
  if (n > QUOTE_MAX)
    n = QUOTE_MAX;
  for (size_t i = 0; i < n && k + 1 < cap; i++) {
    unsigned char ch = (unsigned char)s[i];
    out[k++] = (ch < 0x20 || ch == 0x7f) ? ' ' : (char)ch;
  }
  out[k] = '\0';
}

/* A string field that may be absent or null. Returns 0 (with *s NULL when
 * absent) or SG_EPARSE naming the field. */
static int opt_string(json_t *obj, const char *key, const char *where,
                      const char **s, size_t *n, sg_err *err) {
  *s = NULL;
  if (n)
    *n = 0;
  json_t *v = json_object_get(obj, key);
  if (v == NULL || json_is_null(v))
    return 0;
  if (!json_is_string(v))
    return sg_err_set(err, SG_EPARSE, "malformed chunk: %s.%s is not a string",
                      where, key);
  *s = json_string_value(v);
  if (n)
    *n = json_string_length(v);
  return 0;
}

static int64_t opt_int(json_t *obj, const char *key) {
  json_t *v = json_object_get(obj, key);
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

static int token_array(json_t *v, const char *what, int32_t **ids, size_t *n,
                       sg_err *err) {
  *ids = NULL;
  *n = 0;
  if (v == NULL || json_is_null(v))
    return 0;
  if (!json_is_array(v))
    return sg_err_set(err, SG_EPARSE, "malformed chunk: %s is not an array",
                      what);
  size_t len = json_array_size(v);
  int32_t *out = sg_malloc((len ? len : 1) * sizeof *out);
  for (size_t i = 0; i < len; i++) {
    json_t *e = json_array_get(v, i);
    if (!json_is_integer(e) || json_integer_value(e) < 0 ||
        json_integer_value(e) > INT32_MAX) {
      free(out);
      return sg_err_set(err, SG_EPARSE,
                        "malformed chunk: %s[%zu] is not a token id", what, i);
    }
    out[i] = (int32_t)json_integer_value(e);
  }
  *ids = out;
  *n = len;
  return 0;
}

static void read_usage(json_t *u, sg_llm_usage *out) {
  sg_llm_usage_init(out);
  if (!json_is_object(u))
    return;
  out->present = true;
  out->prompt_tokens = opt_int(u, "prompt_tokens");
  out->completion_tokens = opt_int(u, "completion_tokens");
  out->total_tokens = opt_int(u, "total_tokens");
  json_t *pd = json_object_get(u, "prompt_tokens_details");
  if (json_is_object(pd))
    out->cached_tokens = opt_int(pd, "cached_tokens");
  /* DeepSeek's context cache reports hits at the top of usage. */
  if (out->cached_tokens < 0)
    out->cached_tokens = opt_int(u, "prompt_cache_hit_tokens");
  json_t *cd = json_object_get(u, "completion_tokens_details");
  if (json_is_object(cd))
    out->reasoning_tokens = opt_int(cd, "reasoning_tokens");
}

/* The message of an error object: {"message": ..., "type": ..., "code": ...}
 * or a bare string. */
static void error_text(json_t *e, char *out, size_t cap) {
  if (json_is_string(e)) {
    quote(out, cap, json_string_value(e), json_string_length(e));
    return;
  }
  const char *msg = NULL;
  json_t *m = json_object_get(e, "message");
  if (json_is_string(m))
    msg = json_string_value(m);
  char q[QUOTE_MAX + 1];
  quote(q, sizeof q, msg ? msg : "(no message)", msg ? strlen(msg) : 12);
  json_t *type = json_object_get(e, "type");
  json_t *code = json_object_get(e, "code");
  char extra[128] = "";
  if (json_is_string(type))
    snprintf(extra, sizeof extra, " (type %.60s)", json_string_value(type));
  else if (json_is_integer(code))
    snprintf(extra, sizeof extra, " (code %lld)",
             (long long)json_integer_value(code));
  snprintf(out, cap, "%s%s", q, extra);
}

int sg_llm_chunk_parse(const char *data, size_t len, sg_llm_chunk *out,
                       sg_err *err) {
  memset(out, 0, sizeof *out);
  sg_llm_usage_init(&out->usage);
  if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
    out->done = true;
    return 0;
  }
  json_error_t jerr;
  json_t *root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
  if (root == NULL || !json_is_object(root)) {
    char q[QUOTE_MAX + 1];
    quote(q, sizeof q, data, len);
    int rc = sg_err_set(err, SG_EPARSE, "malformed chunk: %s (data: '%s')",
                        root ? "not a JSON object" : jerr.text, q);
    if (root)
      json_decref(root);
    return rc;
  }
  out->root_ = root;
  char msg[SG_ERR_MSG_MAX / 2];
  json_t *e = json_object_get(root, "error");
  if (e && !json_is_null(e)) {
    error_text(e, msg, sizeof msg);
    sg_llm_chunk_free(out);
    return sg_err_set(err, SG_EHTTP, "server error in stream: %s", msg);
  }
  json_t *obj = json_object_get(root, "object");
  if (json_is_string(obj) && strcmp(json_string_value(obj), "error") == 0) {
    error_text(root, msg, sizeof msg);
    sg_llm_chunk_free(out);
    return sg_err_set(err, SG_EHTTP, "server error in stream: %s", msg);
  }
  int rc = 0;
  json_t *choices = json_object_get(root, "choices");
  if (choices && !json_is_null(choices) && !json_is_array(choices)) {
    rc = sg_err_set(err, SG_EPARSE, "malformed chunk: choices is not an array");
    goto fail;
  }
  out->n_choices = (int)json_array_size(choices);
  rc = token_array(json_object_get(root, "prompt_token_ids"), "prompt_token_ids",
                   &out->prompt_token_ids, &out->n_prompt_token_ids, err);
  if (rc < 0)
    goto fail;
  if (out->n_choices > 0) {
    json_t *c = json_array_get(choices, 0);
    if (!json_is_object(c)) {
      rc = sg_err_set(err, SG_EPARSE, "malformed chunk: choices[0] is not an object");
      goto fail;
    }
    json_t *delta = json_object_get(c, "delta");
    if (delta && !json_is_null(delta)) {
      if (!json_is_object(delta)) {
        rc = sg_err_set(err, SG_EPARSE,
                        "malformed chunk: choices[0].delta is not an object");
        goto fail;
      }
      const char *where = "choices[0].delta";
      if ((rc = opt_string(delta, "content", where, &out->content,
                           &out->content_len, err)) < 0)
        goto fail;
      if ((rc = opt_string(delta, "reasoning_content", where, &out->reasoning,
                           &out->reasoning_len, err)) < 0)
        goto fail;
      if (out->reasoning)
        out->reasoning_field = "reasoning_content";
      else {
        if ((rc = opt_string(delta, "reasoning", where, &out->reasoning,
                             &out->reasoning_len, err)) < 0)
          goto fail;
        if (out->reasoning)
          out->reasoning_field = "reasoning";
      }
    }
    if (out->content == NULL &&
        (rc = opt_string(c, "text", "choices[0]", &out->content,
                         &out->content_len, err)) < 0)
      goto fail;
    if ((rc = opt_string(c, "finish_reason", "choices[0]", &out->finish_reason,
                         NULL, err)) < 0)
      goto fail;
    if ((rc = token_array(json_object_get(c, "token_ids"),
                          "choices[0].token_ids", &out->token_ids,
                          &out->n_token_ids, err)) < 0)
      goto fail;
    if (out->prompt_token_ids == NULL &&
        (rc = token_array(json_object_get(c, "prompt_token_ids"),
                          "choices[0].prompt_token_ids", &out->prompt_token_ids,
                          &out->n_prompt_token_ids, err)) < 0)
      goto fail;
  }
  json_t *u = json_object_get(root, "usage");
  if (u && !json_is_null(u) && !json_is_object(u)) {
    rc = sg_err_set(err, SG_EPARSE, "malformed chunk: usage is not an object");
    goto fail;
  }
  read_usage(u, &out->usage);
  return 0;
fail:
  sg_llm_chunk_free(out);
  return rc;
}

int sg_llm_error_from_body(long http_status, const char *body, size_t len,
                           int code, sg_err *err) {
  char msg[SG_ERR_MSG_MAX / 2] = "";
  json_t *root = len ? json_loadb(body, len, 0, NULL) : NULL;
  if (json_is_object(root)) {
    json_t *e = json_object_get(root, "error");
    json_t *m = json_object_get(root, "message");
    json_t *d = json_object_get(root, "detail");
    if (e && !json_is_null(e))
      error_text(e, msg, sizeof msg);
    else if (json_is_string(m))
      error_text(root, msg, sizeof msg);
    else if (json_is_string(d))
      quote(msg, sizeof msg, json_string_value(d), json_string_length(d));
  }
  if (root)
    json_decref(root);
  if (msg[0] == '\0' && len > 0) {
    const char *nl = memchr(body, '\n', len);
    quote(msg, sizeof msg, body, nl ? (size_t)(nl - body) : len);
  }
  if (msg[0] == '\0')
    snprintf(msg, sizeof msg, "(empty body)");
  return sg_err_set(err, code, "HTTP %ld: %s", http_status, msg);
}

/* ---- thinking inline in the content (see the header) ---- */

enum { TS_START, TS_INSIDE, TS_CONTENT };

static const char k_open_tag[] = "<think>";   /* 7 bytes */
static const char k_close_tag[] = "</think>"; /* 8 bytes */
#define OPEN_LEN (sizeof k_open_tag - 1)
#define CLOSE_LEN (sizeof k_close_tag - 1)

void sg_llm_think_init(sg_llm_think *t, sg_llm_think_mode mode) {
  memset(t, 0, sizeof *t);
  t->state = mode == SG_LLM_THINK_OPEN ? TS_INSIDE
             : mode == SG_LLM_THINK_OFF ? TS_CONTENT
                                         : TS_START;
}

bool sg_llm_think_inside(const sg_llm_think *t) { return t->state == TS_INSIDE; }

static void put(sg_llm_think_emit emit, void *data, bool reasoning, const char *s,
                size_t n) {
  if (n > 0)
    emit(data, reasoning, s, n);
}

/* Inside a block: reasoning until </think>. The held bytes are always a
 * prefix of the closing tag, so on a mismatch they are re-emitted from the
 * tag itself: the splitter never needs the earlier chunk's memory. */
static void feed_inside(sg_llm_think *t, const char *s, size_t n,
                        sg_llm_think_emit emit, void *data) {
  size_t run = 0;
  for (size_t j = 0; j < n; j++) {
    char c = s[j];
    if (c == k_close_tag[t->held]) {
      if (t->held == 0)
        put(emit, data, true, s + run, j - run);
      if (++t->held == CLOSE_LEN) {
        t->held = 0;
        t->state = TS_CONTENT;
        t->seen = true;
        put(emit, data, false, s + j + 1, n - j - 1);
        return;
      }
      run = j + 1;
      continue;
    }
    if (t->held > 0) {
      put(emit, data, true, k_close_tag, t->held); /* it was text after all */
      t->held = 0;
      if (c == k_close_tag[0]) {
        t->held = 1;
        run = j + 1;
        continue;
      }
      run = j;
    }
  }
  if (t->held == 0)
    put(emit, data, true, s + run, n - run);
}

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

void sg_llm_think_feed(sg_llm_think *t, const char *s, size_t n,
                       sg_llm_think_emit emit, void *data) {
  size_t i = 0;
  t->fed |= n > 0;
  while (t->state == TS_START && i < n) {
    char c = s[i];
    size_t k = t->held - t->ws; /* bytes of "<think>" matched */
    bool ok = k == 0 ? (is_ws(c) && t->ws < SG_LLM_THINK_WS_MAX) || c == '<'
                     : c == k_open_tag[k];
    if (!ok) {
      put(emit, data, false, t->hold, t->held);
      t->held = t->ws = 0;
      t->state = TS_CONTENT;
      break;
    }
    t->hold[t->held++] = c;
    if (k == 0 && c != '<')
      t->ws++;
    i++;
    if (k + 1 == OPEN_LEN && c == '>') {
      t->held = t->ws = 0;
      t->state = TS_INSIDE;
      t->seen = true;
    }
  }
  if (i == n)
    return;
  if (t->state == TS_INSIDE)
    feed_inside(t, s + i, n - i, emit, data);
  else
    put(emit, data, false, s + i, n - i);
}

void sg_llm_think_flush(sg_llm_think *t, sg_llm_think_emit emit, void *data) {
  if (t->state == TS_START)
    put(emit, data, false, t->hold, t->held);
  else if (t->state == TS_INSIDE)
    put(emit, data, true, k_close_tag, t->held);
  t->held = t->ws = 0;
}

void sg_llm_think_stop(sg_llm_think *t, sg_llm_think_emit emit, void *data) {
  if (t->state == TS_INSIDE && !t->fed && !t->seen) {
    t->state = TS_CONTENT; /* OPEN, and the server split the block itself */
    return;
  }
  if (t->state != TS_START)
    return;
  put(emit, data, false, t->hold, t->held);
  t->held = t->ws = 0;
  t->state = TS_CONTENT;
}
