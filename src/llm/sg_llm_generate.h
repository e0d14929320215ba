/* sg_llm_generate.h: one streamed generation, run to its end (blocking).
 *
 * For callers with no event loop of their own (`specgen llm chat`, `specgen
 * llm check`, scripts): runs sg_llm_client on a private libuv loop until the
 * stream ends and collects its text, token ids and accounting. Delta
 * callbacks still fire as bytes arrive, so a caller can print as it goes.
 */
#ifndef SG_LLM_GENERATE_H
#define SG_LLM_GENERATE_H

#include "llm/sg_llm_client.h"

typedef struct sg_llm_generate_opts {
  const sg_llm_client_opts *client; /* NULL: defaults */
  void *data;                       /* passed to the callbacks below */
  void (*on_reasoning)(void *data, const char *text, size_t len);
  void (*on_content)(void *data, const char *text, size_t len);
  size_t max_text_bytes;    /* cap on kept reasoning and content; 0: 16 MiB */
  int cancel_after_deltas;  /* > 0: cancel the stream after this many deltas
                               (a probe of cancellation); the result then has
                               code SG_ECANCELED */
} sg_llm_generate_opts;

typedef struct sg_llm_generation {
  int code;                 /* 0 or the SG_E* code of the failure */
  char message[SG_ERR_MSG_MAX];
  long http_status;
  char *reasoning;          /* NUL-terminated, capped; never NULL */
  char *content;            /* NUL-terminated, capped; never NULL */
  char finish_reason[32];
  char reasoning_field[32]; /* "" when no reasoning came */
  sg_llm_usage usage;
  bool usage_estimated;
  int attempts;
  uint64_t reasoning_chunks, content_chunks;
  int32_t *prompt_ids;      /* when the server returned them; else NULL */
  size_t n_prompt_ids;
  int32_t *completion_ids;
  size_t n_completion_ids;
  double ttft_s;            /* -1 when no delta came */
  double elapsed_s;
  double tokens_per_s;      /* completion tokens / (elapsed - ttft); 0 if unknown */
} sg_llm_generation;

/* Runs r to its end. Returns 0 when the generation finished, else its SG_E*
 * code with err holding the message (also in out->message). *out is filled
 * either way (partial text of a failed stream included); free it with
 * sg_llm_generation_free. */
int sg_llm_generate(const sg_llm_request *r, const sg_llm_generate_opts *opts,
                    sg_llm_generation *out, sg_err *err);
void sg_llm_generation_free(sg_llm_generation *g);

/* Token ids of text (or of messages rendered with the chat template and its
 * generation prompt, when text is NULL) from the server's tokenizer: POST
 * <root>/tokenize as vLLM serves it ({"tokens": [...]}). With text,
 * add_special_tokens says whether BOS and the like are added (false to get
 * the exact tokens of a piece such as "</think>\n\n" to append to a token
 * prompt). Blocking, bounded by timeout_s (0: 30). *ids is a new array the
 * caller frees. Errors carry the server's message. */
int sg_llm_tokenize(const char *base_url, const char *model, const char *text,
                    const sg_llm_message *msgs, size_t n_msgs,
                    bool add_special_tokens, const sg_llm_client_opts *client,
                    double timeout_s, int32_t **ids, size_t *n_ids, sg_err *err);

#endif
