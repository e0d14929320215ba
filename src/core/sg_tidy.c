/* sg_tidy.c: what a model writes around a kernel that can never build in
 * the harness, taken out, and a standard header it forgot, added (pure;
 * the rules are in sg_tidy.h). */
#include "core/sg_tidy.h"

#include <stdbool.h>
#include <stdint.h>
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
                              size_t *out_len, int *changes) {
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
      (*changes)++;
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
                           size_t *out_len, int *changes) {
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
  (*changes)++;
  *out_len = b.len;
  return sg_buf_steal(&b);
}

/* ---- pass 3: a standard header the kernel uses but never included ---- */

typedef struct header {
  const char *name;
  const char *const *names;    /* what the kernel may use from it */
  const char *const *provides; /* headers that declare all of names */
} header;

static const char *const math_names[] = {
    "NAN",    "INFINITY", "HUGE_VAL", "HUGE_VALF", "fabs",  "fabsf", "sqrt",
    "sqrtf",  "exp",      "expf",     "log",       "logf",  "pow",   "powf",
    "fmax",   "fmaxf",    "fmin",     "fminf",     "tanh",  "tanhf", "erf",
    "erff",   "floor",    "floorf",   "ceil",      "ceilf", "round", "roundf",
    "isnan",  "isinf",    "isfinite", NULL};
static const char *const math_provides[] = {"math.h", "tgmath.h", NULL};
static const char *const stdint_names[] = {
    "int8_t",  "int16_t",  "int32_t",  "int64_t",
    "uint8_t", "uint16_t", "uint32_t", "uint64_t", NULL};
static const char *const stdint_provides[] = {"stdint.h", "inttypes.h", NULL};
static const char *const stddef_names[] = {"size_t", NULL};
static const char *const stddef_provides[] = {
    "stddef.h", "stdio.h", "stdlib.h", "string.h", "time.h", "wchar.h", NULL};
static const char *const string_names[] = {"memset", "memcpy", NULL};
static const char *const string_provides[] = {"string.h", NULL};

static const header headers[] = {
    {"math.h", math_names, math_provides},
    {"stdint.h", stdint_names, stdint_provides},
    {"stddef.h", stddef_names, stddef_provides},
    {"string.h", string_names, string_provides},
};
enum { HEADERS = sizeof headers / sizeof headers[0] };

/* Identifiers that may stand right before a use of a name ("return
 * sqrtf(x)"); any other identifier there declares or defines the name
 * ("float expf(float)", "#define NAN ...", "typedef int int32_t"). */
static bool precedes_a_use(const char *t, span p) {
  static const char *const words[] = {"return", "else", "case", "sizeof",
                                      "do",     "goto"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strlen(words[i]) == p.len && memcmp(t + p.at, words[i], p.len) == 0)
      return true;
  return false;
}

static bool in_list(const char *const *list, const char *t, size_t at,
                    size_t n) {
  for (; *list; list++)
    if (strlen(*list) == n && memcmp(t + at, *list, n) == 0)
      return true;
  return false;
}

typedef struct header_use {
  bool included, declared;
  const char *used; /* the first name used, or NULL */
} header_use;

typedef struct scan {
  header_use h[HEADERS];
  size_t first_include; /* the first unconditional #include line, or SIZE_MAX */
  bool feature_macro;   /* a #define of _[A-Z_]... (like _GNU_SOURCE) */
} scan;

/* The directive at t[p] == '#' (a line's first non-blank byte): an
 * #include's header, the #if nesting, a feature-test macro. Returns where
 * the scan goes on (the directive's words are scanned as code too, so
 * "#define NAN" declares NAN). */
static size_t directive(const char *t, size_t len, size_t line, size_t p,
                        int *depth, scan *s) {
  size_t q = p + 1;
  while (q < len && sg_is_blank(t[q]))
    q++;
  size_t w = q;
  while (q < len && sg_is_ident(t[q]))
    q++;
  size_t n = q - w;
#define IS(word) (n == strlen(word) && memcmp(t + w, word, n) == 0)
  if (IS("if") || IS("ifdef") || IS("ifndef")) {
    (*depth)++;
  } else if (IS("endif")) {
    *depth -= *depth > 0;
  } else if (IS("define")) {
    while (q < len && sg_is_blank(t[q]))
      q++;
    if (q + 1 < len && t[q] == '_' && (t[q + 1] == '_' || (t[q + 1] >= 'A' && t[q + 1] <= 'Z')))
      s->feature_macro = true;
    return w;
  } else if (IS("include")) {
    if (*depth == 0 && s->first_include == SIZE_MAX)
      s->first_include = line;
    while (q < len && sg_is_blank(t[q]))
      q++;
    if (q < len && (t[q] == '<' || t[q] == '"')) {
      char close = t[q] == '<' ? '>' : '"';
      size_t a = ++q;
      while (q < len && t[q] != close && t[q] != '\n')
        q++;
      for (size_t k = 0; k < HEADERS; k++)
        if (in_list(headers[k].provides, t, a, q - a))
          s->h[k].included = true;
    }
    return q;
  }
#undef IS
  return w;
}

static void scan_text(const char *t, size_t len, scan *s) {
  memset(s, 0, sizeof *s);
  s->first_include = SIZE_MAX;
  int depth = 0;
  bool bol = true;
  size_t line = 0;
  span prev = {0, 0}; /* the identifier just before, if the last token was one */
  for (size_t i = 0; i < len;) {
    size_t j = sg_extract_skip_lexeme(t, len, i);
    if (j != i) {
      prev.len = 0;
      i = j;
      continue;
    }
    char c = t[i];
    if (c == '\n') {
      bol = true;
      line = ++i;
      continue;
    }
    if (sg_is_space(c)) {
      i++;
      continue;
    }
    if (bol && c == '#') {
      bol = false;
      prev.len = 0;
      i = directive(t, len, line, i, &depth, s);
      continue;
    }
    bol = false;
    if (!sg_is_ident(c)) {
      prev.len = 0;
      i++;
      continue;
    }
    size_t e = i;
    while (e < len && sg_is_ident(t[e]))
      e++;
    if (!(c >= '0' && c <= '9')) {
      for (size_t k = 0; k < HEADERS; k++) {
        for (const char *const *nm = headers[k].names; *nm; nm++) {
          if (strlen(*nm) != e - i || memcmp(t + i, *nm, e - i) != 0)
            continue;
          if (prev.len > 0 && !precedes_a_use(t, prev))
            s->h[k].declared = true;
          else if (s->h[k].used == NULL)
            s->h[k].used = *nm;
        }
      }
    }
    prev = c >= '0' && c <= '9' ? (span){0, 0} : (span){i, e - i};
    i = e;
  }
}

/* Pass 3 (C only, and only beside a complete definition of the entry):
 * for each header of the table whose names the kernel
 * uses, never declares itself, and whose declarations it never included,
 * an #include, inserted before the first unconditional #include (or at the
 * top when there is none, unless a feature-test macro is defined: it must
 * come before any header, so the text is left alone). */
static char *add_includes(const char *t, size_t len, const char *entry,
                          size_t *out_len, int *changes) {
  size_t start, lp, rp, end;
  if (!sg_extract_entry_def(t, len, entry, &start, &lp, &rp, &end))
    return NULL; /* no kernel: its failure is the feedback, as written */
  scan s;
  scan_text(t, len, &s);
  size_t at = s.first_include == SIZE_MAX ? 0 : s.first_include;
  if (s.first_include == SIZE_MAX && s.feature_macro)
    return NULL;
  sg_buf b;
  sg_buf_init(&b, 0);
  sg_buf_append(&b, t, at);
  bool any = false;
  for (size_t k = 0; k < HEADERS; k++) {
    const header_use *u = &s.h[k];
    if (u->used == NULL || u->declared || u->included)
      continue;
    any = true;
    sg_buf_printf(&b,
                  "/* specgen added this #include: the kernel uses %s, "
                  "declared in <%s>, which it did not include */\n"
                  "#include <%s>\n",
                  u->used, headers[k].name, headers[k].name);
    (*changes)++;
  }
  if (!any) {
    sg_buf_free(&b);
    return NULL;
  }
  sg_buf_append(&b, t + at, len - at);
  *out_len = b.len;
  return sg_buf_steal(&b);
}

char *sg_tidy_candidate(const char *t, size_t len, const char *language,
                        const char *entry, size_t *out_len, int *changes) {
  *out_len = 0;
  *changes = 0;
  if (language == NULL || entry == NULL ||
      (strcmp(language, "c") != 0 && strcmp(language, "cuda") != 0))
    return NULL;
  char *owned = NULL;
  size_t n = len;
  for (int pass = 0; pass < 3; pass++) {
    const char *cur = owned ? owned : t;
    size_t cur_len = n, next_len = 0;
    char *next = pass == 0   ? take_out_defines(cur, cur_len, entry, &next_len, changes)
                 : pass == 1 ? take_out_main(cur, cur_len, entry, &next_len, changes)
                 : strcmp(language, "c") == 0
                     ? add_includes(cur, cur_len, entry, &next_len, changes)
                     : NULL;
    if (next) {
      free(owned);
      owned = next;
      n = next_len;
    }
  }
  if (owned)
    *out_len = n;
  return owned;
}
