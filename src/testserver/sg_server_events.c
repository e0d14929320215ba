/* sg_server_events.c: the test server's output as JSON (sg_llm_server_priv.h):
 * each streamed event (a token, the role, the finish, an injected error) and
 * the non-streaming body, in the shapes vLLM and SGLang send. */
#include "testserver/sg_llm_server_priv.h"

#include "common/sg_alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Events                                                                    */

json_t *sg_server_ids_json(const int32_t *ids, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(a, json_integer(ids[i]));
  return a;
}

static json_t *usage_json(const gen *g, size_t completion) {
  if (g->rec_completion > 0 && g->next == g->ntoks)
    completion = (size_t)g->rec_completion; /* the recorded server's count */
  size_t reasoning = g->next < g->nreasoning ? g->next : g->nreasoning;
  if (!g->chat)
    reasoning = 0;
  return json_pack("{s:I, s:I, s:I, s:{s:I}, s:{s:I}}", "prompt_tokens",
                   (json_int_t)g->nprompt, "completion_tokens", (json_int_t)completion,
                   "total_tokens", (json_int_t)(g->nprompt + completion),
                   "prompt_tokens_details", "cached_tokens", (json_int_t)g->cached,
                   "completion_tokens_details", "reasoning_tokens", (json_int_t)reasoning);
}

/* With return_token_ids, the prompt's ids go where vLLM puts them: at the top
 * of a chat response (its first chunk when streaming), in the choice of a
 * completions response. */
static void put_prompt_ids(const gen *g, json_t *obj, json_t *choice, bool first) {
  if (!g->return_token_ids || !first)
    return;
  json_object_set_new(g->chat ? obj : choice, "prompt_token_ids",
                      sg_server_ids_json(g->prompt_ids, g->nprompt));
}

static json_t *chunk_base(const gen *g) {
  return json_pack("{s:s, s:s, s:i, s:s}", "id", g->id, "object",
                   g->chat ? "chat.completion.chunk" : "text_completion", "created",
                   CREATED_S, "model", g->model);
}

static void put_event(gen *g, json_t *j) {
  char *t = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  sg_buf_puts(&g->out, "data: ");
  sg_buf_puts(&g->out, t);
  sg_buf_puts(&g->out, "\n\n");
  free(t);
  g->chunks++;
}

/* One streamed event for token i (and, first, the role). */
void sg_server_put_token_event(gen *g, size_t i) {
  const token *tk = &g->toks[i];
  json_t *j = chunk_base(g);
  json_t *choice = json_pack("{s:i}", "index", 0);
  char *piece = sg_strndup(g->text + tk->off, tk->len);
  if (g->chat) {
    json_t *delta = json_object();
    if (i == 0)
      json_object_set_new(delta, "role", json_string("assistant"));
    json_object_set_new(delta,
                        tk->kind == TOK_REASONING ? g->s->reasoning_field : "content",
                        json_string(piece));
    json_object_set_new(choice, "delta", delta);
  } else {
    json_object_set_new(choice, "text", json_string(piece));
  }
  free(piece);
  json_object_set_new(choice, "logprobs", json_null());
  json_object_set_new(choice, "finish_reason", json_null());
  if (g->return_token_ids)
    json_object_set_new(choice, "token_ids", json_pack("[i]", (int)tk->id));
  put_prompt_ids(g, j, choice, i == 0);
  json_object_set_new(j, "choices", json_pack("[o]", choice));
  put_event(g, j);
}

void sg_server_put_finish_events(gen *g) {
  json_t *j = chunk_base(g);
  json_t *choice = json_pack("{s:i}", "index", 0);
  if (g->chat)
    json_object_set_new(choice, "delta", json_object());
  else
    json_object_set_new(choice, "text", json_string(""));
  json_object_set_new(choice, "logprobs", json_null());
  json_object_set_new(choice, "finish_reason", json_string(g->finish_reason));
  put_prompt_ids(g, j, choice, g->next == 0);
  json_object_set_new(j, "choices", json_pack("[o]", choice));
  put_event(g, j);
  if (g->include_usage) {
    j = chunk_base(g);
    json_object_set_new(j, "choices", json_array());
    json_object_set_new(j, "usage", usage_json(g, g->next));
    put_event(g, j);
  }
  sg_buf_puts(&g->out, "data: [DONE]\n\n");
}

/* The non-streaming body, for the tokens emitted so far. */
void sg_server_put_body(gen *g) {
  json_t *j = json_pack("{s:s, s:s, s:i, s:s}", "id", g->id, "object",
                        g->chat ? "chat.completion" : "text_completion", "created", CREATED_S,
                        "model", g->model);
  json_t *choice = json_pack("{s:i}", "index", 0);
  sg_buf r, c;
  sg_buf_init(&r, 0);
  sg_buf_init(&c, 0);
  json_t *ids = json_array();
  for (size_t i = 0; i < g->next; i++) {
    const token *tk = &g->toks[i];
    sg_buf_append(tk->kind == TOK_REASONING ? &r : &c, g->text + tk->off, tk->len);
    json_array_append_new(ids, json_integer(tk->id));
  }
  if (g->chat) {
    json_t *msg = json_pack("{s:s}", "role", "assistant");
    json_object_set_new(msg, g->s->reasoning_field,
                        r.len ? json_string(sg_buf_str(&r)) : json_null());
    json_object_set_new(msg, "content", json_string(sg_buf_str(&c)));
    json_object_set_new(choice, "message", msg);
  } else {
    json_object_set_new(choice, "text", json_string(sg_buf_str(&c)));
  }
  sg_buf_free(&r);
  sg_buf_free(&c);
  json_object_set_new(choice, "logprobs", json_null());
  json_object_set_new(choice, "finish_reason", json_string(g->finish_reason));
  if (g->return_token_ids)
    json_object_set_new(choice, "token_ids", ids);
  else
    json_decref(ids);
  put_prompt_ids(g, j, choice, true);
  json_object_set_new(j, "choices", json_pack("[o]", choice));
  json_object_set_new(j, "usage", usage_json(g, g->next));
  char *t = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  sg_buf_puts(&g->out, t);
  free(t);
}

/* An error chunk then [DONE] (the error_in_stream fault, the end of a cut
 * recording); without streaming, the body is the error object (the 200
 * status is already sent). */
void sg_server_put_error_event(gen *g, const char *msg) {
  json_t *e = sg_server_error_json(500, NULL, msg);
  if (!g->stream) {
    char *t = json_dumps(e, JSON_COMPACT);
    json_decref(e);
    sg_buf_puts(&g->out, t);
    free(t);
    return;
  }
  put_event(g, e);
  sg_buf_puts(&g->out, "data: [DONE]\n\n");
}
