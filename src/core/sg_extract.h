/* sg_extract.h: candidate extraction from a generation's text (pure).
 *
 * Finds the kernel in a finished or cancelled generation: the last complete
 * fenced code block in the expected language, or else a complete kernel body
 * (a function with a full signature and a brace-balanced body) in the open
 * text. When there is none, the outcome says why, so the search can feed that
 * back to the LLM ("your answer held no complete code block").
 */
#ifndef SG_EXTRACT_H
#define SG_EXTRACT_H

#include <stdbool.h>
#include <stddef.h>

typedef enum sg_extract_outcome {
  SG_EXTRACT_FOUND,       /* span holds the candidate's source */
  SG_EXTRACT_NONE,        /* no code at all */
  SG_EXTRACT_INCOMPLETE,  /* code began but was cut (unclosed fence or body) */
  SG_EXTRACT_WRONG_LANG,  /* code only in another language than expected */
} sg_extract_outcome;

/* "found", "none", "incomplete", "wrong_language". */
const char *sg_extract_outcome_name(sg_extract_outcome o);

typedef struct sg_extracted {
  sg_extract_outcome outcome;
  size_t start, len;      /* the source's span in the text (FOUND only) */
  const char *reason;     /* a static sentence for feedback (not FOUND) */
} sg_extracted;

/* language: "c", "cuda" or "python" (the task's). entry: the function the
 * candidate must define, or NULL; a block that defines it wins over a later
 * one that does not. Never allocates. */
void sg_extract_candidate(const char *text, size_t len, const char *language,
                          const char *entry, sg_extracted *out);

/* The complete definition of entry in a C or CUDA source: where it starts
 * (its return type), its parameter list's parentheses (*lparen, *rparen)
 * and the end of its body (*end: past its closing brace). False when src
 * holds none (a prototype or a cut body is none). */
bool sg_extract_entry_def(const char *src, size_t len, const char *entry,
                          size_t *start, size_t *lparen, size_t *rparen,
                          size_t *end);

/* In C or CUDA source: the index just past the comment, string literal or
 * character literal that starts at src[i] (literals end at a newline, as in
 * C), or i when none starts there. */
size_t sg_extract_skip_lexeme(const char *src, size_t len, size_t i);

#endif
