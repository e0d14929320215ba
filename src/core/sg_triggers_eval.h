/* sg_triggers_eval.h: measuring the trigger scanner against annotations
 * (pure: no I/O).
 *
 * An annotation file lists, for one trace, where each trigger should fire:
 *
 *   # family: deepseek-r1-distill-qwen     (a header: the model family)
 *   # source: how the trace was made       (any other # line is a comment)
 *   1234<TAB>fence                          offset, class
 *   1300<TAB>phrase<TAB>Let me write it:    an optional note after them
 *
 * The offset is the scanner's convention: the length of the prefix the
 * trigger completes (for a fence, just past its closing run of ticks). A
 * reported trigger matches an expected one of the same class within a
 * window of bytes, each used once, nearest pairs first; precision is
 * matched/reported, recall matched/expected, and the offset error is
 * measured on the matched pairs.
 */
#ifndef SG_TRIGGERS_EVAL_H
#define SG_TRIGGERS_EVAL_H

#include "common/sg_error.h"
#include "core/sg_triggers.h"

#include <stddef.h>
#include <stdint.h>

#define SG_TRIG_FAMILY_MAX 64

typedef struct sg_trig_ann {
  uint64_t offset;
  sg_trigger_class cls;
} sg_trig_ann;

typedef struct sg_trig_anns {
  sg_trig_ann *v;           /* in file order */
  size_t n, cap;
  char family[SG_TRIG_FAMILY_MAX];  /* "" when the file names none */
} sg_trig_anns;

/* Parses an annotation file's text (name is used in messages: "name:LINE:
 * ..."). On error returns SG_EPARSE with err naming the line and field, and
 * out holds nothing. Free out with sg_trig_anns_free. */
int sg_trig_anns_parse(const char *text, size_t len, const char *name,
                       sg_trig_anns *out, sg_err *err);
void sg_trig_anns_free(sg_trig_anns *a);

/* Counts for one class, summed over traces. */
typedef struct sg_trig_score {
  uint64_t expected, reported, matched;
  uint64_t exact;           /* matched at the same offset */
  uint64_t err_sum_bytes;   /* |reported - expected| over matched pairs */
  uint64_t err_max_bytes;
} sg_trig_score;

/* The default matching window: about a sentence. */
#define SG_TRIG_EVAL_WINDOW_BYTES 80

/* Adds one trace's comparison to score[class] (got: the scanner's triggers
 * in offset order). */
void sg_trig_eval_add(const sg_trig_anns *want, const sg_trigger *got,
                      size_t ngot, uint64_t window_bytes,
                      sg_trig_score score[SG_TRIGGER__COUNT]);

/* Precision and recall as fractions; 1 when there is nothing to get wrong
 * (no reported, resp. no expected, triggers). */
double sg_trig_score_precision(const sg_trig_score *s);
double sg_trig_score_recall(const sg_trig_score *s);

#endif
