/* sg_gen_account.h: what a run's generations came to, said plainly.
 *
 * A model that fails must say so. The run loop tells this account about
 * every generation that ends; the account keeps the distinct causes of
 * failure (a connection refused, a bad host, an HTTP 4xx, a 5xx after its
 * retries, a deadline), so each cause is printed once however many
 * generations hit it, and says whether the run generated anything at all: a
 * run in which no generation succeeded fails with its cause. It also keeps
 * token counts honest: a count the server did not report is estimated and
 * marked so, never shown as a measured zero.
 *
 * Pure: no I/O; the loop prints and stores what it returns.
 */
#ifndef SG_GEN_ACCOUNT_H
#define SG_GEN_ACCOUNT_H

#include "llm/sg_llm_chunk.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SG_GEN_CAUSES_MAX 16
#define SG_GEN_CAUSE_BYTES 320

typedef struct sg_gen_account {
  uint64_t completed, failed;
  struct {
    char text[SG_GEN_CAUSE_BYTES];
    uint64_t count;
  } causes[SG_GEN_CAUSES_MAX];
  size_t ncauses;
  uint64_t other_failures;       /* failures past the SG_GEN_CAUSES_MAX-th cause */
  uint64_t prompt_estimated;     /* generations whose prompt count is estimated */
  uint64_t completion_estimated; /* ... whose completion count is */
  uint64_t mains_without_reasoning; /* main generations that streamed none */
} sg_gen_account;

void sg_gen_account_init(sg_gen_account *a);

/* The cause of a failure message: the message without what differs between
 * generations failing the same way (the "(request ...)" groups naming the
 * request, its attempts and chunks), capped at SG_GEN_CAUSE_BYTES - 1. */
void sg_gen_cause(const char *message, char *out, size_t cap);

/* Records a failed generation. Returns the cause when it is new to this run
 * (print it), NULL when it was seen before. */
const char *sg_gen_account_failed(sg_gen_account *a, const char *message);
void sg_gen_account_completed(sg_gen_account *a);

/* True when the run generated nothing and something failed; msg then says
 * why, naming the most frequent cause. */
bool sg_gen_account_nothing_generated(const sg_gen_account *a, char *msg, size_t cap);

/* {"completed", "failed", "causes": [{"cause", "count"}], "prompt_estimated",
 * "completion_estimated"} (caller owns it). */
json_t *sg_gen_account_json(const sg_gen_account *a);

/* The token counts of one generation, and which are estimates. */
typedef struct sg_gen_tokens {
  int64_t prompt, completion, cached;
  bool prompt_estimated, completion_estimated;
} sg_gen_tokens;

/* From the usage the server sent (u->present false: none came), the
 * client's own count (client_counted: u's completion_tokens was counted
 * client-side), the chunks received and the prompt's size in bytes: a count
 * the server did not give is estimated (completion: the chunks; prompt: one
 * token per 4 bytes, the usual ratio of BPE tokenizers on English and
 * code, when the server answered at all; a request that got no output and
 * no usage counts 0 prompt tokens, not estimated: nothing says it was read). Counts the account keeps (a's estimated tallies) when a is not
 * NULL. */
sg_gen_tokens sg_gen_tokens_of(sg_gen_account *a, const sg_llm_usage *u,
                               bool client_counted, uint64_t chunks,
                               size_t prompt_bytes);

/* Whether a failed generation failed because of the model server, not the
 * request or the model: it could not be reached or the connection broke
 * (SG_ECONN), it answered 429 or 5xx after the client's retries, or an
 * error inside a stream (SG_EHTTP, any other status than 4xx), or its
 * reply could not be read (SG_EPROTO, SG_EPARSE). A 4xx other than 429
 * (the request was refused) and a deadline (SG_ETIMEDOUT: the model took
 * too long) are not. The run sends such a main generation again instead
 * of ending its iteration without a kernel, and stops after --llm-outage
 * seconds of them. */
bool sg_gen_endpoint_failure(int code, long http_status);

/* Why the model server failed a generation, in a few words that are the
 * same for every request failing the same way (a main sent again records
 * it): "the connection broke" (SG_ECONN), "an unreadable reply" (SG_EPROTO,
 * SG_EPARSE), "HTTP 429" / "HTTP 5xx" (after the client's retries), "an
 * error inside the stream" (SG_EHTTP below 400), else "another failure". */
const char *sg_gen_endpoint_cause(int code, long http_status);

/* "no kernel" for an iteration the controller ended by fallback when no
 * kernel came out of it (the fallback evaluates the reasoning's kernel:
 * there was none); else reason unchanged. */
const char *sg_gen_iteration_reason(const char *reason, uint64_t kernels);

/* A main generation finished having streamed no reasoning: returns true the
 * first time (warn then: speculative forks need reasoning to fork from, and a
 * model that streams none in a reasoning field or a leading <think> block
 * gives them nothing). */
bool sg_gen_account_no_reasoning(sg_gen_account *a);

/* The warning of a run on a server that nothing known stops (the profile's
 * cancel style is SG_LLM_CANCEL_NONE): cancelled forks and early-terminated
 * reasonings may keep it busy. */
void sg_gen_cancel_warning(const char *server, const char *profile, char *out,
                           size_t cap);

#endif
