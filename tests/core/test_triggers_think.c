/* test_triggers_think.c: reasoning that arrives inline in the content,
 * between <think> and </think>, is scanned exactly as a separate reasoning
 * field is.
 *
 * The chunk interpreter's splitter (sg_llm_think, src/llm/sg_llm_chunk.h)
 * turns such content back into reasoning pieces; the controller feeds those
 * pieces to its scanner as it feeds a reasoning field's. Here the content of
 * a whole response is cut into chunks of every size and at seeded random
 * points, split, and the reasoning pieces are fed to a scanner: the triggers
 * (class, offset, text) must equal those of the reasoning text fed directly,
 * so a fork's prefix means the same bytes on both kinds of server.
 */
#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "common/sg_rng.h"
#include "core/sg_triggers.h"
#include "llm/sg_llm_chunk.h"
#include "sg_test.h"
#include "trig_harness.h"

#include <stdlib.h>
#include <string.h>

typedef struct sink {
  sg_scanner *s;
  result *r;
  size_t content_bytes;
} sink;

static void collect(void *user, const sg_trigger *t) {
  result *r = user;
  SG_CHECK(r->n < MAX_TRIGGERS);
  r->t[r->n++] = *t;
}

static void on_piece(void *data, bool reasoning, const char *text, size_t len) {
  sink *k = data;
  if (reasoning)
    sg_scanner_feed(k->s, text, len, collect, k->r);
  else
    k->content_bytes += len;
}

/* chunk 0: seeded random pieces. */
static void scan_inline(const char *content, size_t len, size_t chunk,
                        uint64_t seed, result *r, size_t *content_bytes) {
  memset(r, 0, sizeof *r);
  sink k = {sg_scanner_new(NULL), r, 0};
  sg_llm_think th;
  sg_llm_think_init(&th, SG_LLM_THINK_DETECT);
  sg_rng g;
  sg_rng_seed(&g, seed);
  for (size_t i = 0; i < len;) {
    size_t n = chunk;
    if (n == 0)
      n = 1 + (size_t)(sg_rng_next(&g) % 61);
    if (n > len - i)
      n = len - i;
    char *piece = sg_malloc(n);
    memcpy(piece, content + i, n);
    sg_llm_think_feed(&th, piece, n, on_piece, &k);
    free(piece);
    i += n;
  }
  sg_llm_think_flush(&th, on_piece, &k);
  sg_scanner_finish(k.s, collect, r);
  sg_scanner_free(k.s);
  *content_bytes = k.content_bytes;
}

static void check_trace(const char *path) {
  char *reasoning = NULL;
  size_t rlen = 0;
  sg_err err;
  SG_CHECK_OK(sg_file_read(path, 1 << 20, &reasoning, &rlen, &err), err);
  result *direct = sg_malloc(sizeof *direct);
  trig_run(reasoning, rlen, NULL, rlen ? rlen : 1, 0, direct);
  SG_CHECK_MSG(direct->n > 2, "%s: a trace with triggers", path);
  const char *answer = "\n\nHere is the final kernel:\n\n```python\nx = 1\n```\n";
  char *content = sg_asprintf("\n<think>%s</think>%s", reasoning, answer);
  size_t clen = strlen(content);
  result *in = sg_malloc(sizeof *in);
  for (size_t chunk = 0; chunk < 64; chunk++) {
    for (uint64_t seed = 1; seed <= (chunk == 0 ? 8u : 1u); seed++) {
      size_t cb = 0;
      scan_inline(content, clen, chunk, seed, in, &cb);
      if (!trig_same(direct, in)) {
        trig_dump("direct", direct);
        trig_dump("inline", in);
        SG_FAIL("%s: chunk %zu seed %llu: inline reasoning scans differently",
                path, chunk, (unsigned long long)seed);
      }
      SG_CHECK_EQ_INT(cb, strlen(answer));  /* the answer is content only */
    }
  }
  free(content);
  free(in);
  free(direct);
  free(reasoning);
}

static void test_inline_think_scans_like_a_reasoning_field(void) {
  check_trace(SG_SOURCE_ROOT "/tests/core/data/triggers/matmul_cuda.txt");
  check_trace(SG_SOURCE_ROOT "/tests/core/data/triggers/softmax_kernelbench.txt");
  check_trace(SG_SOURCE_ROOT "/corpus/triggers/synthetic-heldout/r1-000.txt");
}

SG_TEST_MAIN(SG_TEST(test_inline_think_scans_like_a_reasoning_field))
