/* sg_triggers_code.c: the trigger scanner's C/CUDA and fence machines.
 *
 * The line machine finds fenced code blocks (``` or ~~~ at a line start, an
 * info string, a closing run of at least as many of the same character on a
 * line of its own) and hashes each block's content with whitespace collapsed,
 * so a block quoted again is recognised. The code machine follows
 * identifiers and, after `__global__` or a `void` return type, a function
 * signature: a name, a balanced parameter list, then a body whose braces it
 * counts while ignoring braces inside string and character literals and
 * comments.
 */
#include "core/sg_triggers_priv.h"

#include "core/sg_chars.h"

#include <string.h>

/* ---------------------------------------------------------------- code */


void trig_code_reset(sg_scanner *s) {
  s->code = CODE_IDLE;
  s->lex = LEX_CODE;
  s->in_ident = false;
  s->ident_len = 0;
  s->ident_long = false;
  s->after_device = false;
}

static bool ident_is(const sg_scanner *s, const char *w) {
  size_t n = strlen(w);
  return !s->ident_long && s->ident_len == n && memcmp(s->ident, w, n) == 0;
}

static void sig_begin(sg_scanner *s) {
  s->code = CODE_SIG;
  s->lex = LEX_CODE;
  s->paren = 0;
  s->sig_params = false;
  s->sig_idents = 0;
  s->code_bytes = 0;
  s->last_code = 'a';
  whash_init(&s->kernel_hash);
  textbuf_reset(&s->kernel_text);
  for (unsigned i = 0; i < s->ident_len; i++) {
    whash_byte(&s->kernel_hash, (unsigned char)s->ident[i]);
    textbuf_byte(&s->kernel_text, (unsigned char)s->ident[i]);
  }
}

/* Identifier ends: in the open, __global__ or a void return type may start a
 * kernel's signature (but not a __device__ helper's). */
static void ident_end(sg_scanner *s) {
  if (s->code == CODE_SIG) {
    s->sig_idents++;
    return;
  }
  if (s->code != CODE_IDLE)
    return;
  if (ident_is(s, "__device__") || ident_is(s, "__host__")) {
    s->after_device = true;
  } else if (ident_is(s, "__global__")) {
    sig_begin(s);
  } else if (ident_is(s, "void") && !s->after_device) {
    sig_begin(s);
  }
}

/* Literals and comments, shared by the signature and the body. Returns true
 * when c is plain code (outside any literal or comment). */
static bool lex_step(sg_scanner *s, unsigned char c) {
  switch (s->lex) {
  case LEX_SLASH:
    if (c == '/') {
      s->lex = LEX_LINE_COMMENT;
      return false;
    }
    if (c == '*') {
      s->lex = LEX_BLOCK_COMMENT;
      return false;
    }
    s->lex = LEX_CODE;
    break;
  case LEX_LINE_COMMENT:
    if (c == '\n')
      s->lex = LEX_CODE;
    return false;
  case LEX_BLOCK_COMMENT:
    if (c == '*')
      s->lex = LEX_BLOCK_STAR;
    return false;
  case LEX_BLOCK_STAR:
    s->lex = c == '/' ? LEX_CODE : c == '*' ? LEX_BLOCK_STAR : LEX_BLOCK_COMMENT;
    return false;
  case LEX_STR:
  case LEX_CHR:
    /* Literals never span lines in C: an unterminated one ends at the line's
     * end, which bounds the harm a stray quote in prose can do. */
    if (c == '\\')
      s->lex = s->lex == LEX_STR ? LEX_STR_ESC : LEX_CHR_ESC;
    else if (c == '\n' || c == (s->lex == LEX_STR ? '"' : '\''))
      s->lex = LEX_CODE;
    return false;
  case LEX_STR_ESC:
    s->lex = LEX_STR;
    return false;
  case LEX_CHR_ESC:
    s->lex = LEX_CHR;
    return false;
  default:
    break;
  }
  if (c == '/') {
    s->lex = LEX_SLASH;
    return false;
  }
  if (c == '"') {
    s->lex = LEX_STR;
    return false;
  }
  if (c == '\'') {
    s->lex = LEX_CHR;
    return false;
  }
  return true;
}

static void sig_step(sg_scanner *s, unsigned char c) {
  if (++s->code_bytes > SIG_MAX_BYTES) {
    trig_code_reset(s);
    return;
  }
  if (s->lex == LEX_CODE && (c == '"' || c == '\'')) {
    trig_code_reset(s);  /* no literal belongs in a signature: this is prose */
    return;
  }
  bool plain = lex_step(s, c);
  if (!plain)
    return;
  if (s->paren > 0) {
    if (c == '(') {
      if (++s->paren > PAREN_DEPTH_MAX)
        trig_code_reset(s);
    } else if (c == ')') {
      if (--s->paren == 0)
        s->sig_params = true;
    } else if (c == ';' || c == '{' || c == '}') {
      trig_code_reset(s);
    }
    s->last_code = c;
    return;
  }
  if (sg_is_ident(c) || is_ws(c) || c == '*' || c == '&' || c == '<' ||
      c == '>' || c == ',' || c == ':') {
    if (!is_ws(c))
      s->last_code = c;
    return;
  }
  if (c == '(' && sg_is_ident(s->last_code) && s->sig_idents > 0) {
    s->paren = 1;
    s->last_code = c;
    return;
  }
  if (c == '{' && s->sig_params) {
    s->code = CODE_BODY;
    s->depth = 1;
    s->code_bytes = 0;
    return;
  }
  trig_code_reset(s);
}

static void body_step(sg_scanner *s, unsigned char c) {
  whash_byte(&s->kernel_hash, c);
  if (++s->code_bytes > BODY_MAX_BYTES) {
    trig_code_reset(s);
    return;
  }
  if (!lex_step(s, c))
    return;
  if (c == '{') {
    if (++s->depth > BODY_DEPTH_MAX)
      trig_code_reset(s);
  } else if (c == '}') {
    if (--s->depth == 0) {
      uint64_t h = s->kernel_hash.h ^ (uint64_t)SG_TRIGGER_KERNEL;
      bool dup = hash_ring_seen_add(&s->block_seen, h);
      if (!dup) {
        trig_emit_at(s, SG_TRIGGER_KERNEL, s->off + 1, s->kernel_text.s,
                     s->kernel_text.len);
        s->fence_kernel = s->in_fence;
      }
      trig_code_reset(s);
      /* words matched in the signature were code, not a decision */
      s->sent_match[0] = s->sent_match[1] = false;
    }
  }
}

void trig_code_byte(sg_scanner *s, unsigned char c) {
  if (s->code == CODE_BODY) {
    body_step(s, c);
    return;
  }
  /* Identifiers are tracked in the open and in signatures. */
  if (sg_is_ident(c)) {
    trig_ident_byte(s, c);
  } else if (s->in_ident) {
    s->in_ident = false;
    ident_end(s);
  }
  if (s->code == CODE_SIG) {
    whash_byte(&s->kernel_hash, c);
    textbuf_byte(&s->kernel_text, c);
    sig_step(s, c);
  } else if (c == ';' || c == '{' || c == '}' || c == '.') {
    s->after_device = false;
  }
}

/* ---------------------------------------------------------------- fences */

static void fence_open(sg_scanner *s) {
  s->in_fence = true;
  s->fence_char = s->tick_char;
  s->fence_n = s->tick_n;
  s->fence_kernel = false;
  whash_init(&s->fence_hash);
  textbuf_reset(&s->fence_head);
  trig_code_reset(s);
  trig_py_reset(s);
  trig_sentence_reset(s);
}

/* Every closed block with content fires, whatever its language: real traces
 * label Triton code python, triton or nothing, and a block the model closes
 * is a point where it has finished writing something. Only an exact repeat
 * (whitespace runs collapsed) of one of the last BLOCK_SEEN blocks is
 * silent. The trigger's offset is just past the closing run of ticks: the
 * prefix to fork with ends with the block, while the newline that confirms
 * the close (a run followed by other text is content) comes later. */
static void fence_close(sg_scanner *s) {
  s->in_fence = false;
  trig_code_reset(s);
  trig_py_reset(s);
  trig_sentence_reset(s);
  if (s->fence_hash.n == 0)
    return;
  uint64_t h = s->fence_hash.h ^ (uint64_t)SG_TRIGGER_FENCE;
  if (hash_ring_seen_add(&s->block_seen, h))
    return;
  textbuf t;
  textbuf_reset(&t);
  char tick[4] = {(char)s->fence_char, (char)s->fence_char, (char)s->fence_char, 0};
  textbuf_puts(&t, tick);
  for (unsigned i = 0; i < s->lang_len; i++)
    textbuf_byte(&t, (unsigned char)s->lang[i]);
  textbuf_byte(&t, ' ');
  for (size_t i = 0; i < s->fence_head.len; i++)
    textbuf_byte(&t, (unsigned char)s->fence_head.s[i]);
  trig_emit_at(s, SG_TRIGGER_FENCE, s->tick_end, t.s, t.len);
}

static inline void content_byte(sg_scanner *s, unsigned char c) {
  whash_byte(&s->fence_hash, c);
  textbuf_byte(&s->fence_head, c);
}

/* A line inside a fence looked like a closing fence but was not: its held
 * bytes are content after all. */
static void unhold(sg_scanner *s, bool trailing_ws) {
  if (s->indent)
    content_byte(s, ' ');
  for (uint64_t i = 0; i < s->tick_n; i++)
    content_byte(s, s->tick_char);
  if (trailing_ws)
    content_byte(s, ' ');
}

void trig_line_byte(sg_scanner *s, unsigned char c) {
  bool blank = c == ' ' || c == '\t';
  switch (s->line) {
  case LINE_START:
    if (c == '\n') {
      s->indent = 0;
      if (s->in_fence)
        content_byte(s, c);
      return;
    }
    if (blank && s->indent < FENCE_INDENT_MAX) {
      s->indent++;
      return;
    }
    if ((c == '`' || c == '~') && (!s->in_fence || c == s->fence_char)) {
      s->line = LINE_TICKS;
      s->tick_char = c;
      s->tick_n = 1;
      s->tick_end = s->off + 1;
      return;
    }
    if (s->in_fence) {
      s->tick_n = 0;
      unhold(s, false);
      content_byte(s, c);
    }
    s->line = LINE_REST;
    return;
  case LINE_TICKS:
    if (c == s->tick_char) {
      s->tick_n++;
      s->tick_end = s->off + 1;
      return;
    }
    if (s->in_fence) {
      bool closes = s->tick_n >= s->fence_n;
      if (closes && c == '\n') {
        fence_close(s);
        s->line = LINE_START;
        s->indent = 0;
        return;
      }
      if (closes && (blank || c == '\r')) {  /* CRLF */
        s->line = LINE_CLOSE_WS;
        return;
      }
      unhold(s, false);
      content_byte(s, c);
      s->line = c == '\n' ? LINE_START : LINE_REST;
      s->indent = 0;
      return;
    }
    if (s->tick_n < 3) {
      s->line = c == '\n' ? LINE_START : LINE_REST;
      s->indent = 0;
      return;
    }
    s->line = LINE_INFO;
    s->lang_len = 0;
    s->lang_started = s->lang_done = s->lang_long = false;
    /* c is the info string's first byte */
    __attribute__((fallthrough));
  case LINE_INFO:
    if (c == '\n') {
      fence_open(s);
      s->line = LINE_START;
      s->indent = 0;
      return;
    }
    if (c == '`' && s->tick_char == '`') {
      s->line = LINE_REST;  /* ```x``` on one line is inline code */
      return;
    }
    if (s->lang_done)
      return;
    if (blank || c == '\r' || c == '{') {
      if (s->lang_started)
        s->lang_done = true;
      return;
    }
    s->lang_started = true;
    if (s->lang_len + 1 < LANG_MAX)
      s->lang[s->lang_len++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
    else
      s->lang_long = true;
    return;
  case LINE_CLOSE_WS:
    if (c == '\n') {
      fence_close(s);
      s->line = LINE_START;
      s->indent = 0;
      return;
    }
    if (blank || c == '\r')
      return;
    unhold(s, true);
    content_byte(s, c);
    s->line = LINE_REST;
    return;
  default:
    if (s->in_fence)
      content_byte(s, c);
    if (c == '\n') {
      s->line = LINE_START;
      s->indent = 0;
    }
    return;
  }
}

/* The end of the text closes a block whose closing run is on the last line. */
void trig_fence_finish(sg_scanner *s) {
  if (s->in_fence && ((s->line == LINE_TICKS && s->tick_n >= s->fence_n) ||
                      s->line == LINE_CLOSE_WS))
    fence_close(s);
}
