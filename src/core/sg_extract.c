/* sg_extract.c: candidate extraction from a generation's text (pure).
 *
 * How it works: one pass over the lines finds the fenced code blocks (the
 * same fence rules as the trigger scanner: ``` or ~~~ after at most 16 blanks,
 * an info string whose first word is the language, a closing run of at least
 * as many of the same character on a line of its own). Each block is
 * classified for the task's language as accepted, not code (text, output,
 * shell, json...) or another language. The candidate is the last accepted
 * block that defines the entry function, else the last accepted block. With
 * no block, the open text (outside fences) is searched for complete function
 * definitions (C and CUDA only): a signature, a balanced parameter list and a
 * brace-balanced body, braces in literals and comments ignored; the last run
 * of adjacent definitions (only directives, declarations, comments and blank
 * lines between them) is the candidate, with the directive lines just above it.
 * Otherwise the outcome says why there is none, in a sentence meant for the
 * LLM. Language rules (docs/triggers.md):
 *   cuda   accepts cuda, cu, cuh, cpp, c++, cxx, cc; a "c" block or an
 *          unlabelled one if it holds __global__
 *   c      accepts c, h, cpp, c++, cxx, cc (models label C as C++ often; the
 *          compiler's answer is better feedback than a refusal); an
 *          unlabelled block if it holds a complete function definition
 *   python accepts python, py, python3; an unlabelled block if it holds
 *          "def ", "class " or "import "
 *   other language names accept every code block.
 *
 * Never allocates, never reads past text + len (text need not end in NUL).
 */
#include "core/sg_extract.h"

#include "core/sg_chars.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

const char *sg_extract_outcome_name(sg_extract_outcome o) {
  switch (o) {
  case SG_EXTRACT_FOUND: return "found";
  case SG_EXTRACT_NONE: return "none";
  case SG_EXTRACT_INCOMPLETE: return "incomplete";
  case SG_EXTRACT_WRONG_LANG: return "wrong_language";
  }
  return "unknown";
}

enum { LANG_C, LANG_CUDA, LANG_PYTHON, LANG_ANY };
enum { BLOCK_ACCEPT, BLOCK_NOT_CODE, BLOCK_OTHER };

#define FENCE_INDENT_MAX 16
#define LANG_MAX 16
#define SIG_MAX_BYTES 512
#define PAREN_DEPTH_MAX 16

static const char *const reason_none[] = {
    [LANG_C] = "the answer held no code: write the complete C function in one "
               "fenced ```c code block",
    [LANG_CUDA] = "the answer held no code: write the complete CUDA source "
                  "(kernel and launcher) in one fenced ```cuda code block",
    [LANG_PYTHON] = "the answer held no code: write the complete Python module "
                    "in one fenced ```python code block",
    [LANG_ANY] = "the answer held no code: write the complete kernel in one "
                 "fenced code block",
};
static const char *const reason_wrong[] = {
    [LANG_C] = "the answer's code is in another language than the task's: "
               "the task expects plain C in a ```c block (no CUDA, no Python)",
    [LANG_CUDA] = "the answer's code is in another language than the task's: "
                  "the task expects CUDA C++ in a ```cuda block",
    [LANG_PYTHON] = "the answer's code is in another language than the task's: "
                    "the task expects a Python module in a ```python block",
    [LANG_ANY] = "the answer's code is in another language than the task's",
};
static const char reason_unclosed[] =
    "the answer ended inside an unclosed code block, so the kernel was cut off "
    "before it was complete; write the whole kernel and close the block with ```";
static const char reason_body[] =
    "the answer ended inside a function whose braces never balanced, so the "
    "code was cut off; write the complete function in a fenced code block";

/* ---------------------------------------------------------------- helpers */

static size_t line_end(const char *t, size_t len, size_t p) {
  const char *nl = memchr(t + p, '\n', len - p);
  return nl ? (size_t)(nl - t) : len;
}

static bool contains(const char *t, size_t len, const char *needle) {
  size_t n = strlen(needle);
  if (n == 0 || n > len)
    return n == 0;
  for (size_t i = 0; i + n <= len; i++)
    if (t[i] == needle[0] && memcmp(t + i, needle, n) == 0)
      return true;
  return false;
}

static bool word_in(const char *w, size_t n, const char *const *list) {
  for (; *list; list++)
    if (strlen(*list) == n && memcmp(*list, w, n) == 0)
      return true;
  return false;
}

/* ---------------------------------------------------------------- fences */

typedef struct fence {
  size_t start;                  /* the opening line's first byte */
  size_t content, content_end;   /* the code between the fence lines */
  size_t end;                    /* just past the closing line */
  bool closed;
  char lang[LANG_MAX];
  size_t lang_len;
  bool lang_long;
} fence;

/* Is the line at p an opening fence? Fills f's start, lang, content. */
static bool fence_open_at(const char *t, size_t len, size_t p, fence *f,
                          char *ch, size_t *n) {
  size_t e = line_end(t, len, p), i = p, ind = 0;
  while (i < e && sg_is_blank(t[i]) && ind < FENCE_INDENT_MAX) {
    i++;
    ind++;
  }
  if (i >= e || (t[i] != '`' && t[i] != '~'))
    return false;
  char c = t[i];
  size_t k = 0;
  while (i < e && t[i] == c) {
    i++;
    k++;
  }
  if (k < 3)
    return false;
  if (c == '`' && memchr(t + i, '`', e - i) != NULL)
    return false;  /* ```x``` on one line is inline code */
  while (i < e && sg_is_blank(t[i]))
    i++;
  f->lang_len = 0;
  f->lang_long = false;
  while (i < e && !sg_is_space(t[i]) && t[i] != '{') {
    if (f->lang_len + 1 < LANG_MAX) {
      char l = t[i];
      f->lang[f->lang_len++] = (char)(l >= 'A' && l <= 'Z' ? l + 32 : l);
    } else {
      f->lang_long = true;
    }
    i++;
  }
  f->lang[f->lang_len] = '\0';
  f->start = p;
  f->content = e < len ? e + 1 : len;
  *ch = c;
  *n = k;
  return true;
}

static bool fence_close_at(const char *t, size_t e, size_t p, char c,
                           size_t n) {
  size_t i = p, ind = 0, k = 0;
  while (i < e && sg_is_blank(t[i]) && ind < FENCE_INDENT_MAX) {
    i++;
    ind++;
  }
  while (i < e && t[i] == c) {
    i++;
    k++;
  }
  if (k < n)
    return false;
  while (i < e && (sg_is_blank(t[i]) || t[i] == '\r'))
    i++;
  return i == e;
}

/* The next fenced block whose opening line starts at or after *pos (a line
 * start). Returns false when there is none. */
static bool next_fence(const char *t, size_t len, size_t pos, fence *f) {
  size_t p = pos;
  while (p < len) {
    char c;
    size_t n;
    size_t e = line_end(t, len, p);
    if (fence_open_at(t, len, p, f, &c, &n)) {
      size_t q = f->content;
      while (q < len) {
        size_t qe = line_end(t, len, q);
        if (fence_close_at(t, qe, q, c, n)) {
          f->content_end = q;
          f->end = qe < len ? qe + 1 : len;
          f->closed = true;
          return true;
        }
        q = qe < len ? qe + 1 : len;
      }
      f->content_end = len;
      f->end = len;
      f->closed = false;
      return true;
    }
    p = e < len ? e + 1 : len;
  }
  return false;
}

/* ---------------------------------------------------------------- C code */

/* Skips a comment or (with literals) a string or character literal starting
 * at i; returns the index after it, or i when there is none there. Literals
 * end at a newline, as in C. */
static size_t skip_lexeme_if(const char *t, size_t len, size_t i,
                             bool literals) {
  if (t[i] == '/' && i + 1 < len && t[i + 1] == '/')
    return line_end(t, len, i);
  if (t[i] == '/' && i + 1 < len && t[i + 1] == '*') {
    for (size_t j = i + 2; j + 1 < len; j++)
      if (t[j] == '*' && t[j + 1] == '/')
        return j + 2;
    return len;
  }
  if (literals && (t[i] == '"' || t[i] == '\'')) {
    char q = t[i];
    size_t j = i + 1;
    while (j < len && t[j] != q && t[j] != '\n') {
      if (t[j] == '\\' && j + 1 < len)
        j++;
      j++;
    }
    return j < len ? j + 1 : len;
  }
  return i;
}

size_t sg_extract_skip_lexeme(const char *t, size_t len, size_t i) {
  return skip_lexeme_if(t, len, i, true);
}

static size_t skip_lexeme(const char *t, size_t len, size_t i) {
  return sg_extract_skip_lexeme(t, len, i);
}

/* The brace-balanced body opening at t[i] == '{'. Returns the index just past
 * its closing brace, or 0 when the text ends first. */
static size_t body_end(const char *t, size_t len, size_t i) {
  size_t depth = 0;
  while (i < len) {
    size_t j = skip_lexeme(t, len, i);
    if (j != i) {
      i = j;
      continue;
    }
    if (t[i] == '{')
      depth++;
    else if (t[i] == '}' && --depth == 0)
      return i + 1;
    i++;
  }
  return 0;
}

typedef struct func {
  size_t start, end;       /* signature start, just past the body */
  size_t name, name_len;
  bool cut;                /* the body ran to the end of the text */
} func;

static const char *const not_names[] = {"if", "for", "while", "switch",
                                        "return", "sizeof", "catch", NULL};

static const char *const qualifiers[] = {
    "static", "inline", "extern", "const", "volatile", "unsigned", "signed",
    "void", "int", "float", "double", "char", "long", "short", "bool", "half",
    "template", "typename", "struct", "auto", NULL};

/* Finds a function definition whose name's '(' is at paren. */
static bool func_at(const char *t, size_t len, size_t lo, size_t paren,
                    func *fn) {
  /* the name, then at least one identifier (the type) before it */
  size_t ne = paren;
  while (ne > lo && sg_is_blank(t[ne - 1]))
    ne--;
  size_t ns = ne;
  while (ns > lo && sg_is_ident(t[ns - 1]))
    ns--;
  if (ns == ne || (t[ns] >= '0' && t[ns] <= '9') ||
      word_in(t + ns, ne - ns, not_names))
    return false;
  /* The return type is any identifier; words before it only qualifiers,
   * built-in types or names with an underscore (__global__, int32_t), so
   * "Then I call void f(...)" starts at "void". */
  size_t s = ns, types = 0;
  for (;;) {
    size_t k = s;
    while (k > lo && (sg_is_blank(t[k - 1]) || t[k - 1] == '*' || t[k - 1] == '&'))
      k--;
    size_t w = k;
    while (w > lo && sg_is_ident(t[w - 1]))
      w--;
    if (w == k || word_in(t + w, k - w, not_names) ||
        (t[w] >= '0' && t[w] <= '9'))
      break;
    if (types > 0 && !word_in(t + w, k - w, qualifiers) &&
        memchr(t + w, '_', k - w) == NULL)
      break;
    types++;
    s = w;
  }
  if (types == 0)
    return false;
  /* the parameter list, balanced, no statement inside */
  size_t i = paren, depth = 0;
  for (; i < len && i - paren < SIG_MAX_BYTES; i++) {
    char c = t[i];
    if (c == '(' && ++depth > PAREN_DEPTH_MAX)
      return false;
    if (c == ')' && --depth == 0)
      break;
    if (c == ';' || c == '{' || c == '}' || c == '"')
      return false;
  }
  if (i >= len || depth != 0)
    return false;
  /* qualifiers (const, noexcept, __attribute__((...))), then the body */
  i++;
  size_t limit = i + SIG_MAX_BYTES;
  while (i < len && i < limit &&
         (sg_is_space(t[i]) || sg_is_ident(t[i]) || t[i] == '(' || t[i] == ')'))
    i++;
  if (i >= len || t[i] != '{')
    return false;
  size_t e = body_end(t, len, i);
  fn->start = s;
  fn->name = ns;
  fn->name_len = ne - ns;
  fn->cut = e == 0;
  fn->end = e ? e : len;
  return true;
}

/* The next function definition in [p, len), searched from p. */
static bool next_func(const char *t, size_t len, size_t p, func *fn) {
  size_t lo = p;
  while (p < len) {
    /* Comments only: between definitions, quotes are more often prose
     * ("here's the kernel") than literals. */
    size_t j = skip_lexeme_if(t, len, p, false);
    if (j != p) {
      p = j;
      continue;
    }
    if (t[p] == '(' && func_at(t, len, lo, p, fn))
      return true;
    p++;
  }
  return false;
}

static bool is_name(const func *fn, const char *t, const char *entry) {
  return entry && strlen(entry) == fn->name_len &&
         memcmp(t + fn->name, entry, fn->name_len) == 0;
}

/* Does [a, b) between two definitions hold only code (directives,
 * declarations, comments, blank lines), so both belong to one source? */
static bool gap_is_code(const char *t, size_t a, size_t b) {
  size_t p = a;
  while (p < b) {
    size_t e = line_end(t, b, p);
    size_t s = p, z = e;
    while (s < z && sg_is_space(t[s]))
      s++;
    while (z > s && sg_is_space(t[z - 1]))
      z--;
    if (z > s) {
      char first = t[s], last = t[z - 1];
      bool code = first == '#' || first == '/' || first == '*' ||
                  last == ';' || last == '}' || last == '{' || last == ')' ||
                  last == '/' || last == '>';
      if (!code)
        return false;
    }
    p = e < b ? e + 1 : b;
  }
  return true;
}

/* Extends a start back over the directive lines (#include, #define,
 * template<...>) just above it, across blank lines, but not over prose. */
static size_t with_directives(const char *t, size_t lo, size_t start) {
  size_t ls = start;
  while (ls > lo && t[ls - 1] != '\n')
    ls--;
  /* only whitespace or qualifiers before the signature on its line */
  for (size_t i = ls; i < start; i++)
    if (!sg_is_blank(t[i]) && !sg_is_ident(t[i]) && t[i] != '"' && t[i] != '<' &&
        t[i] != '>' && t[i] != ',')
      return start;
  size_t best = ls, p = ls;
  while (p > lo) {
    size_t pe = p - 1, ps = pe;   /* the line above: [ps, pe), t[pe] == '\n' */
    while (ps > lo && t[ps - 1] != '\n')
      ps--;
    size_t s = ps;
    while (s < pe && sg_is_space(t[s]))
      s++;
    p = ps;
    if (s == pe)
      continue;                   /* blank: look further, take it only inside */
    if (t[s] == '#' || (pe - s >= 8 && memcmp(t + s, "template", 8) == 0)) {
      best = ps;
      continue;
    }
    break;
  }
  return best;
}

/* The candidate in the open text [lo, hi): the last run of adjacent
 * definitions (the last run holding entry, when one does). */
static bool open_text_candidate(const char *t, size_t hi, size_t lo,
                                const char *entry, size_t *cs, size_t *ce,
                                bool *cut, bool *has_entry) {
  func fn;
  size_t p = lo;
  bool found = false, run_entry = false;
  size_t run_s = 0, run_e = 0, last_e = 0;
  *cut = false;
  *has_entry = false;
  while (next_func(t, hi, p, &fn)) {
    if (fn.cut) {
      *cut = true;
      break;
    }
    bool adjacent = found && gap_is_code(t, last_e, fn.start);
    if (!adjacent) {
      if (found && (run_entry || !*has_entry)) {
        *cs = run_s;
        *ce = run_e;
        *has_entry = run_entry;
      }
      run_s = with_directives(t, lo, fn.start);
      run_entry = false;
    }
    found = true;
    run_e = fn.end;
    last_e = fn.end;
    run_entry = run_entry || is_name(&fn, t, entry);
    p = fn.end;
  }
  if (found && (run_entry || !*has_entry)) {
    *cs = run_s;
    *ce = run_e;
    *has_entry = run_entry;
  }
  return found;
}

/* ---------------------------------------------------------------- blocks */

enum { ENTRY_NONE, ENTRY_PYTHON, ENTRY_C };

/* Where text defines entry: Python's "def entry" / "class entry" (when
 * python), or C's "entry(...) {" with a complete body (fn, its parameter
 * list's '(' at *paren). */
static int find_entry(const char *t, size_t len, const char *entry, bool python,
                      func *fn, size_t *paren) {
  if (entry == NULL || *entry == '\0')
    return ENTRY_NONE;
  size_t n = strlen(entry);
  for (size_t i = 0; i + n <= len; i++) {
    /* to the next occurrence (memmem, not a compare at every byte: every
     * finished generation's answer passes here) */
    const char *hit = memmem(t + i, len - i, entry, n);
    if (hit == NULL)
      break;
    i = (size_t)(hit - t);
    if ((i > 0 && sg_is_ident(t[i - 1])) || (i + n < len && sg_is_ident(t[i + n])))
      continue;
    size_t k = i;
    while (k > 0 && sg_is_blank(t[k - 1]))
      k--;
    if (python && ((k >= 3 && memcmp(t + k - 3, "def", 3) == 0) ||
                   (k >= 5 && memcmp(t + k - 5, "class", 5) == 0)))
      return ENTRY_PYTHON;
    size_t j = i + n;
    while (j < len && sg_is_space(t[j]))
      j++;
    if (j < len && t[j] == '(' && func_at(t, len, 0, j, fn)) {
      if (fn->cut)
        break; /* the rest is inside that body: searching on is quadratic */
      *paren = j;
      return ENTRY_C;
    }
  }
  return ENTRY_NONE;
}

static bool defines_entry(const char *t, size_t len, const char *entry) {
  func fn;
  size_t paren;
  return find_entry(t, len, entry, true, &fn, &paren) != ENTRY_NONE;
}

bool sg_extract_entry_def(const char *t, size_t len, const char *entry,
                          size_t *start, size_t *lparen, size_t *rparen,
                          size_t *end) {
  func fn;
  size_t j;
  if (find_entry(t, len, entry, false, &fn, &j) != ENTRY_C)
    return false;
  size_t k = j, depth = 0; /* func_at saw it balanced */
  for (; k < len; k++) {
    if (t[k] == '(')
      depth++;
    else if (t[k] == ')' && --depth == 0)
      break;
  }
  *start = fn.start;
  *lparen = j;
  *rparen = k;
  *end = fn.end;
  return true;
}

static int block_class(const fence *f, const char *t, int lang) {
  static const char *const not_code[] = {
      "text", "txt", "plaintext", "plain", "output", "console", "log", "bash",
      "sh", "shell", "zsh", "json", "yaml", "yml", "markdown", "md", "diff",
      "csv", "ini", "toml", "none", NULL};
  static const char *const cuda[] = {"cuda", "cu", "cuh", "cpp", "c++",
                                     "cxx", "cc", NULL};
  static const char *const c[] = {"c", "h", "cpp", "c++", "cxx", "cc", NULL};
  static const char *const py[] = {"python", "py", "python3", NULL};
  const char *body = t + f->content;
  size_t blen = f->content_end - f->content;
  if (f->lang_long)
    return BLOCK_OTHER;
  if (f->lang_len == 0) {
    func fn;
    switch (lang) {
    case LANG_CUDA:
      return contains(body, blen, "__global__") ? BLOCK_ACCEPT : BLOCK_NOT_CODE;
    case LANG_C:
      return next_func(body, blen, 0, &fn) && !fn.cut ? BLOCK_ACCEPT
                                                     : BLOCK_NOT_CODE;
    case LANG_PYTHON:
      return contains(body, blen, "def ") || contains(body, blen, "class ") ||
                     contains(body, blen, "import ")
                 ? BLOCK_ACCEPT
                 : BLOCK_NOT_CODE;
    default:
      return BLOCK_ACCEPT;
    }
  }
  if (word_in(f->lang, f->lang_len, not_code))
    return BLOCK_NOT_CODE;
  switch (lang) {
  case LANG_CUDA:
    if (word_in(f->lang, f->lang_len, cuda))
      return BLOCK_ACCEPT;
    if (word_in(f->lang, f->lang_len, c) && contains(body, blen, "__global__"))
      return BLOCK_ACCEPT;
    return BLOCK_OTHER;
  case LANG_C:
    return word_in(f->lang, f->lang_len, c) ? BLOCK_ACCEPT : BLOCK_OTHER;
  case LANG_PYTHON:
    return word_in(f->lang, f->lang_len, py) ? BLOCK_ACCEPT : BLOCK_OTHER;
  default:
    return BLOCK_ACCEPT;
  }
}

/* ---------------------------------------------------------------- entry */

void sg_extract_candidate(const char *text, size_t len, const char *language,
                          const char *entry, sg_extracted *out) {
  int lang = LANG_ANY;
  if (language && strcmp(language, "c") == 0)
    lang = LANG_C;
  else if (language && strcmp(language, "cuda") == 0)
    lang = LANG_CUDA;
  else if (language && strcmp(language, "python") == 0)
    lang = LANG_PYTHON;
  if (text == NULL)
    len = 0;

  bool have = false, have_entry = false, saw_other = false;
  bool unclosed_code = false;
  size_t best_s = 0, best_e = 0;
  fence f;
  size_t pos = 0;
  while (len > 0 && next_fence(text, len, pos, &f)) {
    int k = block_class(&f, text, lang);
    if (k == BLOCK_OTHER)
      saw_other = true;
    if (!f.closed) {
      /* an unlabelled block cut short may not look like code yet */
      unclosed_code = k == BLOCK_ACCEPT ||
                      (f.lang_len == 0 && f.content_end > f.content);
      break;
    }
    if (k == BLOCK_ACCEPT && f.content_end > f.content) {
      bool e = defines_entry(text + f.content, f.content_end - f.content, entry);
      if (e || !have_entry) {
        best_s = f.content;
        best_e = f.content_end;
        have = true;
        have_entry = have_entry || e;
      }
    }
    pos = f.end;
  }
  if (have) {
    out->outcome = SG_EXTRACT_FOUND;
    out->start = best_s;
    out->len = best_e - best_s;
    out->reason = NULL;
    return;
  }

  /* No block: complete definitions in the open text (C and CUDA). */
  bool cut_body = false;
  if (lang != LANG_PYTHON && len > 0) {
    size_t seg = 0;
    bool found = false, found_entry = false;
    size_t cs = 0, ce = 0;
    for (;;) {
      bool more = next_fence(text, len, seg, &f);
      size_t seg_end = more ? f.start : len;
      size_t s1 = 0, e1 = 0;
      bool cut = false, ent = false;
      if (seg_end > seg &&
          open_text_candidate(text, seg_end, seg, entry, &s1, &e1, &cut, &ent) &&
          (ent || !found_entry)) {
        found = true;
        found_entry = found_entry || ent;
        cs = s1;
        ce = e1;
      }
      if (cut && !more)
        cut_body = true;
      if (!more || !f.closed)
        break;
      seg = f.end;
    }
    if (found) {
      out->outcome = SG_EXTRACT_FOUND;
      out->start = cs;
      out->len = ce - cs;
      out->reason = NULL;
      return;
    }
  }
  out->start = 0;
  out->len = 0;
  if (unclosed_code || cut_body) {
    out->outcome = SG_EXTRACT_INCOMPLETE;
    out->reason = unclosed_code ? reason_unclosed : reason_body;
  } else if (saw_other) {
    out->outcome = SG_EXTRACT_WRONG_LANG;
    out->reason = reason_wrong[lang];
  } else {
    out->outcome = SG_EXTRACT_NONE;
    out->reason = reason_none[lang];
  }
}
