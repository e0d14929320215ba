/* sg_triggers_match.c: the trigger scanner's keyword matcher.
 *
 * An Aho-Corasick automaton, built once per process from the pattern table
 * (sg_triggers_patterns.c) and read-only afterwards, runs over a normalised symbol stream (lower
 * case, a whitespace run as one space, a digit run as one or two symbols, a
 * few typographic UTF-8 characters mapped to ASCII), with word boundaries
 * checked on a small ring of past symbols. It finds design decisions,
 * implementation phrases and self-talk; the sentence machine in
 * sg_triggers.c decides what fires.
 */
#include "core/sg_triggers_priv.h"

#include "common/sg_alloc.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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
  for (size_t i = 0; i < trig_npatterns; i++) {
    const char *t = trig_patterns[i].text;
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
      fn(s, trig_patterns[i].kind, out[k], flags, cap_nodes);
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

/* Two layout steps for the scan's one dependent load per symbol (the
 * table is 5,000 rows of 86 bytes, bigger than a core's L2, and a scanner
 * runs beside a campaign's or a run's other state): the nodes are
 * renumbered breadth-first, so the shallow rows most prose bytes visit sit
 * together, and each transition carries its target's output mask
 * (NODE_BITS and up), so the common "nothing ends here" needs no second
 * load. bfs[] is every node but the root in breadth-first order. */
static void renumber_and_fold(automaton *s, const uint16_t *bfs, unsigned nbfs) {
  unsigned n = s->nnodes;
  assert(nbfs + 1 == n && n <= NODE_MASK + 1u);
  uint16_t *to = sg_malloc(n * sizeof *to);   /* old id -> new id */
  uint16_t *from = sg_malloc(n * sizeof *from); /* new id -> old id */
  to[0] = from[0] = 0;
  for (unsigned i = 0; i < nbfs; i++) {
    to[bfs[i]] = (uint16_t)(i + 1);
    from[i + 1] = bfs[i];
  }
  uint16_t *next = sg_malloc((size_t)n * s->nclass * sizeof *next);
  uint16_t *out = sg_malloc(n * sizeof *out);
  uint16_t *dict = sg_malloc(n * sizeof *dict);
  uint8_t *omask = sg_malloc(n * sizeof *omask);
  for (unsigned v = 0; v < n; v++) {
    unsigned o = from[v];
    out[v] = s->out[o];
    dict[v] = to[s->dict[o]];
    omask[v] = s->omask[o];
    for (unsigned c = 0; c < s->nclass; c++) {
      uint16_t t = s->next[(size_t)o * s->nclass + c];
      next[(size_t)v * s->nclass + c] =
          (uint16_t)(to[t] | (unsigned)s->omask[t] << NODE_BITS);
    }
  }
  free(s->next);
  free(s->out);
  free(s->dict);
  free(s->omask);
  s->next = next;
  s->out = out;
  s->dict = dict;
  s->omask = omask;
  free(to);
  free(from);
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
  renumber_and_fold(s, queue, tail);
  free(fail);
  free(queue);
}

static automaton shared_ac;
static pthread_once_t shared_ac_once = PTHREAD_ONCE_INIT;

static void build_shared(void) { build_automaton(&shared_ac); }

const automaton *trig_automaton(void) {
  pthread_once(&shared_ac_once, build_shared);
  return &shared_ac;
}

/* ---------------------------------------------------------------- keywords */

static void on_pattern(sg_scanner *s, const pattern *p, uint64_t end_sym) {
  uint64_t start = end_sym + 1 - p->len;
  if ((p->flags & PAT_FLAG_LB) && start > 0 &&
      sym_is_word(s->sym_ring[(start - 1) % SYM_RING]))
    return;
  if ((p->flags & PAT_FLAG_START) && start != s->sent_first_word)
    return;
  if (s->in_fence)
    return;
  if (s->code == CODE_BODY || trig_py_active(s))
    return;  /* code written in the open text is not a sentence */
  switch (p->kind) {
  case KIND_DESIGN: trig_sentence_match(s, 0); break;
  case KIND_PHRASE: trig_sentence_match(s, 1); break;
  case KIND_SELFTALK: s->sent_selftalk = true; break;
  default: break;
  }
}

/* edge: a transition's value, the node with its output mask above. */
static inline void walk_outputs(sg_scanner *s, uint16_t edge, bool rb,
                                uint64_t end_sym) {
  if (!((edge >> NODE_BITS) & (rb ? 2 : 1)))
    return;  /* the common case: nothing ends here */
  uint16_t node = edge & NODE_MASK;
  uint16_t v = s->ac->out[node] != UINT16_MAX ? node : s->ac->dict[node];
  while (v) {
    const pattern *p = &s->ac->pats[s->ac->out[v]];
    if (((p->flags & PAT_FLAG_RB) != 0) == rb)
      on_pattern(s, p, end_sym);
    v = s->ac->dict[v];
  }
}

/* Inlined: the prose fast path calls it for most bytes. */
static inline __attribute__((always_inline)) void symbol(sg_scanner *s,
                                                         unsigned char sym) {
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
  s->node = s->ac->next[(size_t)(s->node & NODE_MASK) * s->ac->nclass +
                        s->ac->cls_of[sym]];
  walk_outputs(s, s->node, false, s->nsym);
  s->nsym++;
}

/* What scan_byte does for letters and spaces in plain prose (sg_triggers.c,
 * prose_idle), in the same order. A letter extends the identifier, the
 * sentence's text and the keyword walk; a space (not after a sentence's
 * terminator, where it would end the sentence) ends the identifier, which
 * may start a signature: the run stops there. Nothing else here reads the
 * offset or leaves plain prose; the sentence's terminator is cleared. */
size_t trig_prose_run(sg_scanner *s, const unsigned char *p, size_t n) {
  size_t k = 0;
  while (k < n) {
    unsigned char c = p[k];
    if (trig_is_letter(c)) {
      trig_ident_byte(s, c);
      trig_sentence_byte(s, c);
      /* as trig_normalise: upper case folds; a lower-case letter no
       * pattern uses is SYM_OTHER */
      symbol(s, c <= 'Z' ? (unsigned char)(c + 32) : s->ac->cls_of[c] ? c : SYM_OTHER);
      s->term_pending = false;
      s->term_char = 0;
      s->off++;
      k++;
      continue;
    }
    if (c != ' ' || s->term_pending)
      break;
    trig_code_byte(s, c);
    trig_sentence_byte(s, c);
    symbol(s, ' ');
    s->term_char = 0;
    s->off++;
    k++;
    if (s->code != CODE_IDLE)
      break;
  }
  return k;
}

/* Bytes to symbols: lower case, whitespace and digits to one symbol each,
 * U+00D7 (multiplication sign) to 'x', U+2018/U+2019 (quotes) to '\''. */
void trig_normalise(sg_scanner *s, unsigned char c) {
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

/* The end of the text: a pending UTF-8 lead byte is a symbol of its own, and
 * patterns that must end a word may end at the last symbol. */
void trig_normalise_finish(sg_scanner *s) {
  if (s->u8_pend)
    symbol(s, SYM_OTHER);
  s->u8_pend = 0;
  if (s->nsym > 0)
    walk_outputs(s, s->node, true, s->nsym - 1);
}
