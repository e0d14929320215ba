/* sg_llm_chunk.h: the interpreter of OpenAI-style streaming chunks.
 *
 * Takes the data of one SSE event (sg_sse) and says what it carries, for the
 * chat completions and completions endpoints and the servers specgen talks to
 * (vLLM, SGLang, DeepSeek, OpenAI):
 *   - `[DONE]`, the end of the stream;
 *   - reasoning text from choices[0].delta.reasoning (vLLM since its rename, RFC #27755) or
 *     choices[0].delta.reasoning_content (DeepSeek, SGLang, older vLLM), and
 *     which of the two fields it came in;
 *   - content from choices[0].delta.content (chat) or choices[0].text
 *     (completions);
 *   - finish_reason (stop, length, abort, ...);
 *   - token ids when the server returns them (vLLM `return_token_ids`:
 *     choices[0].token_ids, and prompt_token_ids at the top level (chat) or in
 *     the choice (completions));
 *   - usage, with cached prompt tokens from prompt_tokens_details.cached_tokens
 *     (OpenAI, vLLM, SGLang) or prompt_cache_hit_tokens (DeepSeek);
 *   - an error object sent in the stream: {"error": {...}} or {"error": "..."}
 *     or {"object": "error", "message": ...} (vLLM, SGLang).
 * Only choice 0 is read: specgen always asks for n = 1.
 *
 * Pure: no I/O. Text from the server that ends up in an error message is capped.
 */
#ifndef SG_LLM_CHUNK_H
#define SG_LLM_CHUNK_H

#include "common/sg_error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Token accounting of one generation. -1 in a field means "not reported". */
typedef struct sg_llm_usage {
  bool present;              /* a usage object came with the chunk */
  int64_t prompt_tokens;
  int64_t completion_tokens;
  int64_t total_tokens;
  int64_t cached_tokens;     /* prompt tokens served from the prefix cache */
  int64_t reasoning_tokens;  /* completion_tokens_details.reasoning_tokens */
} sg_llm_usage;

/* Sets every count to -1 and present to false. */
void sg_llm_usage_init(sg_llm_usage *u);

typedef struct sg_llm_chunk {
  bool done;                    /* the data was `[DONE]` */
  int n_choices;                /* length of `choices` (0: a usage-only or
                                   empty chunk) */
  const char *reasoning;        /* NULL when absent; borrowed from the chunk */
  size_t reasoning_len;
  const char *reasoning_field;  /* "reasoning" or "reasoning_content" (static),
                                   NULL when no reasoning came */
  const char *content;          /* NULL when absent */
  size_t content_len;
  const char *finish_reason;    /* NULL while the choice goes on */
  int32_t *token_ids;           /* completion token ids in this chunk */
  size_t n_token_ids;
  int32_t *prompt_token_ids;    /* the prompt's token ids (first chunk) */
  size_t n_prompt_token_ids;
  sg_llm_usage usage;
  json_t *root_;                /* private: owns the borrowed strings */
} sg_llm_chunk;

/* Interprets one event's data. On success fills *out (free it with
 * sg_llm_chunk_free). Errors: SG_EPARSE for data that is not a JSON object or
 * has a field of the wrong type (err names the field); SG_EHTTP for an error
 * object sent by the server (err holds the server's message). After an error
 * *out needs no freeing. */
int sg_llm_chunk_parse(const char *data, size_t len, sg_llm_chunk *out,
                       sg_err *err);
void sg_llm_chunk_free(sg_llm_chunk *c);

/* The message of a non-2xx reply: takes the server's message from a JSON body
 * ({"error": {"message": ...}}, {"error": "..."}, {"message": ...},
 * {"detail": ...}) or else the body's first line, capped, and records
 * "HTTP <status>: <message>" in err with code. Returns code. */
int sg_llm_error_from_body(long http_status, const char *body, size_t len,
                           int code, sg_err *err);

/* ---- thinking inline in the content ----
 *
 * Models served without a reasoning parser (DeepSeek-R1 distills, Qwen3 and
 * others on llama.cpp's servers without --reasoning-format, llama-cpp-python)
 * write their reasoning into `content` between <think> and </think>. This
 * splitter turns such content back into reasoning and content, so forks and
 * triggers see reasoning whatever the server does with it. It is fed the
 * content of each chunk as it comes; a tag may be split across chunks at any
 * byte, so the bytes that could begin a tag are held back until the next
 * chunk says what they are (at most the tag's length minus one, or the
 * leading whitespace before an opening tag, capped at SG_LLM_THINK_WS_MAX).
 *
 * Modes:
 *   DETECT  the block is reasoning only when the content opens with it
 *           (after optional whitespace); any other content passes through
 *           from its first byte on, untouched (the default);
 *   OPEN    the chat template already opened the block in the prompt (newer
 *           DeepSeek-R1 templates end the prompt with "<think>\n"): content
 *           is reasoning until </think>;
 *   OFF     content is content.
 * After </think> everything is content; a second block is not parsed (none
 * of these models writes one). Pure: no I/O, no allocation. */

#define SG_LLM_THINK_WS_MAX 64

typedef enum sg_llm_think_mode {
  SG_LLM_THINK_DETECT = 0,
  SG_LLM_THINK_OPEN,
  SG_LLM_THINK_OFF
} sg_llm_think_mode;

typedef struct sg_llm_think {
  int state;    /* private: start, inside, content */
  size_t held;  /* start: bytes of whitespace and "<think>" matched; inside:
                   bytes of "</think>" matched */
  size_t ws;    /* start: how many of the held bytes are whitespace */
  char hold[SG_LLM_THINK_WS_MAX + 8]; /* start: the held bytes themselves */
  bool seen;    /* a think block was found (opened or, in OPEN, closed) */
  bool fed;     /* some content was fed */
} sg_llm_think;

/* What the splitter says about a piece of text: reasoning or content. */
typedef void (*sg_llm_think_emit)(void *data, bool reasoning, const char *text,
                                  size_t len);

void sg_llm_think_init(sg_llm_think *t, sg_llm_think_mode mode);
/* Feeds n content bytes; calls emit for each piece, in order, never with an
 * empty piece. */
void sg_llm_think_feed(sg_llm_think *t, const char *s, size_t n,
                       sg_llm_think_emit emit, void *data);
/* The stream ended: what was held back goes out as what it was. */
void sg_llm_think_flush(sg_llm_think *t, sg_llm_think_emit emit, void *data);
/* Ends detection: the content so far had no opening tag (a separate
 * reasoning field came instead). Held bytes go out as content. In OPEN mode
 * before any content was fed, the server parsed the opened block itself:
 * content is content from then on. */
void sg_llm_think_stop(sg_llm_think *t, sg_llm_think_emit emit, void *data);
/* True while the splitter is inside a think block. */
bool sg_llm_think_inside(const sg_llm_think *t);

#endif
