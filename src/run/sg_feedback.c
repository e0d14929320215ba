/* sg_feedback.c: evaluation results and extraction failures as text for the
 * LLM (see sg_feedback.h). Pure: builds strings from the result it is given.
 *
 * Every piece of outside text (compiler output, a crashed kernel's stderr,
 * the profiler's paragraph) goes through sg_feedback_cap before it is
 * appended, and the whole text through it once more, so no result can make
 * a prompt grow without bound or carry bytes a JSON encoder refuses.
 */
#include "run/sg_feedback.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"

#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- UTF-8 and control characters -------------------------------------- */

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid.
 * Overlong forms, surrogates and code points above U+10FFFF are invalid, as
 * they are for jansson. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  if (c < 0x80)
    return 1;
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 3;
    if (c == 0xE0)
      lo = 0xA0;
    if (c == 0xED)
      hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 4;
    if (c == 0xF0)
      lo = 0x90;
    if (c == 0xF4)
      hi = 0x8F;
  } else {
    return 0;
  }
  if (n < need || s[1] < lo || s[1] > hi)
    return 0;
  for (size_t i = 2; i < need; i++)
    if ((s[i] & 0xC0) != 0x80)
      return 0;
  return need;
}

/* s made safe: invalid UTF-8 and control characters (but '\n', '\t') become
 * '?'; '\r' is dropped (CRLF output). Same length or shorter. */
static char *sanitize(const char *s, size_t len, size_t *out_len) {
  char *o = sg_malloc(len + 1);
  size_t j = 0;
  const unsigned char *u = (const unsigned char *)s;
  for (size_t i = 0; i < len;) {
    size_t k = utf8_len(u + i, len - i);
    if (k == 0) {
      o[j++] = '?';
      i++;
    } else if (k == 1 && u[i] == '\r') {
      i++;
    } else if (k == 1 && (u[i] < 0x20 || u[i] == 0x7F) && u[i] != '\n' &&
               u[i] != '\t') {
      o[j++] = '?';
      i++;
    } else {
      memcpy(o + j, s + i, k);
      j += k;
      i += k;
    }
  }
  o[j] = '\0';
  *out_len = j;
  return o;
}

/* The largest cut <= at that does not split a UTF-8 sequence. */
static size_t back_to_boundary(const char *s, size_t at) {
  while (at > 0 && ((unsigned char)s[at] & 0xC0) == 0x80)
    at--;
  return at;
}

/* The smallest start >= at that does not split a UTF-8 sequence. */
static size_t forward_to_boundary(const char *s, size_t len, size_t at) {
  while (at < len && ((unsigned char)s[at] & 0xC0) == 0x80)
    at++;
  return at;
}

/* Room kept for the "[... N bytes cut ...]" marker. */
#define MARKER_ROOM 48

char *sg_feedback_cap(const char *s, size_t len, size_t max, int head_only) {
  assert(max >= 64);
  if (s == NULL)
    return sg_strdup("");
  size_t n;
  char *clean = sanitize(s, len, &n);
  if (n <= max)
    return clean;
  size_t keep = max - MARKER_ROOM;
  sg_buf b;
  sg_buf_init(&b, 0);
  if (head_only) {
    size_t head = back_to_boundary(clean, keep);
    sg_buf_append(&b, clean, head);
    sg_buf_printf(&b, "\n[... %zu bytes cut]", n - head);
  } else {
    size_t head = back_to_boundary(clean, keep / 2);
    size_t tail = forward_to_boundary(clean, n, n - (keep - keep / 2));
    sg_buf_append(&b, clean, head);
    sg_buf_printf(&b, "\n[... %zu bytes cut ...]\n", tail - head);
    sg_buf_append(&b, clean + tail, n - tail);
  }
  free(clean);
  assert(b.len <= max);
  return sg_buf_steal(&b);
}

/* Appends outside text, capped. */
static void put_capped(sg_buf *b, const char *s, size_t max, int head_only) {
  if (s == NULL || s[0] == '\0')
    return;
  char *c = sg_feedback_cap(s, strlen(s), max, head_only);
  sg_buf_puts(b, c);
  free(c);
}

/* ---- numbers ----------------------------------------------------------- */

static void put_ms(sg_buf *b, double ms) {
  if (isfinite(ms))
    sg_buf_printf(b, "%.3g ms", ms);
  else
    sg_buf_puts(b, "not measured");
}

static void put_speedup(sg_buf *b, double s) {
  if (isfinite(s))
    sg_buf_printf(b, "%.3gx", s);
  else
    sg_buf_puts(b, "not measured");
}

/* "Median time: reference 30.4 ms, kernel 2.53 ms (means ...): speedup
 * 12x." The speedup is the reference's median over the kernel's (docs/eval.md). */
static void put_timing(sg_buf *b, const sg_eval_result *r) {
  sg_buf_puts(b, "Median time: reference ");
  put_ms(b, r->ref_ms);
  sg_buf_puts(b, ", kernel ");
  put_ms(b, r->cand_ms);
  if (isfinite(r->ref_mean_ms) && isfinite(r->cand_mean_ms)) {
    sg_buf_puts(b, " (means ");
    put_ms(b, r->ref_mean_ms);
    sg_buf_puts(b, " and ");
    put_ms(b, r->cand_mean_ms);
    sg_buf_puts(b, ")");
  }
  sg_buf_puts(b, "; speedup ");
  put_speedup(b, r->speedup);
  sg_buf_puts(b, ".");
}

static void put_errors(sg_buf *b, const sg_eval_result *r) {
  bool any = false;
  /* an infinite error is worth saying (an overflow); NaN means unchecked */
  if (!isnan(r->max_abs_err)) {
    sg_buf_printf(b, "max abs error %.3g", r->max_abs_err);
    any = true;
  }
  if (!isnan(r->max_rel_err)) {
    sg_buf_printf(b, "%smax rel error %.3g", any ? ", " : "", r->max_rel_err);
    any = true;
  }
  if (r->first_mismatch >= 0) {
    sg_buf_printf(b, "%sfirst mismatching element at flat index %lld",
                  any ? ", " : "", r->first_mismatch);
    any = true;
  }
  if (!any)
    sg_buf_puts(b, "no error figures were reported");
}

/* ---- compiler output --------------------------------------------------- */

#define COMPILE_BUDGET (SG_FEEDBACK_MAX_BYTES - 256)

/* The first SG_FEEDBACK_COMPILE_MAX_LINES non-empty lines, each cut at
 * SG_FEEDBACK_LINE_MAX_BYTES, then how many were left out. */
static void put_compile(sg_buf *b, const char *msg) {
  if (msg == NULL || msg[0] == '\0') {
    sg_buf_puts(b, "(the compiler printed nothing)\n");
    return;
  }
  size_t shown = 0, cut = 0;
  const char *p = msg;
  while (*p != '\0') {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    if (n > 0) {
      /* lines stop at a count and at a byte budget, so the note saying how
       * many were left out always fits under SG_FEEDBACK_MAX_BYTES */
      if (shown < SG_FEEDBACK_COMPILE_MAX_LINES &&
          b->len + SG_FEEDBACK_LINE_MAX_BYTES + 1 <= COMPILE_BUDGET) {
        char *c = sg_feedback_cap(p, n, SG_FEEDBACK_LINE_MAX_BYTES, 1);
        /* one line stays one line: the cut marker's newline becomes a space */
        for (char *q = c; *q; q++)
          if (*q == '\n')
            *q = ' ';
        sg_buf_puts(b, c);
        free(c);
        sg_buf_puts(b, "\n");
        shown++;
      } else {
        cut++;
      }
    }
    if (nl == NULL)
      break;
    p = nl + 1;
  }
  if (cut > 0)
    sg_buf_printf(b, "[... %zu more lines cut]\n", cut);
}

/* ---- validation -------------------------------------------------------- */

char *sg_feedback_validation(const sg_eval_result *r) {
  sg_buf b;
  sg_buf_init(&b, 0);
  const char *msg = r->message;
  switch (r->status) {
  case SG_EVAL_OK:
    sg_buf_puts(&b, "Correct on every input set (");
    put_errors(&b, r);
    sg_buf_puts(&b, ").\n");
    put_timing(&b, r);
    sg_buf_puts(&b, "\n");
    break;
  case SG_EVAL_COMPILE_ERROR:
    sg_buf_puts(&b, "Compile error. The compiler's first diagnostics (line "
                    "numbers are the kernel's):\n");
    put_compile(&b, msg);
    break;
  case SG_EVAL_RUNTIME_ERROR:
    sg_buf_puts(&b, "Runtime error: the kernel crashed or stopped before it "
                    "returned a result.\n");
    put_capped(&b, msg, SG_FEEDBACK_MESSAGE_MAX_BYTES, 0);
    sg_buf_puts(&b, "\n");
    break;
  case SG_EVAL_NUMERICAL_ERROR:
    sg_buf_puts(&b, "Wrong result: the kernel ran, but its output differs "
                    "from the reference's beyond the tolerance.\n");
    put_capped(&b, msg, SG_FEEDBACK_MESSAGE_MAX_BYTES, 0);
    sg_buf_puts(&b, "\nSummary: ");
    put_errors(&b, r);
    sg_buf_puts(&b, ".\n");
    break;
  case SG_EVAL_TIMEOUT:
    sg_buf_puts(&b, "Timeout: the kernel ran past its time limit (a loop "
                    "that never ends, or far too slow).\n");
    put_capped(&b, msg, SG_FEEDBACK_MESSAGE_MAX_BYTES, 0);
    sg_buf_puts(&b, "\n");
    break;
  case SG_EVAL_REJECTED:
    sg_buf_puts(&b, "Rejected: the kernel broke a rule of the task (see the "
                    "rules); write it without that call.\n");
    put_capped(&b, msg, SG_FEEDBACK_MESSAGE_MAX_BYTES, 0);
    sg_buf_puts(&b, "\n");
    break;
  case SG_EVAL_ABORTED:
    sg_buf_puts(&b, "Not evaluated: the evaluation was withdrawn at an "
                    "iteration boundary (not the kernel's fault).\n");
    break;
  case SG_EVAL_INFRA_ERROR:
  default:
    sg_buf_puts(&b, "Not evaluated: specgen or the machine failed, not the "
                    "kernel.\n");
    put_capped(&b, msg, SG_FEEDBACK_MESSAGE_MAX_BYTES, 0);
    sg_buf_puts(&b, "\n");
    break;
  }
  char *c = sg_feedback_cap(b.data ? b.data : "", b.len, SG_FEEDBACK_MAX_BYTES,
                            1);
  sg_buf_free(&b);
  return c;
}

/* ---- profile ----------------------------------------------------------- */

static double num(const json_t *o, const char *key) {
  const json_t *v = json_object_get(o, key);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

static void put_pct(sg_buf *b, const char *what, double v, bool *first) {
  if (!isfinite(v))
    return;
  sg_buf_printf(b, "%s%s %.0f%%", *first ? "" : ", ", what, v);
  *first = false;
}

/* The roofline line from the metrics of docs/gpu.md; false without them. */
static bool put_roofline(sg_buf *b, const json_t *metrics) {
  const json_t *kernels = json_object_get(metrics, "kernels");
  if (!json_is_array(kernels) || json_array_size(kernels) == 0)
    return false;
  const char *dominant =
      json_string_value(json_object_get(metrics, "dominant_kernel"));
  const json_t *k = json_array_get(kernels, 0);
  for (size_t i = 0; dominant && i < json_array_size(kernels); i++) {
    const json_t *ki = json_array_get(kernels, i);
    const char *name = json_string_value(json_object_get(ki, "name"));
    if (name && strcmp(name, dominant) == 0) {
      k = ki;
      break;
    }
  }
  const char *verdict = json_string_value(json_object_get(metrics, "verdict"));
  if (verdict == NULL)
    verdict = json_string_value(json_object_get(k, "verdict"));
  const char *level = json_string_value(json_object_get(k, "memory_level"));
  sg_buf_printf(b, "Roofline: %.40s", verdict ? verdict : "no verdict");
  if (level && strcmp(level, "on-chip") == 0)
    sg_buf_puts(b, " (on-chip: L1/shared memory or L2, not DRAM)");
  bool first = true;
  sg_buf_puts(b, ": ");
  put_pct(b, "compute SOL", num(k, "compute_sol_pct"), &first);
  put_pct(b, "memory SOL", num(k, "memory_sol_pct"), &first);
  put_pct(b, "DRAM", num(k, "dram_pct"), &first);
  put_pct(b, "achieved occupancy", num(k, "achieved_occupancy_pct"), &first);
  if (first)
    sg_buf_puts(b, "no speed-of-light figures");
  size_t nk = json_array_size(kernels);
  double total_ns = num(metrics, "total_duration_ns");
  sg_buf_printf(b, " (%zu kernel launch%s profiled", nk, nk == 1 ? "" : "es");
  if (isfinite(total_ns))
    sg_buf_printf(b, ", %.1f us in all", total_ns / 1000.0);
  sg_buf_puts(b, ").\n");
  return true;
}

char *sg_feedback_profile(const sg_eval_result *r) {
  sg_buf b;
  sg_buf_init(&b, 0);
  put_timing(&b, r);
  sg_buf_puts(&b, "\n");
  bool gpu = r->metrics != NULL && put_roofline(&b, r->metrics);
  if (!gpu)
    sg_buf_puts(&b, "No hardware counters (the cpu evaluator measures time "
                    "only).\n");
  if (r->profile_text != NULL && r->profile_text[0] != '\0') {
    put_capped(&b, r->profile_text, SG_FEEDBACK_MAX_BYTES / 2, 1);
    sg_buf_puts(&b, "\n");
  }
  char *c = sg_feedback_cap(b.data ? b.data : "", b.len, SG_FEEDBACK_MAX_BYTES,
                            1);
  sg_buf_free(&b);
  return c;
}

/* ---- extraction -------------------------------------------------------- */

const char *sg_feedback_extract(sg_extract_outcome outcome,
                                const char *language, const char *reason) {
  if (reason != NULL && reason[0] != '\0')
    return reason;
  bool cuda = language && strcmp(language, "cuda") == 0;
  bool py = language && strcmp(language, "python") == 0;
  switch (outcome) {
  case SG_EXTRACT_FOUND:
    return "a candidate was found";
  case SG_EXTRACT_NONE:
    return cuda ? "the answer held no code: write the complete CUDA source "
                  "(kernel and launcher) in one fenced ```cuda code block"
           : py ? "the answer held no code: write the complete Python module "
                  "in one fenced ```python code block"
                : "the answer held no code: write the complete C function in "
                  "one fenced ```c code block";
  case SG_EXTRACT_INCOMPLETE:
    return "the answer ended before its code was complete (an unclosed code "
           "block or unbalanced braces); write the whole kernel in one "
           "closed fenced code block";
  case SG_EXTRACT_WRONG_LANG:
  default:
    return cuda ? "the answer's code is in another language than the task's: "
                  "the task expects CUDA C++ in a ```cuda block"
           : py ? "the answer's code is in another language than the task's: "
                  "the task expects a Python module in a ```python block"
                : "the answer's code is in another language than the task's: "
                  "the task expects plain C in a ```c block (no CUDA, no "
                  "Python)";
  }
}
