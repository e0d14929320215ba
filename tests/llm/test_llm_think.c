/* test_llm_think.c: the inline <think> splitter, at every split.
 *
 * Every stream is fed whole, cut at every single byte position, cut at every
 * pair of positions (short streams), one byte at a time, and in seeded random
 * pieces; each piece lives in an exact-size heap buffer (an over-read crashes
 * under ASan). The reasoning and content that come out must equal what a
 * plain whole-string reference computes. */
#include "llm/sg_llm_chunk.h"
#include "sg_test.h"

#include "common/sg_rng.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct out {
  char r[4096], c[4096];
  size_t nr, nc;
  int pieces;
  bool empty_piece;
} out;

static void sink(void *data, bool reasoning, const char *s, size_t n) {
  out *o = data;
  if (n == 0)
    o->empty_piece = true;
  char *dst = reasoning ? o->r : o->c;
  size_t *len = reasoning ? &o->nr : &o->nc;
  SG_CHECK(*len + n < sizeof o->r);
  memcpy(dst + *len, s, n);
  *len += n;
  dst[*len] = '\0';
  o->pieces++;
}

/* The reference: the same rules, on the whole string at once. */
static void reference(sg_llm_think_mode mode, const char *s, out *o) {
  memset(o, 0, sizeof *o);
  size_t n = strlen(s), i = 0;
  if (mode == SG_LLM_THINK_OFF) {
    memcpy(o->c, s, n);
    o->nc = n;
    return;
  }
  if (mode == SG_LLM_THINK_DETECT) {
    size_t w = strspn(s, " \t\r\n");
    if (w > SG_LLM_THINK_WS_MAX || strncmp(s + w, "<think>", 7) != 0) {
      memcpy(o->c, s, n);
      o->nc = n;
      return;
    }
    i = w + 7;
  }
  const char *end = strstr(s + i, "</think>");
  size_t rlen = end ? (size_t)(end - (s + i)) : n - i;
  memcpy(o->r, s + i, rlen);
  o->nr = rlen;
  if (end) {
    const char *after = end + 8;
    o->nc = strlen(after);
    memcpy(o->c, after, o->nc);
  }
}

/* Feeds s cut at the given positions (sorted, within 0..n). */
static void feed_cuts(sg_llm_think_mode mode, const char *s, const size_t *cuts,
                      int ncuts, out *o) {
  memset(o, 0, sizeof *o);
  sg_llm_think t;
  sg_llm_think_init(&t, mode);
  size_t n = strlen(s), at = 0;
  for (int k = 0; k <= ncuts; k++) {
    size_t to = k < ncuts ? cuts[k] : n;
    size_t len = to - at;
    char *piece = malloc(len ? len : 1);
    memcpy(piece, s + at, len);
    sg_llm_think_feed(&t, piece, len, sink, o);
    free(piece);
    at = to;
  }
  sg_llm_think_flush(&t, sink, o);
}

static void same(const out *got, const out *want, const char *s, const char *how) {
  SG_CHECK_MSG(!got->empty_piece, "empty piece emitted for '%s' (%s)", s, how);
  SG_CHECK_MSG(got->nr == want->nr && memcmp(got->r, want->r, want->nr) == 0,
               "reasoning '%s' != '%s' for '%s' (%s)", got->r, want->r, s, how);
  SG_CHECK_MSG(got->nc == want->nc && memcmp(got->c, want->c, want->nc) == 0,
               "content '%s' != '%s' for '%s' (%s)", got->c, want->c, s, how);
}

static void check_all_splits(sg_llm_think_mode mode, const char *s) {
  out want, got;
  reference(mode, s, &want);
  size_t n = strlen(s);
  feed_cuts(mode, s, NULL, 0, &got);
  same(&got, &want, s, "whole");
  for (size_t a = 0; a <= n; a++) {
    size_t cut[1] = {a};
    feed_cuts(mode, s, cut, 1, &got);
    same(&got, &want, s, "one cut");
    if (n <= 40)
      for (size_t b = a; b <= n; b++) {
        size_t cuts[2] = {a, b};
        feed_cuts(mode, s, cuts, 2, &got);
        same(&got, &want, s, "two cuts");
      }
  }
  size_t *every = malloc((n + 1) * sizeof *every);
  for (size_t i = 0; i < n; i++)
    every[i] = i + 1;
  feed_cuts(mode, s, every, n > 0 ? (int)n - 1 : 0, &got);
  same(&got, &want, s, "byte by byte");
  free(every);
}

static const char *const k_cases[] = {
    "",
    "<think>",
    "</think>",
    "<think></think>",
    "<think>plan the tiles</think>\n\n```cuda\n__global__ void k(){}\n```",
    "\n\n<think>\nLet me think.\n</think>\n\nanswer",
    "  <think>a < b and </thin k> and </th</think>x",
    "<think>a<</think>b",
    "<think>a<<//think></think>b",
    "<think>never closed <",
    "<think>partial close </thin",
    "<thin",
    "<thinking>not a tag</thinking>",
    "answer first <think>not reasoning</think>",
    "plain content, no tags at all",
    "x<think>y</think>",
    "<think>two</think>blocks<think>second</think>",
    "\t\r\n <think>ws kinds</think>",
    "<THINK>case</THINK>",
    "<think>\xe4\xb8\xad\xe6\x96\x87</think>\xf0\x9f\x98\x80",
};

static void test_think_detect_every_split(void) {
  for (size_t i = 0; i < sizeof k_cases / sizeof *k_cases; i++)
    check_all_splits(SG_LLM_THINK_DETECT, k_cases[i]);
}

static void test_think_open_every_split(void) {
  for (size_t i = 0; i < sizeof k_cases / sizeof *k_cases; i++)
    check_all_splits(SG_LLM_THINK_OPEN, k_cases[i]);
  /* The DeepSeek-R1 template shape: no opening tag in the output. */
  out got;
  feed_cuts(SG_LLM_THINK_OPEN, "Okay, tile it.\n</think>\n\ncode", NULL, 0, &got);
  SG_CHECK_STR_EQ(got.r, "Okay, tile it.\n");
  SG_CHECK_STR_EQ(got.c, "\n\ncode");
}

static void test_think_off_passes_through(void) {
  for (size_t i = 0; i < sizeof k_cases / sizeof *k_cases; i++)
    check_all_splits(SG_LLM_THINK_OFF, k_cases[i]);
}

static void test_think_known_answers(void) {
  out got;
  feed_cuts(SG_LLM_THINK_DETECT, "\n<think>\nplan\n</think>\n\nkernel", NULL, 0, &got);
  SG_CHECK_STR_EQ(got.r, "\nplan\n");
  SG_CHECK_STR_EQ(got.c, "\n\nkernel");
  feed_cuts(SG_LLM_THINK_DETECT, "no think here", NULL, 0, &got);
  SG_CHECK_STR_EQ(got.r, "");
  SG_CHECK_STR_EQ(got.c, "no think here");
  /* Whitespace beyond the cap: not a leading block. */
  char s[SG_LLM_THINK_WS_MAX + 40];
  memset(s, ' ', SG_LLM_THINK_WS_MAX + 1);
  strcpy(s + SG_LLM_THINK_WS_MAX + 1, "<think>x</think>");
  check_all_splits(SG_LLM_THINK_DETECT, s);
  feed_cuts(SG_LLM_THINK_DETECT, s, NULL, 0, &got);
  SG_CHECK_EQ_INT(got.nr, 0);
  memset(s, ' ', SG_LLM_THINK_WS_MAX);
  strcpy(s + SG_LLM_THINK_WS_MAX, "<think>x</think>");
  feed_cuts(SG_LLM_THINK_DETECT, s, NULL, 0, &got);
  SG_CHECK_STR_EQ(got.r, "x");
}

/* Content that is not a block streams through at once: nothing held back
 * once the first byte rules a tag out (a chat answer is not delayed). */
static void test_think_content_not_delayed(void) {
  out o;
  memset(&o, 0, sizeof o);
  sg_llm_think t;
  sg_llm_think_init(&t, SG_LLM_THINK_DETECT);
  sg_llm_think_feed(&t, "Hi", 2, sink, &o);
  SG_CHECK_STR_EQ(o.c, "Hi");
  /* Inside a block, only a possible tag start is held. */
  sg_llm_think_init(&t, SG_LLM_THINK_DETECT);
  memset(&o, 0, sizeof o);
  sg_llm_think_feed(&t, "<think>abc</th", 14, sink, &o);
  SG_CHECK_STR_EQ(o.r, "abc");
  SG_CHECK(sg_llm_think_inside(&t));
  sg_llm_think_feed(&t, "ink>", 4, sink, &o);
  SG_CHECK(!sg_llm_think_inside(&t));
  SG_CHECK(t.seen);
}

static void test_think_stop_releases_held_bytes(void) {
  out o;
  memset(&o, 0, sizeof o);
  sg_llm_think t;
  sg_llm_think_init(&t, SG_LLM_THINK_DETECT);
  sg_llm_think_feed(&t, "\n", 1, sink, &o);
  SG_CHECK_EQ_INT(o.nc, 0);
  sg_llm_think_stop(&t, sink, &o);
  SG_CHECK_STR_EQ(o.c, "\n");
  sg_llm_think_feed(&t, "<think>x", 8, sink, &o);
  SG_CHECK_STR_EQ(o.c, "\n<think>x");
  SG_CHECK_EQ_INT(o.nr, 0);
}

/* OPEN (prompted reasoning, R1 templates) and a server that splits the
 * opened block itself: its reasoning field comes first, and the content
 * after it is the answer, not more thinking. Once content was fed, the
 * block is the splitter's and stays open. */
static void test_think_open_stop_before_content(void) {
  out o;
  memset(&o, 0, sizeof o);
  sg_llm_think t;
  sg_llm_think_init(&t, SG_LLM_THINK_OPEN);
  SG_CHECK(sg_llm_think_inside(&t));
  sg_llm_think_stop(&t, sink, &o);
  SG_CHECK(!sg_llm_think_inside(&t));
  sg_llm_think_feed(&t, "```c\nint x;\n```", 16, sink, &o);
  SG_CHECK_STR_EQ(o.c, "```c\nint x;\n```");
  SG_CHECK_EQ_INT(o.nr, 0);
  memset(&o, 0, sizeof o);
  sg_llm_think_init(&t, SG_LLM_THINK_OPEN);
  sg_llm_think_feed(&t, "plan", 4, sink, &o);
  sg_llm_think_stop(&t, sink, &o);
  SG_CHECK(sg_llm_think_inside(&t));
  sg_llm_think_feed(&t, " more</think>ans", 16, sink, &o);
  SG_CHECK_STR_EQ(o.r, "plan more");
  SG_CHECK_STR_EQ(o.c, "ans");
}

/* Random strings over the tags' own alphabet, cut at random: the splitter
 * agrees with the reference on every one. */
static void test_think_random_against_reference(void) {
  static const char alpha[] = "<>/thinkx \n";
  sg_rng g;
  sg_rng_seed(&g, 0x2545f4914f6cdd1dULL);
  uint64_t x;
  for (int round = 0; round < 20000; round++) {
    char s[48];
    x = sg_rng_next(&g);
    size_t n = (size_t)(x % 40);
    /* Half of them start with a real opening tag. */
    size_t i = 0;
    if (x & (1u << 20)) {
      memcpy(s, "<think>", 7);
      i = 7;
    }
    for (; i < n; i++) {
      x = sg_rng_next(&g);
      s[i] = alpha[x % (sizeof alpha - 1)];
    }
    s[n > i ? n : i] = '\0';
    size_t len = strlen(s), cuts[6];
    int nc = 0;
    for (int k = 0; k < 6; k++) {
      x = sg_rng_next(&g);
      size_t c = len ? (size_t)(x % (len + 1)) : 0;
      if (nc == 0 || c >= cuts[nc - 1])
        cuts[nc++] = c;
    }
    for (int m = 0; m < 3; m++) {
      out want, got;
      reference((sg_llm_think_mode)m, s, &want);
      feed_cuts((sg_llm_think_mode)m, s, cuts, nc, &got);
      same(&got, &want, s, "random");
    }
  }
}

SG_TEST_MAIN(SG_TEST(test_think_detect_every_split), SG_TEST(test_think_open_every_split),
             SG_TEST(test_think_off_passes_through), SG_TEST(test_think_known_answers),
             SG_TEST(test_think_content_not_delayed),
             SG_TEST(test_think_stop_releases_held_bytes),
             SG_TEST(test_think_open_stop_before_content),
             SG_TEST(test_think_random_against_reference))
