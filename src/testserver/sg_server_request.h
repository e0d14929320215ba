/* sg_server_request.h: a completion request as the test server reads it
 * (docs/test-server.md, "The prompt, thinking and the context").
 */
#ifndef SG_SERVER_REQUEST_H
#define SG_SERVER_REQUEST_H

#include "common/sg_buf.h"
#include "common/sg_error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* The generation prompt after the messages, and what closes reasoning. */
#define SG_SERVER_TPL_GEN "<|im_start|>assistant\n<think>\n"
#define SG_SERVER_TPL_NOTHINK "\n</think>\n\n"

typedef struct sg_server_request {
  bool chat, stream, include_usage, return_token_ids, thinking;
  bool has_seed;
  uint64_t seed;
  long max_tokens;         /* 0: no limit */
  const char *model;       /* borrowed from the body */
  const char *rid;         /* the body's "rid", borrowed; NULL if none */
  sg_buf prompt;           /* the rendered prompt */
  sg_buf context;          /* the prompt up to where the answer starts */
  sg_buf reasoning_prefix; /* reasoning already written (a continuation) */
  sg_buf answer_prefix;    /* answer already written after the reasoning (a
                              continuation's content past </think>) */
  int32_t *prompt_ids;     /* completions given as token ids, owned */
  size_t nprompt_ids;
  char param[64];          /* on error: the field that is wrong ("" if none) */
  char msg[256];           /* on error: what is wrong with it */
} sg_server_request;

void sg_server_request_init(sg_server_request *r);
void sg_server_request_free(sg_server_request *r);

/* Reads body (a /v1/chat/completions request when chat, else /v1/completions)
 * into r, which must be freshly initialized; the body must outlive r. Returns
 * 0, or SG_EINVAL with r->param and r->msg saying what is wrong. */
int sg_server_request_parse(json_t *body, bool chat, sg_server_request *r);

/* Where answer goes on after prefix, the answer a continued message already
 * began: inside prefix's open code block (an odd number of lines that start
 * with a fence) a model writes the code, so answer's own first fence line
 * is already written: what follows it; else answer whole. */
const char *sg_server_answer_after(const char *prefix, const char *answer);

#endif
