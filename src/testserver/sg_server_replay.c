/* sg_server_replay.c: the test server's replay mode (sg_llm_server_priv.h):
 * a request is answered with a recorded generation (sg_replay_match picks
 * it), chunk by chunk at its recorded pace divided by the speed factor. A
 * recording that ended without a finish (cancelled or failed while
 * recorded) ends, after its last chunk, with an error event: what came next
 * was never recorded, and nothing is made up in its place.
 */
#include "testserver/sg_llm_server_priv.h"

#include "common/sg_alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The text of message i's "content" when it is a string, else "". */
static const char *msg_text(json_t *m, const char *field) {
  const char *t = json_string_value(json_object_get(m, field));
  return t ? t : "";
}

/* What the request asks, from the body as the run sends it: the system and
 * user messages; a final assistant message with reasoning is a fork, whose
 * reasoning is its reasoning field, or the text between "<think>\n" and
 * the last "\n</think>" of its content (the generic profile's
 * continuation). The prefix is copied into *prefix (owned by the caller). */
static void query_of(json_t *body, sg_replay_query *q, char **prefix) {
  memset(q, 0, sizeof *q);
  q->system = q->user = "";
  *prefix = NULL;
  json_t *msgs = json_object_get(body, "messages");
  size_t n = json_array_size(msgs);
  for (size_t i = 0; i < n; i++) {
    json_t *m = json_array_get(msgs, i);
    const char *role = msg_text(m, "role");
    if (strcmp(role, "system") == 0 && !*q->system)
      q->system = msg_text(m, "content");
    else if (strcmp(role, "user") == 0 && !*q->user)
      q->user = msg_text(m, "content");
    else if (strcmp(role, "assistant") == 0 && i == n - 1) {
      const char *r = json_string_value(json_object_get(m, "reasoning_content"));
      if (!r)
        r = json_string_value(json_object_get(m, "reasoning"));
      if (r) {
        *prefix = sg_strdup(r);
      } else {
        const char *c = msg_text(m, "content");
        if (strncmp(c, "<think>\n", 8) == 0)
          c += 8;
        const char *end = NULL;
        for (const char *p = strstr(c, "\n</think>"); p; p = strstr(p + 1, "\n</think>"))
          end = p;
        *prefix = sg_strndup(c, end ? (size_t)(end - c) : strlen(c));
      }
    }
  }
  q->prefix = *prefix ? *prefix : "";
  q->prefix_len = strlen(q->prefix);
  /* An answer opened with an empty thinking block (prompted reasoning's
   * "<think>\n") is a main generation: a fork always carries reasoning. */
  q->fork = q->prefix_len > 0;
}

int sg_server_replay_answer(sg_llm_server *s, json_t *body, long max_tokens, gen *g,
                            char *hdr_task, size_t task_size, char *hdr_ex, size_t ex_size,
                            sg_err *err) {
  sg_replay_query q;
  char *prefix;
  query_of(body, &q, &prefix);
  const sg_replay_gen *r = NULL;
  pthread_mutex_lock(&s->mu);
  int rc = sg_replay_match(s->replay, &q, &r, err);
  pthread_mutex_unlock(&s->mu);
  free(prefix);
  if (rc < 0)
    return rc;
  size_t len = r->nchunks ? r->chunks[r->nchunks - 1].off + r->chunks[r->nchunks - 1].len : 0;
  g->text = sg_strndup(r->text, len);
  g->ntoks = r->nchunks;
  g->toks = sg_calloc(r->nchunks ? r->nchunks : 1, sizeof *g->toks);
  g->due_us = sg_calloc(r->nchunks ? r->nchunks : 1, sizeof *g->due_us);
  for (size_t i = 0; i < r->nchunks; i++) {
    const sg_replay_chunk *c = &r->chunks[i];
    /* A chunk is one streamed event: the unit the recording has. */
    g->toks[i] = (token){c->off, c->len, 0, c->reasoning && g->chat ? TOK_REASONING
                                                                      : TOK_CONTENT};
    if (c->reasoning)
      g->nreasoning++;
    g->due_us[i] = s->replay_speed > 0 ? (int64_t)((double)c->at_us / s->replay_speed) : 0;
  }
  g->return_token_ids = false; /* a recording has text, not this server's ids */
  if (r->has_usage) {
    g->nprompt = (size_t)r->prompt_tokens;
    g->cached = (size_t)r->cached_tokens;
    g->rec_completion = r->completion_tokens;
  }
  g->hit_length = r->finish && strcmp(r->finish, "length") == 0;
  if (r->finish == NULL)
    g->cut_msg = sg_asprintf("replay: the recording of task %s iteration %d generation "
                             "%llu ends here (%s while recorded)",
                             r->task, r->iteration, (unsigned long long)r->gen, r->outcome);
  if (max_tokens > 0 && (size_t)max_tokens < g->ntoks) {
    g->ntoks = (size_t)max_tokens;
    g->hit_length = true;
    free(g->cut_msg);
    g->cut_msg = NULL;
  }
  snprintf(hdr_task, task_size, "%s", r->task);
  snprintf(hdr_ex, ex_size, "replay-it%d-gen%llu", r->iteration, (unsigned long long)r->gen);
  return 0;
}
