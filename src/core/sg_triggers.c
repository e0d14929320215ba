/* sg_triggers.c: the trigger scanner (pure: no I/O, no clock).
 *
 * How it works. Every byte goes, once, through four small machines whose
 * state lives in struct sg_scanner (allocated by sg_scanner_new; the per-byte
 * path never allocates):
 *
 *   1. the line machine finds fenced code blocks (``` or ~~~ at a line start,
 *      an info string, a closing run of at least as many of the same
 *      character on a line of its own). It hashes the block's content with
 *      whitespace collapsed, so a block quoted again is recognised;
 *   2. the code machine follows identifiers and, after `__global__` or a
 *      `void` return type, a function signature: a name, a balanced
 *      parameter list, then a body whose braces it counts while ignoring
 *      braces inside string and character literals and comments;
 *   3. the keyword matcher: an Aho-Corasick automaton, built once per
 *      process from the pattern table below, run over a normalised symbol
 *      stream (lower case, a whitespace run as one space, a digit run as one
 *      or two symbols, a few typographic UTF-8 characters mapped to ASCII),
 *      with word boundaries checked on a small ring of past symbols. It finds
 *      design decisions, implementation phrases, self-talk and, inside
 *      fences, code markers;
 *   4. the sentence machine: design and phrase matches are held until their
 *      sentence ends (". ", "? ", "! ", ": ", "; " or a newline) and fire then,
 *      unless the sentence is a question, holds self-talk, repeats one of
 *      the last SENT_SEEN sentences that matched, or is code.
 *
 * Why by hand and not with a regex engine: the text arrives in pieces split
 * anywhere, mid-word and mid-UTF-8-sequence. A regex engine needs the whole
 * text (or cannot resume a match across a split), so it would have to re-scan
 * a growing window on every chunk. Byte-at-a-time machines whose whole state
 * is in a struct make split-invariance hold by construction: feeding "ab" or
 * "a" then "b" runs exactly the same transitions.
 *
 * Never: read beyond the bytes given, allocate after sg_scanner_new, or call
 * the callback out of offset order. The one piece of process-wide state is
 * the keyword automaton, built once and read-only afterwards.
 */
#include "core/sg_triggers.h"

#include "common/sg_alloc.h"

#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const char *const class_names[SG_TRIGGER__COUNT] = {
    "design", "fence", "kernel", "phrase"};

const char *sg_trigger_class_name(sg_trigger_class c) {
  if ((unsigned)c >= SG_TRIGGER__COUNT)
    return "unknown";
  return class_names[c];
}

int sg_trigger_class_parse(const char *name) {
  if (name == NULL)
    return -1;
  for (int i = 0; i < SG_TRIGGER__COUNT; i++)
    if (strcmp(name, class_names[i]) == 0)
      return i;
  return -1;
}

/* A trigger forks K speculative generations; two forks whose prefixes differ
 * by less than a couple of sentences give near-identical candidates, so by
 * default triggers closer than this are dropped. */
#define DEFAULT_MIN_GAP_BYTES 256

void sg_scanner_opts_default(sg_scanner_opts *opts) {
  opts->classes = 0;
  opts->min_gap_bytes = DEFAULT_MIN_GAP_BYTES;
}

/* ---------------------------------------------------------------- patterns
 *
 * Pattern syntax: lower case; 'N' stands for a number (a run of digits), '0'
 * for exactly one digit ("float0$" is float4 but not float32); one space for
 * any whitespace run; a leading '^' means "only at the first word of a
 * sentence"; a trailing '$' means "the next symbol is not a word character"
 * (so "mma$" does not match "mmap"). Every pattern that starts with a letter
 * or '_' must also start a word ("mma" does not match in "comma"). A '='
 * expands into "=", " = ", " =", "= " and " " (so "tile_m=0" also matches
 * "#define TILE_M 64" and "TILE_M = 64").
 */
enum { KIND_DESIGN, KIND_PHRASE, KIND_SELFTALK, KIND_CODE };

typedef struct pattern_src {
  unsigned char kind;
  const char *text;
} pattern_src;

static const pattern_src pattern_table[] = {
    /* design: tile and block shapes ("64x64 tiles", "a 128 x 128 x 32 tile") */
    {KIND_DESIGN, "NxN til"}, {KIND_DESIGN, "N x N til"},
    {KIND_DESIGN, "NxN block"}, {KIND_DESIGN, "N x N block"},
    {KIND_DESIGN, "NxN sub"}, {KIND_DESIGN, "N x N sub"},
    {KIND_DESIGN, "NxN thread"}, {KIND_DESIGN, "N x N thread"},
    {KIND_DESIGN, "NxN output"}, {KIND_DESIGN, "NxN regist"},
    {KIND_DESIGN, "NxN micro"}, {KIND_DESIGN, "NxN warp"},
    {KIND_DESIGN, "NxN fragment"}, {KIND_DESIGN, "NxN grid"},
    {KIND_DESIGN, "NxN chunk"}, {KIND_DESIGN, "NxN element"},
    {KIND_DESIGN, "NxN shared"}, {KIND_DESIGN, "NxN-til"},
    {KIND_DESIGN, "N-wide til"}, {KIND_DESIGN, "tile of NxN"},
    {KIND_DESIGN, "tiles of NxN"}, {KIND_DESIGN, "tile size of N"},
    {KIND_DESIGN, "tile size N"}, {KIND_DESIGN, "block size of N"},
    {KIND_DESIGN, "block size N"}, {KIND_DESIGN, "blocks of N"},
    {KIND_DESIGN, "block of N"},
    /* design: named sizes ("BLOCK_SIZE = 128", "#define TILE 32") */
    {KIND_DESIGN, "block_size=N"}, {KIND_DESIGN, "blocksize=N"},
    {KIND_DESIGN, "tile_size=N"}, {KIND_DESIGN, "tile=N"},
    {KIND_DESIGN, "tile_dim=N"}, {KIND_DESIGN, "tile_width=N"},
    {KIND_DESIGN, "tile_m=N"}, {KIND_DESIGN, "tile_n=N"},
    {KIND_DESIGN, "tile_k=N"}, {KIND_DESIGN, "block_m=N"},
    {KIND_DESIGN, "block_n=N"}, {KIND_DESIGN, "block_k=N"},
    {KIND_DESIGN, "bm=N"}, {KIND_DESIGN, "bn=N"}, {KIND_DESIGN, "bk=N"},
    {KIND_DESIGN, "tm=N"}, {KIND_DESIGN, "tn=N"},
    {KIND_DESIGN, "threads_per_block=N"}, {KIND_DESIGN, "num_threads=N"},
    {KIND_DESIGN, "block_dim=N"}, {KIND_DESIGN, "blockdim=N"},
    {KIND_DESIGN, "warps_per_block=N"}, {KIND_DESIGN, "unroll=N"},
    {KIND_DESIGN, "vec_size=N"}, {KIND_DESIGN, "elems_per_thread=N"},
    /* design: launch shape and thread mapping */
    {KIND_DESIGN, "N threads per"}, {KIND_DESIGN, "N threads/block"},
    {KIND_DESIGN, "N threads in a block"}, {KIND_DESIGN, "N-thread block"},
    {KIND_DESIGN, "N thread block"}, {KIND_DESIGN, "N warps per"},
    {KIND_DESIGN, "N elements per thread"}, {KIND_DESIGN, "N outputs per thread"},
    {KIND_DESIGN, "dim0 block("}, {KIND_DESIGN, "dim0 threads("},
    {KIND_DESIGN, "dim0 grid("}, {KIND_DESIGN, "<<<"},
    {KIND_DESIGN, "each thread comput"}, {KIND_DESIGN, "each thread handl"},
    {KIND_DESIGN, "each thread load"}, {KIND_DESIGN, "each thread process"},
    {KIND_DESIGN, "each thread is responsible"}, {KIND_DESIGN, "each thread accumulat"},
    {KIND_DESIGN, "each thread writ"}, {KIND_DESIGN, "each warp comput"},
    {KIND_DESIGN, "each warp handl"}, {KIND_DESIGN, "each warp process"},
    {KIND_DESIGN, "each warp is responsible"}, {KIND_DESIGN, "each block comput"},
    {KIND_DESIGN, "each block handl"}, {KIND_DESIGN, "each block process"},
    {KIND_DESIGN, "each block is responsible"}, {KIND_DESIGN, "each thread block"},
    {KIND_DESIGN, "one thread per"}, {KIND_DESIGN, "one warp per"},
    {KIND_DESIGN, "one block per"}, {KIND_DESIGN, "a thread per"},
    {KIND_DESIGN, "a warp per"}, {KIND_DESIGN, "a block per"},
    {KIND_DESIGN, "grid-stride"}, {KIND_DESIGN, "grid stride"},
    {KIND_DESIGN, "thread coarsening"},
    /* design: memory strategies and instructions */
    {KIND_DESIGN, "shared memory til"}, {KIND_DESIGN, "shared-memory til"},
    {KIND_DESIGN, "tile in shared memory"}, {KIND_DESIGN, "tiles in shared memory"},
    {KIND_DESIGN, "into shared memory"}, {KIND_DESIGN, "in shared memory"},
    {KIND_DESIGN, "use shared memory"}, {KIND_DESIGN, "using shared memory"},
    {KIND_DESIGN, "smem til"}, {KIND_DESIGN, "__shared__"},
    {KIND_DESIGN, "float0$"}, {KIND_DESIGN, "half0$"}, {KIND_DESIGN, "int0 load"},
    {KIND_DESIGN, "vectorized load"}, {KIND_DESIGN, "vectorized memory"},
    {KIND_DESIGN, "vectorized access"}, {KIND_DESIGN, "vectorize the load"},
    {KIND_DESIGN, "vectorized stor"}, {KIND_DESIGN, "N-bit load"},
    {KIND_DESIGN, "N-byte load"}, {KIND_DESIGN, "wide load"},
    {KIND_DESIGN, "wmma"}, {KIND_DESIGN, "mma.sync"}, {KIND_DESIGN, "mma$"},
    {KIND_DESIGN, "tensor core"}, {KIND_DESIGN, "tensorcore"},
    {KIND_DESIGN, "ldmatrix"}, {KIND_DESIGN, "__shfl"}, {KIND_DESIGN, "shfl_"},
    {KIND_DESIGN, "warp shuffle"}, {KIND_DESIGN, "warp-level reduc"},
    {KIND_DESIGN, "warp reduc"}, {KIND_DESIGN, "block-level reduc"},
    {KIND_DESIGN, "tree reduc"}, {KIND_DESIGN, "cp.async"},
    {KIND_DESIGN, "async cop"}, {KIND_DESIGN, "tma$"}, {KIND_DESIGN, "__ldg"},
    {KIND_DESIGN, "read-only cache"}, {KIND_DESIGN, "double buffer"},
    {KIND_DESIGN, "double-buffer"}, {KIND_DESIGN, "software pipelin"},
    {KIND_DESIGN, "coalesced"}, {KIND_DESIGN, "coalescing"},
    {KIND_DESIGN, "coalesce the"}, {KIND_DESIGN, "bank conflict"},
    {KIND_DESIGN, "#pragma unroll"}, {KIND_DESIGN, "unroll the"},
    {KIND_DESIGN, "loop unroll"}, {KIND_DESIGN, "unrolled by"},
    {KIND_DESIGN, "unroll by"}, {KIND_DESIGN, "register block"},
    {KIND_DESIGN, "register til"}, {KIND_DESIGN, "in registers"},
    {KIND_DESIGN, "atomicadd"}, {KIND_DESIGN, "__launch_bounds__"},
    {KIND_DESIGN, "kernel fusion"}, {KIND_DESIGN, "fuse the"},
    {KIND_DESIGN, "occupancy"},
    /* design: CPU (C kernels) */
    {KIND_DESIGN, "simd"}, {KIND_DESIGN, "avx"}, {KIND_DESIGN, "sse0"},
    {KIND_DESIGN, "sse$"}, {KIND_DESIGN, "neon$"}, {KIND_DESIGN, "_mm_"},
    {KIND_DESIGN, "_mmN_"}, {KIND_DESIGN, "cache block"},
    {KIND_DESIGN, "cache-block"}, {KIND_DESIGN, "cache til"},
    {KIND_DESIGN, "loop order"}, {KIND_DESIGN, "loop interchange"},
    {KIND_DESIGN, "i-k-j"}, {KIND_DESIGN, "ikj$"}, {KIND_DESIGN, "#pragma omp"},
    {KIND_DESIGN, "openmp"}, {KIND_DESIGN, "auto-vectoriz"},
    {KIND_DESIGN, "vectorize the"}, {KIND_DESIGN, "transpose b"},
    {KIND_DESIGN, "transposed copy"}, {KIND_DESIGN, "blocking factor"},
    {KIND_DESIGN, "fma$"}, {KIND_DESIGN, "fmaf"}, {KIND_DESIGN, "prefetch"},

    /* phrase: the model is about to write the code or the plan */
    {KIND_PHRASE, "let me implement"}, {KIND_PHRASE, "let me write"},
    {KIND_PHRASE, "let me code"}, {KIND_PHRASE, "let me draft"},
    {KIND_PHRASE, "let me put it together"}, {KIND_PHRASE, "let me put this together"},
    {KIND_PHRASE, "let's implement"}, {KIND_PHRASE, "let's write"},
    {KIND_PHRASE, "let's code"}, {KIND_PHRASE, "lets implement"},
    {KIND_PHRASE, "lets write"}, {KIND_PHRASE, "let us implement"},
    {KIND_PHRASE, "let us write"}, {KIND_PHRASE, "i'll implement"},
    {KIND_PHRASE, "i'll write"}, {KIND_PHRASE, "i will implement"},
    {KIND_PHRASE, "i will write"}, {KIND_PHRASE, "i'm going to write"},
    {KIND_PHRASE, "i am going to write"}, {KIND_PHRASE, "i'm going to implement"},
    {KIND_PHRASE, "now to write"}, {KIND_PHRASE, "now write"},
    {KIND_PHRASE, "time to write"}, {KIND_PHRASE, "time to implement"},
    {KIND_PHRASE, "here is the plan"}, {KIND_PHRASE, "here's the plan"},
    {KIND_PHRASE, "here is my plan"}, {KIND_PHRASE, "here's my plan"},
    {KIND_PHRASE, "the plan is"}, {KIND_PHRASE, "my plan is"},
    {KIND_PHRASE, "implementation plan"}, {KIND_PHRASE, "^plan:"},
    {KIND_PHRASE, "here is the kernel"}, {KIND_PHRASE, "here's the kernel"},
    {KIND_PHRASE, "here is the code"}, {KIND_PHRASE, "here's the code"},
    {KIND_PHRASE, "here is the implementation"}, {KIND_PHRASE, "here's the implementation"},
    {KIND_PHRASE, "here is the optimized"}, {KIND_PHRASE, "here's the optimized"},
    {KIND_PHRASE, "here is the final"}, {KIND_PHRASE, "here's the final"},
    {KIND_PHRASE, "here is my"}, {KIND_PHRASE, "here's my"},
    {KIND_PHRASE, "here is a kernel"}, {KIND_PHRASE, "here's a kernel"},
    {KIND_PHRASE, "final implementation"}, {KIND_PHRASE, "final version"},
    {KIND_PHRASE, "final kernel"}, {KIND_PHRASE, "final code"},
    {KIND_PHRASE, "full implementation"}, {KIND_PHRASE, "complete implementation"},
    {KIND_PHRASE, "putting it all together"}, {KIND_PHRASE, "putting it together"},
    {KIND_PHRASE, "putting this together"}, {KIND_PHRASE, "writing the kernel"},
    {KIND_PHRASE, "writing the code"},

    /* self-talk: deliberation, doubt and correction; a sentence holding one
     * is not a decision yet */
    {KIND_SELFTALK, "hmm"}, {KIND_SELFTALK, "^wait$"}, {KIND_SELFTALK, "but wait"},
    {KIND_SELFTALK, "oh wait"}, {KIND_SELFTALK, "no wait"},
    {KIND_SELFTALK, "no, wait"}, {KIND_SELFTALK, "wait, no"},
    {KIND_SELFTALK, "wait no"}, {KIND_SELFTALK, "^actually, no"},
    {KIND_SELFTALK, "^actually no"}, {KIND_SELFTALK, "^no,"},
    {KIND_SELFTALK, "^no no"}, {KIND_SELFTALK, "^no:"}, {KIND_SELFTALK, "hold on"},
    {KIND_SELFTALK, "scratch that"}, {KIND_SELFTALK, "on second thought"},
    {KIND_SELFTALK, "not sure"}, {KIND_SELFTALK, "unsure"},
    {KIND_SELFTALK, "i wonder"}, {KIND_SELFTALK, "what if"},
    {KIND_SELFTALK, "^maybe"}, {KIND_SELFTALK, "or maybe"},
    {KIND_SELFTALK, "^perhaps"}, {KIND_SELFTALK, "let me think"},
    {KIND_SELFTALK, "let me reconsider"}, {KIND_SELFTALK, "let me re-check"},
    {KIND_SELFTALK, "let me recheck"}, {KIND_SELFTALK, "let me double-check"},
    {KIND_SELFTALK, "let me double check"}, {KIND_SELFTALK, "let me check"},
    {KIND_SELFTALK, "let me verify"}, {KIND_SELFTALK, "that's wrong"},
    {KIND_SELFTALK, "that is wrong"}, {KIND_SELFTALK, "that won't work"},
    {KIND_SELFTALK, "that doesn't work"}, {KIND_SELFTALK, "i was wrong"},
    {KIND_SELFTALK, "i made a mistake"}, {KIND_SELFTALK, "^ugh"},
    {KIND_SELFTALK, "^oops"},

    /* code markers: an unlabelled fenced block holding one is code */
    {KIND_CODE, "__global__"}, {KIND_CODE, "__device__"},
    {KIND_CODE, "__shared__"}, {KIND_CODE, "__syncthreads"},
    {KIND_CODE, "threadidx"}, {KIND_CODE, "blockidx"}, {KIND_CODE, "blockdim"},
    {KIND_CODE, "#include"}, {KIND_CODE, "#define"}, {KIND_CODE, "#pragma"},
    {KIND_CODE, "void$"}, {KIND_CODE, "for ("}, {KIND_CODE, "for("},
    {KIND_CODE, "const float"}, {KIND_CODE, "float *"}, {KIND_CODE, "float*"},
    {KIND_CODE, "def$"}, {KIND_CODE, "import torch"}, {KIND_CODE, "@triton"},
    {KIND_CODE, "class modelnew"}, {KIND_CODE, "return "},
};

#define PAT_MAX 64          /* longest pattern after expansion, in symbols */
#define PAT_FLAG_LB 1u      /* must start a word */
#define PAT_FLAG_RB 2u      /* must end a word */
#define PAT_FLAG_START 4u   /* must be the sentence's first word */

typedef struct pattern {
  unsigned char kind, flags, len;
} pattern;

/* ---------------------------------------------------------------- state */

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

/* FNV-1a over "words": runs of non-whitespace joined by one separator,
 * leading and trailing whitespace ignored, so re-indented or re-wrapped
 * copies of a block (or sentence) hash alike. */
typedef struct whash {
  uint64_t h;
  uint64_t n;        /* bytes hashed */
  bool sep_pending;
} whash;

#define FNV_OFFSET 1469598103934665603ull
#define FNV_PRIME 1099511628211ull

static void whash_init(whash *w) {
  w->h = FNV_OFFSET;
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
    w->h = (w->h ^ ' ') * FNV_PRIME;
    w->sep_pending = false;
  }
  w->h = (w->h ^ c) * FNV_PRIME;
  w->n++;
}

/* A bounded copy of text with whitespace runs collapsed to one space. */
typedef struct textbuf {
  char s[SG_TRIGGER_TEXT_MAX];
  size_t len;
  bool space_pending;
} textbuf;

static void textbuf_reset(textbuf *t) {
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

static void textbuf_puts(textbuf *t, const char *s) {
  for (; *s; s++)
    textbuf_byte(t, (unsigned char)*s);
}

typedef struct hash_ring {
  uint64_t *h;
  unsigned cap, n, next;
} hash_ring;

static bool hash_ring_seen_add(hash_ring *r, uint64_t h) {
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
typedef struct automaton {
  unsigned char cls_of[256]; /* symbol -> alphabet class; 0: none */
  unsigned nclass;
  unsigned nnodes;
  uint16_t *next;            /* nnodes * nclass */
  uint16_t *out;             /* pattern ending at the node, or UINT16_MAX */
  uint16_t *dict;            /* nearest proper suffix node with an output */
  uint8_t *omask;            /* 1: a plain output on the chain, 2: an RB one */
  pattern *pats;
  unsigned npats;
} automaton;

struct sg_scanner {
  sg_scanner_opts opts;
  uint64_t off;              /* bytes fed so far */
  bool emitted_any;
  uint64_t last_emit;        /* offset of the last trigger reported */
  sg_trigger_cb cb;          /* valid during one feed or finish call */
  void *user;

  const automaton *ac;       /* shared, read-only */

  /* normaliser and automaton position */
  unsigned char u8_pend;     /* 0, 0xC3, 0xE2 or 0x80 (after E2 80) */
  unsigned char last_sym;
  uint16_t node;
  uint64_t nsym;
  unsigned char sym_ring[SYM_RING];

  /* line machine and fences */
  int line;
  unsigned indent;
  unsigned char tick_char;
  uint64_t tick_n;
  bool in_fence;
  unsigned char fence_char;
  uint64_t fence_n;
  char lang[LANG_MAX];
  unsigned lang_len;
  bool lang_started, lang_done, lang_long;
  bool fence_code;           /* a code marker was seen in the block */
  whash fence_hash;
  textbuf fence_head;

  /* code machine */
  int code;
  int lex;
  char ident[IDENT_MAX];
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
  whash kernel_hash;
  textbuf kernel_text;

  /* sentence machine */
  bool term_pending;         /* last byte was . ! ? : ; */
  unsigned char term_char;   /* which one */
  bool question;
  bool sent_selftalk;
  bool sent_match[2];        /* design, phrase */
  bool sent_use_head[2];
  textbuf sent_snap[2];
  uint64_t sent_first_word;  /* symbol index of the first letter, or ~0 */
  uint64_t sent_clen;        /* collapsed bytes in the sentence */
  bool sent_space_pending;
  textbuf sent_head;
  char sent_tail[SENT_RING];
  whash sent_hash;

  hash_ring sent_seen;
  hash_ring block_seen;
};

/* ---------------------------------------------------------------- automaton */

static bool sym_is_word(unsigned char c) {
  return (c >= 'a' && c <= 'z') || c == SYM_DIGIT || c == SYM_DIGIT2 ||
         c == '_';
}

static void add_pattern(automaton *s, unsigned kind, const char *text,
                        size_t len, unsigned flags, unsigned *cap_nodes) {
  assert(len > 0 && len < PAT_MAX);
  uint16_t node = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned c = s->cls_of[(unsigned char)text[i]];
    assert(c != 0);
    uint16_t *slot = &s->next[(size_t)node * s->nclass + c];
    if (*slot == 0) {
      assert(s->nnodes < *cap_nodes);
      *slot = (uint16_t)s->nnodes++;
    }
    node = *slot;
  }
  if (s->out[node] != UINT16_MAX)
    return;  /* the same text twice (an expansion collided): keep the first */
  s->out[node] = (uint16_t)s->npats;
  s->pats[s->npats].kind = (unsigned char)kind;
  s->pats[s->npats].flags = (unsigned char)flags;
  s->pats[s->npats].len = (unsigned char)len;
  s->npats++;
}

/* Digit runs reach the matcher as '0' (the first digit) and '1' (a second
 * one; more are dropped), so 'N' in a pattern expands into "0" and "01". '='
 * expands into the joins below. The expansions of one pattern text. */
#define EXPAND_MAX 32
static const char *const eq_joins[] = {"=", " = ", " =", "= ", " "};

static void expand(const char *t, size_t len, char *buf, size_t at,
                   char out[][PAT_MAX], size_t *n) {
  if (len == 0) {
    assert(*n < EXPAND_MAX);
    memcpy(out[*n], buf, at);
    out[*n][at] = '\0';
    (*n)++;
    return;
  }
  if (*t == 'N' || *t == '=') {
    size_t k = *t == 'N' ? 2 : sizeof eq_joins / sizeof eq_joins[0];
    for (size_t j = 0; j < k; j++) {
      const char *ins = *t == 'N' ? (j ? "01" : "0") : eq_joins[j];
      size_t il = strlen(ins);
      assert(at + il < PAT_MAX);
      memcpy(buf + at, ins, il);
      expand(t + 1, len - 1, buf, at + il, out, n);
    }
    return;
  }
  assert(at + 1 < PAT_MAX);
  buf[at] = *t;
  expand(t + 1, len - 1, buf, at + 1, out, n);
}

/* Calls fn for each expanded pattern of the table, with its flags. */
static void each_pattern(void (*fn)(automaton *, unsigned, const char *,
                                    unsigned, unsigned *),
                         automaton *s, unsigned *cap_nodes) {
  for (size_t i = 0; i < sizeof pattern_table / sizeof pattern_table[0]; i++) {
    const char *t = pattern_table[i].text;
    unsigned flags = 0;
    if (*t == '^') {
      flags |= PAT_FLAG_START;
      t++;
    }
    size_t len = strlen(t);
    if (len > 0 && t[len - 1] == '$') {
      flags |= PAT_FLAG_RB;
      len--;
    }
    if ((t[0] >= 'a' && t[0] <= 'z') || t[0] == '_')
      flags |= PAT_FLAG_LB;
    char out[EXPAND_MAX][PAT_MAX], buf[PAT_MAX];
    size_t n = 0;
    expand(t, len, buf, 0, out, &n);
    for (size_t k = 0; k < n; k++)
      fn(s, pattern_table[i].kind, out[k], flags, cap_nodes);
  }
}

static void count_pattern(automaton *s, unsigned kind, const char *text,
                          unsigned flags, unsigned *cap_nodes) {
  (void)kind;
  (void)flags;
  for (const char *c = text; *c; c++)
    if (s->cls_of[(unsigned char)*c] == 0)
      s->cls_of[(unsigned char)*c] = (unsigned char)s->nclass++;
  *cap_nodes += (unsigned)strlen(text);
  s->npats++;
}

static void insert_pattern(automaton *s, unsigned kind, const char *text,
                           unsigned flags, unsigned *cap_nodes) {
  add_pattern(s, kind, text, strlen(text), flags, cap_nodes);
}

static void build_automaton(automaton *s) {
  /* First pass: the alphabet (every character some pattern uses gets a
   * class; class 0 is every other symbol) and the sizes. */
  memset(s->cls_of, 0, sizeof s->cls_of);
  s->nclass = 1;
  s->npats = 0;
  unsigned cap_nodes = 1;
  each_pattern(count_pattern, s, &cap_nodes);
  assert(s->nclass < 256);
  assert(cap_nodes < UINT16_MAX);
  s->next = sg_calloc((size_t)cap_nodes * s->nclass, sizeof *s->next);
  s->out = sg_malloc(cap_nodes * sizeof *s->out);
  for (unsigned i = 0; i < cap_nodes; i++)
    s->out[i] = UINT16_MAX;
  s->dict = sg_calloc(cap_nodes, sizeof *s->dict);
  s->omask = sg_calloc(cap_nodes, sizeof *s->omask);
  s->pats = sg_calloc(s->npats, sizeof *s->pats);
  s->nnodes = 1;
  s->npats = 0;
  each_pattern(insert_pattern, s, &cap_nodes);

  /* Breadth-first: failure links folded into a full transition table, so a
   * step is one lookup; dict links chain the outputs along the suffixes. */
  uint16_t *fail = sg_calloc(s->nnodes, sizeof *fail);
  uint16_t *queue = sg_malloc(s->nnodes * sizeof *queue);
  unsigned head = 0, tail = 0;
  for (unsigned c = 0; c < s->nclass; c++) {
    uint16_t v = s->next[c];
    if (v) {
      fail[v] = 0;
      queue[tail++] = v;
    }
  }
  while (head < tail) {
    uint16_t u = queue[head++];
    uint16_t f = fail[u];
    s->dict[u] = s->out[f] != UINT16_MAX ? f : s->dict[f];
    /* the suffix is shallower, so its mask is final already */
    s->omask[u] = s->omask[s->dict[u]];
    if (s->out[u] != UINT16_MAX)
      s->omask[u] |= (s->pats[s->out[u]].flags & PAT_FLAG_RB) ? 2 : 1;
    for (unsigned c = 0; c < s->nclass; c++) {
      uint16_t *slot = &s->next[(size_t)u * s->nclass + c];
      uint16_t fv = s->next[(size_t)f * s->nclass + c];
      if (*slot) {
        fail[*slot] = fv;
        queue[tail++] = *slot;
      } else {
        *slot = fv;
      }
    }
  }
  free(fail);
  free(queue);
}

/* ---------------------------------------------------------------- lifecycle */

static automaton shared_ac;
static pthread_once_t shared_ac_once = PTHREAD_ONCE_INIT;

static void build_shared(void) { build_automaton(&shared_ac); }

sg_scanner *sg_scanner_new(const sg_scanner_opts *opts) {
  sg_scanner *s = sg_calloc(1, sizeof *s);
  if (opts)
    s->opts = *opts;
  else
    sg_scanner_opts_default(&s->opts);
  pthread_once(&shared_ac_once, build_shared);
  s->ac = &shared_ac;
  s->sent_seen.cap = SENT_SEEN;
  s->sent_seen.h = sg_calloc(SENT_SEEN, sizeof(uint64_t));
  s->block_seen.cap = BLOCK_SEEN;
  s->block_seen.h = sg_calloc(BLOCK_SEEN, sizeof(uint64_t));
  s->line = LINE_START;
  s->code = CODE_IDLE;
  s->last_sym = ' ';
  s->sent_first_word = UINT64_MAX;
  whash_init(&s->sent_hash);
  return s;
}

void sg_scanner_free(sg_scanner *s) {
  if (s == NULL)
    return;
  free(s->sent_seen.h);
  free(s->block_seen.h);
  free(s);
}

uint64_t sg_scanner_offset(const sg_scanner *s) { return s->off; }

/* ---------------------------------------------------------------- emitting */

/* Drops an incomplete UTF-8 sequence at the end of a cut text. */
static size_t utf8_trim(const char *s, size_t len) {
  size_t i = len, k = 0;
  while (i > 0 && k < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) {
    i--;
    k++;
  }
  if (i == 0)
    return len;
  unsigned char lead = (unsigned char)s[i - 1];
  size_t need = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
  if (lead >= 0xC0 && k < need)
    return i - 1;
  return len;
}

static void emit(sg_scanner *s, sg_trigger_class cls, const char *text,
                 size_t len) {
  uint64_t at = s->off + 1;  /* just past the byte that completed it */
  if (s->opts.classes && !(s->opts.classes & (1u << cls)))
    return;
  if (s->emitted_any) {
    assert(at >= s->last_emit);
    if (at - s->last_emit < s->opts.min_gap_bytes)
      return;
  }
  s->emitted_any = true;
  s->last_emit = at;
  if (s->cb == NULL)
    return;
  sg_trigger t;
  t.cls = cls;
  t.offset = at;
  if (len >= SG_TRIGGER_TEXT_MAX)
    len = SG_TRIGGER_TEXT_MAX - 1;
  len = utf8_trim(text, len);
  memcpy(t.text, text, len);
  t.text[len] = '\0';
  s->cb(s->user, &t);
}

/* ---------------------------------------------------------------- sentences */

static void sentence_reset(sg_scanner *s) {
  s->term_pending = false;
  s->term_char = 0;
  s->question = false;
  s->sent_selftalk = false;
  s->sent_match[0] = s->sent_match[1] = false;
  s->sent_first_word = UINT64_MAX;
  s->sent_clen = 0;
  s->sent_space_pending = false;
  textbuf_reset(&s->sent_head);
  whash_init(&s->sent_hash);
}

static void sentence_end(sg_scanner *s) {
  /* A "sentence" that runs into a signature or a body is code, not prose. */
  if (s->code != CODE_IDLE)
    s->sent_match[0] = s->sent_match[1] = false;
  if (s->sent_match[0] || s->sent_match[1]) {
    /* A repetition loop writes the same sentence again and again: it is
     * remembered even when it does not fire, so the loop stays quiet. */
    bool dup = hash_ring_seen_add(&s->sent_seen, s->sent_hash.h);
    if (!dup && !s->sent_selftalk && !s->question) {
      static const sg_trigger_class cls[2] = {SG_TRIGGER_DESIGN,
                                              SG_TRIGGER_PHRASE};
      for (int k = 0; k < 2; k++) {
        if (!s->sent_match[k])
          continue;
        const textbuf *t = s->sent_use_head[k] ? &s->sent_head : &s->sent_snap[k];
        emit(s, cls[k], t->s, t->len);
      }
    }
  }
  /* "Wait: ..." and "Hmm; ..." doubt what follows the colon too. */
  bool carry = s->sent_selftalk && (s->term_char == ':' || s->term_char == ';');
  sentence_reset(s);
  s->sent_selftalk = carry;
}

/* Collapsed sentence text: a head (first bytes) and a ring (last bytes). */
static inline void sentence_byte(sg_scanner *s, unsigned char c) {
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

/* A design or phrase match: remembers where the text to report comes from. */
static void sentence_match(sg_scanner *s, int k) {
  if (s->sent_match[k])
    return;
  s->sent_match[k] = true;
  if (s->sent_clen < SG_TRIGGER_TEXT_MAX) {
    s->sent_use_head[k] = true;
    return;
  }
  s->sent_use_head[k] = false;
  textbuf *t = &s->sent_snap[k];
  uint64_t n = SG_TRIGGER_TEXT_MAX - 1;
  uint64_t from = s->sent_clen - n;
  /* Skip continuation bytes: the cut must not start mid-character. */
  while (n > 0 && ((unsigned char)s->sent_tail[from % SENT_RING] & 0xC0) == 0x80) {
    from++;
    n--;
  }
  for (uint64_t i = 0; i < n; i++)
    t->s[i] = s->sent_tail[(from + i) % SENT_RING];
  t->len = (size_t)n;
}

/* ---------------------------------------------------------------- keywords */

static void on_pattern(sg_scanner *s, const pattern *p, uint64_t end_sym) {
  uint64_t start = end_sym + 1 - p->len;
  if ((p->flags & PAT_FLAG_LB) && start > 0 &&
      sym_is_word(s->sym_ring[(start - 1) % SYM_RING]))
    return;
  if ((p->flags & PAT_FLAG_START) && start != s->sent_first_word)
    return;
  if (s->in_fence) {
    if (p->kind == KIND_CODE)
      s->fence_code = true;
    return;
  }
  if (s->code == CODE_BODY)
    return;  /* code written in the open text is not a sentence */
  switch (p->kind) {
  case KIND_DESIGN: sentence_match(s, 0); break;
  case KIND_PHRASE: sentence_match(s, 1); break;
  case KIND_SELFTALK: s->sent_selftalk = true; break;
  default: break;
  }
}

static inline void walk_outputs(sg_scanner *s, uint16_t node, bool rb,
                                uint64_t end_sym) {
  if (!(s->ac->omask[node] & (rb ? 2 : 1)))
    return;  /* the common case: nothing ends here */
  uint16_t v = s->ac->out[node] != UINT16_MAX ? node : s->ac->dict[node];
  while (v) {
    const pattern *p = &s->ac->pats[s->ac->out[v]];
    if (((p->flags & PAT_FLAG_RB) != 0) == rb)
      on_pattern(s, p, end_sym);
    v = s->ac->dict[v];
  }
}

static void symbol(sg_scanner *s, unsigned char sym) {
  if (sym == ' ' && s->last_sym == ' ')
    return;
  if (sym == SYM_DIGIT && s->last_sym == SYM_DIGIT)
    sym = SYM_DIGIT2;
  else if (sym == SYM_DIGIT && s->last_sym == SYM_DIGIT2)
    return;
  s->last_sym = sym;
  /* Patterns that must end a word complete one symbol late. */
  if (!sym_is_word(sym) && s->nsym > 0)
    walk_outputs(s, s->node, true, s->nsym - 1);
  if (sym >= 'a' && sym <= 'z' && s->sent_first_word == UINT64_MAX)
    s->sent_first_word = s->nsym;
  s->sym_ring[s->nsym % SYM_RING] = sym;
  s->node = s->ac->next[(size_t)s->node * s->ac->nclass + s->ac->cls_of[sym]];
  walk_outputs(s, s->node, false, s->nsym);
  s->nsym++;
}

/* Bytes to symbols: lower case, whitespace and digits to one symbol each,
 * U+00D7 (multiplication sign) to 'x', U+2018/U+2019 (quotes) to '\''. */
static void normalise(sg_scanner *s, unsigned char c) {
  if (s->u8_pend) {
    unsigned char p = s->u8_pend;
    s->u8_pend = 0;
    if (p == 0xC3 && c == 0x97) {
      symbol(s, 'x');
      return;
    }
    if (p == 0xE2 && c == 0x80) {
      s->u8_pend = 0x80;
      return;
    }
    if (p == 0x80 && (c == 0x98 || c == 0x99)) {
      symbol(s, '\'');
      return;
    }
    symbol(s, SYM_OTHER);
  }
  if (c == 0xC3 || c == 0xE2) {
    s->u8_pend = c;
    return;
  }
  unsigned char sym;
  if (c >= 'A' && c <= 'Z')
    sym = (unsigned char)(c + 32);
  else if (c >= '0' && c <= '9')
    sym = SYM_DIGIT;
  else if (is_ws(c))
    sym = ' ';
  else if (s->ac->cls_of[c])
    sym = c;
  else
    sym = SYM_OTHER;
  symbol(s, sym);
}

/* ---------------------------------------------------------------- code */

static inline bool is_ident(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_';
}

static void code_reset(sg_scanner *s) {
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
    code_reset(s);
    return;
  }
  if (s->lex == LEX_CODE && (c == '"' || c == '\'')) {
    code_reset(s);  /* no literal belongs in a signature: this is prose */
    return;
  }
  bool plain = lex_step(s, c);
  if (!plain)
    return;
  if (s->paren > 0) {
    if (c == '(') {
      if (++s->paren > PAREN_DEPTH_MAX)
        code_reset(s);
    } else if (c == ')') {
      if (--s->paren == 0)
        s->sig_params = true;
    } else if (c == ';' || c == '{' || c == '}') {
      code_reset(s);
    }
    s->last_code = c;
    return;
  }
  if (is_ident(c) || is_ws(c) || c == '*' || c == '&' || c == '<' ||
      c == '>' || c == ',' || c == ':') {
    if (!is_ws(c))
      s->last_code = c;
    return;
  }
  if (c == '(' && is_ident(s->last_code) && s->sig_idents > 0) {
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
  code_reset(s);
}

static void body_step(sg_scanner *s, unsigned char c) {
  whash_byte(&s->kernel_hash, c);
  if (++s->code_bytes > BODY_MAX_BYTES) {
    code_reset(s);
    return;
  }
  if (!lex_step(s, c))
    return;
  if (c == '{') {
    if (++s->depth > BODY_DEPTH_MAX)
      code_reset(s);
  } else if (c == '}') {
    if (--s->depth == 0) {
      uint64_t h = s->kernel_hash.h ^ (uint64_t)SG_TRIGGER_KERNEL;
      bool dup = hash_ring_seen_add(&s->block_seen, h);
      if (!dup)
        emit(s, SG_TRIGGER_KERNEL, s->kernel_text.s, s->kernel_text.len);
      code_reset(s);
      /* words matched in the signature were code, not a decision */
      s->sent_match[0] = s->sent_match[1] = false;
    }
  }
}

static void code_byte(sg_scanner *s, unsigned char c) {
  if (s->code == CODE_BODY) {
    body_step(s, c);
    return;
  }
  /* Identifiers are tracked in the open and in signatures. */
  if (is_ident(c)) {
    if (!s->in_ident) {
      s->in_ident = true;
      s->ident_len = 0;
      s->ident_long = false;
    }
    if (s->ident_len < IDENT_MAX)
      s->ident[s->ident_len++] = (char)c;
    else
      s->ident_long = true;
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

static bool lang_is(const sg_scanner *s, const char *w) {
  return strlen(w) == s->lang_len && memcmp(s->lang, w, s->lang_len) == 0;
}

static bool fence_lang_fires(const sg_scanner *s) {
  static const char *const langs[] = {"cuda", "cu", "cuh", "cpp", "c++", "cxx",
                                      "cc", "c", "h", "hpp", "python", "py",
                                      "python3"};
  if (s->lang_long)
    return false;
  if (s->lang_len == 0)
    return s->fence_code;
  for (size_t i = 0; i < sizeof langs / sizeof langs[0]; i++)
    if (lang_is(s, langs[i]))
      return true;
  return false;
}

static void fence_open(sg_scanner *s) {
  s->in_fence = true;
  s->fence_char = s->tick_char;
  s->fence_n = s->tick_n;
  s->fence_code = false;
  whash_init(&s->fence_hash);
  textbuf_reset(&s->fence_head);
  code_reset(s);
  sentence_reset(s);
}

static void fence_close(sg_scanner *s) {
  s->in_fence = false;
  code_reset(s);
  sentence_reset(s);
  if (s->fence_hash.n == 0 || !fence_lang_fires(s))
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
  emit(s, SG_TRIGGER_FENCE, t.s, t.len);
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

static void line_byte(sg_scanner *s, unsigned char c) {
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

/* ---------------------------------------------------------------- feeding */

static inline void scan_byte(sg_scanner *s, unsigned char c) {
  bool was_in_fence = s->in_fence;
  line_byte(s, c);
  code_byte(s, c);
  bool prose = !s->in_fence && !was_in_fence;
  /* Sentence ends: a newline, or whitespace after . ! ? : ; (so "cp.async"
   * and "3.5" do not end one). */
  bool ends = prose && (c == '\n' || (is_ws(c) && s->term_pending));
  /* The sentence's text takes the byte before the matcher sees it, so the
   * text reported for a match includes the match's last byte. */
  if (prose && !ends)
    sentence_byte(s, c);
  normalise(s, c);
  if (!prose)
    return;
  if (ends) {
    sentence_end(s);
  } else if (c == '.' || c == '!' || c == '?' || c == ':' || c == ';') {
    s->term_pending = true;
    s->term_char = c;
    s->question = c == '?';
  } else {
    s->term_pending = false;
    s->term_char = 0;
  }
}

void sg_scanner_feed(sg_scanner *s, const char *data, size_t len,
                     sg_trigger_cb cb, void *user) {
  s->cb = cb;
  s->user = user;
  const unsigned char *p = (const unsigned char *)data;
  for (size_t i = 0; i < len; i++) {
    scan_byte(s, p[i]);
    s->off++;
  }
  s->cb = NULL;
  s->user = NULL;
}

void sg_scanner_finish(sg_scanner *s, sg_trigger_cb cb, void *user) {
  s->cb = cb;
  s->user = user;
  /* Offsets of end-of-text triggers are the text's length: emit() adds one
   * for the byte that completes a trigger, and here there is none. */
  if (s->off > 0) {
    s->off--;
    if (s->u8_pend)
      symbol(s, SYM_OTHER);
    if (s->nsym > 0)
      walk_outputs(s, s->node, true, s->nsym - 1);
    if (s->in_fence &&
        ((s->line == LINE_TICKS && s->tick_n >= s->fence_n) ||
         s->line == LINE_CLOSE_WS))
      fence_close(s);
    else if (!s->in_fence)
      sentence_end(s);
    s->off++;
  }
  s->u8_pend = 0;
  s->cb = NULL;
  s->user = NULL;
}
