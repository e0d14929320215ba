/* test_triggers.c: the trigger scanner (src/core/sg_triggers.c).
 *
 * Every case is fed whole, byte by byte, in every chunk size up to its length
 * (or up to 64 for long inputs) and in seeded random splits, each chunk copied
 * against the end of its own malloc'd buffer so an over-read crashes under
 * ASan; all feedings must give identical triggers. Tables pin each class and
 * each noise rule; realistic traces in tests/core/data/triggers/ pin whole
 * runs against their .expected files.
 */
#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "common/sg_rng.h"
#include "core/sg_triggers.h"
#include "sg_test.h"
#include "trig_harness.h"

#include <jansson.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DATA SG_SOURCE_ROOT "/tests/core/data/triggers"
/* ---------------------------------------------------------------- names */

static void test_class_names_round_trip(void) {
  for (int c = 0; c < SG_TRIGGER__COUNT; c++)
    SG_CHECK_EQ_INT(sg_trigger_class_parse(sg_trigger_class_name(c)), c);
  SG_CHECK_STR_EQ(sg_trigger_class_name(SG_TRIGGER_FENCE), "fence");
  SG_CHECK_EQ_INT(sg_trigger_class_parse("kernels"), -1);
  SG_CHECK_EQ_INT(sg_trigger_class_parse(NULL), -1);
  sg_scanner_opts o;
  sg_scanner_opts_default(&o);
  SG_CHECK_EQ_INT(o.classes, 0);
  SG_CHECK_EQ_INT(o.min_gap_bytes, 0);  /* detection reports everything */
}

/* ---------------------------------------------------------------- design */

static void test_design_decisions_fire(void) {
  static const tcase t[] = {
      {"I'll use 64x64 tiles in shared memory.\n", "D"},
      {"Use 128 x 128 x 32 tiles for the main loop.\n", "D"},
      {"Use 64\xc3\x97" "64 tiles.\n", "D"},  /* U+00D7 */
      {"We set BLOCK_SIZE = 128 for the launch.\n", "D"},
      {"With TILE_M=64 and TILE_N=32 it fits.\n", "D"},
      {"Each thread computes a 4x4 sub-block of C.\n", "D"},
      {"One warp per row keeps it simple.\n", "D"},
      {"Launch 256 threads per block.\n", "D"},
      {"A grid-stride loop covers any size.\n", "D"},
      {"Load A with float4 so each access is 16 bytes.\n", "D"},
      {"Switch to wmma fragments.\n", "D"},
      {"Tensor cores would help for fp16.\n", "D"},
      {"Reduce with __shfl_down_sync inside a warp.\n", "D"},
      {"Overlap copies with cp.async and double buffering.\n", "D"},
      {"The loads must be coalesced.\n", "D"},
      {"Pad the tile to avoid bank conflicts.\n", "D"},
      {"Unroll the k loop by 4.\n", "D"},
      {"Keep the accumulators in registers.\n", "D"},
      {"Use AVX2 intrinsics for the inner loop.\n", "D"},
      {"Apply cache blocking over k.\n", "D"},
      {"Change the loop order to i-k-j.\n", "D"},
      {"The MMA instruction is the fastest path.\n", "D"},
  };
  RUN_TABLE(t);
}

static void test_design_needs_word_boundaries(void) {
  static const tcase t[] = {
      {"The comma is fine here.\n", ""},              /* mma inside comma */
      {"We mmap the file first.\n", ""},              /* mma then a letter */
      {"The matrix is 4096x4096 floats.\n", ""},      /* a shape, not a tile */
      {"Inputs are float32 tensors.\n", ""},          /* float0 is one digit */
      {"Sensible choices only.\n", ""},               /* sse inside a word */
      {"The dilemma remains open.\n", ""},
      {"", ""},
  };
  RUN_TABLE(t);
}

/* ---------------------------------------------------------------- phrase */

static void test_phrases_fire_case_insensitively(void) {
  static const tcase t[] = {
      {"Let me write the kernel now.\n", "P"},
      {"LET ME IMPLEMENT this.\n", "P"},
      {"Here's the plan:\n", "P"},
      {"Here\xe2\x80\x99s the plan:\n", "P"},  /* U+2019 apostrophe */
      {"Here is the kernel:\n", "P"},
      {"Now I'll write the code.\n", "P"},
      {"Final implementation:\n", "P"},
      {"Putting it all together:\n", "P"},
      {"Let me write it with 64x64 tiles.\n", "DP"},
  };
  RUN_TABLE(t);
}

static void test_phrase_offsets_and_text(void) {
  sg_scanner_opts o = trig_gap0();
  result r;
  trig_scan_all_splits("Let me write it.\nMore text", &o, &r);
  SG_CHECK_EQ_INT(r.n, 1);
  SG_CHECK_EQ_INT(r.t[0].cls, SG_TRIGGER_PHRASE);
  SG_CHECK_EQ_INT(r.t[0].offset, 17);  /* just past the newline */
  SG_CHECK_STR_EQ(r.t[0].text, "Let me write it.");
  trig_scan_all_splits("Let me write it.   Then", &o, &r);
  SG_CHECK_EQ_INT(r.n, 1);
  SG_CHECK_EQ_INT(r.t[0].offset, 17);  /* the space after the period */
  /* A sentence the text ends in fires at finish, at the end. */
  trig_scan_all_splits("  Let   me\twrite it", &o, &r);
  SG_CHECK_EQ_INT(r.n, 1);
  SG_CHECK_EQ_INT(r.t[0].offset, 19);
  SG_CHECK_STR_EQ(r.t[0].text, "Let me write it");
}

/* ---------------------------------------------------------------- noise */

static void test_self_talk_does_not_fire(void) {
  static const tcase t[] = {
      {"Hmm, let me write it with 64x64 tiles.\n", ""},
      {"Wait, no, each thread computes one element.\n", ""},
      {"But wait: 32x32 tiles might be better.\n", ""},
      {"Maybe 64x64 tiles.\n", ""},
      {"Actually, no, let me write the naive one.\n", ""},
      {"Let me double-check the 4x4 sub-block indexing.\n", ""},
      {"I'm not sure 256 threads per block is right.\n", ""},
      /* "wait" as a verb, not as the first word, is not self-talk */
      {"Threads wait at the barrier, so use 16x16 thread blocks.\n", "D"},
      /* self-talk ends with its sentence */
      {"Hmm. I'll use 64x64 tiles.\n", "D"},
  };
  RUN_TABLE(t);
}

static void test_questions_do_not_fire(void) {
  static const tcase t[] = {
      {"Should each thread compute a 4x4 sub-block?\n", ""},
      {"Should I use float4 loads? Yes, use float4 loads.\n", "D"},
      {"Is this right? Let me write the kernel.\n", "P"},
  };
  RUN_TABLE(t);
}

static void test_repetition_loop_fires_once(void) {
  static const tcase t[] = {
      {"I'll use 64x64 tiles. I'll use 64x64 tiles. I'll use 64x64 tiles.\n", "D"},
      {"Let me write the kernel.\nLet me write the kernel.\nLet me write the "
       "kernel.\n", "P"},
      /* re-wrapped or re-cased copies are the same sentence */
      {"Use  64x64\ttiles.\nUse 64x64 tiles.\nUSE 64x64 Tiles.\n", "D"},
      /* a changed decision is a new sentence */
      {"I'll use 64x64 tiles.\nI'll use 32x32 tiles.\n", "DD"},
  };
  RUN_TABLE(t);
}

static void test_repetition_storm_stays_quiet(void) {
  /* A model stuck in a loop: 2000 copies of the same decision. */
  const char *line = "So each thread computes a 4x4 sub-block of the tile.\n";
  size_t ll = strlen(line), n = 2000;
  char *in = sg_malloc(ll * n + 1);
  for (size_t i = 0; i < n; i++)
    memcpy(in + i * ll, line, ll);
  in[ll * n] = '\0';
  sg_scanner_opts o = trig_gap0();
  result r;
  trig_run(in, ll * n, &o, 4096, 0, &r);
  SG_CHECK_EQ_INT(r.n, 1);
  trig_run(in, ll * n, &o, 0, 7, &r);
  SG_CHECK_EQ_INT(r.n, 1);
  free(in);
}

static void test_min_gap_drops_close_triggers(void) {
  const char *in = "Let me write the kernel. I'll use 64x64 tiles.\n"
                   "```c\nvoid f(int *x) { x[0] = 1; }\n```\n";
  sg_scanner_opts o = trig_gap0();
  result r;
  trig_scan_all_splits(in, &o, &r);
  SG_CHECK_EQ_INT(r.n, 4);  /* P D K F */
  /* prose within the gap is dropped; a kernel is a new candidate and is
   * kept; the fence closing that kernel's block is the same candidate */
  o.min_gap_bytes = 1000;
  trig_scan_all_splits(in, &o, &r);
  SG_CHECK_EQ_INT(r.n, 2);
  SG_CHECK_EQ_INT(r.t[0].cls, SG_TRIGGER_PHRASE);
  SG_CHECK_EQ_INT(r.t[1].cls, SG_TRIGGER_KERNEL);
  /* the gap is measured from the last reported trigger */
  const char *in2 = "Let me write the kernel. I'll use 64x64 tiles, and "
                    "each thread computes a 4x4 block of outputs.\n";
  o.min_gap_bytes = 30;
  trig_scan_all_splits(in2, &o, &r);
  SG_CHECK_EQ_INT(r.n, 2);
  SG_CHECK_EQ_INT(r.t[0].cls, SG_TRIGGER_PHRASE);
  SG_CHECK_EQ_INT(r.t[1].cls, SG_TRIGGER_DESIGN);
  SG_CHECK(r.t[1].offset - r.t[0].offset >= 30);
  o.min_gap_bytes = 1000;
  trig_scan_all_splits(in2, &o, &r);
  SG_CHECK_EQ_INT(r.n, 1);
  /* blocks without a kernel in them are each a candidate, however close */
  const char *in3 = "Plan: go.\n```python\nx = 1\n```\n```python\nx = 2\n```\n";
  trig_scan_all_splits(in3, &o, &r);
  SG_CHECK_EQ_INT(r.n, 3);
  SG_CHECK_EQ_INT(r.t[1].cls, SG_TRIGGER_FENCE);
  SG_CHECK_EQ_INT(r.t[2].cls, SG_TRIGGER_FENCE);
}

static void test_class_filter(void) {
  const char *in = "Let me write the kernel. I'll use 64x64 tiles.\n"
                   "```c\nvoid f(int *x) { x[0] = 1; }\n```\n";
  sg_scanner_opts o = trig_gap0();
  o.classes = 1u << SG_TRIGGER_DESIGN | 1u << SG_TRIGGER_FENCE;
  result r;
  trig_scan_all_splits(in, &o, &r);
  SG_CHECK_EQ_INT(r.n, 2);
  SG_CHECK_EQ_INT(r.t[0].cls, SG_TRIGGER_DESIGN);
  SG_CHECK_EQ_INT(r.t[1].cls, SG_TRIGGER_FENCE);
  /* a filtered-out class does not hold the gap */
  o.classes = 1u << SG_TRIGGER_FENCE;
  o.min_gap_bytes = 1000;
  trig_scan_all_splits(in, &o, &r);
  SG_CHECK_EQ_INT(r.n, 1);
  SG_CHECK_EQ_INT(r.t[0].cls, SG_TRIGGER_FENCE);
}

/* ---------------------------------------------------------------- fence */

static void test_fences(void) {
  static const tcase t[] = {
      {"```cuda\n__global__ void k(float *x) { x[0] = 1; }\n```\n", "KF"},
      {"```python\nimport torch\n```\n", "F"},
      {"```C++\nint x;\n```\n", "F"},
      {"```cpp {.line-numbers}\nint x;\n```\n", "F"},
      {"   ```c\nint x;\n   ```   \n", "F"},
      {"~~~cpp\nint y;\n~~~\n", "F"},
      {"```\nint main() { return 0; }\n```\n", "F"},  /* unlabelled code */
      /* every closed block fires, whatever its language */
      {"```\nsome program output\n```\n", "F"},
      {"```bash\nnvcc -O3 -o k k.cu\n```\n", "F"},
      {"```json\n{\"a\": 1}\n```\n", "F"},
      {"```triton\nx = tl.load(p)\n```\n", "F"},
      {"```Python3\nx = 1\n```\n", "F"},
      {"~~~~~python\nx = 1\n~~~~~~\n", "F"},
      {"~~~\nx = 1\n```\n~~~\n", "F"},              /* ``` is content */
      {"1. Code:\n\n    ```python\n    x = 1\n    ```\n", "PF"},
      {"\t```c\nint x;\n\t```\n", "F"},
      {"```c\nint x;\n```trailing\n```\n", "F"},      /* info: content */
      {"```cuda\n```\n", ""},                          /* empty */
      {"```cuda\n  \n\n```\n", ""},                    /* blank */
      {"```cuda\nint x;\n", ""},                       /* never closed */
      {"Use ```inline``` code.\n", ""},
      {"```c\nint a;\n````` not a close\n```\n", "F"},
      {"````c\nint x;\n```\nint y;\n````\n", "F"},     /* 3 do not close 4 */
      {"```c\nint x;\n`````\n", "F"},                  /* 5 close 3 */
      {"```c\nint x;\n```", "F"},                      /* closed at the end */
      {"```c\nint x;\n``", ""},
      {"```cuda\r\nint x;\r\n```\r\nok\r\n", "F"},       /* CRLF */
      {"```cuda\nint x;\n```python\nint y;\n```\n", "F"},  /* info: content */
  };
  RUN_TABLE(t);
}

static void test_fence_quoted_twice_fires_once(void) {
  static const tcase t[] = {
      {"```c\nvoid f(int *x) { *x = 1; }\n```\n\nAgain:\n\n"
       "```c\n  void f(int *x) {\n *x = 1; }\n```\n", "KF"},
      {"```python\nx = 1\n```\n```python\nx = 2\n```\n", "FF"},
      /* the same content in another language is the same block */
      {"```cpp\nint x;\n```\n```cuda\nint x;\n```\n", "F"},
  };
  RUN_TABLE(t);
}

static void test_fence_text_and_offset(void) {
  const char *in = "Code:\n```CUDA\n__global__\nvoid k() {}\n```\nafter";
  sg_scanner_opts o = trig_gap0();
  o.classes = 1u << SG_TRIGGER_FENCE;
  result r;
  trig_scan_all_splits(in, &o, &r);
  SG_CHECK_EQ_INT(r.n, 1);
  /* just past the closing run: the prefix ends with the block */
  SG_CHECK_EQ_INT(r.t[0].offset, strstr(in, "\nafter") - in);
  SG_CHECK_STR_EQ(r.t[0].text, "```cuda __global__ void k() {}");
  /* fences inside prose sentences do not make design triggers */
  trig_expect_classes("```c\n// use 64x64 tiles.\nint x;\n```\n", "F");
}

/* ---------------------------------------------------------------- kernel */

static void test_kernels(void) {
  static const tcase t[] = {
      {"__global__ void add(float *a, const float *b) {\n"
       "  a[threadIdx.x] += b[threadIdx.x];\n}\n", "K"},
      {"void f(int *x) { if (x) { for (;;) { break; } } }\n", "K"},
      {"template <int N>\n__global__ void k(float *x) { x[0] = N; }\n", "K"},
      {"__global__ void __launch_bounds__(256) k(float *x) { x[0] = 0; }\n", "K"},
      {"extern \"C\" void launch(float *x, int n) { k<<<1, 1>>>(x); }\n", "K"},
      {"static void helper(float *restrict y)\n{\n  y[0] = 0;\n}\n", "K"},
      {"__global__ void k(float *x);\n", ""},         /* a declaration */
      {"__device__ void h(float *x) { x[0] = 1; }\n", ""},
      {"__device__ __forceinline__ void h(float *x) { x[0] = 1; }\n", ""},
      {"The kernel returns void. It is fine.\n", ""},
      {"The kernel returns `void` (nothing) {ok}.\n", ""},
      {"We avoid (x) {y}.\n", ""},
      {"void (*fp)(int) = 0;\n", ""},
      {"__global__ void k(float *x) { x[0] = 1;\n", ""},  /* cut */
      {"int f(int x) { return x; }\n", ""},           /* not a kernel */
  };
  RUN_TABLE(t);
}

static void test_kernel_braces_in_literals_and_comments(void) {
  const char *in = "void f(char *s) {\n"
                   "  s[0] = '}'; s[1] = '\\''; /* } */ // }\n"
                   "  const char *t = \"}\\\"{\";\n"
                   "}\nafter";
  sg_scanner_opts o = trig_gap0();
  result r;
  trig_scan_all_splits(in, &o, &r);
  SG_CHECK_EQ_INT(r.n, 1);
  SG_CHECK_EQ_INT(r.t[0].cls, SG_TRIGGER_KERNEL);
  SG_CHECK_EQ_INT(r.t[0].offset, strstr(in, "}\nafter") - in + 1);
  SG_CHECK_STR_EQ(r.t[0].text, "void f(char *s) {");
}

static void test_kernel_quoted_twice_fires_once(void) {
  static const tcase t[] = {
      {"void f(int *x) { x[0] = 1; }\nAnd again:\nvoid f(int *x) {\n"
       "  x[0] = 1;\n}\n", "K"},
      {"void f(int *x) { x[0] = 1; }\nvoid f(int *x) { x[0] = 2; }\n", "KK"},
  };
  RUN_TABLE(t);
}

static void test_kernel_does_not_cross_fences(void) {
  /* a body opened in one block and closed in another is not a kernel */
  trig_expect_classes("```c\nvoid f(int *x) {\n```\nprose }\n", "F");
  /* code in the open is not sentences: no design trigger from its body */
  trig_expect_classes("void f(float *x) {\n  __shared__ float t[64];\n}\n", "K");
}

/* ---------------------------------------------------------------- text */

static void test_long_sentence_text_holds_the_match(void) {
  char in[1200];
  size_t n = 0;
  for (int i = 0; i < 60; i++)
    n += (size_t)snprintf(in + n, sizeof in - n, "word%d ", i);
  n += (size_t)snprintf(in + n, sizeof in - n, "so use 64x64 tiles. ");
  /* non-ASCII text right before the cut must not leave half a character */
  for (int i = 0; i < 40; i++)
    n += (size_t)snprintf(in + n, sizeof in - n, "\xc3\xa9");
  snprintf(in + n, sizeof in - n, " and float4 loads.\n");
  sg_scanner_opts o = trig_gap0();
  result r;
  trig_scan_all_splits(in, &o, &r);
  SG_CHECK_EQ_INT(r.n, 2);
  SG_CHECK_CONTAINS(r.t[0].text, "so use 64x64 til");
  SG_CHECK_CONTAINS(r.t[1].text, "and float4");
  for (size_t k = 0; k < r.n; k++) {
    const unsigned char *s = (const unsigned char *)r.t[k].text;
    size_t len = strlen(r.t[k].text);
    SG_CHECK(len < SG_TRIGGER_TEXT_MAX);
    SG_CHECK((s[0] & 0xC0) != 0x80);  /* does not start mid-character */
    size_t i = len;
    while (i > 0 && (s[i - 1] & 0xC0) == 0x80)
      i--;
    if (i > 0 && s[i - 1] >= 0xC0)
      SG_CHECK_EQ_INT(len - i, 1);    /* é is two bytes: lead + one */
  }
}

static void test_binary_noise_is_harmless(void) {
  char in[4096];
  sg_rng g;
  sg_rng_seed(&g, 42);
  for (size_t i = 0; i < sizeof in - 1; i++)
    in[i] = (char)(1 + sg_rng_next(&g) % 255);
  in[sizeof in - 1] = '\0';
  sg_scanner_opts o = trig_gap0();
  result r;
  trig_scan_all_splits(in, &o, &r);
  SG_CHECK(r.n < MAX_TRIGGERS);
}

/* ---------------------------------------------------------------- traces */

/* Each trace's .expected holds "offset<TAB>class<TAB>text" per trigger at
 * min_gap_bytes 0, reviewed by hand. */
static void check_trace(const char *name) {
  char path[512], epath[512];
  snprintf(path, sizeof path, DATA "/%s.txt", name);
  snprintf(epath, sizeof epath, DATA "/%s.expected", name);
  char *in = NULL, *exp = NULL;
  size_t len = 0;
  sg_err err;
  SG_CHECK_OK(sg_file_read(path, 1 << 20, &in, &len, &err), err);
  SG_CHECK_OK(sg_file_read(epath, 1 << 20, &exp, NULL, &err), err);
  sg_scanner_opts o = trig_gap0();
  result *r = sg_malloc(sizeof *r);
  trig_scan_all_splits(in, &o, r);
  char *line = exp, *save = NULL;
  size_t k = 0;
  for (line = strtok_r(exp, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char *t1 = strchr(line, '\t');
    SG_CHECK(t1 != NULL);
    char *t2 = strchr(t1 + 1, '\t');
    SG_CHECK(t2 != NULL);
    *t1 = *t2 = '\0';
    SG_CHECK_MSG(k < r->n, "%s: expected trigger %zu (%s at %s) missing", name,
                 k, t1 + 1, line);
    SG_CHECK_EQ_INT(r->t[k].offset, strtoull(line, NULL, 10));
    SG_CHECK_STR_EQ(sg_trigger_class_name(r->t[k].cls), t1 + 1);
    SG_CHECK_STR_EQ(r->t[k].text, t2 + 1);
    k++;
  }
  SG_CHECK_EQ_INT(r->n, k);
  /* The default reports them all; a gap keeps a subset, in order, of the
   * same triggers, with every kernel and every fence that did not close a
   * kernel's block among them. */
  result *d = sg_malloc(sizeof *d);
  trig_run(in, len, NULL, 4096, 0, d);
  SG_CHECK(trig_same(d, r));
  sg_scanner_opts g = trig_gap0();
  g.min_gap_bytes = 256;
  trig_run(in, len, &g, 4096, 0, d);
  SG_CHECK(d->n > 0 && d->n < r->n);
  size_t j = 0;
  for (size_t i = 0; i < d->n; i++) {
    while (j < r->n && r->t[j].offset != d->t[i].offset)
      j++;
    SG_CHECK_MSG(j < r->n, "gapped trigger %zu is not a gap-0 trigger", i);
    bool prose = d->t[i].cls == SG_TRIGGER_DESIGN || d->t[i].cls == SG_TRIGGER_PHRASE;
    if (i > 0 && prose)
      SG_CHECK(d->t[i].offset - d->t[i - 1].offset >= 256);
  }
  for (size_t i = 0; i < r->n; i++) {
    if (r->t[i].cls != SG_TRIGGER_KERNEL)
      continue;
    bool kept = false;
    for (size_t k = 0; k < d->n; k++)
      kept = kept || d->t[k].offset == r->t[i].offset;
    SG_CHECK_MSG(kept, "%s: kernel at %llu dropped by the gap", name,
                 (unsigned long long)r->t[i].offset);
  }
  free(d);
  free(r);
  free(in);
  free(exp);
}

static void test_trace_matmul_cuda(void) { check_trace("matmul_cuda"); }
static void test_trace_hinge_c(void) { check_trace("hinge_c"); }
static void test_trace_softmax_kernelbench(void) {
  check_trace("softmax_kernelbench");
}
static void test_trace_transpose_cancelled(void) {
  check_trace("transpose_cancelled");
}


/* ---------------------------------------------------------------- CLI */

/* Runs a shell command; returns its exit status, its output (both streams)
 * in *out (caller frees). */

static void test_cli_json_lines_match_library(void) {
  char *out = NULL;
  int rc = trig_sh(SG_TEST_SPECGEN " triggers --json --min-gap 0 " DATA "/matmul_cuda.txt",
              &out);
  SG_CHECK_EQ_INT(rc, 0);
  char *exp = NULL;
  sg_err err;
  SG_CHECK_OK(sg_file_read(DATA "/matmul_cuda.expected", 1 << 20, &exp, NULL, &err),
              err);
  char *save = NULL, *esave = NULL;
  char *line = strtok_r(out, "\n", &save);
  char *eline = strtok_r(exp, "\n", &esave);
  size_t n = 0;
  for (; line && eline; line = strtok_r(NULL, "\n", &save),
                        eline = strtok_r(NULL, "\n", &esave), n++) {
    json_error_t je;
    json_t *o = json_loads(line, 0, &je);
    SG_CHECK_MSG(o != NULL, "not JSON: %s", line);
    char *t1 = strchr(eline, '\t'), *t2 = strchr(t1 + 1, '\t');
    *t1 = *t2 = '\0';
    SG_CHECK_EQ_INT(json_integer_value(json_object_get(o, "offset")),
                    strtoll(eline, NULL, 10));
    SG_CHECK_STR_EQ(json_string_value(json_object_get(o, "class")), t1 + 1);
    SG_CHECK_STR_EQ(json_string_value(json_object_get(o, "text")), t2 + 1);
    json_decref(o);
  }
  SG_CHECK(line == NULL && eline == NULL);
  SG_CHECK(n > 5);
  free(out);
  free(exp);
}

static void test_cli_chunking_and_stdin_agree(void) {
  char *a = NULL, *b = NULL, *c = NULL;
  SG_CHECK_EQ_INT(trig_sh(SG_TEST_SPECGEN " triggers " DATA "/softmax_kernelbench.txt", &a), 0);
  SG_CHECK_EQ_INT(trig_sh(SG_TEST_SPECGEN " triggers --chunk 1 " DATA "/softmax_kernelbench.txt",
                     &b), 0);
  SG_CHECK_EQ_INT(trig_sh(SG_TEST_SPECGEN " triggers - < " DATA "/softmax_kernelbench.txt", &c), 0);
  SG_CHECK_STR_EQ(a, b);
  SG_CHECK_STR_EQ(a, c);
  /* the human summary counts per class */
  SG_CHECK_CONTAINS(a, "9 triggers in 3997 bytes: design ");
  SG_CHECK_CONTAINS(a, "kernel 2, phrase 2");
  free(a);
  free(b);
  free(c);
}

static void test_cli_class_filter_and_extract(void) {
  char *out = NULL;
  SG_CHECK_EQ_INT(trig_sh(SG_TEST_SPECGEN " triggers --json --class fence --min-gap 0 "
                     "--extract c --entry hinge_loss " DATA "/hinge_c.txt", &out), 0);
  SG_CHECK_CONTAINS(out, "{\"offset\":2073,\"class\":\"fence\",\"text\":\"```c ");
  SG_CHECK(strstr(out, "\"design\"") == NULL);
  SG_CHECK_CONTAINS(out, "{\"extract\":\"found\",\"start\":1231,");
  free(out);
  SG_CHECK_EQ_INT(trig_sh(SG_TEST_SPECGEN " triggers --extract python " DATA "/hinge_c.txt",
                     &out), 0);
  SG_CHECK_CONTAINS(out, "candidate: wrong_language: ");
  free(out);
}

static void test_cli_bad_usage_exits_2_naming_it(void) {
  char *out = NULL;
  SG_CHECK_EQ_INT(trig_sh(SG_TEST_SPECGEN " triggers /no/such/trace.txt", &out), 2);
  SG_CHECK_CONTAINS(out, "/no/such/trace.txt");
  free(out);
  SG_CHECK_EQ_INT(trig_sh(SG_TEST_SPECGEN " triggers --class design,bogus x", &out), 2);
  SG_CHECK_CONTAINS(out, "'bogus'");
  free(out);
  SG_CHECK_EQ_INT(trig_sh(SG_TEST_SPECGEN " triggers --min-gap ten x", &out), 2);
  SG_CHECK_CONTAINS(out, "--min-gap");
  free(out);
  SG_CHECK_EQ_INT(trig_sh(SG_TEST_SPECGEN " triggers --chunk 0 x", &out), 2);
  SG_CHECK_CONTAINS(out, "--chunk");
  free(out);
  SG_CHECK_EQ_INT(trig_sh(SG_TEST_SPECGEN " triggers --extract rust x", &out), 2);
  SG_CHECK_CONTAINS(out, "'rust'");
  free(out);
  SG_CHECK_EQ_INT(trig_sh(SG_TEST_SPECGEN " triggers", &out), 2);
  SG_CHECK_CONTAINS(out, "expected one trace FILE"); /* one line, then --help's pointer */
  SG_CHECK_CONTAINS(out, "see `specgen triggers --help`");
  free(out);
  SG_CHECK_EQ_INT(trig_sh(SG_TEST_SPECGEN " triggers a b", &out), 2);
  free(out);
  SG_CHECK_EQ_INT(trig_sh(SG_TEST_SPECGEN " triggers --help", &out), 0);
  SG_CHECK_CONTAINS(out, "--min-gap");
  free(out);
}

SG_TEST_MAIN(SG_TEST(test_class_names_round_trip),
             SG_TEST(test_design_decisions_fire),
             SG_TEST(test_design_needs_word_boundaries),
             SG_TEST(test_phrases_fire_case_insensitively),
             SG_TEST(test_phrase_offsets_and_text),
             SG_TEST(test_self_talk_does_not_fire),
             SG_TEST(test_questions_do_not_fire),
             SG_TEST(test_repetition_loop_fires_once),
             SG_TEST(test_repetition_storm_stays_quiet),
             SG_TEST(test_min_gap_drops_close_triggers),
             SG_TEST(test_class_filter),
             SG_TEST(test_fences),
             SG_TEST(test_fence_quoted_twice_fires_once),
             SG_TEST(test_fence_text_and_offset),
             SG_TEST(test_kernels),
             SG_TEST(test_kernel_braces_in_literals_and_comments),
             SG_TEST(test_kernel_quoted_twice_fires_once),
             SG_TEST(test_kernel_does_not_cross_fences),
             SG_TEST(test_long_sentence_text_holds_the_match),
             SG_TEST(test_binary_noise_is_harmless),
             SG_TEST(test_trace_matmul_cuda),
             SG_TEST(test_trace_hinge_c),
             SG_TEST(test_trace_softmax_kernelbench),
             SG_TEST(test_trace_transpose_cancelled),
             SG_TEST(test_cli_json_lines_match_library),
             SG_TEST(test_cli_chunking_and_stdin_agree),
             SG_TEST(test_cli_class_filter_and_extract),
             SG_TEST(test_cli_bad_usage_exits_2_naming_it))
