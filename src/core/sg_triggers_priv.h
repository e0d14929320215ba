/* sg_triggers_priv.h: the trigger scanner's state, shared by its files.
 *
 * The scanner is one state struct and several byte machines, one file each:
 *   sg_triggers.c        lifecycle, emitting, sentences, the feeding loop
 *   sg_triggers_match.c  the keyword automaton and the symbol normaliser
 *   sg_triggers_patterns.c  the keyword table the automaton is built from
 *   sg_triggers_code.c   C/CUDA kernels and fenced blocks
 *   sg_triggers_py.c     Triton kernels (an @triton.jit-decorated def)
 * Nothing here is part of the public API (sg_triggers.h).
 */
#ifndef SG_TRIGGERS_PRIV_H
#define SG_TRIGGERS_PRIV_H

#include "core/sg_triggers.h"

#include "common/sg_hash.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { KIND_DESIGN, KIND_PHRASE, KIND_SELFTALK };

#define PAT_MAX 64          /* longest pattern after expansion, in symbols */
#define PAT_FLAG_LB 1u      /* must start a word */
#define PAT_FLAG_RB 2u      /* must end a word */
#define PAT_FLAG_START 4u   /* must be the sentence's first word */

typedef struct pattern {
  unsigned char kind, flags, len;
} pattern;

/* A pattern as written (sg_triggers_patterns.c): a KIND_* and its text. */
typedef struct trig_pattern_src {
  unsigned char kind;
  const char *text;
} trig_pattern_src;

extern const trig_pattern_src trig_patterns[];
extern const size_t trig_npatterns;


enum { LINE_START, LINE_TICKS, LINE_INFO, LINE_CLOSE_WS, LINE_REST };
enum { CODE_IDLE, CODE_SIG, CODE_BODY };
enum {
  LEX_CODE, LEX_SLASH, LEX_LINE_COMMENT, LEX_BLOCK_COMMENT, LEX_BLOCK_STAR,
  LEX_STR, LEX_STR_ESC, LEX_CHR, LEX_CHR_ESC
};

#define FENCE_INDENT_MAX 16     /* LLMs indent fences inside lists */
#define LANG_MAX 16
#define IDENT_MAX 32
#define SIG_MAX_BYTES 512       /* a signature longer than this is not one */
#define BODY_MAX_BYTES 65536    /* a body longer than this is abandoned */
#define BODY_DEPTH_MAX 256
#define PAREN_DEPTH_MAX 16
#define SYM_RING 64             /* >= PAT_MAX: lookback for word boundaries */
#define SENT_RING 256           /* tail of the sentence, for long sentences */
#define SENT_SEEN 64            /* sentences remembered for repetition */
#define BLOCK_SEEN 128          /* fences and kernels remembered */
#define SYM_OTHER 1             /* a byte no pattern uses */
#define SYM_DIGIT '0'
#define SYM_DIGIT2 '1'         /* a run's second digit */

/* FNV-1a (common/sg_hash.h) over "words": runs of non-whitespace joined by
 * one separator, leading and trailing whitespace ignored, so re-indented or
 * re-wrapped copies of a block (or sentence) hash alike. */
typedef struct whash {
  uint64_t h;
  uint64_t n;        /* bytes hashed */
  bool sep_pending;
} whash;

static inline void whash_init(whash *w) {
  w->h = SG_FNV1A64_INIT;
  w->n = 0;
  w->sep_pending = false;
}

static inline bool is_ws(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f';
}

static inline void whash_byte(whash *w, unsigned char c) {
  if (is_ws(c)) {
    if (w->n > 0)
      w->sep_pending = true;
    return;
  }
  if (w->sep_pending) {
    w->h = sg_fnv1a64_byte(w->h, ' ');
    w->sep_pending = false;
  }
  w->h = sg_fnv1a64_byte(w->h, c);
  w->n++;
}

/* A bounded copy of text with whitespace runs collapsed to one space. */
typedef struct textbuf {
  size_t len;                /* before the text: a short one shares its line */
  bool space_pending;
  char s[SG_TRIGGER_TEXT_MAX];
} textbuf;

static inline void textbuf_reset(textbuf *t) {
  t->len = 0;
  t->space_pending = false;
}

static inline void textbuf_byte(textbuf *t, unsigned char c) {
  if (is_ws(c)) {
    if (t->len > 0)
      t->space_pending = true;
    return;
  }
  if (t->space_pending && t->len + 1 < SG_TRIGGER_TEXT_MAX) {
    t->s[t->len++] = ' ';
  }
  t->space_pending = false;
  if (t->len + 1 < SG_TRIGGER_TEXT_MAX)
    t->s[t->len++] = (char)c;
}

static inline void textbuf_puts(textbuf *t, const char *s) {
  for (; *s; s++)
    textbuf_byte(t, (unsigned char)*s);
}

typedef struct hash_ring {
  uint64_t *h;
  unsigned cap, n, next;
} hash_ring;

static inline bool hash_ring_seen_add(hash_ring *r, uint64_t h) {
  for (unsigned i = 0; i < r->n; i++)
    if (r->h[i] == h)
      return true;
  r->h[r->next] = h;
  r->next = (r->next + 1) % r->cap;
  if (r->n < r->cap)
    r->n++;
  return false;
}

/* The keyword automaton. Built once per process (pthread_once) and never
 * written again, so every scanner shares it: building it costs about a
 * millisecond, scanning a sentence microseconds. */
/* A transition (next[]) holds its target node in the low NODE_BITS and the
 * target's omask above them. */
#define NODE_BITS 14
#define NODE_MASK ((1u << NODE_BITS) - 1)

typedef struct automaton {
  unsigned char cls_of[256]; /* symbol -> alphabet class; 0: none */
  unsigned nclass;
  unsigned nnodes;
  uint16_t *next;            /* nnodes * nclass; NODE_BITS above */
  uint16_t *out;             /* pattern ending at the node, or UINT16_MAX */
  uint16_t *dict;            /* nearest proper suffix node with an output */
  uint8_t *omask;            /* 1: a plain output on the chain, 2: an RB one */
  pattern *pats;
  unsigned npats;
} automaton;


/* Python (Triton) kernel machine, sg_triggers_py.c. */
enum { PY_IDLE, PY_DECOR, PY_SIG, PY_BODY };
enum { PYL_CODE, PYL_COMMENT, PYL_QOPEN, PYL_STR1, PYL_STR3 };
#define PY_HEAD_MAX 24       /* bytes of a logical line kept to classify it */
#define PY_DEPTH_MAX 64

typedef struct py_machine {
  int state;                 /* PY_* */
  int lex;                   /* PYL_* */
  unsigned char quote;       /* the open string's quote character */
  unsigned qn;               /* quotes seen opening, or closing a triple */
  bool esc;                  /* a backslash in a string */
  bool cont;                 /* the physical line ended in a backslash */
  bool bol;                  /* before the first non-blank of a line */
  bool in_logical;           /* inside a logical line that was classified */
  bool line_kernel;          /* the current logical line is part of the kernel */
  bool line_body;            /* ... and is a body statement */
  unsigned depth;            /* open brackets */
  unsigned indent;           /* columns before the current line's first byte */
  unsigned line_indent;      /* indentation of the current logical line */
  unsigned def_indent;
  bool saw_jit;              /* @triton.jit among the decorators */
  unsigned char last_sig;    /* last byte outside comments, strings, blanks */
  char head[PY_HEAD_MAX];
  unsigned head_len;
  uint64_t body_lines;
  uint64_t body_end;         /* offset just past the body's last statement byte */
  uint64_t bytes;            /* kernel bytes so far (bounded like C bodies) */
  whash hash;
  textbuf text;              /* the def line, for the trigger's text */
} py_machine;

/* Layout: the machines' scalar state, which every byte reads, first and
 * together (with the identifier, which every letter writes, and the
 * Python machine's scalars, which the prose fast path reads); the bounded
 * buffers, of which a byte touches one position, after. A scanner is fed
 * a few bytes at a time, a thousand workflows' scanners do not fit the
 * caches, and each line a feed touches is a miss; the struct starts a
 * cache line (sg_scanner_new). */
struct sg_scanner {
  sg_scanner_opts opts;
  uint64_t off;              /* bytes fed so far */
  bool emitted_any;
  bool reference;            /* tests: every byte through scan_byte */
  uint64_t last_emit;        /* offset of the last trigger reported */
  sg_trigger_cb cb;          /* valid during one feed or finish call */
  void *user;

  const automaton *ac;       /* shared, read-only */

  /* normaliser and automaton position */
  unsigned char u8_pend;     /* 0, 0xC3, 0xE2 or 0x80 (after E2 80) */
  unsigned char last_sym;
  uint16_t node;             /* a transition's value (NODE_MASK: the node) */
  uint64_t nsym;

  /* line machine and fences */
  int line;
  unsigned indent;
  unsigned char tick_char;
  uint64_t tick_n;
  uint64_t tick_end;         /* offset just past the line's last tick */
  bool in_fence;
  unsigned char fence_char;
  uint64_t fence_n;
  unsigned lang_len;
  bool lang_started, lang_done, lang_long;
  bool fence_kernel;         /* a kernel was reported inside this block */
  whash fence_hash;

  /* C/CUDA code machine */
  int code;
  int lex;
  unsigned ident_len;
  bool ident_long;
  bool in_ident;
  bool after_device;         /* __device__/__host__ seen since the last ; { } */
  unsigned char last_code;   /* last non-whitespace byte in the signature */
  unsigned sig_idents;
  unsigned paren;
  bool sig_params;
  unsigned depth;
  uint64_t code_bytes;
  char ident[IDENT_MAX];     /* with its length: every letter writes it */
  whash kernel_hash;

  /* sentence machine */
  bool term_pending;         /* last byte was . ! ? : ; */
  unsigned char term_char;   /* which one */
  bool question;
  bool sent_selftalk;
  bool sent_code;            /* code machines were active during the sentence */
  bool sent_match[2];        /* design, phrase */
  bool sent_use_head[2];
  uint64_t sent_first_word;  /* symbol index of the first letter, or ~0 */
  uint64_t sent_clen;        /* collapsed bytes in the sentence */
  bool sent_space_pending;
  whash sent_hash;

  py_machine py;             /* its scalars first, its text last */

  hash_ring sent_seen;
  hash_ring block_seen;

  /* bounded buffers */
  _Alignas(64) unsigned char sym_ring[SYM_RING]; /* one line */
  char sent_tail[SENT_RING];
  textbuf sent_head;
  char lang[LANG_MAX];
  textbuf sent_snap[2];
  textbuf fence_head;
  textbuf kernel_text;
};

/* The code machine's identifier tracking (in the open and in signatures). */
static inline void trig_ident_byte(sg_scanner *s, unsigned char c) {
  if (!s->in_ident) {
    s->in_ident = true;
    s->ident_len = 0;
    s->ident_long = false;
  }
  if (s->ident_len < IDENT_MAX)
    s->ident[s->ident_len++] = (char)c;
  else
    s->ident_long = true;
}

/* Collapsed sentence text: a head (first bytes) and a ring (last bytes). */
static inline void trig_sentence_byte(sg_scanner *s, unsigned char c) {
  /* a loop that varies only case or spacing is still a loop */
  whash_byte(&s->sent_hash, c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c);
  textbuf_byte(&s->sent_head, c);
  if (is_ws(c)) {
    if (s->sent_clen > 0)
      s->sent_space_pending = true;
    return;
  }
  if (s->sent_space_pending) {
    s->sent_tail[s->sent_clen++ % SENT_RING] = ' ';
    s->sent_space_pending = false;
  }
  s->sent_tail[s->sent_clen++ % SENT_RING] = (char)c;
}

static inline bool trig_is_letter(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* sg_triggers.c */
void trig_emit_at(sg_scanner *s, sg_trigger_class cls, uint64_t at,
                  const char *text, size_t len);
void trig_sentence_reset(sg_scanner *s);
void trig_sentence_match(sg_scanner *s, int k);

/* sg_triggers_match.c */
const automaton *trig_automaton(void);
/* The prose fast path, in plain prose (sg_triggers.c, prose_idle): takes
 * the run of letters and spaces at p (at most n bytes; it stops before a
 * space that may end a sentence and after one that starts a signature)
 * exactly as scan_byte would, and returns its length (0: none). */
size_t trig_prose_run(sg_scanner *s, const unsigned char *p, size_t n);
/* Tests: on, every byte goes through the byte machines one by one (the
 * reference the fast path must equal). */
void trig_scanner_set_reference(sg_scanner *s, bool on);
void trig_normalise(sg_scanner *s, unsigned char c);
void trig_normalise_finish(sg_scanner *s);

/* sg_triggers_code.c */
void trig_code_reset(sg_scanner *s);
void trig_code_byte(sg_scanner *s, unsigned char c);
void trig_line_byte(sg_scanner *s, unsigned char c);
void trig_fence_finish(sg_scanner *s);

/* sg_triggers_py.c */
void trig_py_reset(sg_scanner *s);
void trig_py_byte(sg_scanner *s, unsigned char c);
void trig_py_finish(sg_scanner *s);
/* true while a Python kernel is being read (its text is code, not prose) */
bool trig_py_active(const sg_scanner *s);

#endif
