/* sg_tokens.h: what a run's tokens are, defined once for `run`, `sim`, the
 * store's summary and every report.
 *
 * A generation's usage is its prompt tokens, of which some were served from
 * a prefix cache (cached) and the rest were prefilled (uncached), and its
 * completion tokens. The SpecGen paper's "token consumption" (its Tables 7
 * and 9) counts what the model had to process anew: the uncached prompt
 * tokens and the completion tokens. A speculative fork's prompt repeats its
 * parent's reasoning prefix; served from the cache, that prefix is reused,
 * not spent. Reports print consumption first and the alternatives beside
 * it: billed (prompt + completion: every token sent or received, what an
 * API without cache discounts charges) and completion alone.
 */
#ifndef SG_TOKENS_H
#define SG_TOKENS_H

#include <stdint.h>

/* Prompt tokens that were prefilled: prompt - cached (0 if a server
 * reported more cached than prompt tokens). */
static inline uint64_t sg_tokens_uncached(uint64_t prompt, uint64_t cached) {
  return cached < prompt ? prompt - cached : 0;
}

/* The paper's token consumption: uncached prompt + completion. */
static inline uint64_t sg_tokens_consumption(uint64_t prompt, uint64_t cached,
                                             uint64_t completion) {
  return sg_tokens_uncached(prompt, cached) + completion;
}

/* Every token sent or received: prompt + completion. */
static inline uint64_t sg_tokens_billed(uint64_t prompt, uint64_t completion) {
  return prompt + completion;
}

#endif
