/* sg_llm_provider.h: what a generation asks for, and how each server wants it.
 *
 * OpenAI-compatible servers agree on the basics and differ on what specgen
 * needs most: where reasoning text arrives, how to turn thinking off for one
 * request, how to continue from a reasoning prefix (the speculative forks),
 * whether token ids come back, and how to abort. A profile records those
 * differences; the functions below are pure and build request bodies and URLs
 * from a profile and an sg_llm_request. docs/llm.md describes each profile and
 * the server versions it was written against.
 */
#ifndef SG_LLM_PROVIDER_H
#define SG_LLM_PROVIDER_H

#include "common/sg_error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum sg_llm_provider_kind {
  SG_LLM_PROVIDER_GENERIC,
  SG_LLM_PROVIDER_VLLM,
  SG_LLM_PROVIDER_SGLANG,
  SG_LLM_PROVIDER_DEEPSEEK,
  SG_LLM_PROVIDER_OPENAI,
  SG_LLM_PROVIDER_LLAMACPP,    /* llama.cpp's own llama-server */
  SG_LLM_PROVIDER_LLAMACPP_PY, /* llama-cpp-python's server */
  SG_LLM_PROVIDER__COUNT
} sg_llm_provider_kind;

/* How thinking is turned off for one request. */
typedef enum sg_llm_think_off {
  SG_LLM_THINK_OFF_NONE,            /* cannot be (OpenAI: use another model) */
  SG_LLM_THINK_OFF_TEMPLATE_KWARGS, /* chat_template_kwargs: {enable_thinking:
                                       false, thinking: false} (vLLM, SGLang:
                                       Qwen3 reads the first, DeepSeek-V3.1 and
                                       GLM templates the second) */
  SG_LLM_THINK_OFF_DEEPSEEK         /* thinking: {type: "disabled"} */
} sg_llm_think_off;

/* How a generation continues from a reasoning prefix (a fork). */
typedef enum sg_llm_prefix_style {
  SG_LLM_PREFIX_NONE,           /* not possible */
  SG_LLM_PREFIX_CONTINUE_FINAL, /* chat: last assistant message holds the
                                   reasoning in think tags, with
                                   continue_final_message: true and
                                   add_generation_prompt: false */
  SG_LLM_PREFIX_DEEPSEEK        /* chat prefix completion (beta): last
                                   assistant message with prefix: true and
                                   reasoning_content */
} sg_llm_prefix_style;

/* How a cancelled generation is stopped on the server. */
typedef enum sg_llm_cancel_style {
  SG_LLM_CANCEL_CLOSE,    /* closing the connection stops it (vLLM aborts a
                             request whose client went away; llama.cpp's
                             llama-server frees the slot) */
  SG_LLM_CANCEL_ENDPOINT, /* close, and POST /abort_request {"rid"} (SGLang) */
  SG_LLM_CANCEL_NONE      /* nothing known stops it: the server may keep
                             generating (llama-cpp-python); a run warns */
} sg_llm_cancel_style;

typedef struct sg_llm_provider {
  sg_llm_provider_kind kind;
  const char *name;            /* "vllm", "sglang", ... */
  const char *reasoning_field; /* the delta field reasoning arrives in */
  sg_llm_think_off think_off;
  sg_llm_prefix_style prefix;
  bool token_ids;              /* return_token_ids, and /v1/completions with
                                  token-id prompts: exact-prefix forks */
  bool abort_endpoint;         /* POST <root>/abort_request {"rid": ...} */
  bool body_request_id;        /* the request id goes in the body too */
  const char *request_id_field;/* "rid" (SGLang) or "request_id" (vLLM) */
  const char *max_tokens_field;/* "max_tokens" or "max_completion_tokens" */
  const char *think_open;      /* tags around reasoning in a continued
                                  assistant message */
  const char *think_close;
  bool request_id_header;      /* send X-Request-Id (a UUID): where the
                                  server uses it (vLLM's request id with
                                  --enable-request-id-headers, logs of
                                  llama-cpp-python, which refuses any other
                                  form); llama.cpp ignores it */
  sg_llm_cancel_style cancel;
  const char *server;          /* the server's name, for messages */
} sg_llm_provider;

/* The profile called name (vllm, sglang, deepseek, openai, llamacpp,
 * llamacpp-python, generic), or NULL. */
const sg_llm_provider *sg_llm_provider_get(const char *name);
/* Same, with an error naming the unknown profile and listing the known. */
int sg_llm_provider_lookup(const char *name, const sg_llm_provider **out,
                           sg_err *err);
const sg_llm_provider *sg_llm_provider_by_kind(sg_llm_provider_kind kind);

/* ---- what a generation asks for ---- */

typedef enum sg_llm_endpoint {
  SG_LLM_ENDPOINT_CHAT,        /* POST .../chat/completions */
  SG_LLM_ENDPOINT_COMPLETIONS  /* POST .../completions */
} sg_llm_endpoint;

typedef struct sg_llm_message {
  const char *role;      /* "system", "user", "assistant" */
  const char *content;   /* NULL is "" */
  const char *reasoning; /* assistant prefix only: reasoning written so far */
  bool prefix;           /* only on the last message, an assistant one: the
                            generation continues this message */
} sg_llm_message;

typedef struct sg_llm_request {
  const char *base_url;  /* "http://host:port" (then /v1 is added) or a base
                            with a path ("http://host:port/v1",
                            "https://api.deepseek.com/beta") */
  const char *model;
  sg_llm_endpoint endpoint;
  const sg_llm_message *messages; /* chat */
  size_t n_messages;
  const char *prompt;               /* completions, as text ... */
  const int32_t *prompt_token_ids;  /* ... or as token ids (wins) */
  size_t n_prompt_token_ids;
  int max_tokens;        /* 0: the server's default */
  double temperature;    /* < 0: the server's default */
  bool no_think;         /* chat: turn thinking off for this request */
  bool return_token_ids; /* ask for token ids (vLLM) */
  const char *extra_json;/* a JSON object merged into the body last */
  const char *const *headers; /* extra "Name: value" headers */
  size_t n_headers;
  const char *request_id;/* the request's name: "rid"/"request_id" in the
                            body where the profile says so; the X-Request-Id
                            header carries it when it is a UUID, else a UUID
                            made from it (sg_llm_request_uuid) */
  int think_mode;        /* sg_llm_think_mode of the content (sg_llm_chunk.h):
                            0 detects a leading <think> block */
  const sg_llm_provider *provider; /* NULL: generic */
  /* Client policy (sg_llm_client); 0 picks the default in brackets. */
  double deadline_s;     /* absolute, from start, retries included [1800] */
  double idle_timeout_s; /* longest wait for the next event [120] */
  double connect_timeout_s; /* [10] */
  int max_retries;       /* < 0: none; 0: the default [4] */
  double backoff_base_s; /* first retry delay before jitter [0.5] */
  double backoff_max_s;  /* cap of one delay [30] */
} sg_llm_request;

/* Zeroes r and sets temperature to -1 (server default). */
void sg_llm_request_init(sg_llm_request *r);

/* Builds the JSON body of r for provider p (r->provider is ignored here; NULL
 * p is generic): model, stream with usage, the messages or prompt, limits,
 * the thinking toggle, token ids, the request id and extra fields. A request
 * the profile cannot express (thinking off on OpenAI, a prefix on a provider
 * without prefix continuation, token ids where none come back) is
 * SG_EUNSUPPORTED naming the profile; a malformed one SG_EINVAL naming the
 * field. The caller json_decref()s *out. */
int sg_llm_provider_body(const sg_llm_provider *p, const sg_llm_request *r,
                         json_t **out, sg_err *err);

/* The X-Request-Id of a request named id: id itself when it is a UUID
 * (8-4-4-4-12 hex digits), else a version-4-shaped UUID made from a hash of
 * id, so the same name gives the same UUID (on every retry, in every run)
 * and every server accepts it (llama-cpp-python answers any other form with
 * HTTP 400). out holds 37 bytes. */
void sg_llm_request_uuid(const char *id, char out[37]);
bool sg_llm_is_uuid(const char *s);

/* The URL of an endpoint: base + "/v1" + "/chat/completions" when the base
 * has no path, else base + "/chat/completions". The caller frees it. */
char *sg_llm_endpoint_url(const char *base, sg_llm_endpoint ep);
/* scheme://host:port of base + path (e.g. "/abort_request", "/health").
 * The caller frees it. */
char *sg_llm_root_url(const char *base, const char *path);

/* The body of the abort call for the request called rid, or NULL when the
 * profile has none (then closing the connection is the abort). The caller
 * json_decref()s it. */
json_t *sg_llm_provider_abort_body(const sg_llm_provider *p, const char *rid);

/* The exact token prompt of a vLLM fork: the original prompt's token ids, the
 * reasoning tokens generated so far, then the end-of-thinking tokens (model
 * specific, e.g. the ids of "</think>\n\n"). A fork sent this way shares the
 * longest possible prefix with the running generation, so the server's prefix
 * cache serves it without recomputation. Returns a new array (the caller
 * frees it) of *n ids. */
int32_t *sg_llm_fork_token_prompt(const int32_t *prompt, size_t n_prompt,
                                  const int32_t *generated, size_t n_generated,
                                  const int32_t *end_think, size_t n_end_think,
                                  size_t *n);

#endif
