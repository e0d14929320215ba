/* sg_server_request.c: reads a completion request for the test server:
 * checks its fields (errors name the field), renders chat messages with the
 * server's ChatML-like template, and finds the context (the prompt up to where
 * the answer starts) and the thinking switch. Pure: no I/O, no clock; fuzzed
 * by tests/fuzz/fuzz_server_request.c.
 */
#include "testserver/sg_server_request.h"

#include "common/sg_alloc.h"
#include "testserver/sg_fakemodel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The text of a message's content: a string, null, or an array of parts
 * {"type": "text", "text": ...}. Returns false when it is none of these. */
static bool content_text(json_t *c, sg_buf *out) {
  if (!c || json_is_null(c))
    return true;
  if (json_is_string(c)) {
    sg_buf_append(out, json_string_value(c), json_string_length(c));
    return true;
  }
  if (!json_is_array(c))
    return false;
  size_t i;
  json_t *part;
  json_array_foreach(c, i, part) {
    json_t *t = json_object_get(part, "text");
    if (!json_is_string(t))
      return false;
    sg_buf_append(out, json_string_value(t), json_string_length(t));
  }
  return true;
}

/* Thinking switches of vLLM (chat_template_kwargs.enable_thinking or
 * .thinking), DeepSeek (thinking: {type: enabled|disabled}) and plain
 * `thinking: bool`. Returns -1 when the request does not say. */
static int thinking_flag(json_t *body) {
  json_t *kw = json_object_get(body, "chat_template_kwargs");
  json_t *v = json_object_get(kw, "enable_thinking");
  if (json_is_boolean(v))
    return json_is_true(v);
  v = json_object_get(kw, "thinking");
  if (json_is_boolean(v))
    return json_is_true(v);
  v = json_object_get(body, "thinking");
  if (json_is_boolean(v))
    return json_is_true(v);
  json_t *type = json_object_get(v, "type");
  if (json_is_string(type))
    return strcmp(json_string_value(type), "disabled") != 0;
  return -1;
}

#define TPL_START "<|im_start|>"
#define TPL_END "<|im_end|>\n"
#define TPL_GEN SG_SERVER_TPL_GEN
#define TPL_NOTHINK SG_SERVER_TPL_NOTHINK

void sg_server_request_init(sg_server_request *p) {
  memset(p, 0, sizeof *p);
  sg_buf_init(&p->prompt, 0);
  sg_buf_init(&p->context, 0);
  sg_buf_init(&p->reasoning_prefix, 0);
  sg_buf_init(&p->answer_prefix, 0);
}

void sg_server_request_free(sg_server_request *p) {
  sg_buf_free(&p->prompt);
  sg_buf_free(&p->context);
  sg_buf_free(&p->reasoning_prefix);
  sg_buf_free(&p->answer_prefix);
  free(p->prompt_ids);
  p->prompt_ids = NULL;
}

/* Names the wrong field (prm may already be p->param, built in place). */
static void set_param(sg_server_request *p, const char *prm) {
  if (prm != p->param)
    snprintf(p->param, sizeof p->param, "%s", prm);
}

/* Longer than 80 lines on purpose: one field of the request after the other,
 * each checked with its own message (a fuzz target covers it). */
int sg_server_request_parse(json_t *body, bool chat, sg_server_request *p) {
#define BAD(prm, ...)                                                          \
  do {                                                                         \
    set_param(p, (prm));                                                       \
    snprintf(p->msg, sizeof p->msg, __VA_ARGS__);                              \
    return SG_EINVAL;                                                          \
  } while (0)
  char *pbuf = p->param;
  const size_t pbuf_size = sizeof p->param;
  p->chat = chat;
  if (!json_is_object(body))
    BAD("", "request body is not a JSON object");
  json_t *v = json_object_get(body, "model");
  if (!json_is_string(v) || json_string_length(v) == 0)
    BAD("model", "field \"model\" is missing or not a non-empty string");
  p->model = json_string_value(v);
  v = json_object_get(body, "stream");
  if (v && !json_is_boolean(v) && !json_is_null(v))
    BAD("stream", "field \"stream\" must be a boolean");
  p->stream = json_is_true(v);
  json_t *so = json_object_get(body, "stream_options");
  if (so && !json_is_object(so) && !json_is_null(so))
    BAD("stream_options", "field \"stream_options\" must be an object");
  p->include_usage = json_is_true(json_object_get(so, "include_usage"));
  v = json_object_get(body, "return_token_ids");
  if (v && !json_is_boolean(v) && !json_is_null(v))
    BAD("return_token_ids", "field \"return_token_ids\" must be a boolean");
  p->return_token_ids = json_is_true(v);
  v = json_object_get(body, "seed");
  if (v && !json_is_null(v)) {
    if (!json_is_integer(v))
      BAD("seed", "field \"seed\" must be an integer");
    p->has_seed = true;
    p->seed = (uint64_t)json_integer_value(v);
  }
  const char *mt = json_object_get(body, "max_completion_tokens") ? "max_completion_tokens"
                                                                  : "max_tokens";
  v = json_object_get(body, mt);
  if (v && !json_is_null(v)) {
    if (!json_is_integer(v) || json_integer_value(v) < 1)
      BAD(mt, "field \"%s\" must be a positive integer", mt);
    p->max_tokens = (long)json_integer_value(v);
  }
  v = json_object_get(body, "n");
  if (v && !json_is_null(v) && !(json_is_integer(v) && json_integer_value(v) == 1))
    BAD("n", "field \"n\": only 1 is supported");
  v = json_object_get(body, "rid");
  if (v && !json_is_null(v)) {
    if (!json_is_string(v))
      BAD("rid", "field \"rid\" must be a string");
    p->rid = json_string_value(v);
  }
  int flag = thinking_flag(body);

  if (chat) {
    json_t *msgs = json_object_get(body, "messages");
    if (!json_is_array(msgs) || json_array_size(msgs) == 0)
      BAD("messages", "field \"messages\" is missing or not a non-empty array");
    size_t n = json_array_size(msgs);
    bool cont_closed = false;
    json_t *last = json_array_get(msgs, n - 1);
    const char *last_role = json_string_value(json_object_get(last, "role"));
    bool cont = last_role && strcmp(last_role, "assistant") == 0;
    for (size_t i = 0; i < n; i++) {
      json_t *m = json_array_get(msgs, i);
      if (!json_is_object(m)) {
        snprintf(pbuf, pbuf_size, "messages[%zu]", i);
        BAD(pbuf, "field \"messages[%zu]\" is not an object", i);
      }
      const char *role = json_string_value(json_object_get(m, "role"));
      if (!role || (strcmp(role, "system") && strcmp(role, "user") &&
                    strcmp(role, "assistant") && strcmp(role, "tool") &&
                    strcmp(role, "developer"))) {
        snprintf(pbuf, pbuf_size, "messages[%zu].role", i);
        BAD(pbuf, "field \"messages[%zu].role\" is missing or not one of system, user, "
                  "assistant, tool, developer", i);
      }
      sg_buf ct;
      sg_buf_init(&ct, 0);
      if (!content_text(json_object_get(m, "content"), &ct)) {
        sg_buf_free(&ct);
        snprintf(pbuf, pbuf_size, "messages[%zu].content", i);
        BAD(pbuf, "field \"messages[%zu].content\" must be a string, null or an array of "
                  "text parts", i);
      }
      if (cont && i == n - 1) {
        /* Prefix continuation (vLLM continue_final_message, DeepSeek
         * prefix: true): the answer continues this message. Its reasoning is
         * in reasoning_content (or reasoning), or at the start of its content
         * between <think> and </think>, as vLLM and SGLang clients send it. */
        json_t *rc = json_object_get(m, "reasoning_content");
        if (!json_is_string(rc))
          rc = json_object_get(m, "reasoning");
        const char *body_text = sg_buf_str(&ct);
        const char *after = body_text;
        bool closed = false;
        if (json_is_string(rc)) {
          sg_buf_puts(&p->reasoning_prefix, json_string_value(rc));
        } else {
          const char *q = body_text;
          while (*q == ' ' || *q == '\n')
            q++;
          if (strncmp(q, "<think>", 7) == 0) {
            q += 7;
            if (*q == '\n')
              q++;
            const char *end = strstr(q, "</think>");
            sg_buf_append(&p->reasoning_prefix, q, end ? (size_t)(end - q) : strlen(q));
            /* the template's own newline before </think> is not reasoning */
            if (end && p->reasoning_prefix.len &&
                p->reasoning_prefix.data[p->reasoning_prefix.len - 1] == '\n') {
              p->reasoning_prefix.len--;
              p->reasoning_prefix.data[p->reasoning_prefix.len] = '\0';
            }
            after = end ? end + 8 : q + strlen(q);
            while (end && *after == '\n')
              after++;
            closed = end != NULL;
          }
        }
        closed = closed || *after;
        sg_buf_puts(&p->context, sg_buf_str(&p->prompt));
        sg_buf_puts(&p->context, TPL_GEN);
        sg_buf_puts(&p->prompt, TPL_GEN);
        sg_buf_puts(&p->prompt, sg_buf_str(&p->reasoning_prefix));
        if (closed) {
          sg_buf_puts(&p->prompt, TPL_NOTHINK);
          sg_buf_puts(&p->prompt, after);
          sg_buf_puts(&p->answer_prefix, after);
        }
        cont_closed = closed;
      } else {
        sg_buf_printf(&p->prompt, TPL_START "%s\n%s" TPL_END, role, sg_buf_str(&ct));
      }
      sg_buf_free(&ct);
    }
    p->thinking = flag != 0;
    if (!cont) {
      sg_buf_puts(&p->context, sg_buf_str(&p->prompt));
      sg_buf_puts(&p->context, TPL_GEN);
      sg_buf_puts(&p->prompt, TPL_GEN);
      if (!p->thinking)
        sg_buf_puts(&p->prompt, TPL_NOTHINK);
    } else if (cont_closed) {
      p->thinking = false; /* the prefix already closed its reasoning */
    }
  } else {
    json_t *pr = json_object_get(body, "prompt");
    if (json_is_string(pr)) {
      sg_buf_append(&p->prompt, json_string_value(pr), json_string_length(pr));
    } else if (json_is_array(pr) && json_array_size(pr) > 0 &&
               json_is_integer(json_array_get(pr, 0))) {
      size_t n = json_array_size(pr);
      p->prompt_ids = sg_malloc(n * sizeof *p->prompt_ids);
      for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(pr, i);
        json_int_t id = json_integer_value(e);
        char piece[SG_FM_PIECE_MAX];
        if (!json_is_integer(e) || id < 0 || id > INT32_MAX ||
            sg_fm_token_piece((int32_t)id, piece) == 0) {
          snprintf(pbuf, pbuf_size, "prompt[%zu]", i);
          BAD(pbuf, "field \"prompt[%zu]\" is not a token id of this model", i);
        }
        p->prompt_ids[i] = (int32_t)id;
      }
      p->nprompt_ids = n;
      sg_fm_detokenize(p->prompt_ids, n, &p->prompt, NULL);
    } else if (json_is_array(pr)) {
      BAD("prompt", "field \"prompt\": batches of prompts are not supported; send a string "
                    "or one array of token ids");
    } else {
      BAD("prompt", "field \"prompt\" is missing or not a string or an array of token ids");
    }
    /* A raw prompt: the answer starts after the last "<think>\n" when there is
     * one (a chat prompt continued as text), and the model keeps reasoning when
     * that block is still open. */
    const char *text = sg_buf_str(&p->prompt);
    const char *open = NULL;
    for (const char *q = strstr(text, "<think>\n"); q; q = strstr(q + 1, "<think>\n"))
      open = q;
    if (open)
      sg_buf_append(&p->context, text, (size_t)(open - text) + strlen("<think>\n"));
    else
      sg_buf_puts(&p->context, text);
    bool open_block = open && !strstr(open, "</think>");
    p->thinking = flag >= 0 ? flag : open_block;
    if (open_block)
      sg_buf_puts(&p->reasoning_prefix, open + strlen("<think>\n"));
  }
  return 0;
#undef BAD
}

/* A line that starts with a fence opens or closes a code block. */
static bool fence_line(const char *line) { return strncmp(line, "```", 3) == 0; }

static const char *next_line(const char *line) {
  const char *nl = strchr(line, '\n');
  return nl ? nl + 1 : NULL;
}

const char *sg_server_answer_after(const char *prefix, const char *answer) {
  bool open = false;
  for (const char *l = prefix; l && *l; l = next_line(l))
    if (fence_line(l))
      open = !open;
  if (!open)
    return answer;
  for (const char *l = answer; l && *l; l = next_line(l))
    if (fence_line(l)) {
      const char *after = next_line(l);
      return after ? after : l + strlen(l);
    }
  return answer; /* no block of its own: all of it goes inside */
}
