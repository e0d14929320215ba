/* test_fakemodel.c: the test server's model of a reasoning LLM (pure):
 * tokenizer, prefix cache, task choice, traces, validity calibration. */
#include "common/sg_alloc.h"
#include "core/sg_extract.h"
#include "core/sg_triggers.h"
#include "testserver/sg_fakemodel.h"
#include "sg_test.h"

#include <ctype.h>
#include <stdint.h>

/* ---- fixtures ---- */

static char *dupe(const char *s) { return sg_strdup(s); }

static void add_example(sg_fm_task *t, const char *status, const char *label,
                        const char *code) {
  t->examples = sg_realloc(t->examples, (t->nexamples + 1) * sizeof *t->examples);
  sg_fm_example *e = &t->examples[t->nexamples++];
  e->status = dupe(status);
  e->label = dupe(label);
  e->code = dupe(code);
}

static void make_task(sg_fm_task *t, const char *name, const char *entry) {
  memset(t, 0, sizeof *t);
  t->name = dupe(name);
  t->evaluator = dupe("cpu");
  t->language = dupe("c");
  t->description = dupe("a matrix product of two square matrices");
  t->entry = dupe(entry);
  t->signature = sg_asprintf("void %s(const float *a, const float *b, float *c, int n)", entry);
  t->nargs = 2;
  t->args = sg_calloc(2, sizeof *t->args);
  t->args[0].name = dupe("a");
  t->args[0].kind = dupe("input");
  t->args[0].dtype = dupe("float32");
  t->args[0].ndims = 2;
  t->args[0].shape[0] = t->args[0].shape[1] = 512;
  t->args[1].name = dupe("n");
  t->args[1].kind = dupe("scalar");
  t->args[1].dtype = dupe("int32");
  t->args[1].value = 512;
  char *ok = sg_asprintf("void %s(const float *a, const float *b, float *c, int n) {\n"
                         "  /* fast */\n  for (int i = 0; i < n; i++)\n    c[i] = a[i];\n}\n",
                         entry);
  add_example(t, "ok", "fast", ok);
  free(ok);
  add_example(t, "ok", "reference", "void ref(void) { /* slow */ }\n");
  add_example(t, "compile_error", "syntax", "void broken( {\n");
  add_example(t, "numerical_error", "off_by_one", "void off(void) { /* wrong */ }\n");
  add_example(t, "runtime_error", "segv", "void segv(void) { *(int *)0 = 1; }\n");
}

/* A model over three tasks; the caller frees it. */
static sg_fakemodel *make_model(uint64_t seed, int rmin, int rmax) {
  sg_fm_task *tasks = sg_calloc(3, sizeof *tasks);
  make_task(&tasks[0], "diag_matmul", "diag_matmul");
  make_task(&tasks[1], "matmul_transposed_a", "matmul_ta");
  make_task(&tasks[2], "hinge_loss", "hinge_loss_kernel");
  sg_fm_params p;
  sg_fm_params_init(&p);
  if (rmin) {
    p.reasoning_tokens_min = rmin;
    p.reasoning_tokens_max = rmax;
  }
  return sg_fakemodel_new(&p, seed, tasks, 3);
}

static char *context_for(int i) {
  return sg_asprintf("<|im_start|>user\nWrite a fast diag_matmul kernel (attempt %d)."
                     "<|im_end|>\n<|im_start|>assistant\n<think>\n",
                     i);
}

/* ---- tokenizer ---- */

static void tokenize_round_trips_any_text(void) {
  const char *texts[] = {
      "", "a", "Hello world", "  indented\n\n\n\ncode\t\t\ttabs", "x = a[i] * b[k*n+j];",
      "Unicode: caf\xc3\xa9 \xe2\x9c\x93 done.", "64x64 tiles, 4096 threads",
      "```c\nvoid f(void) {}\n```\n",
  };
  for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
    const char *t = texts[k];
    size_t len = strlen(t);
    size_t n = sg_fm_tokenize(t, len, NULL, NULL, 0);
    int32_t *ids = sg_malloc((n + 1) * sizeof *ids);
    size_t *ends = sg_malloc((n + 1) * sizeof *ends);
    SG_CHECK_EQ_INT(sg_fm_tokenize(t, len, ids, ends, n), n);
    sg_buf b;
    sg_buf_init(&b, 0);
    sg_err err;
    SG_CHECK_OK(sg_fm_detokenize(ids, n, &b, &err), err);
    SG_CHECK_STR_EQ(sg_buf_str(&b), t);
    size_t prev = 0;
    for (size_t i = 0; i < n; i++) {
      SG_CHECK(ends[i] > prev && ends[i] - prev <= SG_FM_PIECE_MAX);
      char piece[SG_FM_PIECE_MAX];
      size_t pl = sg_fm_token_piece(ids[i], piece);
      SG_CHECK_EQ_INT(pl, ends[i] - prev);
      SG_CHECK(memcmp(piece, t + prev, pl) == 0);
      prev = ends[i];
    }
    SG_CHECK_EQ_INT(prev, len);
    sg_buf_free(&b);
    free(ids);
    free(ends);
  }
}

static void tokenize_cuts_at_word_boundaries(void) {
  const char *t = "Hello world, 64x64";
  size_t ends[32];
  size_t n = sg_fm_tokenize(t, strlen(t), NULL, ends, 32);
  /* "Hel" "lo" " wo" "rld" "," " 64" "x64" */
  const char *want[] = {"Hel", "lo", " wo", "rld", ",", " 64", "x64"};
  SG_CHECK_EQ_INT(n, 7);
  size_t prev = 0;
  for (size_t i = 0; i < n; i++) {
    SG_CHECK_EQ_INT(ends[i] - prev, strlen(want[i]));
    SG_CHECK(memcmp(t + prev, want[i], strlen(want[i])) == 0);
    prev = ends[i];
  }
  /* Writing at most max ids still counts them all. */
  int32_t ids[2];
  SG_CHECK_EQ_INT(sg_fm_tokenize(t, strlen(t), ids, NULL, 2), 7);
}

static void token_ids_outside_the_vocabulary_are_rejected(void) {
  char piece[SG_FM_PIECE_MAX];
  SG_CHECK_EQ_INT(sg_fm_token_piece(0, piece), 0);
  SG_CHECK_EQ_INT(sg_fm_token_piece(-5, piece), 0);
  SG_CHECK_EQ_INT(sg_fm_token_piece(0x00616263, piece), 0);       /* length 0 */
  SG_CHECK_EQ_INT(sg_fm_token_piece(0x04616263, piece), 0);       /* length 4 */
  SG_CHECK_EQ_INT(sg_fm_token_piece(0x01610063, piece), 0);       /* unused byte set */
  SG_CHECK_EQ_INT(sg_fm_token_piece(0x02006100, piece), 0);       /* used byte NUL */
  SG_CHECK_EQ_INT(sg_fm_token_piece(0x02616200, piece), 2);
  SG_CHECK(piece[0] == 'a' && piece[1] == 'b');
  int32_t ids[3] = {0x02616200, 7, 0x01610000};
  sg_buf b;
  sg_buf_init(&b, 0);
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_EQ_INT(sg_fm_detokenize(ids, 3, &b, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "index 1");
  sg_buf_free(&b);
}

/* ---- prefix cache ---- */

static void cache_counts_whole_blocks_of_the_longest_common_prefix(void) {
  sg_fm_cache *c = sg_fm_cache_new(4);
  int32_t a[100], b[100];
  for (int i = 0; i < 100; i++)
    a[i] = b[i] = 0x01610000 + i;
  SG_CHECK_EQ_INT(sg_fm_cache_lookup_insert(c, a, 100, NULL), 0); /* cold */
  b[40] = 7;                                                 /* diverges at 40 */
  SG_CHECK_EQ_INT(sg_fm_cache_lookup_insert(c, b, 100, NULL), 32);
  SG_CHECK_EQ_INT(sg_fm_cache_lookup_insert(c, a, 100, NULL), 96); /* 99 rounded down */
  SG_CHECK_EQ_INT(sg_fm_cache_lookup_insert(c, a, 33, NULL), 32);  /* at most n-1 = 32 */
  SG_CHECK_EQ_INT(sg_fm_cache_lookup_insert(c, a, 16, NULL), 0);   /* 15: no whole block */
  sg_fm_cache_free(c);
}

static void cache_holds_generated_tokens_after_their_prompt(void) {
  sg_fm_cache *c = sg_fm_cache_new(4);
  int32_t seq[200];
  for (int i = 0; i < 200; i++)
    seq[i] = 0x01610000 + i;
  uint64_t h;
  SG_CHECK_EQ_INT(sg_fm_cache_lookup_insert(c, seq, 50, &h), 0);
  sg_fm_cache_extend(c, h, seq + 50, 60); /* the generation so far */
  /* A fork: the prompt plus 100 generated tokens; 110 are known. */
  SG_CHECK_EQ_INT(sg_fm_cache_lookup_insert(c, seq, 150, NULL), 96);
  /* A forgotten prompt is not extended. */
  for (int k = 0; k < 4; k++)
    sg_fm_cache_lookup_insert(c, seq + 100, 10, NULL);
  sg_fm_cache_extend(c, h, seq + 110, 90);
  SG_CHECK_EQ_INT(sg_fm_cache_lookup_insert(c, seq, 200, NULL), 0);
  sg_fm_cache_free(c);
}

static void cache_forgets_the_oldest_prompt(void) {
  sg_fm_cache *c = sg_fm_cache_new(2);
  int32_t p[3][64];
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < 64; i++)
      p[k][i] = 0x01410000 + k * 1000 + i;
  sg_fm_cache_lookup_insert(c, p[0], 64, NULL);
  sg_fm_cache_lookup_insert(c, p[1], 64, NULL);
  SG_CHECK_EQ_INT(sg_fm_cache_lookup_insert(c, p[0], 64, NULL), 48); /* still there */
  sg_fm_cache_lookup_insert(c, p[2], 64, NULL);                      /* evicts p[1] */
  sg_fm_cache_lookup_insert(c, p[2], 64, NULL);                      /* evicts p[0] */
  SG_CHECK_EQ_INT(sg_fm_cache_lookup_insert(c, p[1], 64, NULL), 0);
  sg_fm_cache_free(c);
}

/* ---- task choice ---- */

static void picks_the_task_named_in_the_prompt(void) {
  sg_fakemodel *m = make_model(1, 0, 0);
  SG_CHECK_EQ_INT(sg_fakemodel_pick_task(m, "please optimize hinge_loss now"), 2);
  SG_CHECK_EQ_INT(sg_fakemodel_pick_task(m, "matmul_transposed_a, then diag_matmul"), 1);
  SG_CHECK_EQ_INT(sg_fakemodel_pick_task(m, "diag_matmul, then matmul_transposed_a"), 0);
  /* By entry when no name is there; whole words only. */
  SG_CHECK_EQ_INT(sg_fakemodel_pick_task(m, "implement matmul_ta( quickly"), 1);
  SG_CHECK_EQ_INT(sg_fakemodel_pick_task(m, "hinge_loss_v2 and xdiag_matmul"), -1);
  SG_CHECK_EQ_INT(sg_fakemodel_pick_task(m, "hello"), -1);
  sg_fakemodel_free(m);
  /* Same name on the CPU and in CUDA: the prompt's words decide. */
  sg_fm_task *tasks = sg_calloc(2, sizeof *tasks);
  make_task(&tasks[0], "hinge_loss", "hinge_loss");
  make_task(&tasks[1], "hinge_loss", "hinge_loss");
  free(tasks[1].evaluator);
  free(tasks[1].language);
  tasks[1].evaluator = dupe("cuda");
  tasks[1].language = dupe("cuda");
  m = sg_fakemodel_new(NULL, 1, tasks, 2);
  SG_CHECK_EQ_INT(sg_fakemodel_pick_task(m, "write hinge_loss in C"), 0);
  SG_CHECK_EQ_INT(sg_fakemodel_pick_task(m, "write a CUDA hinge_loss"), 1);
  SG_CHECK_EQ_INT(sg_fakemodel_pick_task(m, "a __global__ kernel for hinge_loss"), 1);
  sg_fakemodel_free(m);
}

/* ---- traces ---- */

static void trace_is_deterministic_and_varies_with_its_inputs(void) {
  sg_fakemodel *m = make_model(7, 0, 0), *m2 = make_model(8, 0, 0);
  char *ctx = context_for(1), *ctx2 = context_for(2);
  char *a = sg_fakemodel_trace(m, 0, ctx, 0);
  char *b = sg_fakemodel_trace(m, 0, ctx, 0);
  char *c = sg_fakemodel_trace(m, 0, ctx2, 0);
  char *d = sg_fakemodel_trace(m2, 0, ctx, 0);
  char *e = sg_fakemodel_trace(m, 0, ctx, 3);
  SG_CHECK_STR_EQ(a, b);
  SG_CHECK(strcmp(a, c) != 0);
  SG_CHECK(strcmp(a, d) != 0);
  SG_CHECK(strcmp(a, e) != 0);
  free(a), free(b), free(c), free(d), free(e), free(ctx), free(ctx2);
  sg_fakemodel_free(m);
  sg_fakemodel_free(m2);
}

static void trace_length_follows_the_token_range(void) {
  sg_fakemodel *m = make_model(3, 300, 500);
  for (int i = 0; i < 40; i++) {
    char *ctx = context_for(i);
    char *t = sg_fakemodel_trace(m, 0, ctx, 0);
    size_t n = sg_fm_tokenize(t, strlen(t), NULL, NULL, 0);
    /* The budget is checked between moves: a move (a draft, the plan and the
     * closing) may run past it by a few hundred tokens. */
    SG_CHECK_MSG(n >= 300 && n <= 500 + 600, "trace of %zu tokens", n);
    free(ctx);
    free(t);
  }
  sg_fakemodel_free(m);
  /* Long traces too (a real model's 20k-40k tokens), in linear time. */
  m = make_model(3, 40000, 40000);
  char *t = sg_fakemodel_trace(m, 0, "long", 0);
  size_t n = sg_fm_tokenize(t, strlen(t), NULL, NULL, 0);
  SG_CHECK_MSG(n >= 40000 && n <= 40600, "trace of %zu tokens", n);
  free(t);
  sg_fakemodel_free(m);
}

static bool icontains(const char *hay, const char *needle) {
  size_t nl = strlen(needle);
  for (const char *p = hay; *p; p++)
    if (strncasecmp(p, needle, nl) == 0)
      return true;
  return false;
}

static bool has_tile_size(const char *t) {
  for (const char *p = t; *p; p++)
    if (isdigit((unsigned char)p[0]) && p[1] && isdigit((unsigned char)p[1]) &&
        (p[2] == 'x') && isdigit((unsigned char)p[3]))
      return true;
  return false;
}

static void trace_reads_like_a_reasoning_model_writing_a_kernel(void) {
  sg_fakemodel *m = make_model(5, 0, 0);
  int with_correction = 0, with_noise_repeat = 0;
  char *seen_first = NULL;
  int distinct_openings = 0;
  for (int i = 0; i < 20; i++) {
    char *ctx = context_for(i);
    char *t = sg_fakemodel_trace(m, 0, ctx, 0);
    SG_CHECK_CONTAINS(t, "diag_matmul");
    SG_CHECK_CONTAINS(t, "[512, 512]");      /* shape analysis */
    /* a draft in a fenced block, labelled or not */
    SG_CHECK(strstr(t, "\n\n```c\n") != NULL || strstr(t, "\n\n```\n") != NULL);
    SG_CHECK(has_tile_size(t));              /* a tile decision, "64x64" */
    SG_CHECK(icontains(t, "let me implement") || icontains(t, "let me write") ||
             icontains(t, "i'll write") || icontains(t, "put it all together"));
    SG_CHECK(icontains(t, "plan:"));
    with_correction += icontains(t, "wait, ") || icontains(t, "actually no");
    with_noise_repeat += icontains(t, "Hmm.") || icontains(t, "to recap");
    /* fences are balanced */
    int fences = 0;
    for (const char *p = strstr(t, "```"); p; p = strstr(p + 3, "```"))
      fences++;
    SG_CHECK_MSG(fences % 2 == 0, "unbalanced fences in trace %d", i);
    char first[40];
    snprintf(first, sizeof first, "%s", t);
    if (!seen_first || strcmp(seen_first, first) != 0)
      distinct_openings++;
    free(seen_first);
    seen_first = sg_strdup(first);
    free(ctx);
    free(t);
  }
  free(seen_first);
  SG_CHECK(with_correction >= 10);
  SG_CHECK(with_noise_repeat >= 5);
  SG_CHECK(distinct_openings >= 5); /* phrasing varies */
  sg_fakemodel_free(m);
}

static void count_trigger(void *user, const sg_trigger *t) {
  int *counts = user;
  counts[t->cls]++;
}

/* The point of the test model: its traces must exercise specgen's trigger
 * scanner the way a reasoning model's do, every class of trigger included. */
static void traces_fire_every_class_of_trigger(void) {
  sg_fakemodel *m = make_model(37, 0, 0);
  int traces_with[SG_TRIGGER__COUNT] = {0};
  int n = 20;
  for (int i = 0; i < n; i++) {
    char *ctx = context_for(i);
    char *t = sg_fakemodel_trace(m, 0, ctx, 0);
    int counts[SG_TRIGGER__COUNT] = {0};
    /* Every trigger, without the scanner's storm guard: this is about what
     * the text holds, not about the scanner's debouncing policy. */
    sg_scanner_opts so;
    sg_scanner_opts_default(&so);
    so.min_gap_bytes = 0;
    sg_scanner *sc = sg_scanner_new(&so);
    /* fed in uneven pieces, as a stream arrives */
    size_t len = strlen(t);
    for (size_t off = 0; off < len;) {
      size_t k = 1 + (off * 7 + 3) % 23;
      if (k > len - off)
        k = len - off;
      sg_scanner_feed(sc, t + off, k, count_trigger, counts);
      off += k;
    }
    sg_scanner_finish(sc, count_trigger, counts);
    sg_scanner_free(sc);
    for (int c = 0; c < SG_TRIGGER__COUNT; c++)
      traces_with[c] += counts[c] > 0;
    free(t);
    free(ctx);
  }
  SG_CHECK_EQ_INT(traces_with[SG_TRIGGER_DESIGN], n);
  SG_CHECK_EQ_INT(traces_with[SG_TRIGGER_FENCE], n);
  SG_CHECK_EQ_INT(traces_with[SG_TRIGGER_PHRASE], n);
  /* Drafts are the first lines of an example: whole short ones are complete
   * kernels, cut ones are not. */
  SG_CHECK_MSG(traces_with[SG_TRIGGER_KERNEL] >= n / 2, "%d traces with a kernel",
               traces_with[SG_TRIGGER_KERNEL]);
  sg_fakemodel_free(m);
}

/* Whitespace-collapsed copies of the contents of the trace's blocks; the
 * number of distinct ones. */
static int distinct_blocks(const char *t, int *total) {
  char *seen[64];
  int n = 0;
  *total = 0;
  for (const char *p = strstr(t, "```"); p && n < 64;) {
    const char *body = strchr(p, '\n');
    const char *end = body ? strstr(body, "\n```") : NULL;
    if (!end)
      break;
    sg_buf b;
    sg_buf_init(&b, 0);
    bool sp = false;
    for (const char *q = body + 1; q < end; q++) {
      if (isspace((unsigned char)*q)) {
        sp = b.len > 0;
        continue;
      }
      if (sp)
        sg_buf_puts(&b, " ");
      sp = false;
      sg_buf_append(&b, q, 1);
    }
    char *s = sg_buf_steal(&b);
    bool dup = false;
    for (int i = 0; i < n && !dup; i++)
      dup = strcmp(seen[i], s) == 0;
    if (dup)
      free(s);
    else
      seen[n++] = s;
    (*total)++;
    p = strstr(end + 4, "```");
  }
  for (int i = 0; i < n; i++)
    free(seen[i]);
  return n;
}

/* Real traces revise their kernels: the whole kernel again with one line
 * changed and the same ending. Each revision is a new block, and the scanner
 * reports a fence for every distinct block, no more. */
static void traces_revise_drafts_and_each_revision_fires(void) {
  sg_fakemodel *m = make_model(43, 0, 0);
  int with_revision = 0;
  for (int i = 0; i < 30; i++) {
    char *ctx = context_for(i);
    char *t = sg_fakemodel_trace(m, 0, ctx, 0);
    int counts[SG_TRIGGER__COUNT] = {0};
    sg_scanner *sc = sg_scanner_new(NULL);
    sg_scanner_feed(sc, t, strlen(t), count_trigger, counts);
    sg_scanner_finish(sc, count_trigger, counts);
    sg_scanner_free(sc);
    int total = 0, distinct = distinct_blocks(t, &total);
    SG_CHECK_EQ_INT(counts[SG_TRIGGER_FENCE], distinct);
    with_revision += icontains(t, "let me fix the code:") ||
                     icontains(t, "here's the corrected kernel:") ||
                     icontains(t, "let me rewrite it:") || icontains(t, "revised code:") ||
                     icontains(t, "here's the updated version:");
    free(t);
    free(ctx);
  }
  SG_CHECK_MSG(with_revision >= 5, "%d traces with a revision", with_revision);
  sg_fakemodel_free(m);
}

static void answers_yield_a_candidate_to_extract(void) {
  sg_fakemodel *m = make_model(41, 40, 60);
  for (int i = 0; i < 30; i++) {
    char *ctx = context_for(i);
    sg_fm_request r = {.context = ctx, .prompt = ctx, .thinking = (i % 2) == 0};
    sg_fm_answer a;
    sg_fakemodel_generate(m, &r, &a);
    sg_extracted x;
    sg_extract_candidate(a.content, strlen(a.content), "c", "diag_matmul", &x);
    SG_CHECK_MSG(x.outcome == SG_EXTRACT_FOUND, "answer %d: %s", i,
                 sg_extract_outcome_name(x.outcome));
    sg_fm_answer_free(&a);
    free(ctx);
  }
  sg_fakemodel_free(m);
}

/* ---- answers and their validity ---- */

static bool is_valid(const sg_fm_answer *a) { return strcmp(a->status, "ok") == 0; }

static void thinking_answer_is_valid_about_38_percent_of_the_time(void) {
  sg_fakemodel *m = make_model(11, 40, 60);
  int valid = 0, fast = 0, n = 2000;
  for (int i = 0; i < n; i++) {
    char *ctx = context_for(i);
    sg_fm_request r = {.context = ctx, .prompt = ctx, .thinking = true};
    sg_fm_answer a;
    sg_fakemodel_generate(m, &r, &a);
    SG_CHECK_EQ_INT(a.task, 0);
    SG_CHECK(a.reasoning[0] != '\0');
    SG_CHECK_CONTAINS(a.content, "```c\n");
    valid += is_valid(&a);
    fast += is_valid(&a) && strcmp(a.label, "fast") == 0;
    sg_fm_answer_free(&a);
    free(ctx);
  }
  double rate = (double)valid / n;
  SG_CHECK_MSG(rate > 0.33 && rate < 0.44, "valid rate %.3f", rate);
  SG_CHECK(fast > valid / 3 && fast < valid); /* both fast and slow valid kernels */
  sg_fakemodel_free(m);
}

/* The fraction of thinking-off answers that are valid when the prompt holds
 * the first `frac` of the trace. */
static double valid_rate_with_prefix(sg_fakemodel *m, double frac, int n) {
  int valid = 0;
  for (int i = 0; i < n; i++) {
    char *ctx = context_for(i);
    char *trace = sg_fakemodel_trace(m, 0, ctx, 0);
    size_t cut = (size_t)(frac * (double)strlen(trace));
    char *prompt = sg_asprintf("%s%.*s\n</think>\n\n", ctx, (int)cut, trace);
    sg_fm_request r = {.context = ctx, .prompt = prompt, .thinking = false};
    sg_fm_answer a;
    sg_fakemodel_generate(m, &r, &a);
    SG_CHECK_STR_EQ(a.reasoning, "");
    /* At least the cut; a few bytes more when the text after it happens to
     * continue the trace. */
    double want = (double)cut / (double)strlen(trace);
    SG_CHECK_MSG(a.prefix_fraction >= want - 1e-12 &&
                     a.prefix_fraction <= want + 16.0 / (double)strlen(trace),
                 "f %.6f for a cut at %.6f", a.prefix_fraction, want);
    valid += is_valid(&a);
    sg_fm_answer_free(&a);
    free(prompt);
    free(trace);
    free(ctx);
  }
  return (double)valid / n;
}

static void thinking_off_without_the_prefix_is_rarely_valid(void) {
  sg_fakemodel *m = make_model(13, 40, 80);
  double r0 = valid_rate_with_prefix(m, 0.0, 400);
  SG_CHECK_MSG(r0 < 0.10, "valid rate %.3f at f=0", r0);
  sg_fakemodel_free(m);
}

static void thinking_off_with_the_whole_prefix_is_mostly_valid(void) {
  sg_fakemodel *m = make_model(13, 40, 80);
  double r1 = valid_rate_with_prefix(m, 1.0, 400);
  SG_CHECK_MSG(r1 > 0.80, "valid rate %.3f at f=1", r1);
  sg_fakemodel_free(m);
}

static void validity_rises_steeply_past_a_per_task_threshold(void) {
  sg_fakemodel *m = make_model(17, 40, 80);
  double thr = sg_fakemodel_threshold(m, 0);
  SG_CHECK(thr >= 0.14 && thr <= 0.70);
  double below = valid_rate_with_prefix(m, thr - 0.12 > 0 ? thr - 0.12 : 0, 300);
  double above = valid_rate_with_prefix(m, thr + 0.12 < 1 ? thr + 0.12 : 1, 300);
  SG_CHECK_MSG(below < 0.15 && above > 0.75, "below %.3f above %.3f (threshold %.3f)", below,
               above, thr);
  /* Monotone in f, floor at 0 and ceiling at 1. */
  double prev = -1;
  for (int k = 0; k <= 100; k++) {
    double p = sg_fakemodel_p_valid(m, 0, k / 100.0);
    SG_CHECK(p >= prev - 1e-12);
    prev = p;
  }
  SG_CHECK_NEAR(sg_fakemodel_p_valid(m, 0, 0), 0.02, 1e-9);
  SG_CHECK_NEAR(sg_fakemodel_p_valid(m, 0, 1), 0.97, 1e-9);
  /* Thresholds spread over [0.14, 0.70] across tasks and seeds. */
  double lo = 1, hi = 0;
  for (uint64_t seed = 0; seed < 200; seed++) {
    sg_fakemodel *ms = make_model(seed, 40, 80);
    for (int t = 0; t < 3; t++) {
      double x = sg_fakemodel_threshold(ms, t);
      SG_CHECK(x >= 0.14 && x <= 0.70);
      lo = x < lo ? x : lo;
      hi = x > hi ? x : hi;
    }
    sg_fakemodel_free(ms);
  }
  SG_CHECK(lo < 0.2 && hi > 0.64);
  sg_fakemodel_free(m);
}

static void prefix_fraction_finds_the_longest_prefix_anywhere(void) {
  const char *trace = "0123456789abcdefghijklmnopqrstuvwxyz";
  SG_CHECK_NEAR(sg_fm_prefix_fraction(trace, "nothing here"), 0, 1e-12);
  SG_CHECK_NEAR(sg_fm_prefix_fraction(trace, "xx0123456789abcdefghijklmnopqrstuvwxyzyy"), 1, 1e-12);
  SG_CHECK_NEAR(sg_fm_prefix_fraction(trace, "0123456789abcdefgh!! 0123456789abcdefghijklm"),
                23.0 / 36, 1e-12);
  SG_CHECK_NEAR(sg_fm_prefix_fraction(trace, "..0123456789abcde.."), 15.0 / 36 * 0, 1e-12);
  SG_CHECK_NEAR(sg_fm_prefix_fraction(trace, "..0123456789abcdef.."), 16.0 / 36, 1e-12);
  SG_CHECK_NEAR(sg_fm_prefix_fraction("short", "a short text"), 1, 1e-12);
  SG_CHECK_NEAR(sg_fm_prefix_fraction("", "x"), 0, 1e-12);
}

static void answers_are_deterministic_and_vary_with_the_request_id(void) {
  sg_fakemodel *m = make_model(21, 40, 60);
  char *ctx = context_for(0);
  sg_fm_request r = {.context = ctx, .prompt = ctx, .thinking = true, .sample_key = "rid-1"};
  sg_fm_answer a, b;
  sg_fakemodel_generate(m, &r, &a);
  sg_fakemodel_generate(m, &r, &b);
  SG_CHECK_STR_EQ(a.reasoning, b.reasoning);
  SG_CHECK_STR_EQ(a.content, b.content);
  sg_fm_answer_free(&b);
  /* Another id: another trace variant and another draw, as sampling gives. */
  int differ_content = 0, differ_trace = 0;
  for (int i = 0; i < 20; i++) {
    char key[16];
    snprintf(key, sizeof key, "rid-%d", i + 2);
    r.sample_key = key;
    sg_fakemodel_generate(m, &r, &b);
    differ_trace += strcmp(a.reasoning, b.reasoning) != 0;
    differ_content += strcmp(a.content, b.content) != 0;
    sg_fm_answer_free(&b);
  }
  SG_CHECK(differ_content >= 5);
  SG_CHECK(differ_trace >= 15);
  /* The request's seed picks the variant when given. */
  r.sample_key = NULL;
  r.has_seed = true;
  r.request_seed = 5;
  sg_fakemodel_generate(m, &r, &b);
  char *want = sg_fakemodel_trace(m, 0, ctx, sg_fakemodel_variant(&r));
  SG_CHECK_STR_EQ(b.reasoning, want);
  free(want);
  sg_fm_answer_free(&b);
  sg_fm_answer_free(&a);
  free(ctx);
  sg_fakemodel_free(m);
}

static void trace_variants_are_distinct(void) {
  sg_fakemodel *m = make_model(43, 100, 200);
  char *ctx = context_for(9);
  char *t[SG_FM_TRACE_VARIANTS];
  for (int v = 0; v < SG_FM_TRACE_VARIANTS; v++)
    t[v] = sg_fakemodel_trace(m, 0, ctx, v);
  int distinct = 0;
  for (int v = 0; v < SG_FM_TRACE_VARIANTS; v++) {
    bool seen = false;
    for (int u = 0; u < v; u++)
      seen = seen || strcmp(t[u], t[v]) == 0;
    distinct += !seen;
  }
  SG_CHECK_EQ_INT(distinct, SG_FM_TRACE_VARIANTS);
  for (int v = 0; v < SG_FM_TRACE_VARIANTS; v++)
    free(t[v]);
  free(ctx);
  sg_fakemodel_free(m);
}

/* A fork carries its own id or seed, not its parent's: it is still measured
 * against the trace it copies. */
static void forks_are_measured_against_the_trace_they_copy(void) {
  sg_fakemodel *m = make_model(47, 100, 200);
  char *ctx = context_for(4);
  sg_fm_request parent = {.context = ctx, .prompt = ctx, .thinking = true,
                          .sample_key = "parent-req"};
  sg_fm_answer a;
  sg_fakemodel_generate(m, &parent, &a);
  size_t half = strlen(a.reasoning) / 2;
  char *prompt = sg_asprintf("%s%.*s\n</think>\n\n", ctx, (int)half, a.reasoning);
  sg_fm_request fork = {.context = ctx, .prompt = prompt, .thinking = false,
                        .sample_key = "fork-3", .has_seed = true, .request_seed = 77};
  sg_fm_answer b;
  sg_fakemodel_generate(m, &fork, &b);
  SG_CHECK_EQ_INT(b.variant, a.variant);
  SG_CHECK_EQ_INT(b.trace_bytes, strlen(a.reasoning));
  SG_CHECK_NEAR(b.prefix_fraction, (double)half / (double)strlen(a.reasoning),
                16.0 / (double)strlen(a.reasoning));
  sg_fm_answer_free(&b);
  /* And a continuation (thinking on) resumes that trace. */
  char *prefix = sg_strndup(a.reasoning, half);
  sg_fm_request cont = {.context = ctx, .prompt = prompt, .thinking = true,
                        .sample_key = "cont-9", .reasoning_prefix = prefix};
  sg_fakemodel_generate(m, &cont, &b);
  SG_CHECK_STR_EQ(b.reasoning, a.reasoning + half);
  sg_fm_answer_free(&b);
  free(prefix);
  free(prompt);
  sg_fm_answer_free(&a);
  free(ctx);
  sg_fakemodel_free(m);
}

static void answer_holds_the_example_kernel_in_a_fenced_block(void) {
  sg_fakemodel *m = make_model(23, 40, 60);
  for (int i = 0; i < 50; i++) {
    char *ctx = context_for(i);
    sg_fm_request r = {.context = ctx, .prompt = ctx, .thinking = (i % 2) == 0};
    sg_fm_answer a;
    sg_fakemodel_generate(m, &r, &a);
    const sg_fm_task *t = sg_fakemodel_task(m, 0);
    const char *code = NULL;
    for (size_t k = 0; k < t->nexamples; k++)
      if (!strcmp(t->examples[k].status, a.status) && !strcmp(t->examples[k].label, a.label))
        code = t->examples[k].code;
    SG_CHECK(code != NULL);
    char *block = sg_asprintf("```c\n%s```", code);
    SG_CHECK_CONTAINS(a.content, block);
    free(block);
    sg_fm_answer_free(&a);
    free(ctx);
  }
  sg_fakemodel_free(m);
}

static void continued_reasoning_resumes_after_its_prefix(void) {
  sg_fakemodel *m = make_model(29, 100, 200);
  char *ctx = context_for(3);
  char *trace = sg_fakemodel_trace(m, 0, ctx, 0);
  size_t cut = strlen(trace) / 3;
  char *prefix = sg_strndup(trace, cut);
  char *prompt = sg_asprintf("%s%s", ctx, prefix);
  sg_fm_request r = {.context = ctx, .prompt = prompt, .thinking = true,
                     .reasoning_prefix = prefix};
  sg_fm_answer a;
  sg_fakemodel_generate(m, &r, &a);
  SG_CHECK_STR_EQ(a.reasoning, trace + cut);
  sg_fm_answer_free(&a);
  free(prompt);
  free(prefix);
  free(trace);
  free(ctx);
  sg_fakemodel_free(m);
}

/* refine_other: a prompt that shows one valid kernel gets the other, for
 * every draw; off (the default), the draw alone decides, and some prompts
 * showing a kernel get it back. */
static void refine_other_never_writes_back_the_kernel_shown(void) {
  for (int on = 0; on < 2; on++) {
    sg_fm_task *tasks = sg_calloc(1, sizeof *tasks);
    make_task(&tasks[0], "diag_matmul", "diag_matmul");
    sg_fm_params p;
    sg_fm_params_init(&p);
    SG_CHECK(!p.refine_other);
    p.p_valid_reasoning = 1.0;
    p.p_fast_given_valid = 0.5;
    p.refine_other = on;
    sg_fakemodel *m = sg_fakemodel_new(&p, 5, tasks, 1);
    const sg_fm_task *t = sg_fakemodel_task(m, 0);
    int back = 0;
    for (int i = 0; i < 40; i++) {
      const sg_fm_example *shown = &t->examples[i % 2]; /* ok fast, ok reference */
      char *ctx = sg_asprintf("Write a fast diag_matmul kernel (attempt %d).\nThe best kernel "
                              "so far:\n```c\n%s```\n",
                              i, shown->code);
      sg_fm_request r = {.context = ctx, .prompt = ctx, .thinking = true};
      sg_fm_answer a;
      sg_fakemodel_generate(m, &r, &a);
      SG_CHECK_STR_EQ(a.status, "ok");
      back += strcmp(a.label, shown->label) == 0;
      sg_fm_answer_free(&a);
      free(ctx);
    }
    if (on)
      SG_CHECK_EQ_INT(back, 0);
    else
      SG_CHECK_MSG(back > 5 && back < 35, "%d of 40 wrote back the kernel shown", back);
    sg_fakemodel_free(m);
  }
}

static void prompt_without_a_known_task_gets_an_explanation(void) {
  sg_fakemodel *m = make_model(31, 40, 60);
  sg_fm_request r = {.context = "hello", .prompt = "hello", .thinking = true};
  sg_fm_answer a;
  sg_fakemodel_generate(m, &r, &a);
  SG_CHECK_EQ_INT(a.task, -1);
  SG_CHECK(a.reasoning[0] != '\0');
  SG_CHECK_CONTAINS(a.content, "could not find a task");
  SG_CHECK_STR_EQ(a.status, "");
  sg_fm_answer_free(&a);
  sg_fakemodel_free(m);
}

SG_TEST_MAIN(SG_TEST(tokenize_round_trips_any_text), SG_TEST(tokenize_cuts_at_word_boundaries),
             SG_TEST(token_ids_outside_the_vocabulary_are_rejected),
             SG_TEST(cache_counts_whole_blocks_of_the_longest_common_prefix),
             SG_TEST(cache_holds_generated_tokens_after_their_prompt),
             SG_TEST(cache_forgets_the_oldest_prompt),
             SG_TEST(picks_the_task_named_in_the_prompt),
             SG_TEST(trace_is_deterministic_and_varies_with_its_inputs),
             SG_TEST(trace_length_follows_the_token_range),
             SG_TEST(trace_reads_like_a_reasoning_model_writing_a_kernel),
             SG_TEST(traces_fire_every_class_of_trigger),
             SG_TEST(traces_revise_drafts_and_each_revision_fires),
             SG_TEST(answers_yield_a_candidate_to_extract),
             SG_TEST(refine_other_never_writes_back_the_kernel_shown),
             SG_TEST(thinking_answer_is_valid_about_38_percent_of_the_time),
             SG_TEST(thinking_off_without_the_prefix_is_rarely_valid),
             SG_TEST(thinking_off_with_the_whole_prefix_is_mostly_valid),
             SG_TEST(validity_rises_steeply_past_a_per_task_threshold),
             SG_TEST(prefix_fraction_finds_the_longest_prefix_anywhere),
             SG_TEST(answers_are_deterministic_and_vary_with_the_request_id),
             SG_TEST(trace_variants_are_distinct),
             SG_TEST(forks_are_measured_against_the_trace_they_copy),
             SG_TEST(answer_holds_the_example_kernel_in_a_fenced_block),
             SG_TEST(continued_reasoning_resumes_after_its_prefix),
             SG_TEST(prompt_without_a_known_task_gets_an_explanation))
