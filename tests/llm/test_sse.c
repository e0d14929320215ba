/* test_sse.c: the SSE parser gives the same events whatever the split.
 *
 * Every case is fed whole, in every fixed chunk size from 1 byte to whole,
 * and in 200 seeded random splits; every piece is copied into its own
 * malloc'd buffer of exactly its size, so a read past the end crashes under
 * ASan (docs/style.md rule 15).
 */
#include "llm/sg_sse.h"
#include "sg_test.h"

#include "common/sg_buf.h"
#include "common/sg_rng.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct sse_case {
  const char *name;
  const char *input;
  size_t len;        /* 0: strlen(input) */
  const char *want;  /* events as "event|id|data" lines joined by ';' */
  uint64_t comments;
} sse_case;

/* data may hold '\n'; shown as '\n' in want via the C string itself. */
static const sse_case k_cases[] = {
    {"lf", "data: hello\n\n", 0, "|||hello;", 0},
    {"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", 0, "|||a;|||b;", 0},
    {"cr", "data: a\r\rdata: b\r\r", 0, "|||a;|||b;", 0},
    {"mixed_ends", "data: a\r\ndata: b\rdata: c\n\r\n", 0, "|||a\nb\nc;", 0},
    {"comment", ": keep-alive\n\ndata: x\n\n: ping\r\n", 0, "|||x;", 2},
    {"multiline", "data: a\ndata: b\ndata:\ndata: d\n\n", 0, "|||a\nb\n\nd;", 0},
    {"event_and_id", "event: delta\nid: 7\ndata: x\n\ndata: y\n\n", 0,
     "delta|7||x;|7||y;", 0},
    {"bom", "\xEF\xBB\xBF" "data: x\n\n", 0, "|||x;", 0},
    {"bom_only_at_start", "data: x\n\n\xEF\xBB\xBF" "data: y\n\n", 0, "|||x;", 0},
    {"not_a_bom", "\xEF" "data: x\n\ndata: y\n\n", 0, "|||y;", 0},
    {"done", "data: {\"a\":1}\n\ndata: [DONE]\n\n", 0, "|||{\"a\":1};|||[DONE];", 0},
    {"no_space", "data:x\n\ndata:  y\n\n", 0, "|||x;||| y;", 0},
    {"field_without_colon", "data\n\n", 0, "|||;", 0},
    {"event_without_data_dropped", "event: foo\n\ndata: x\n\n", 0, "|||x;", 0},
    {"incomplete_event_kept_back", "data: x\n\ndata: y\n", 0, "|||x;", 0},
    {"unknown_field_ignored", "foo: bar\ndata: x\n\n", 0, "|||x;", 0},
    {"colon_in_value", "data: {\"k\": \"a:b\"}\n\n", 0, "|||{\"k\": \"a:b\"};", 0},
    {"nul_in_data", "data: a\0b\n\n", 11, "|||a\0b;", 0},
    {"openai_stream",
     ": ping\n\n"
     "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"think\"}}]}\n\n"
     "data: {\"choices\":[{\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\r\n\r\n"
     "data: [DONE]\n\n",
     0,
     "|||{\"choices\":[{\"delta\":{\"reasoning_content\":\"think\"}}]};"
     "|||{\"choices\":[{\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]};"
     "|||[DONE];",
     1},
};

typedef struct collected {
  sg_buf text;
  uint64_t comments;
  int64_t retry_ms;
  int rc; /* first error, 0 if none */
} collected;

/* Feeds input cut at the offsets in cuts[0..ncuts) (increasing). */
static void feed_split(const char *input, size_t len, const size_t *cuts,
                       size_t ncuts, size_t max_line, size_t max_event,
                       collected *out) {
  sg_sse p;
  sg_sse_init(&p, max_line, max_event);
  sg_buf_init(&out->text, 0);
  out->rc = 0;
  size_t start = 0;
  for (size_t k = 0; k <= ncuts && out->rc == 0; k++) {
    size_t end = k < ncuts ? cuts[k] : len;
    size_t n = end - start;
    /* Exactly n bytes, so an over-read leaves the allocation. */
    char *piece = malloc(n ? n : 1);
    memcpy(piece, input + start, n);
    const char *b = piece;
    size_t left = n;
    for (int guard = 0; guard < 100000; guard++) {
      size_t used = 0;
      sg_sse_event ev;
      sg_err err;
      sg_err_clear(&err);
      int rc = sg_sse_feed(&p, b, left, &used, &ev, &err);
      SG_CHECK(used <= left);
      if (rc < 0) {
        out->rc = rc;
        SG_CHECK(err.code == rc);
        break;
      }
      b += used;
      left -= used;
      if (rc == SG_SSE_EVENT) {
        sg_buf_printf(&out->text, "%s|%s||", ev.event, ev.id);
        sg_buf_append(&out->text, ev.data, ev.data_len);
        SG_CHECK(ev.data[ev.data_len] == '\0');
        sg_buf_puts(&out->text, ";");
      } else {
        SG_CHECK_EQ_INT(left, 0);
        break;
      }
    }
    free(piece);
    start = end;
  }
  out->comments = p.comments;
  out->retry_ms = p.retry_ms;
  sg_sse_free(&p);
}

static size_t case_len(const sse_case *c) {
  return c->len ? c->len : strlen(c->input);
}

/* want is given as a C string; cases with NUL use explicit lengths. */
static void expect(const sse_case *c, const collected *got, const char *how) {
  size_t wlen = strlen(c->want);
  if (strcmp(c->name, "nul_in_data") == 0)
    wlen = 7;
  SG_CHECK_MSG(got->rc == 0, "case %s (%s): error %d", c->name, how, got->rc);
  SG_CHECK_MSG(got->text.len == wlen &&
                   memcmp(sg_buf_str(&got->text), c->want, wlen) == 0,
               "case %s (%s): got '%s' want '%s'", c->name, how,
               sg_buf_str(&got->text), c->want);
  SG_CHECK_MSG(got->comments == c->comments,
               "case %s (%s): %llu comments, want %llu", c->name, how,
               (unsigned long long)got->comments,
               (unsigned long long)c->comments);
}

static void test_sse_whole_input(void) {
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
    collected got;
    feed_split(k_cases[i].input, case_len(&k_cases[i]), NULL, 0, 0, 0, &got);
    expect(&k_cases[i], &got, "whole");
    sg_buf_free(&got.text);
  }
}

static void test_sse_every_chunk_size(void) {
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
    size_t len = case_len(&k_cases[i]);
    size_t *cuts = malloc((len + 1) * sizeof *cuts);
    for (size_t chunk = 1; chunk <= len; chunk++) {
      size_t n = 0;
      for (size_t at = chunk; at < len; at += chunk)
        cuts[n++] = at;
      collected got;
      feed_split(k_cases[i].input, len, cuts, n, 0, 0, &got);
      char how[32];
      snprintf(how, sizeof how, "chunk %zu", chunk);
      expect(&k_cases[i], &got, how);
      sg_buf_free(&got.text);
    }
    free(cuts);
  }
}

static void test_sse_random_splits_seeded(void) {
  sg_rng g;
  sg_rng_seed(&g, 0x5eed5eedULL);
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
    size_t len = case_len(&k_cases[i]);
    size_t *cuts = malloc((len + 1) * sizeof *cuts);
    for (int round = 0; round < 200; round++) {
      size_t n = 0, at = 0;
      while (1) {
        at += 1 + sg_rng_next(&g) % 7;
        if (at >= len)
          break;
        cuts[n++] = at;
      }
      collected got;
      feed_split(k_cases[i].input, len, cuts, n, 0, 0, &got);
      char how[64];
      snprintf(how, sizeof how, "random round %d", round);
      expect(&k_cases[i], &got, how);
      sg_buf_free(&got.text);
    }
    free(cuts);
  }
}

static void test_sse_crlf_split_across_reads_is_one_line_end(void) {
  /* "data: a\r" | "\ndata: b\r" | "\n\r" | "\n": one event "a\nb". */
  const char *in = "data: a\r\ndata: b\r\n\r\n";
  size_t cuts[] = {8, 17, 19};
  collected got;
  feed_split(in, strlen(in), cuts, 3, 0, 0, &got);
  SG_CHECK_EQ_INT(got.rc, 0);
  SG_CHECK_STR_EQ(sg_buf_str(&got.text), "|||a\nb;");
  sg_buf_free(&got.text);
}

static void test_sse_retry_field_recorded(void) {
  collected got;
  const char *in = "retry: 1500\nretry: x1\ndata: a\n\n";
  feed_split(in, strlen(in), NULL, 0, 0, 0, &got);
  SG_CHECK_EQ_INT(got.retry_ms, 1500);
  SG_CHECK_STR_EQ(sg_buf_str(&got.text), "|||a;");
  sg_buf_free(&got.text);
}

static void test_sse_line_over_cap_is_error(void) {
  /* 64-byte line cap; a 100-byte line fails at every split. */
  char in[128];
  memcpy(in, "data: ", 6);
  memset(in + 6, 'x', 100);
  memcpy(in + 106, "\n\n", 2);
  for (size_t chunk = 1; chunk <= 108; chunk += 7) {
    size_t cuts[128], n = 0;
    for (size_t at = chunk; at < 108; at += chunk)
      cuts[n++] = at;
    collected got;
    feed_split(in, 108, cuts, n, 64, 0, &got);
    SG_CHECK_EQ_INT(got.rc, SG_EFULL);
    SG_CHECK_EQ_INT(got.text.len, 0);
    sg_buf_free(&got.text);
  }
}

static void test_sse_event_over_cap_is_error(void) {
  /* Short lines, but their data adds up past a 40-byte event cap. */
  const char *in = "data: 0123456789\ndata: 0123456789\ndata: 0123456789\n"
                   "data: 0123456789\n\n";
  collected got;
  feed_split(in, strlen(in), NULL, 0, 64, 40, &got);
  SG_CHECK_EQ_INT(got.rc, SG_EFULL);
  sg_buf_free(&got.text);
  /* Under the cap, fine. */
  feed_split(in, strlen(in), NULL, 0, 64, 44, &got);
  SG_CHECK_EQ_INT(got.rc, 0);
  sg_buf_free(&got.text);
}

static void test_sse_error_is_sticky(void) {
  sg_sse p;
  sg_sse_init(&p, 8, 0);
  sg_err err;
  size_t used;
  sg_sse_event ev;
  SG_CHECK_EQ_INT(sg_sse_feed(&p, "data: 123456789\n", 16, &used, &ev, &err),
                  SG_EFULL);
  SG_CHECK_CONTAINS(err.msg, "line longer than 8 bytes");
  SG_CHECK_EQ_INT(sg_sse_feed(&p, "data: x\n\n", 9, &used, &ev, &err), SG_EFULL);
  SG_CHECK_EQ_INT(used, 0);
  sg_sse_free(&p);
}

static void test_sse_reset_starts_a_fresh_stream(void) {
  sg_sse p;
  sg_sse_init(&p, 0, 0);
  sg_err err;
  size_t used;
  sg_sse_event ev;
  SG_CHECK_EQ_INT(sg_sse_feed(&p, "id: 3\ndata: half", 16, &used, &ev, &err), 0);
  sg_sse_reset(&p);
  const char *in = "\xEF\xBB\xBF" "data: new\n\n";
  SG_CHECK_EQ_INT(sg_sse_feed(&p, in, strlen(in), &used, &ev, &err), SG_SSE_EVENT);
  SG_CHECK_STR_EQ(ev.data, "new");
  SG_CHECK_STR_EQ(ev.id, "");
  sg_sse_free(&p);
}

static void test_sse_event_returns_before_rest_of_input(void) {
  sg_sse p;
  sg_sse_init(&p, 0, 0);
  sg_err err;
  size_t used;
  sg_sse_event ev;
  const char *in = "data: a\n\ndata: b\n\n";
  SG_CHECK_EQ_INT(sg_sse_feed(&p, in, strlen(in), &used, &ev, &err), SG_SSE_EVENT);
  SG_CHECK_EQ_INT(used, 9);
  SG_CHECK_STR_EQ(ev.data, "a");
  SG_CHECK_EQ_INT(sg_sse_feed(&p, in + used, strlen(in) - used, &used, &ev, &err),
                  SG_SSE_EVENT);
  SG_CHECK_STR_EQ(ev.data, "b");
  SG_CHECK_EQ_INT(p.events, 2);
  sg_sse_free(&p);
}

SG_TEST_MAIN(SG_TEST(test_sse_whole_input), SG_TEST(test_sse_every_chunk_size),
             SG_TEST(test_sse_random_splits_seeded),
             SG_TEST(test_sse_crlf_split_across_reads_is_one_line_end),
             SG_TEST(test_sse_retry_field_recorded),
             SG_TEST(test_sse_line_over_cap_is_error),
             SG_TEST(test_sse_event_over_cap_is_error),
             SG_TEST(test_sse_error_is_sticky),
             SG_TEST(test_sse_reset_starts_a_fresh_stream),
             SG_TEST(test_sse_event_returns_before_rest_of_input))
