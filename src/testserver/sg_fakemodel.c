/* sg_fakemodel.c: the model of a reasoning LLM writing kernels (see the
 * header and docs/test-server.md).
 *
 * Everything here is a pure function of (params, seed, tasks, request): the
 * random draws come from splitmix64 streams seeded by hashes of their inputs,
 * never from a global generator, so the server can call it from any thread
 * and a test can replay any answer.
 *
 * The reasoning trace is built from a bank of templates, move by move
 * (analysis, design decision, self-correction, draft, plan, noise, ...)
 * until its token budget is spent; the words of a move are chosen by the same
 * stream, so two contexts give two different traces. A trace depends only on
 * the seed, the task, the context (the prompt before the answer) and the
 * request's own seed: a fork that sends the same context plus a prefix of the
 * trace is therefore measured against the very trace it copies.
 *
 * The tokenizer and the prefix cache are in sg_fm_tokens.c, the answer in
 * sg_fm_answer.c. This file stays over 800 lines on purpose: most of it is
 * the template banks the traces are written from, read next to the writer
 * that uses them.
 */
#include "testserver/sg_fakemodel_priv.h"

#include "common/sg_alloc.h"
#include "common/sg_hash.h"
#include "common/sg_rng.h"
#include "eval/sg_eval.h"

#include <assert.h>
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Random streams and hashes                                                 */

/* A bare splitmix64 stream (common/sg_rng.h): one word of state, which the
 * model's many short-lived streams keep cheap. */
uint64_t sg_fm_mix(uint64_t a, uint64_t b) {
  uint64_t s = a ^ (b * 0xff51afd7ed558ccdULL);
  return sg_splitmix64(&s);
}

uint64_t sg_fm_hash_str(const char *s) {
  return s ? sg_fnv1a64(s, strlen(s)) : 0x9ae16a3b2f90404fULL;
}

static uint64_t rng_next(rng *r) { return sg_splitmix64(&r->s); }

double sg_fm_rng_unit(rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* Uniform in [0, n); n > 0. */
size_t sg_fm_rng_below(rng *r, size_t n) {
  assert(n > 0);
  return (size_t)(rng_next(r) % n);
}

static int rng_range(rng *r, int lo, int hi) {
  if (hi <= lo)
    return lo;
  return lo + (int)sg_fm_rng_below(r, (size_t)(hi - lo + 1));
}

/* ------------------------------------------------------------------------ */
/* Tasks                                                                     */

void sg_fm_task_clear(sg_fm_task *t) {
  if (!t)
    return;
  free(t->name);
  free(t->evaluator);
  free(t->language);
  free(t->description);
  free(t->entry);
  free(t->signature);
  for (size_t i = 0; i < t->nargs; i++) {
    free(t->args[i].name);
    free(t->args[i].kind);
    free(t->args[i].dtype);
  }
  free(t->args);
  for (size_t i = 0; i < t->nexamples; i++) {
    free(t->examples[i].status);
    free(t->examples[i].label);
    free(t->examples[i].code);
  }
  free(t->examples);
  memset(t, 0, sizeof *t);
}

/* ------------------------------------------------------------------------ */
/* The model                                                                 */

void sg_fm_params_init(sg_fm_params *p) {
  p->reasoning_tokens_min = 600;
  p->reasoning_tokens_max = 1800;
  p->p_valid_reasoning = 0.385;
  p->p_fast_given_valid = 0.6;
  p->p_valid_floor = 0.02;
  p->p_valid_ceil = 0.97;
  p->threshold_min = 0.14;
  p->threshold_max = 0.70;
  p->threshold_width = 0.03;
  p->refine_other = false;
}

sg_fakemodel *sg_fakemodel_new(const sg_fm_params *params, uint64_t seed,
                               sg_fm_task *tasks, size_t ntasks) {
  sg_fakemodel *m = sg_calloc(1, sizeof *m);
  if (params)
    m->p = *params;
  else
    sg_fm_params_init(&m->p);
  if (m->p.reasoning_tokens_min < 16)
    m->p.reasoning_tokens_min = 16;
  if (m->p.reasoning_tokens_max < m->p.reasoning_tokens_min)
    m->p.reasoning_tokens_max = m->p.reasoning_tokens_min;
  m->seed = seed;
  m->tasks = tasks;
  m->ntasks = ntasks;
  return m;
}

void sg_fakemodel_free(sg_fakemodel *m) {
  if (!m)
    return;
  for (size_t i = 0; i < m->ntasks; i++)
    sg_fm_task_clear(&m->tasks[i]);
  free(m->tasks);
  free(m);
}

size_t sg_fakemodel_ntasks(const sg_fakemodel *m) { return m->ntasks; }

const sg_fm_task *sg_fakemodel_task(const sg_fakemodel *m, size_t i) {
  return i < m->ntasks ? &m->tasks[i] : NULL;
}

static bool is_word_byte(char c) {
  return isalnum((unsigned char)c) || c == '_';
}

/* The first whole-word occurrence of word in text, or NULL. */
static const char *find_word(const char *text, const char *word) {
  size_t wl = strlen(word);
  if (wl == 0)
    return NULL;
  for (const char *p = strstr(text, word); p; p = strstr(p + 1, word)) {
    bool left = p == text || !is_word_byte(p[-1]);
    bool right = !is_word_byte(p[wl]);
    if (left && right)
      return p;
  }
  return NULL;
}

/* Whether the text asks for a GPU kernel: it breaks ties between tasks of the
 * same name (tasks/cpu/x and tasks/cuda/x). */
static bool wants_gpu(const char *text) {
  return strstr(text, "CUDA") || strstr(text, "cuda") || strstr(text, "__global__") ||
         strstr(text, "GPU");
}

static bool task_is_gpu(const sg_fm_task *t) {
  const sg_evaluator *ev = t->evaluator ? sg_evaluator_find(t->evaluator) : NULL;
  return (t->language && strcmp(t->language, "c") != 0) || (ev && ev->gpu);
}

int sg_fakemodel_pick_task(const sg_fakemodel *m, const char *text) {
  if (!text)
    return -1;
  bool gpu = wants_gpu(text);
  /* Names first: "matmul" may be the entry of one task and part of the name
   * of another, and a prompt names its task. */
  for (int pass = 0; pass < 2; pass++) {
    int best = -1;
    const char *best_pos = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < m->ntasks; i++) {
      const char *w = pass == 0 ? m->tasks[i].name : m->tasks[i].entry;
      if (!w)
        continue;
      const char *pos = find_word(text, w);
      if (!pos)
        continue;
      size_t len = strlen(w);
      bool better = best < 0 || pos < best_pos || (pos == best_pos && len > best_len);
      if (!better && pos == best_pos && len == best_len)
        better = task_is_gpu(&m->tasks[i]) == gpu && task_is_gpu(&m->tasks[best]) != gpu;
      if (better) {
        best = (int)i;
        best_pos = pos;
        best_len = len;
      }
    }
    if (best >= 0)
      return best;
  }
  return -1;
}

double sg_fakemodel_threshold(const sg_fakemodel *m, int task) {
  const char *name = task >= 0 && (size_t)task < m->ntasks ? m->tasks[task].name : "";
  rng r = {sg_fm_mix(sg_fm_mix(m->seed, sg_fm_hash_str(name)), 0x7468726573686f6cULL)};
  return m->p.threshold_min +
         (m->p.threshold_max - m->p.threshold_min) * sg_fm_rng_unit(&r);
}

static double logistic(double x) { return 1.0 / (1.0 + exp(-x)); }

double sg_fakemodel_p_valid(const sg_fakemodel *m, int task, double f) {
  double t = sg_fakemodel_threshold(m, task);
  double w = m->p.threshold_width > 1e-6 ? m->p.threshold_width : 1e-6;
  if (f < 0)
    f = 0;
  if (f > 1)
    f = 1;
  /* A logistic in f, rescaled so that P(0) is the floor and P(1) the
   * ceiling exactly: without the prefix the model rarely writes a valid
   * kernel, with the whole trace it almost always does. */
  double lo = logistic((0 - t) / w), hi = logistic((1 - t) / w);
  double s = (logistic((f - t) / w) - lo) / (hi - lo);
  return m->p.p_valid_floor + (m->p.p_valid_ceil - m->p.p_valid_floor) * s;
}

/* Matches shorter than 16 bytes (a few words) do not count: they are not the
 * reasoning, just common text. */
double sg_fm_prefix_fraction(const char *trace, const char *text) {
  size_t tl = trace ? strlen(trace) : 0;
  if (tl == 0 || !text)
    return 0;
  size_t xl = strlen(text);
  size_t k = tl < 16 ? tl : 16;
  size_t best = 0;
  const char *end = text + xl;
  for (const char *p = memmem(text, xl, trace, k); p;
       p = memmem(p + 1, (size_t)(end - p - 1), trace, k)) {
    size_t n = k;
    while (n < tl && p + n < end && p[n] == trace[n])
      n++;
    if (n > best)
      best = n;
    if (best == tl || p + 1 >= end)
      break;
  }
  return (double)best / (double)tl;
}

/* ------------------------------------------------------------------------ */
/* The reasoning trace                                                       */

/* A trace is written move by move. Each move picks a template from its bank
 * (preferring ones not used yet in this trace, so repetition happens only
 * where the model means to repeat itself) and fills its {placeholders} from
 * the task and the current design. */

typedef enum bank_id {
  B_OPEN, B_ANALYSIS, B_DESIGN_CPU, B_DESIGN_GPU, B_CORRECT, B_CHECK, B_DRAFT_INTRO,
  B_DRAFT_AFTER, B_PLAN_CPU, B_PLAN_GPU, B_IMPLEMENT, B_NOISE, B_ESTIMATE, B_CLOSE,
  B_BUG, B_REVISE, B__COUNT
} bank_id;

static const char *const bank_open[] = {
    "Okay, let me look at this task. We need to implement `{name}`: {desc}.",
    "Alright, so the task is {name}. {Desc}. The entry point is `{entry}`.",
    "Let me start by understanding what is being asked: {desc}. The function to write is "
    "`{sig}`.",
    "Hmm, okay. Let's think about this kernel carefully. It's {name}: {desc}.",
    "First, let me restate the problem to make sure I understand it. We have to write "
    "`{entry}`, which computes {desc}.",
    "So we need a faster `{entry}`. The reference is straightforward; the question is how "
    "much faster we can make it. The operator: {desc}.",
    "Let me read the task again. {Desc}. Signature: `{sig}`.",
    "We're asked to optimize {name}. Let me first figure out what the reference does and "
    "where its time goes.",
    /* how reasoning models' traces usually begin */
    "Okay, so I need to write a faster kernel for {name}. The reference computes {desc}, "
    "and the function I have to provide is `{entry}`.",
    "Okay, let's see. The task is to speed up `{entry}`, which computes {desc}. Let me "
    "think about how the reference does it first.",
};

static const char *const bank_analysis[] = {
    "Is this compute-bound or memory-bound? The inputs hold about {mb} of data. If each "
    "element is touched only a few times, memory bandwidth is the limit; if the inner "
    "dimension is reused, the arithmetic intensity grows with the tile size.",
    "The naive version walks memory with a large stride in the inner loop, which thrashes "
    "the cache. The fix is to reorder the loops so the innermost loop is contiguous, and "
    "to block so the working set fits in cache.",
    "The reference does the obvious thing. It is correct but it reads every input many "
    "times from main memory. If I keep a block of the inputs in fast memory and reuse it, "
    "I should get a large speedup.",
    "There may be structure to exploit: if part of the work is redundant (zeros, a "
    "diagonal, a triangle), the kernel can skip it instead of computing and reading it.",
    "Let me count the work. The largest input has {elems} elements. Every output needs a "
    "pass over its share of them, so this is dominated by multiply-adds that can be "
    "vectorized.",
    "What limits the reference? Probably the access pattern, not the arithmetic. The "
    "compiler cannot vectorize a loop whose accesses jump by a whole row each iteration.",
    "The dimension {dim} is a multiple of 16, 32 and 64, so tiles divide it evenly and I "
    "may not need remainder handling, but I should not rely on it blindly.",
    "Accuracy: the check uses a tolerance, so reordering the sums is fine, but I have to "
    "keep the accumulation in float and not drop any term.",
};

static const char *const bank_design_cpu[] = {
    "Let me block the loops with {ta}x{tb} tiles so a tile of the second operand stays in "
    "L1/L2 while I sweep over the rows. Loop order i-k-j, so the innermost loop is "
    "contiguous and the compiler can vectorize it; unroll by {unroll}.",
    "Design decision: loop order i, k, j with {ta}x{tb} blocking. The innermost loop streams "
    "through contiguous memory with vectorized loads ({vec} floats per register), and I keep "
    "{unroll} independent accumulators to hide the FMA latency.",
    "Plan for the loops: tile sizes {ta}x{tb}, `restrict` on every pointer so the compiler "
    "knows nothing aliases, and unroll the reduction by {unroll}.",
    "I'll use a {ta}x{tb} register/cache blocking scheme: the outer loops walk tiles, the "
    "inner micro-kernel computes a small block with {vec}-wide vector loads.",
    "For cache reuse: {ta} rows of the first operand times {tb} columns of the second is a "
    "{kb} KB working set, which fits in L2. Loop order i-k-j inside each tile.",
    "Let me hoist the invariant loads out of the inner loop and use {ta}x{tb} tiles. Each "
    "inner iteration does {vec} multiply-adds from contiguous memory.",
    "To vectorize: make the innermost loop run over a contiguous index with unit stride, "
    "{vec} lanes at a time, unrolled by {unroll}; block the outer loops {ta}x{tb}.",
};

static const char *const bank_design_gpu[] = {
    "Let me use {ta}x{tb} tiles: each thread block computes a {ta}x{tb} tile of the output "
    "with {threads} threads. Tiles of the inputs go to shared memory, padded by one column "
    "to avoid bank conflicts.",
    "Design: a {ta}x{tb} output tile per block, blockIdx.y over rows and blockIdx.x over "
    "columns, threadIdx.x mapped to consecutive columns so global loads coalesce. I'll use "
    "float4 vectorized loads and unroll the inner loop by {unroll}.",
    "I think {ta}x{tb} tiles in shared memory with a {unroll}-way unrolled k-loop is a good "
    "start. Grid = ceil(N / tile) blocks in x and y, {threads} threads per block.",
    "Thread mapping: one warp per {tb} columns, each thread computing a {unroll}x1 strip of "
    "outputs in registers; the block stages {ta}x{tb} tiles through shared memory.",
    "Let me use {threads} threads per block and __shared__ float tiles of {ta}x{tb}; with "
    "double buffering the loads of the next tile overlap the math of this one.",
    "Each block handles a {ta}x{tb} tile; I'll use __ldg for read-only inputs and keep the "
    "accumulators in registers, writing the tile once at the end.",
};

static const char *const bank_correct[] = {
    "Wait, that's wrong. With {ota}x{otb} tiles the working set is {okb} KB, which does not "
    "fit where I wanted it. Let me redo that with {ta}x{tb} tiles instead.",
    "Hmm, actually no. {ota}x{otb} is too big: {okb} KB of tiles leaves no room for the "
    "accumulators. Let me reconsider: {ta}x{tb} should be better.",
    "Wait, I made a mistake in the sizes: two {ota}x{otb} tiles of floats is {okb} KB. "
    "That's too much. Going with {ta}x{tb}.",
    "No wait, that's not right either. If the tile is {ota}x{otb}, the inner loop runs over "
    "the wrong dimension. Let me switch to {ta}x{tb} and put k in the middle.",
    "Hold on. I said {ota}x{otb}, but the occupancy with that much fast memory per tile "
    "would be poor. {ta}x{tb} it is.",
    "Actually, wait. Let me recompute: {ota} times {otb} times 4 bytes times 2 is {okb} KB. "
    "Too large. I'll use {ta}x{tb}.",
};

static const char *const bank_check[] = {
    "Let me double-check the indexing. Element (i, j) of a row-major matrix with ld "
    "columns is at i * ld + j. For the transposed operand it is j * ld + i, so I need to be "
    "careful which loop is innermost.",
    "Wait, I mixed up the indices: the output row comes from the first operand and the "
    "column from the second. Let me fix that in the draft.",
    "Edge cases: the sizes might not be multiples of the tile, so the last tile needs "
    "bounds checks. Here they are multiples, but I'll keep the checks anyway.",
    "Hmm, is the accumulation order going to change the result? Summing in a different "
    "order changes rounding a little, but within the tolerance.",
    "Let me trace through a tiny example by hand, 2x2, to make sure the loop bounds are "
    "right... yes, every output gets every term exactly once.",
    "One more check: the output must be fully written, including any part the reference "
    "sets to zero. If I skip work, I still have to write those zeros.",
    "Wait, does `{entry}` get the sizes as arguments? Yes: `{sig}`. So I should use the "
    "arguments, not hard-code {dim}.",
};

static const char *const bank_draft_intro[] = {
    "Let me sketch a first version:", "Here's a rough draft:",
    "Let me write the core loop first:", "Something like this:", "A first attempt:",
    "Let me write it out to see if it's right:", "Draft:",
    "Let me write the kernel:", "So the code would be:", "Let me code this up.",
    "Putting it together, the kernel would look like this:",
};

static const char *const bank_draft_after[] = {
    "Hmm, this draft is not quite right. Let me look at it again.",
    "That's the idea, but it's incomplete. I still need the tiling around it.",
    "Wait, that draft has a bug in the loop bounds. I'll fix it in the final version.",
    "OK, that looks plausible. It's not the final version, though.",
    "This is basically the reference. It's correct but won't be fast. Let me improve it.",
    "Good, the structure is there. Now the optimizations.",
};

static const char *const bank_plan_cpu[] = {
    "{Head}\n1. Block the loops into {ta}x{tb} tiles.\n2. Loop order i-k-j so the inner loop "
    "is contiguous and vectorizes.\n3. Keep partial sums in {unroll} accumulators.\n4. Handle "
    "the remainder without branches in the hot loop.",
    "{Head}\n1. Skip any work whose result is known.\n2. Tile {ta}x{tb} for cache reuse.\n3. "
    "Vectorize the inner loop, {vec} lanes.\n4. Write every output exactly once.",
    "{Head}\n- outer loops over {ta}x{tb} tiles\n- a contiguous innermost loop, unrolled by "
    "{unroll}\n- restrict pointers, no aliasing\n- bounds checks outside the hot loop",
};

static const char *const bank_plan_gpu[] = {
    "{Head}\n1. One thread block per {ta}x{tb} output tile.\n2. Load input tiles into shared "
    "memory with coalesced, vectorized loads; __syncthreads() between phases.\n3. Accumulate "
    "in registers, unrolled by {unroll}.\n4. Write the tile back with bounds checks.",
    "{Head}\n1. {threads} threads per block, grid over {ta}x{tb} tiles.\n2. float4 loads into "
    "shared memory.\n3. Register accumulators.\n4. Coalesced stores.",
};

static const char *const bank_plan_head[] = {
    "Here is the plan:", "So here is the plan:", "OK, the plan:", "Let me summarize the plan:",
    "Plan:",
};

static const char *const bank_implement[] = {
    "Let me implement this.", "OK, let me implement it now.", "Let me write the kernel.",
    "Let me implement the plan step by step.",
    "Alright, let me implement this and then check it again.",
    "Let me implement it carefully this time.", "Now let me write the actual code.",
    "Now I'll write the code.", "Let me put it all together.",
};

/* Real traces find a bug in their own draft and write the whole kernel
 * again: mostly the same text, the same last lines, one line changed. */
static const char *const bank_bug[] = {
    "Wait, there's a bug in that: one of the bounds is off.",
    "Hmm, looking at it again, one line is wrong.",
    "Wait, I think the indexing in that version is not right.",
    "Oh wait, that draft uses the wrong constant in one place.",
};

static const char *const bank_revise[] = {
    "Let me fix the code:", "Here's the corrected kernel:", "Let me rewrite it:",
    "Revised code:", "Here's the updated version:",
};

static const char *const bank_estimate[] = {
    "Rough estimate: {mb} at ~20 GB/s on one core is the floor for a memory-bound version; "
    "anything much slower than that is leaving performance on the table.",
    "If the reference takes time proportional to {elems} scattered accesses, a blocked "
    "version with contiguous accesses should be several times faster.",
    "With {vec}-wide vectors and {unroll} accumulators, the inner loop can retire several "
    "multiply-adds per cycle, versus one dependent add per cycle in the reference.",
    "Expected speedup: maybe 2-5x from the access pattern alone, more if the structure lets "
    "me skip work.",
};

static const char *const bank_close[] = {
    "I think this is correct now. Let me write the final answer.",
    "Okay, that should work. Let me put it together.",
    "Alright, I'm fairly confident in this version. Final answer below.",
    "Good. Let me write out the complete kernel.",
    "That's the plan and I've checked the indexing. Writing the final version now.",
};

typedef struct bank {
  const char *const *v;
  size_t n;
} bank;

#define BANK(a) {a, sizeof(a) / sizeof(a[0])}
static const bank banks[B__COUNT] = {
    [B_OPEN] = BANK(bank_open),           [B_ANALYSIS] = BANK(bank_analysis),
    [B_DESIGN_CPU] = BANK(bank_design_cpu), [B_DESIGN_GPU] = BANK(bank_design_gpu),
    [B_CORRECT] = BANK(bank_correct),     [B_CHECK] = BANK(bank_check),
    [B_DRAFT_INTRO] = BANK(bank_draft_intro), [B_DRAFT_AFTER] = BANK(bank_draft_after),
    [B_PLAN_CPU] = BANK(bank_plan_cpu),   [B_PLAN_GPU] = BANK(bank_plan_gpu),
    [B_IMPLEMENT] = BANK(bank_implement), [B_NOISE] = {NULL, 0},
    [B_ESTIMATE] = BANK(bank_estimate),   [B_CLOSE] = BANK(bank_close),
    [B_BUG] = BANK(bank_bug),             [B_REVISE] = BANK(bank_revise),
};

/* The state of one trace being written. */
typedef struct writer {
  rng r;
  const sg_fm_task *t;
  sg_buf out;
  size_t tokens;       /* tokens written so far */
  int ta, tb;          /* the current design: tile sizes */
  int ota, otb;        /* the previous one (for a self-correction) */
  int unroll, vec, threads;
  bool drafted, planned, designed;
  uint32_t used[B__COUNT]; /* templates used so far, per bank */
  char last_para[1024];
  char *last_draft;    /* the last complete draft's code, for a revision */
  int revisions;
} writer;

const char *sg_fm_lang_tag(const sg_fm_task *t) {
  if (t->language && strcmp(t->language, "cuda") == 0)
    return "cuda";
  if (t->language && strcmp(t->language, "python") == 0)
    return "python";
  return "c";
}

static int64_t numel(const sg_fm_arg *a) {
  int64_t n = 1;
  for (int d = 0; d < a->ndims; d++)
    n *= a->shape[d];
  return n;
}

static size_t dtype_bytes(const char *d) { return d && strstr(d, "64") ? 8 : 4; }

static void human_bytes(double b, char *out, size_t n) {
  if (b >= 1e9)
    snprintf(out, n, "%.1f GB", b / 1e9);
  else if (b >= 1e6)
    snprintf(out, n, "%.1f MB", b / 1e6);
  else if (b >= 1e3)
    snprintf(out, n, "%.1f KB", b / 1e3);
  else
    snprintf(out, n, "%.0f bytes", b);
}

/* The largest non-scalar argument (NULL if none). */
static const sg_fm_arg *largest_arg(const sg_fm_task *t) {
  const sg_fm_arg *best = NULL;
  for (size_t i = 0; i < t->nargs; i++)
    if (t->args[i].ndims > 0 && (!best || numel(&t->args[i]) > numel(best)))
      best = &t->args[i];
  return best;
}

/* Appends template tpl to b with its {placeholders} filled. */
static void expand(writer *w, sg_buf *b, const char *tpl) {
  const sg_fm_task *t = w->t;
  const sg_fm_arg *big = largest_arg(t);
  for (const char *p = tpl; *p;) {
    const char *open = strchr(p, '{');
    const char *close = open ? strchr(open, '}') : NULL;
    if (!open || !close) {
      sg_buf_puts(b, p);
      break;
    }
    sg_buf_append(b, p, (size_t)(open - p));
    char key[16];
    size_t kl = (size_t)(close - open - 1);
    if (kl >= sizeof key) {
      sg_buf_append(b, open, (size_t)(close - open + 1));
      p = close + 1;
      continue;
    }
    memcpy(key, open + 1, kl);
    key[kl] = '\0';
    const char *desc = t->description ? t->description : "the operator";
    if (!strcmp(key, "name"))
      sg_buf_puts(b, t->name);
    else if (!strcmp(key, "entry"))
      sg_buf_puts(b, t->entry ? t->entry : t->name);
    else if (!strcmp(key, "sig"))
      sg_buf_puts(b, t->signature ? t->signature : "(no signature given)");
    else if (!strcmp(key, "desc") || !strcmp(key, "Desc")) {
      /* Without its final period, capitalized on request. */
      size_t dl = strlen(desc);
      while (dl && desc[dl - 1] == '.')
        dl--;
      if (key[0] == 'D' && dl) {
        char c0 = (char)toupper((unsigned char)desc[0]);
        sg_buf_append(b, &c0, 1);
        sg_buf_append(b, desc + 1, dl - 1);
      } else {
        sg_buf_append(b, desc, dl);
      }
    } else if (!strcmp(key, "ta"))
      sg_buf_printf(b, "%d", w->ta);
    else if (!strcmp(key, "tb"))
      sg_buf_printf(b, "%d", w->tb);
    else if (!strcmp(key, "ota"))
      sg_buf_printf(b, "%d", w->ota);
    else if (!strcmp(key, "otb"))
      sg_buf_printf(b, "%d", w->otb);
    else if (!strcmp(key, "kb"))
      sg_buf_printf(b, "%d", w->ta * w->tb * 4 * 2 / 1024);
    else if (!strcmp(key, "okb"))
      sg_buf_printf(b, "%d", w->ota * w->otb * 4 * 2 / 1024);
    else if (!strcmp(key, "unroll"))
      sg_buf_printf(b, "%d", w->unroll);
    else if (!strcmp(key, "vec"))
      sg_buf_printf(b, "%d", w->vec);
    else if (!strcmp(key, "threads"))
      sg_buf_printf(b, "%d", w->threads);
    else if (!strcmp(key, "elems"))
      sg_buf_printf(b, "%lld", (long long)(big ? numel(big) : 0));
    else if (!strcmp(key, "dim"))
      sg_buf_printf(b, "%lld", (long long)(big ? big->shape[0] : 0));
    else if (!strcmp(key, "mb")) {
      double total = 0;
      for (size_t i = 0; i < t->nargs; i++)
        if (t->args[i].ndims > 0)
          total += (double)numel(&t->args[i]) * (double)dtype_bytes(t->args[i].dtype);
      char hb[32];
      human_bytes(total, hb, sizeof hb);
      sg_buf_puts(b, hb);
    } else if (!strcmp(key, "Head")) {
      sg_buf_puts(b, PICK(&w->r, bank_plan_head));
    } else {
      sg_buf_append(b, open, (size_t)(close - open + 1));
    }
    p = close + 1;
  }
}

/* Adds a paragraph. */
static void w_text(writer *w, const char *text) {
  size_t start = w->out.len;
  if (w->out.len)
    sg_buf_puts(&w->out, "\n\n");
  sg_buf_puts(&w->out, text);
  /* Counted per paragraph (not over the whole text again: a long trace
   * would cost quadratic time); exact, since a paragraph ends in
   * punctuation or a fence and the separator's newlines start a piece. */
  w->tokens += sg_fm_tokenize(w->out.data + start, w->out.len - start, NULL, NULL, 0);
  size_t l = strlen(text);
  if (l >= sizeof w->last_para)
    l = sizeof w->last_para - 1;
  memcpy(w->last_para, text, l);
  w->last_para[l] = '\0';
}

/* Adds a paragraph from bank id, preferring a template not used yet. */
static void w_bank(writer *w, bank_id id) {
  const bank *bk = &banks[id];
  assert(bk->n > 0 && bk->n <= 32);
  size_t k = sg_fm_rng_below(&w->r, bk->n);
  for (size_t tries = 0; tries < bk->n && (w->used[id] >> k & 1u); tries++)
    k = (k + 1) % bk->n;
  w->used[id] |= 1u << k;
  sg_buf b;
  sg_buf_init(&b, 0);
  expand(w, &b, bk->v[k]);
  w_text(w, sg_buf_str(&b));
  sg_buf_free(&b);
}

static const int tiles[] = {16, 32, 64, 128};

static void new_design(writer *w) {
  w->ota = w->ta ? w->ta : PICK(&w->r, tiles);
  w->otb = w->tb ? w->tb : PICK(&w->r, tiles);
  w->ta = PICK(&w->r, tiles);
  w->tb = PICK(&w->r, tiles);
  w->unroll = 1 << rng_range(&w->r, 1, 3);
  w->vec = task_is_gpu(w->t) ? 4 : 8;
  w->threads = 128 << rng_range(&w->r, 0, 2);
}

static void move_shapes(writer *w) {
  const sg_fm_task *t = w->t;
  sg_buf b;
  sg_buf_init(&b, 0);
  static const char *intros[] = {"Let me look at the shapes.", "Now the shapes and sizes:",
                                 "What are the sizes here?",
                                 "Let me check the dimensions first."};
  sg_buf_puts(&b, PICK(&w->r, intros));
  double total = 0;
  for (size_t i = 0; i < t->nargs; i++) {
    const sg_fm_arg *a = &t->args[i];
    if (a->ndims == 0) {
      sg_buf_printf(&b, " `%s` is a scalar equal to %g.", a->name, a->value);
      continue;
    }
    sg_buf_printf(&b, " The %s `%s` is %s with shape [", a->kind ? a->kind : "argument",
                  a->name, a->dtype ? a->dtype : "float32");
    for (int d = 0; d < a->ndims; d++)
      sg_buf_printf(&b, "%s%lld", d ? ", " : "", (long long)a->shape[d]);
    double bytes = (double)numel(a) * (double)dtype_bytes(a->dtype);
    char hb[32];
    human_bytes(bytes, hb, sizeof hb);
    sg_buf_printf(&b, "], so %lld elements (%s).", (long long)numel(a), hb);
    total += bytes;
  }
  char hb[32];
  human_bytes(total, hb, sizeof hb);
  sg_buf_printf(&b, " In total about %s touched at least once.", hb);
  w_text(w, sg_buf_str(&b));
  sg_buf_free(&b);
}

static void move_design(writer *w) {
  new_design(w);
  w_bank(w, task_is_gpu(w->t) ? B_DESIGN_GPU : B_DESIGN_CPU);
  w->designed = true;
}

static void move_correction(writer *w) {
  if (!w->designed) {
    move_design(w);
    return;
  }
  new_design(w);
  if (w->ta == w->ota && w->tb == w->otb)
    w->ta = w->ota > 16 ? w->ota / 2 : w->ota * 2;
  w_bank(w, B_CORRECT);
}

/* The label a draft's block gets: real traces label the same language
 * several ways, or not at all. */
static const char *draft_tag(writer *w) {
  /* Indexed by the block's language as sg_fm_lang_tag names it. */
  static const struct {
    const char *lang;
    const char *labels[4];
  } by_lang[] = {{"cuda", {"cuda", "cuda", "cpp", ""}},
                 {"python", {"python", "python", "py", ""}},
                 {"c", {"c", "c", "c", ""}}};
  const char *tag = sg_fm_lang_tag(w->t);
  size_t k = 2;
  for (size_t i = 0; i < 3; i++)
    if (strcmp(by_lang[i].lang, tag) == 0)
      k = i;
  return PICK(&w->r, by_lang[k].labels);
}

static void w_block(writer *w, sg_buf *b, const char *code) {
  size_t cl = strlen(code);
  sg_buf_printf(b, "\n\n```%s\n%s%s```", draft_tag(w), code,
                cl && code[cl - 1] == '\n' ? "" : "\n");
}

/* One of the task's examples as a draft: whole (then it may be revised
 * later), or its first lines. */
static void move_draft(writer *w) {
  const sg_fm_task *t = w->t;
  const char *code = NULL;
  if (t->nexamples)
    code = t->examples[sg_fm_rng_below(&w->r, t->nexamples)].code;
  char *snippet;
  if (code && sg_fm_rng_unit(&w->r) < 0.5) {
    snippet = sg_strdup(code);
    free(w->last_draft);
    w->last_draft = sg_strdup(code);
  } else if (code) {
    /* 8-20 lines of it: a draft, not the answer. */
    int lines = rng_range(&w->r, 8, 20);
    const char *p = code;
    while (*p && lines > 0) {
      const char *nl = strchr(p, '\n');
      p = nl ? nl + 1 : p + strlen(p);
      lines--;
    }
    snippet = sg_strndup(code, (size_t)(p - code));
  } else {
    snippet = sg_asprintf("%s {\n  /* ... */\n}\n",
                          t->signature ? t->signature : "void kernel(void)");
  }
  sg_buf b;
  sg_buf_init(&b, 0);
  expand(w, &b, PICK(&w->r, bank_draft_intro));
  w_block(w, &b, snippet);
  w_text(w, sg_buf_str(&b));
  sg_buf_free(&b);
  free(snippet);
  if (sg_fm_rng_unit(&w->r) < 0.6)
    w_bank(w, B_DRAFT_AFTER);
  w->drafted = true;
}

/* The last complete draft again with one line changed in its first two
 * thirds (a digit bumped, or a line added): the same ending, a new block. */
static void move_revise(writer *w) {
  if (!w->last_draft) {
    move_draft(w);
    return;
  }
  const char *code = w->last_draft;
  size_t nlines = 0;
  for (const char *p = code; *p; p++)
    nlines += *p == '\n';
  size_t target = nlines > 3 ? 1 + sg_fm_rng_below(&w->r, (nlines * 2) / 3) : 0;
  sg_buf nc;
  sg_buf_init(&nc, 0);
  const char *p = code;
  for (size_t i = 0; *p; i++) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
    if (i != target) {
      sg_buf_append(&nc, p, len);
    } else {
      const char *d = p;
      while (d < p + len && !isdigit((unsigned char)*d))
        d++;
      if (d < p + len) {
        sg_buf_append(&nc, p, (size_t)(d - p));
        char bumped = *d == '9' ? '1' : (char)(*d + 1);
        sg_buf_append(&nc, &bumped, 1);
        sg_buf_append(&nc, d + 1, len - (size_t)(d - p) - 1);
      } else {
        sg_buf_append(&nc, p, len);
        sg_buf_puts(&nc, strcmp(sg_fm_lang_tag(w->t), "python") ? "  // checked\n" : "    # checked\n");
      }
    }
    p += len;
  }
  sg_buf b;
  sg_buf_init(&b, 0);
  expand(w, &b, banks[B_BUG].v[sg_fm_rng_below(&w->r, banks[B_BUG].n)]);
  sg_buf_puts(&b, " ");
  sg_buf_puts(&b, banks[B_REVISE].v[sg_fm_rng_below(&w->r, banks[B_REVISE].n)]);
  w_block(w, &b, sg_buf_str(&nc));
  w_text(w, sg_buf_str(&b));
  sg_buf_free(&b);
  free(w->last_draft);
  w->last_draft = sg_buf_steal(&nc);
  w->revisions++;
}

static void move_plan(writer *w) {
  if (!w->designed)
    new_design(w);
  w_bank(w, task_is_gpu(w->t) ? B_PLAN_GPU : B_PLAN_CPU);
  w_bank(w, B_IMPLEMENT);
  w->planned = true;
}

static void move_noise(writer *w) {
  size_t k = sg_fm_rng_below(&w->r, 5);
  char buf[1200];
  if (k == 0 && w->last_para[0] && !strstr(w->last_para, "```")) {
    /* Reasoning models repeat themselves, sometimes verbatim. */
    snprintf(buf, sizeof buf, "%s", w->last_para);
    w_text(w, buf);
  } else if (k == 1) {
    w_text(w, "Hmm.");
  } else if (k == 2) {
    sg_buf b;
    sg_buf_init(&b, 0);
    expand(w, &b, "Wait, let me re-read the task. {Desc}. Yes, that's what I thought.");
    w_text(w, sg_buf_str(&b));
    sg_buf_free(&b);
  } else if (k == 3) {
    if (!w->designed)
      new_design(w);
    sg_buf b;
    sg_buf_init(&b, 0);
    expand(w, &b, "OK. So, to recap: {ta}x{tb} tiles, unroll by {unroll}. I think that's "
                  "right. Is there anything better... no, let's go with it.");
    w_text(w, sg_buf_str(&b));
    sg_buf_free(&b);
  } else {
    w_text(w, "Let me think about this more carefully. Let me think about this more "
              "carefully. The main cost is memory traffic, so reuse is what matters.");
  }
}

/* A task-like stand-in for prompts that name no task. */
static const sg_fm_task unknown_task = {
    .name = "kernel",
    .language = "c",
    .description = "the operation the prompt describes",
};

/* The trace for key; only its opening paragraph when opening_only (enough to
 * tell variants apart cheaply). */
static char *write_trace(const sg_fakemodel *m, const sg_fm_task *t, uint64_t key,
                         bool opening_only) {
  writer w;
  memset(&w, 0, sizeof w);
  w.r.s = key;
  w.t = t;
  sg_buf_init(&w.out, 0);
  size_t target = (size_t)rng_range(&w.r, m->p.reasoning_tokens_min,
                                     m->p.reasoning_tokens_max);
  w_bank(&w, B_OPEN);
  if (opening_only)
    return sg_buf_steal(&w.out);
  if (t->nargs)
    move_shapes(&w);
  w_bank(&w, B_ANALYSIS);
  move_design(&w);
  /* Moves until the budget is spent, in a loose order: a correction only
   * after a design, the implementation phrase after a plan. */
  size_t guard = 0; /* every move writes at least one token */
  while (w.tokens < target && guard++ < target) {
    double u = sg_fm_rng_unit(&w.r);
    if (u < 0.14)
      move_design(&w);
    else if (u < 0.27)
      move_correction(&w);
    else if (u < 0.40)
      w_bank(&w, B_CHECK);
    else if (u < 0.55)
      w.last_draft && w.revisions < 3 && sg_fm_rng_unit(&w.r) < 0.5 ? move_revise(&w)
                                                             : move_draft(&w);
    else if (u < 0.64)
      move_plan(&w);
    else if (u < 0.76)
      move_noise(&w);
    else if (u < 0.84)
      w_bank(&w, B_ESTIMATE);
    else
      w_bank(&w, B_ANALYSIS);
  }
  if (!w.planned)
    move_plan(&w);
  if (!w.drafted)
    move_draft(&w);
  w_bank(&w, B_CLOSE);
  free(w.last_draft);
  return sg_buf_steal(&w.out);
}

static uint64_t trace_key(const sg_fakemodel *m, int task, const char *context,
                          int variant) {
  const char *name = task >= 0 ? m->tasks[task].name : "";
  uint64_t k = sg_fm_mix(m->seed, sg_fm_hash_str(name));
  k = sg_fm_mix(k, sg_fm_hash_str(context ? context : ""));
  return sg_fm_mix(k, (uint64_t)variant);
}

static const sg_fm_task *task_or_unknown(const sg_fakemodel *m, int task) {
  return task >= 0 && (size_t)task < m->ntasks ? &m->tasks[task] : &unknown_task;
}

char *sg_fakemodel_trace(const sg_fakemodel *m, int task, const char *context,
                         int variant) {
  assert(variant >= 0 && variant < SG_FM_TRACE_VARIANTS);
  return write_trace(m, task_or_unknown(m, task), trace_key(m, task, context, variant), false);
}

int sg_fakemodel_variant(const sg_fm_request *req) {
  if (req->has_seed)
    return (int)(sg_fm_mix(req->request_seed, 0x7661726961ULL) % SG_FM_TRACE_VARIANTS);
  if (req->sample_key)
    return (int)(sg_fm_mix(sg_fm_hash_str(req->sample_key), 0x7661726961ULL) % SG_FM_TRACE_VARIANTS);
  return 0;
}

/* Bytes of a variant's opening used to tell whether its trace is in a
 * prompt: the shortest match sg_fm_prefix_fraction counts, so no variant
 * with f > 0 is missed. */
#define OPENING_PROBE_BYTES 16

/* The variants of this context's trace whose opening occurs in text (as a
 * bit set). */
uint64_t sg_fm_variants_in(const sg_fakemodel *m, int task, const char *context,
                            const char *text) {
  uint64_t set = 0;
  for (int v = 0; v < SG_FM_TRACE_VARIANTS; v++) {
    char *open = write_trace(m, task_or_unknown(m, task), trace_key(m, task, context, v), true);
    size_t n = strlen(open) < OPENING_PROBE_BYTES ? strlen(open) : OPENING_PROBE_BYTES;
    if (n && memmem(text, strlen(text), open, n))
      set |= 1ull << v;
    free(open);
  }
  return set;
}
