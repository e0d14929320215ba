/* sg_tidy.c: what a model writes around a kernel that can never build in
 * the harness, taken out (pure; the rules are in sg_tidy.h). */
#include "core/sg_tidy.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sg_buf.h"
#include "core/sg_chars.h"
#include "core/sg_extract.h"

enum { PARAMS_MAX = 64 };

typedef struct span {
  size_t at, len;
} span;


/* The parameter names in t[lp+1, rp): per top-level comma-separated part,
 * its last identifier before any '[' ("const float *__restrict__ x" is x,
 * "float x[]" is x). */
static size_t param_names(const char *t, size_t lp, size_t rp, span *names) {
  size_t n = 0, depth = 0, last_at = 0, last_len = 0;
  bool in_brackets = false;
  for (size_t i = lp + 1; i <= rp && n < PARAMS_MAX; i++) {
    char c = i < rp ? t[i] : ',';
    if (c == '(' || c == '[') {
      depth++;
      in_brackets = in_brackets || c == '[';
    } else if ((c == ')' || c == ']') && depth > 0) {
      depth--;
    } else if (c == ',' && depth == 0) {
      if (last_len > 0)
        names[n++] = (span){last_at, last_len};
      last_len = 0;
      in_brackets = false;
    } else if (sg_is_ident(c) && !sg_is_ident(t[i - 1]) && !in_brackets &&
               !(c >= '0' && c <= '9')) {
      size_t e = i;
      while (e < rp && sg_is_ident(t[e]))
        e++;
      last_at = i;
      last_len = e - i;
      i = e - 1;
    }
  }
  return n;
}

/* The end of the line at p, its continuation lines ("\\\n") included, past
 * its newline. */
static size_t directive_end(const char *t, size_t len, size_t p) {
  while (p < len) {
    const char *nl = memchr(t + p, '\n', len - p);
    size_t e = nl ? (size_t)(nl - t) : len;
    size_t k = e;
    while (k > p && (t[k - 1] == '\r' || sg_is_blank(t[k - 1])))
      k--;
    p = e < len ? e + 1 : len;
    if (k == 0 || t[k - 1] != '\\')
      break;
  }
  return p;
}

/* If the line at p is "#define NAME" (object-like) with NAME one of names,
 * NAME's span. */
static bool shadowing_define(const char *t, size_t end, size_t p,
                             const span *names, size_t n, span *name) {
  while (p < end && sg_is_blank(t[p]))
    p++;
  if (p >= end || t[p] != '#')
    return false;
  p++;
  while (p < end && sg_is_blank(t[p]))
    p++;
  if (end - p < 7 || memcmp(t + p, "define", 6) != 0 || !sg_is_blank(t[p + 6]))
    return false;
  p += 6;
  while (p < end && sg_is_blank(t[p]))
    p++;
  size_t s = p;
  while (p < end && sg_is_ident(t[p]))
    p++;
  if (p == s || (p < end && t[p] == '('))
    return false; /* none, or a function-like macro: not a value */
  for (size_t i = 0; i < n; i++) {
    if (names[i].len == p - s && memcmp(t + names[i].at, t + s, p - s) == 0) {
      *name = (span){s, p - s};
      return true;
    }
  }
  return false;
}

/* Pass 1: the #define lines above the entry's definition that shadow its
 * parameters. */
static char *take_out_defines(const char *t, size_t len, const char *entry,
                              size_t *out_len, int *removed) {
  size_t start, lp, rp, end;
  if (!sg_extract_entry_def(t, len, entry, &start, &lp, &rp, &end))
    return NULL;
  span names[PARAMS_MAX];
  size_t n = param_names(t, lp, rp, names);
  if (n == 0)
    return NULL;
  sg_buf b;
  sg_buf_init(&b, 0); /* allocates at its first append */
  bool any = false;
  size_t copied = 0;
  for (size_t p = 0; p < start;) {
    size_t e = directive_end(t, len, p);
    span name;
    if (shadowing_define(t, e, p, names, n, &name)) {
      any = true;
      sg_buf_append(&b, t + copied, p - copied);
      sg_buf_printf(&b,
                    "/* specgen took out a #define of %.*s here: %.*s is a "
                    "parameter of %s, and the macro broke its signature */\n",
                    (int)name.len, t + name.at, (int)name.len, t + name.at,
                    entry);
      copied = e;
      (*removed)++;
    }
    p = e;
  }
  if (!any)
    return NULL;
  sg_buf_append(&b, t + copied, len - copied);
  *out_len = b.len;
  return sg_buf_steal(&b);
}

/* Pass 2: a complete definition of main, the model's test driver, beside
 * a complete definition of the entry (a text without the kernel is left as
 * the model wrote it: its failure is the feedback). */
static char *take_out_main(const char *t, size_t len, const char *entry,
                           size_t *out_len, int *removed) {
  size_t start, lp, rp, end;
  if (strcmp(entry, "main") == 0 ||
      !sg_extract_entry_def(t, len, entry, &start, &lp, &rp, &end) ||
      !sg_extract_entry_def(t, len, "main", &start, &lp, &rp, &end))
    return NULL;
  sg_buf b;
  sg_buf_init(&b, 0);
  sg_buf_append(&b, t, start);
  sg_buf_printf(&b, "/* specgen took out main() here: the harness has its own "
                    "and calls %s itself */",
                entry);
  sg_buf_append(&b, t + end, len - end);
  (*removed)++;
  *out_len = b.len;
  return sg_buf_steal(&b);
}

char *sg_tidy_candidate(const char *t, size_t len, const char *language,
                        const char *entry, size_t *out_len, int *removed) {
  *out_len = 0;
  *removed = 0;
  if (language == NULL || entry == NULL ||
      (strcmp(language, "c") != 0 && strcmp(language, "cuda") != 0))
    return NULL;
  size_t once_len = 0, twice_len = 0;
  char *once = take_out_defines(t, len, entry, &once_len, removed);
  char *twice = take_out_main(once ? once : t, once ? once_len : len, entry,
                              &twice_len, removed);
  if (twice == NULL) {
    *out_len = once_len;
    return once;
  }
  free(once);
  *out_len = twice_len;
  return twice;
}
