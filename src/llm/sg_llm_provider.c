/* sg_llm_provider.c: provider profiles and pure request builders.
 *
 * The table below is the single place that says how servers differ. Each
 * entry follows the server's documented behaviour (docs/llm.md lists the
 * sources and versions):
 *   - vLLM streams reasoning in delta.reasoning (delta.reasoning_content
 *     before the rename of vLLM RFC #27755; sg_llm_chunk reads both);
 *     chat_template_kwargs reach the template; `return_token_ids` (0.10.2 and
 *     later) returns prompt and completion token ids; /v1/completions takes a
 *     token-id prompt; a request is aborted when its connection closes.
 *   - SGLang streams delta.reasoning_content with --reasoning-parser; takes
 *     chat_template_kwargs; POST /abort_request {"rid"} aborts a request whose
 *     body carried that "rid".
 *   - DeepSeek streams delta.reasoning_content; thinking: {type: "disabled"}
 *     turns thinking off; chat prefix completion (base .../beta) continues the
 *     last assistant message with prefix: true (and its reasoning_content);
 *     usage reports prompt_cache_hit_tokens.
 *   - OpenAI does not stream its reasoning text, cannot turn thinking off on a
 *     reasoning model, and takes max_completion_tokens.
 *   - generic: an OpenAI-compatible server with think-tag templates
 *     (continue_final_message as vLLM documents it; other servers may not
 *     accept it: `specgen llm check` probes it).
 */
#include "llm/sg_llm_provider.h"

#include "common/sg_alloc.h"
#include "common/sg_hash.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THINK_TAGS .think_open = "<think>\n", .think_close = "\n</think>\n\n"

static const sg_llm_provider k_providers[SG_LLM_PROVIDER__COUNT] = {
    [SG_LLM_PROVIDER_GENERIC] = {.kind = SG_LLM_PROVIDER_GENERIC, .name = "generic",
                                 .reasoning_field = "reasoning_content",
                                 .think_off = SG_LLM_THINK_OFF_TEMPLATE_KWARGS,
                                 .prefix = SG_LLM_PREFIX_CONTINUE_FINAL,
                                 .max_tokens_field = "max_tokens", THINK_TAGS,
                                 .request_id_header = true,
                                 .cancel = SG_LLM_CANCEL_CLOSE,
                                 .server = "an OpenAI-compatible server"},
    [SG_LLM_PROVIDER_VLLM] = {.kind = SG_LLM_PROVIDER_VLLM, .name = "vllm",
                              .reasoning_field = "reasoning",
                              .think_off = SG_LLM_THINK_OFF_TEMPLATE_KWARGS,
                              .prefix = SG_LLM_PREFIX_CONTINUE_FINAL, .token_ids = true,
                              .body_request_id = true, .request_id_field = "request_id",
                              .max_tokens_field = "max_tokens", THINK_TAGS,
                              .request_id_header = true, .cancel = SG_LLM_CANCEL_CLOSE,
                              .server = "vLLM"},
    [SG_LLM_PROVIDER_SGLANG] = {.kind = SG_LLM_PROVIDER_SGLANG, .name = "sglang",
                                .reasoning_field = "reasoning_content",
                                .think_off = SG_LLM_THINK_OFF_TEMPLATE_KWARGS,
                                .prefix = SG_LLM_PREFIX_CONTINUE_FINAL,
                                .abort_endpoint = true, .body_request_id = true,
                                .request_id_field = "rid", .max_tokens_field = "max_tokens",
                                THINK_TAGS, .request_id_header = false,
                                .cancel = SG_LLM_CANCEL_ENDPOINT, .server = "SGLang"},
    [SG_LLM_PROVIDER_DEEPSEEK] = {.kind = SG_LLM_PROVIDER_DEEPSEEK, .name = "deepseek",
                                  .reasoning_field = "reasoning_content",
                                  .think_off = SG_LLM_THINK_OFF_DEEPSEEK,
                                  .prefix = SG_LLM_PREFIX_DEEPSEEK,
                                  .max_tokens_field = "max_tokens",
                                  .cancel = SG_LLM_CANCEL_CLOSE,
                                  .server = "DeepSeek's API"},
    [SG_LLM_PROVIDER_OPENAI] = {.kind = SG_LLM_PROVIDER_OPENAI, .name = "openai",
                                .reasoning_field = "reasoning",
                                .think_off = SG_LLM_THINK_OFF_NONE,
                                .prefix = SG_LLM_PREFIX_NONE,
                                .max_tokens_field = "max_completion_tokens",
                                .cancel = SG_LLM_CANCEL_CLOSE, .server = "OpenAI's API"},
    /* llama.cpp's llama-server: reasoning_content with --reasoning-format
     * (else inline <think>, which the chunk interpreter splits);
     * chat_template_kwargs with --jinja; a last assistant message is
     * continued; n_predict under the names max_tokens and
     * max_completion_tokens; usage with include_usage; a closed connection
     * cancels the task and frees its slot (measured: docs/llm.md). */
    [SG_LLM_PROVIDER_LLAMACPP] = {.kind = SG_LLM_PROVIDER_LLAMACPP, .name = "llamacpp",
                                  .reasoning_field = "reasoning_content",
                                  .think_off = SG_LLM_THINK_OFF_TEMPLATE_KWARGS,
                                  .prefix = SG_LLM_PREFIX_CONTINUE_FINAL,
                                  .max_tokens_field = "max_tokens", THINK_TAGS,
                                  .request_id_header = false,
                                  .cancel = SG_LLM_CANCEL_CLOSE,
                                  .server = "llama.cpp's llama-server"},
    /* llama-cpp-python's server: X-Request-Id must be a UUID; max_tokens
     * only (max_completion_tokens is ignored); no usage chunk when streaming;
     * no reasoning parser; template kwargs and continue_final_message are
     * ignored; nothing stops a generation whose client went away. */
    [SG_LLM_PROVIDER_LLAMACPP_PY] = {.kind = SG_LLM_PROVIDER_LLAMACPP_PY,
                                     .name = "llamacpp-python",
                                     .reasoning_field = "content",
                                     .think_off = SG_LLM_THINK_OFF_TEMPLATE_KWARGS,
                                     .prefix = SG_LLM_PREFIX_CONTINUE_FINAL,
                                     .max_tokens_field = "max_tokens", THINK_TAGS,
                                     .request_id_header = true,
                                     .cancel = SG_LLM_CANCEL_NONE,
                                     .server = "llama-cpp-python's server"},
};

const sg_llm_provider *sg_llm_provider_by_kind(sg_llm_provider_kind kind) {
  if ((int)kind < 0 || kind >= SG_LLM_PROVIDER__COUNT)
    return NULL;
  return &k_providers[kind];
}

const sg_llm_provider *sg_llm_provider_get(const char *name) {
  if (name == NULL)
    return NULL;
  for (int i = 0; i < SG_LLM_PROVIDER__COUNT; i++)
    if (strcmp(k_providers[i].name, name) == 0)
      return &k_providers[i];
  return NULL;
}

int sg_llm_provider_lookup(const char *name, const sg_llm_provider **out,
                           sg_err *err) {
  *out = sg_llm_provider_get(name);
  if (*out == NULL)
    return sg_err_set(err, SG_EINVAL,
                      "unknown provider profile '%s' (known: vllm, sglang, "
                      "deepseek, openai, llamacpp, llamacpp-python, generic)",
                      name ? name : "(null)");
  return 0;
}

void sg_llm_request_init(sg_llm_request *r) {
  memset(r, 0, sizeof *r);
  r->temperature = -1;
}

static int add_message(const sg_llm_provider *p, const sg_llm_message *m,
                       bool last, json_t *arr, bool *continue_final,
                       sg_err *err) {
  if (m->role == NULL)
    return sg_err_set(err, SG_EINVAL, "message has no role");
  const char *content = m->content ? m->content : "";
  json_t *o = json_object();
  json_object_set_new(o, "role", json_string(m->role));
  if (!m->prefix) {
    if (m->reasoning) {
      json_decref(o);
      return sg_err_set(err, SG_EINVAL,
                        "message reasoning is only sent with a prefix message");
    }
    json_object_set_new(o, "content", json_string(content));
    json_array_append_new(arr, o);
    return 0;
  }
  if (!last || strcmp(m->role, "assistant") != 0) {
    json_decref(o);
    return sg_err_set(err, SG_EINVAL,
                      "a prefix message must be the last message and an "
                      "assistant one");
  }
  switch (p->prefix) {
  case SG_LLM_PREFIX_DEEPSEEK:
    json_object_set_new(o, "content", json_string(content));
    if (m->reasoning)
      json_object_set_new(o, "reasoning_content", json_string(m->reasoning));
    json_object_set_new(o, "prefix", json_true());
    break;
  case SG_LLM_PREFIX_CONTINUE_FINAL: {
    char *text = m->reasoning ? sg_asprintf("%s%s%s%s", p->think_open, m->reasoning,
                                            p->think_close, content)
                              : sg_strdup(content);
    json_object_set_new(o, "content", json_string(text));
    free(text);
    *continue_final = true;
    break;
  }
  case SG_LLM_PREFIX_NONE:
  default:
    json_decref(o);
    return sg_err_set(err, SG_EUNSUPPORTED,
                      "provider %s cannot continue from a prefix message",
                      p->name);
  }
  json_array_append_new(arr, o);
  return 0;
}

int sg_llm_provider_body(const sg_llm_provider *p, const sg_llm_request *r,
                         json_t **out, sg_err *err) {
  *out = NULL;
  if (p == NULL)
    p = &k_providers[SG_LLM_PROVIDER_GENERIC];
  if (r->model == NULL || r->model[0] == '\0')
    return sg_err_set(err, SG_EINVAL, "request has no model");
  json_t *b = json_object();
  int rc = 0;
  json_object_set_new(b, "model", json_string(r->model));
  json_object_set_new(b, "stream", json_true());
  json_t *so = json_object();
  json_object_set_new(so, "include_usage", json_true());
  json_object_set_new(b, "stream_options", so);
  if (r->max_tokens < 0) {
    rc = sg_err_set(err, SG_EINVAL, "max_tokens is negative (%d)", r->max_tokens);
    goto fail;
  }
  if (r->max_tokens > 0)
    json_object_set_new(b, p->max_tokens_field, json_integer(r->max_tokens));
  if (r->temperature >= 0)
    json_object_set_new(b, "temperature", json_real(r->temperature));

  if (r->endpoint == SG_LLM_ENDPOINT_CHAT) {
    if (r->n_messages == 0) {
      rc = sg_err_set(err, SG_EINVAL, "chat request has no messages");
      goto fail;
    }
    json_t *msgs = json_array();
    json_object_set_new(b, "messages", msgs);
    bool continue_final = false;
    for (size_t i = 0; i < r->n_messages; i++)
      if ((rc = add_message(p, &r->messages[i], i + 1 == r->n_messages, msgs,
                            &continue_final, err)) < 0)
        goto fail;
    if (continue_final) {
      json_object_set_new(b, "continue_final_message", json_true());
      json_object_set_new(b, "add_generation_prompt", json_false());
    }
    if (r->no_think) {
      switch (p->think_off) {
      case SG_LLM_THINK_OFF_TEMPLATE_KWARGS: {
        json_t *kw = json_object();
        json_object_set_new(kw, "enable_thinking", json_false());
        json_object_set_new(kw, "thinking", json_false());
        json_object_set_new(b, "chat_template_kwargs", kw);
        break;
      }
      case SG_LLM_THINK_OFF_DEEPSEEK: {
        json_t *t = json_object();
        json_object_set_new(t, "type", json_string("disabled"));
        json_object_set_new(b, "thinking", t);
        break;
      }
      case SG_LLM_THINK_OFF_NONE:
      default:
        rc = sg_err_set(err, SG_EUNSUPPORTED,
                        "provider %s cannot turn thinking off per request",
                        p->name);
        goto fail;
      }
    }
  } else if (r->endpoint == SG_LLM_ENDPOINT_COMPLETIONS) {
    if (r->no_think) {
      rc = sg_err_set(err, SG_EINVAL,
                      "no_think applies to chat requests; a completions prompt "
                      "carries its own end-of-thinking tokens");
      goto fail;
    }
    if (r->n_prompt_token_ids > 0) {
      json_t *ids = json_array();
      for (size_t i = 0; i < r->n_prompt_token_ids; i++)
        json_array_append_new(ids, json_integer(r->prompt_token_ids[i]));
      json_object_set_new(b, "prompt", ids);
    } else if (r->prompt) {
      json_object_set_new(b, "prompt", json_string(r->prompt));
    } else {
      rc = sg_err_set(err, SG_EINVAL, "completions request has no prompt");
      goto fail;
    }
  } else {
    rc = sg_err_set(err, SG_EINVAL, "unknown endpoint %d", (int)r->endpoint);
    goto fail;
  }
  if (r->return_token_ids) {
    if (!p->token_ids) {
      rc = sg_err_set(err, SG_EUNSUPPORTED,
                      "provider %s does not return token ids", p->name);
      goto fail;
    }
    json_object_set_new(b, "return_token_ids", json_true());
  }
  if (r->request_id && p->body_request_id)
    json_object_set_new(b, p->request_id_field, json_string(r->request_id));
  if (r->extra_json && r->extra_json[0]) {
    json_error_t je;
    json_t *x = json_loads(r->extra_json, 0, &je);
    if (!json_is_object(x)) {
      if (x)
        json_decref(x);
      rc = sg_err_set(err, SG_EINVAL, "extra_json is not a JSON object%s%s",
                      x ? "" : ": ", x ? "" : je.text);
      goto fail;
    }
    json_object_update(b, x);
    json_decref(x);
  }
  *out = b;
  return 0;
fail:
  json_decref(b);
  return rc;
}

bool sg_llm_is_uuid(const char *s) {
  if (s == NULL || strlen(s) != 36)
    return false;
  for (int i = 0; i < 36; i++) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
      return false;
  }
  return true;
}

static uint64_t fnv1a(const char *s, uint64_t h) {
  h = sg_fnv1a64_update(h, s, strlen(s));
  /* A final mix so names differing in their last byte differ everywhere. */
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

void sg_llm_request_uuid(const char *id, char out[37]) {
  if (sg_llm_is_uuid(id)) {
    memcpy(out, id, 37);
    return;
  }
  const char *s = id ? id : "";
  uint64_t hi = fnv1a(s, SG_FNV1A64_INIT);
  uint64_t lo = fnv1a(s, 0x84222325cbf29ce4ULL ^ hi);
  hi = (hi & ~0xf000ULL) | 0x4000ULL;                  /* version 4 */
  lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL; /* variant 10 */
  snprintf(out, 37, "%08llx-%04llx-%04llx-%04llx-%012llx",
           (unsigned long long)(hi >> 32), (unsigned long long)((hi >> 16) & 0xffff),
           (unsigned long long)(hi & 0xffff), (unsigned long long)(lo >> 48),
           (unsigned long long)(lo & 0xffffffffffffULL));
}

/* Where the path of a URL begins (at its '/', or at the end). */
static const char *url_path(const char *base) {
  const char *s = strstr(base, "://");
  s = s ? s + 3 : base;
  const char *slash = strchr(s, '/');
  return slash ? slash : s + strlen(s);
}

char *sg_llm_endpoint_url(const char *base, sg_llm_endpoint ep) {
  size_t n = strlen(base);
  while (n > 0 && base[n - 1] == '/')
    n--;
  const char *path = url_path(base);
  bool has_path = (size_t)(path - base) < n;
  const char *tail =
      ep == SG_LLM_ENDPOINT_CHAT ? "/chat/completions" : "/completions";
  return sg_asprintf("%.*s%s%s", (int)n, base, has_path ? "" : "/v1", tail);
}

char *sg_llm_root_url(const char *base, const char *path) {
  const char *p = url_path(base);
  return sg_asprintf("%.*s%s", (int)(p - base), base, path);
}

json_t *sg_llm_provider_abort_body(const sg_llm_provider *p, const char *rid) {
  if (p == NULL || !p->abort_endpoint || rid == NULL)
    return NULL;
  json_t *b = json_object();
  json_object_set_new(b, "rid", json_string(rid));
  return b;
}

int32_t *sg_llm_fork_token_prompt(const int32_t *prompt, size_t n_prompt,
                                  const int32_t *generated, size_t n_generated,
                                  const int32_t *end_think, size_t n_end_think,
                                  size_t *n) {
  size_t total = n_prompt + n_generated + n_end_think;
  int32_t *ids = sg_malloc((total ? total : 1) * sizeof *ids);
  size_t k = 0;
  if (n_prompt)
    memcpy(ids, prompt, n_prompt * sizeof *ids);
  k += n_prompt;
  if (n_generated)
    memcpy(ids + k, generated, n_generated * sizeof *ids);
  k += n_generated;
  if (n_end_think)
    memcpy(ids + k, end_think, n_end_think * sizeof *ids);
  assert(k + n_end_think == total);
  *n = total;
  return ids;
}
