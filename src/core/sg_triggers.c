/* sg_triggers.c: the trigger scanner (pure: no I/O, no clock).
 *
 * How it works. Every byte goes, once, through five small machines whose
 * state lives in struct sg_scanner (sg_triggers_priv.h; allocated by
 * sg_scanner_new, the per-byte path never allocates):
 *
 *   1. the line machine finds fenced code blocks (sg_triggers_code.c);
 *   2. the C/CUDA code machine finds complete `__global__` and `void`
 *      functions, braces counted outside literals and comments (same file);
 *   3. the Python machine finds complete @triton.jit kernels: a decorated
 *      def whose indented body ends with a dedent or the block's close
 *      (sg_triggers_py.c);
 *   4. the keyword matcher, an Aho-Corasick automaton over a normalised
 *      symbol stream (sg_triggers_match.c), finds design decisions,
 *      implementation phrases and self-talk;
 *   5. the sentence machine (here): design and phrase matches are held until
 *      their sentence ends (". ", "? ", "! ", ": ", "; " or a newline) and
 *      fire then, unless the sentence is a question, holds self-talk, repeats
 *      one of the last SENT_SEEN sentences that matched, or is code.
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
#include "core/sg_triggers_priv.h"

#include "common/sg_alloc.h"

#include <assert.h>
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

/* The scanner reports every trigger by default: the rate of forking is the
 * controller's policy (it sets its own gap, sg_controller.h). */
#define DEFAULT_MIN_GAP_BYTES 0

void sg_scanner_opts_default(sg_scanner_opts *opts) {
  opts->classes = 0;
  opts->min_gap_bytes = DEFAULT_MIN_GAP_BYTES;
}

sg_scanner *sg_scanner_new(const sg_scanner_opts *opts) {
  /* on a cache line boundary, so the scalar state fills whole lines */
  sg_scanner *s = sg_calloc_aligned(64, sizeof *s);
  if (opts)
    s->opts = *opts;
  else
    sg_scanner_opts_default(&s->opts);
  s->ac = trig_automaton();
  s->sent_seen.cap = SENT_SEEN;
  s->sent_seen.h = sg_calloc(SENT_SEEN, sizeof(uint64_t));
  s->block_seen.cap = BLOCK_SEEN;
  s->block_seen.h = sg_calloc(BLOCK_SEEN, sizeof(uint64_t));
  s->line = LINE_START;
  s->code = CODE_IDLE;
  s->last_sym = ' ';
  s->sent_first_word = UINT64_MAX;
  whash_init(&s->sent_hash);
  trig_py_reset(s);
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

/* Reports a trigger that ends at offset at (at most one past the current
 * byte; a Triton body or a closing fence is confirmed a little after it
 * ends). The gap rule: a design or phrase trigger closer than min_gap_bytes
 * to the last reported trigger is dropped, and so is a fence that closes a
 * block in which a kernel was just reported (the two are one candidate); any
 * other kernel or fence is a new candidate and always reported. */
void trig_emit_at(sg_scanner *s, sg_trigger_class cls, uint64_t at,
                  const char *text, size_t len) {
  assert(at <= s->off + 1);
  /* New code ends a repetition loop: "Let me fix the code:" before the next
   * revision is a new step, not the loop again.
   * Whatever the filters: they must not change what other classes see. */
  if (cls == SG_TRIGGER_FENCE || cls == SG_TRIGGER_KERNEL)
    s->sent_seen.n = s->sent_seen.next = 0;
  if (s->opts.classes && !(s->opts.classes & (1u << cls)))
    return;
  if (s->emitted_any) {
    assert(at >= s->last_emit);
    bool code = cls == SG_TRIGGER_FENCE || cls == SG_TRIGGER_KERNEL;
    bool gapped = !code || (cls == SG_TRIGGER_FENCE && s->fence_kernel);
    if (gapped && at - s->last_emit < s->opts.min_gap_bytes)
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

void trig_sentence_reset(sg_scanner *s) {
  s->term_pending = false;
  s->term_char = 0;
  s->question = false;
  s->sent_selftalk = false;
  s->sent_code = false;
  s->sent_match[0] = s->sent_match[1] = false;
  s->sent_first_word = UINT64_MAX;
  s->sent_clen = 0;
  s->sent_space_pending = false;
  textbuf_reset(&s->sent_head);
  whash_init(&s->sent_hash);
}

static void sentence_end(sg_scanner *s) {
  /* A "sentence" that runs into a signature or a body is code, not prose. */
  if (s->code != CODE_IDLE || s->sent_code)
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
        trig_emit_at(s, cls[k], s->off + 1, t->s, t->len);
      }
    }
  }
  /* "Wait: ..." and "Hmm; ..." doubt what follows the colon too. */
  bool carry = s->sent_selftalk && (s->term_char == ':' || s->term_char == ';');
  trig_sentence_reset(s);
  s->sent_selftalk = carry;
}

/* A design or phrase match: remembers where the text to report comes from. */
void trig_sentence_match(sg_scanner *s, int k) {
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

/* ---------------------------------------------------------------- feeding */

static inline void scan_byte(sg_scanner *s, unsigned char c) {
  bool was_in_fence = s->in_fence;
  trig_line_byte(s, c);
  trig_code_byte(s, c);
  trig_py_byte(s, c);
  if (trig_py_active(s))
    s->sent_code = true;
  bool prose = !s->in_fence && !was_in_fence;
  /* Sentence ends: a newline, or whitespace after . ! ? (so "cp.async" and
   * "3.5" do not end one). A colon or semicolon ends one only at the line's
   * end: "The reduction uses warp shuffles: X within a warp, then Y." is one
   * decision, not two. */
  bool ends = prose && (c == '\n' || (is_ws(c) && s->term_pending &&
                                      s->term_char != ':' && s->term_char != ';'));
  /* The sentence's text takes the byte before the matcher sees it, so the
   * text reported for a match includes the match's last byte. */
  if (prose && !ends)
    trig_sentence_byte(s, c);
  trig_normalise(s, c);
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

/* Plain prose: outside fences, code and Python, mid-line, no UTF-8
 * sequence pending. There a letter only extends the identifier, the
 * sentence and the keyword automaton's walk (the line and Python machines
 * ignore it, and it ends no sentence), and a space only ends the
 * identifier besides (which may start a signature), so a run of them
 * takes trig_prose_run's short path: most of a reasoning trace's bytes. */
static inline bool prose_idle(const sg_scanner *s) {
  return s->line == LINE_REST && !s->in_fence && s->code == CODE_IDLE &&
         s->u8_pend == 0 && s->py.state == PY_IDLE && !s->py.in_logical &&
         !s->py.bol;
}

void trig_scanner_set_reference(sg_scanner *s, bool on) { s->reference = on; }

void sg_scanner_feed(sg_scanner *s, const char *data, size_t len,
                     sg_trigger_cb cb, void *user) {
  s->cb = cb;
  s->user = user;
  const unsigned char *p = (const unsigned char *)data;
  for (size_t i = 0; i < len;) {
    if ((trig_is_letter(p[i]) || p[i] == ' ') && !s->reference && prose_idle(s)) {
      size_t k = trig_prose_run(s, p + i, len - i);
      i += k;
      if (k > 0)
        continue;
    }
    scan_byte(s, p[i]);
    s->off++;
    i++;
  }
  s->cb = NULL;
  s->user = NULL;
}

void sg_scanner_finish(sg_scanner *s, sg_trigger_cb cb, void *user) {
  s->cb = cb;
  s->user = user;
  /* Offsets of end-of-text triggers are the text's length: sentence_end
   * reports one past the current byte, and here there is none. */
  if (s->off > 0) {
    s->off--;
    trig_normalise_finish(s);
    trig_py_finish(s);
    if (s->in_fence)
      trig_fence_finish(s);
    else
      sentence_end(s);
    s->off++;
  }
  s->u8_pend = 0;
  s->cb = NULL;
  s->user = NULL;
}
