/* sg_feedback.h: what the LLM is told about a kernel it wrote (pure).
 *
 * Turns an evaluation result (sg_eval_result) or an extraction failure into a
 * short text that says what to fix: the compiler's first diagnostics with
 * their line numbers; for a wrong answer the max abs/rel error and the first
 * mismatching element; for a correct kernel both medians and the speedup; for
 * a profile the roofline verdict with its speed-of-light numbers, then the
 * profiler's paragraph (GPU evaluators) or the timing alone (cpu evaluator,
 * which has no hardware counters). Everything from outside is capped (STYLE
 * 5) and cut on UTF-8 character boundaries, so the text stays valid JSON
 * string material; control characters other than newline and tab are
 * replaced by '?'.
 *
 * The runtime stores these texts in the workflow history
 * (sg_history_validated's message, sg_history_profiled's profile_text); the
 * prompt renderer (sg_prompt) shows them. No I/O, no clock, no state.
 */
#ifndef SG_FEEDBACK_H
#define SG_FEEDBACK_H

#include "core/sg_extract.h"
#include "eval/sg_eval.h"

#include <stddef.h>

/* The most bytes a feedback text holds (below the history's own 8 KiB cap,
 * so the history never cuts it again mid-sentence). */
#define SG_FEEDBACK_MAX_BYTES ((size_t)6 * 1024)
/* Compiler diagnostics: the first lines only (the first error is the one
 * that matters; the rest often follow from it), each line cut at a width. */
#define SG_FEEDBACK_COMPILE_MAX_LINES 30
#define SG_FEEDBACK_LINE_MAX_BYTES 300
/* Other messages (runtime errors end with the candidate's stderr): when
 * longer than this, the head and the tail are kept around a marker. */
#define SG_FEEDBACK_MESSAGE_MAX_BYTES ((size_t)3 * 1024)

/* The validation feedback for r, whatever its status. The caller frees it;
 * never NULL, at most SG_FEEDBACK_MAX_BYTES bytes. */
char *sg_feedback_validation(const sg_eval_result *r);

/* The profiling feedback for an ok result: with GPU metrics (r->metrics
 * holding "kernels"), a roofline line ("Roofline: memory-bound (on-chip):
 * compute SOL 89%, memory SOL 90%, DRAM 9%.") then r->profile_text; without
 * (cpu evaluator), the timing only. The caller frees it; never NULL. */
char *sg_feedback_profile(const sg_eval_result *r);

/* Why a generation gave no candidate, as a sentence for the LLM: reason
 * when given (sg_extracted.reason, the extractor's own sentence), else a
 * sentence for the outcome in the task's language ("c", "cuda", "python").
 * Static; never NULL. */
const char *sg_feedback_extract(sg_extract_outcome outcome,
                                const char *language, const char *reason);

/* Copies at most max bytes of s (len bytes) into a new string, cut on a
 * UTF-8 boundary, control characters other than '\n' and '\t' replaced by
 * '?'; when cut, keeps the head and the tail around "\n[... N bytes cut
 * ...]\n" (head_only: the head and "\n[... N bytes cut]"). The result never
 * exceeds max bytes (max >= 64). The caller frees it. */
char *sg_feedback_cap(const char *s, size_t len, size_t max, int head_only);

#endif
