/* sg_triggers_py.c: the trigger scanner's Triton kernel machine.
 *
 * A Triton kernel is Python: a `def` under an `@triton.jit` decorator (maybe
 * with `@triton.autotune(...)` or `@triton.heuristics(...)` around it). It is
 * complete when its indented body ends: the next logical line at the def's
 * indentation or less, a closing fence, or the end of the text. The kernel
 * trigger's offset is just past the body's last statement byte, so the
 * prefix to fork with holds the whole kernel and nothing after it.
 *
 * The machine reads physical lines and joins them into logical lines the way
 * Python does: brackets, strings (single, triple-quoted, with escapes),
 * comments and backslash continuations. Only then is indentation meaningful;
 * a docstring or a call whose arguments wrap to column 0 does not end a
 * body. In prose it stays idle and cheap: it lexes only from a line that
 * starts with '@' until that line proves not to be a Triton decorator.
 *
 * A line that starts with a backtick (never Python) or, inside a ~~~ block,
 * a tilde ends a body whatever its indentation: it is the block's close.
 */
#include "core/sg_triggers_priv.h"

#include <string.h>

#define PY_TAB 8                /* Python's tab stops */

void trig_py_reset(sg_scanner *s) {
  py_machine *p = &s->py;
  memset(p, 0, sizeof *p);
  p->state = PY_IDLE;
  p->lex = PYL_CODE;
  p->bol = true;
  whash_init(&p->hash);
  textbuf_reset(&p->text);
}

bool trig_py_active(const sg_scanner *s) {
  return s->py.state != PY_IDLE || s->py.in_logical;
}

static bool head_is(const py_machine *p, const char *w) {
  size_t n = strlen(w);
  return p->head_len >= n && memcmp(p->head, w, n) == 0;
}

/* "@triton.jit" as a whole decorator name ("@triton.jit(...)" too, not
 * "@triton.jitter"). */
static bool head_is_jit(const py_machine *p) {
  static const char w[] = "@triton.jit";
  size_t n = sizeof w - 1;
  if (!head_is(p, w))
    return false;
  if (p->head_len == n)
    return true;
  unsigned char c = (unsigned char)p->head[n];
  return !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_');
}

static void idle(sg_scanner *s) {
  py_machine *p = &s->py;
  p->state = PY_IDLE;
  p->in_logical = p->line_kernel = p->line_body = false;
  p->saw_jit = false;
  p->body_lines = 0;
  p->bytes = 0;
  p->lex = PYL_CODE;
  p->depth = 0;
  p->qn = 0;
  p->esc = false;
}

/* The body is over: report it unless it is a copy of a recent block. */
static void end_body(sg_scanner *s) {
  py_machine *p = &s->py;
  if (p->state == PY_BODY && p->body_lines > 0) {
    uint64_t h = p->hash.h ^ (uint64_t)SG_TRIGGER_KERNEL;
    if (!hash_ring_seen_add(&s->block_seen, h)) {
      /* The dedent that shows the body is over comes after its end, and
       * another class may have been reported in between: positions stay in
       * order, so the kernel is then placed at that report. */
      uint64_t at = p->body_end;
      if (s->emitted_any && at < s->last_emit)
        at = s->last_emit;
      trig_emit_at(s, SG_TRIGGER_KERNEL, at, p->text.s, p->text.len);
      s->fence_kernel = s->in_fence;
    }
  }
  idle(s);
}

/* The first byte of a logical line, at indentation p->indent. */
static void line_start(sg_scanner *s, unsigned char c) {
  py_machine *p = &s->py;
  p->line_indent = p->indent;
  p->head_len = 0;
  p->line_kernel = p->line_body = false;
  bool closes = c == '`' || (c == '~' && s->in_fence && s->fence_char == '~');
  if (p->state == PY_BODY) {
    if (c == '#' && !closes) {
      p->in_logical = true;  /* a comment line: part of the body if deeper */
      p->line_kernel = p->indent > p->def_indent;
      return;
    }
    if (p->indent > p->def_indent && !closes) {
      p->in_logical = p->line_kernel = p->line_body = true;
      p->body_lines++;
      return;
    }
    end_body(s);  /* a dedent: the body ended on an earlier line */
  }
  if (p->state == PY_IDLE) {
    if (c != '@') {
      p->in_logical = false;
      return;
    }
    whash_init(&p->hash);
    p->saw_jit = false;
    p->bytes = 0;
  }
  /* PY_IDLE at a '@', or PY_DECOR: a decorator or the def, classified at
   * the line's end */
  p->in_logical = p->line_kernel = true;
  textbuf_reset(&p->text);
}

static void line_end(sg_scanner *s) {
  py_machine *p = &s->py;
  if (!p->in_logical)
    return;
  p->in_logical = false;
  if (p->state == PY_BODY)
    return;
  if (p->head_len > 0 && p->head[0] == '@') {
    if (p->state == PY_IDLE && !head_is(p, "@triton.")) {
      idle(s);
      return;
    }
    p->state = PY_DECOR;
    if (head_is_jit(p))
      p->saw_jit = true;
    return;
  }
  if ((head_is(p, "def ") || head_is(p, "async def ")) && p->saw_jit &&
      p->last_sig == ':') {
    p->state = PY_BODY;
    p->def_indent = p->line_indent;
    p->body_lines = 0;
    return;
  }
  idle(s);
}

/* One byte in code (outside strings and comments). */
static void code_byte(sg_scanner *s, unsigned char c) {
  py_machine *p = &s->py;
  switch (c) {
  case '#':
    p->lex = PYL_COMMENT;
    return;
  case '\'':
  case '"':
    p->lex = PYL_QOPEN;
    p->quote = c;
    p->qn = 1;
    break;
  case '(': case '[': case '{':
    if (++p->depth > PY_DEPTH_MAX)
      idle(s);  /* not Python worth following */
    break;
  case ')': case ']': case '}':
    if (p->depth > 0)
      p->depth--;
    break;
  default:
    break;
  }
  if (!is_ws(c) && c != '\\')
    p->last_sig = c;
}

/* One byte inside a string. */
static void string_byte(py_machine *p, unsigned char c) {
  if (p->esc) {
    p->esc = false;
    return;
  }
  if (c == '\\') {
    p->esc = true;
    return;
  }
  if (p->lex == PYL_STR1) {
    if (c == p->quote || c == '\n')
      p->lex = PYL_CODE;  /* a newline ends an unterminated one: bounded harm */
    return;
  }
  if (c == p->quote) {
    if (++p->qn == 3)
      p->lex = PYL_CODE;
  } else {
    p->qn = 0;
  }
}

/* The lexer step; returns true when c is a newline that ends a physical
 * line outside any string. */
static bool lex_byte(sg_scanner *s, unsigned char c) {
  py_machine *p = &s->py;
  if (p->lex == PYL_QOPEN) {
    if (c == p->quote) {
      if (++p->qn == 3) {
        p->lex = PYL_STR3;
        p->qn = 0;
      }
      return false;
    }
    if (p->qn == 2) {
      p->lex = PYL_CODE;  /* "" or '': an empty string */
    } else {
      p->lex = PYL_STR1;
      p->qn = 0;
      string_byte(p, c);
      return c == '\n';
    }
  }
  switch (p->lex) {
  case PYL_COMMENT:
    if (c != '\n')
      return false;
    p->lex = PYL_CODE;
    return true;
  case PYL_STR1:
  case PYL_STR3:
    string_byte(p, c);
    return false;
  default:
    break;
  }
  if (c == '\n')
    return true;
  code_byte(s, c);
  return false;
}

void trig_py_byte(sg_scanner *s, unsigned char c) {
  py_machine *p = &s->py;
  bool lexing = p->state != PY_IDLE || p->in_logical;
  if (p->bol) {
    if (c == ' ') {
      p->indent++;
      return;
    }
    if (c == '\t') {
      p->indent = (p->indent / PY_TAB + 1) * PY_TAB;
      return;
    }
    if (c == '\r' || c == '\f' || c == '\v')
      return;
    if (c == '\n') {
      p->indent = 0;  /* a blank line ends nothing */
      return;
    }
    p->bol = false;
    bool logical = !lexing || (p->lex == PYL_CODE && p->depth == 0 && !p->cont);
    p->cont = false;
    if (logical)
      line_start(s, c);
    lexing = p->state != PY_IDLE || p->in_logical;
  }
  if (!lexing) {
    if (c == '\n') {
      p->bol = true;
      p->indent = 0;
    }
    return;
  }
  if (p->line_kernel) {
    whash_byte(&p->hash, c);
    if (++p->bytes > BODY_MAX_BYTES) {
      idle(s);  /* a runaway: abandoned like an over-long C body */
      return;
    }
  }
  if (p->in_logical && p->head_len < PY_HEAD_MAX)
    p->head[p->head_len++] = (char)c;
  if (p->state == PY_DECOR && p->in_logical)
    textbuf_byte(&p->text, c);
  bool was_comment = p->lex == PYL_COMMENT;
  bool nl = lex_byte(s, c);
  if (p->state == PY_BODY && p->line_body && !is_ws(c) && !was_comment &&
      p->lex != PYL_COMMENT)
    p->body_end = s->off + 1;
  if (p->lex == PYL_STR3 && c == '\n')
    return;  /* inside a docstring, lines have no indentation */
  if (c == '\\' && p->lex == PYL_CODE) {
    p->cont = true;  /* provisional: only a backslash right before \n joins */
    return;
  }
  if (!nl) {
    if (!is_ws(c))
      p->cont = false;
    return;
  }
  bool joined = p->cont;
  if (p->depth == 0 && !joined)
    line_end(s);
  p->bol = true;
  p->indent = 0;
}

void trig_py_finish(sg_scanner *s) {
  py_machine *p = &s->py;
  bool open = p->depth > 0 || p->lex == PYL_STR1 || p->lex == PYL_STR3 ||
              p->lex == PYL_QOPEN;
  /* In a block that never closed the text was cut, maybe mid-body: only a
   * body in the open text is taken as complete at the end. */
  if (p->state == PY_BODY && !open && !s->in_fence)
    end_body(s);
  idle(s);
}
