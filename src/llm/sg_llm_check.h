/* sg_llm_check.h: probe an OpenAI-compatible endpoint for what specgen needs.
 *
 * `specgen llm check` prints this report. Each probe is one or two real
 * requests (sg_llm_generate); together they say whether the endpoint is
 * usable and which provider profile fits it:
 *   stream        a chat request streams and finishes
 *   reasoning     where reasoning text arrives (delta field name)
 *   think_off     thinking can be turned off per request, and how
 *   prefix        a generation can continue from a reasoning prefix
 *   token_ids     prompt and completion token ids come back (vLLM)
 *   cached_tokens usage reports cached prompt tokens
 *   prefix_cache  a second request sharing a long prefix is served from the
 *                 cache (cached tokens and TTFT of both)
 *   cancel        cancelling a stream stops the generation on the server
 *                 (confirmed through /metrics where the server has them,
 *                 llama.cpp's /slots, or else by timing a short request sent
 *                 right after the cancel: a server still busy with the
 *                 cancelled one answers it late or not at all)
 *   server        which server answers: llama.cpp's llama-server (/props),
 *                 llama-cpp-python's (/openapi.json), vLLM (/version),
 *                 SGLang (/get_server_info)
 *   request_id    X-Request-Id forms the server accepts: a UUID (what specgen
 *                 sends) and another form (llama-cpp-python refuses it)
 *   token_limit   which of max_tokens and max_completion_tokens the server
 *                 honours (each asked for 8 tokens)
 * Reasoning written inline as <think>...</think> in content is found by the
 * reasoning probe (the client splits it out: field "content <think>").
 */
#ifndef SG_LLM_CHECK_H
#define SG_LLM_CHECK_H

#include "llm/sg_llm_client.h"

typedef enum sg_llm_probe_status {
  SG_LLM_PROBE_YES,
  SG_LLM_PROBE_NO,
  SG_LLM_PROBE_UNVERIFIED, /* ran, but the outcome cannot be confirmed */
  SG_LLM_PROBE_SKIPPED     /* not run (the endpoint is unusable, or moot) */
} sg_llm_probe_status;

typedef enum sg_llm_probe_id {
  SG_LLM_CHECK_STREAM,
  SG_LLM_CHECK_REASONING,
  SG_LLM_CHECK_THINK_OFF,
  SG_LLM_CHECK_PREFIX,
  SG_LLM_CHECK_TOKEN_IDS,
  SG_LLM_CHECK_CACHED_TOKENS,
  SG_LLM_CHECK_PREFIX_CACHE,
  SG_LLM_CHECK_CANCEL,
  SG_LLM_CHECK_SERVER,
  SG_LLM_CHECK_REQUEST_ID,
  SG_LLM_CHECK_TOKEN_LIMIT,
  SG_LLM_CHECK__COUNT
} sg_llm_probe_id;

typedef struct sg_llm_probe {
  const char *name;           /* "stream", "reasoning", ... */
  sg_llm_probe_status status;
  char detail[768];           /* what was seen, for a person */
} sg_llm_probe;

typedef struct sg_llm_check_opts {
  const char *base_url;
  const char *model;
  const sg_llm_provider *profile;   /* NULL: detect */
  const sg_llm_client_opts *client; /* NULL: defaults */
  double timeout_s;                 /* deadline of each request; 0: 120 */
  int max_tokens;                   /* of the short probes; 0: 1024 */
} sg_llm_check_opts;

typedef struct sg_llm_check_report {
  sg_llm_probe probes[SG_LLM_CHECK__COUNT];
  bool usable;                /* streaming works */
  char reasoning_field[32];   /* "" when no reasoning came */
  char think_off_style[48];   /* "chat_template_kwargs", "thinking.type", "" */
  char profile[24];           /* the profile to use */
  char server[48];            /* "llama.cpp", "llama-cpp-python", "vllm",
                                 "sglang", "" when not recognised */
  bool profile_given;
  double ttft_first_s, ttft_second_s; /* the prefix-cache pair */
  int64_t cached_first, cached_second, prompt_tokens_long;
} sg_llm_check_report;

const char *sg_llm_probe_status_name(sg_llm_probe_status s);

/* Runs every probe against the endpoint. Returns 0 when the probes ran
 * (out->usable says whether the endpoint works); a negative code only for
 * bad options (err names the option). */
int sg_llm_check_run(const sg_llm_check_opts *o, sg_llm_check_report *out,
                     sg_err *err);

/* The stream probe alone, what `specgen run --llm` asks before it starts:
 * one short chat request with o->profile (NULL: generic). Returns 0 when it
 * ran, out->status saying whether the endpoint streamed an answer (YES) or
 * not (NO, out->detail: why); a negative code only for bad options. */
int sg_llm_check_stream(const sg_llm_check_opts *o, sg_llm_probe *out, sg_err *err);

#endif
