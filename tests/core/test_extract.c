/* test_extract.c: candidate extraction (src/core/sg_extract.c): the last
 * block, entry preference, language rules, kernels in open text, braces in
 * literals and comments, and the none / incomplete / wrong_language outcomes
 * with their reasons. Every input is copied against the end of a malloc'd
 * buffer without a NUL, so a read past len crashes under ASan. */
#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "core/sg_extract.h"
#include "sg_test.h"

#include <stdlib.h>
#include <string.h>

typedef struct got {
  sg_extracted x;
  char *span;  /* the FOUND span as a string (caller frees) */
} got;

static got extract(const char *text, const char *lang, const char *entry) {
  size_t len = strlen(text);
  char *tight = sg_malloc(len ? len : 1);
  memcpy(tight, text, len);
  got g;
  memset(&g.x, 0xAB, sizeof g.x);
  sg_extract_candidate(tight, len, lang, entry, &g.x);
  if (g.x.outcome == SG_EXTRACT_FOUND) {
    SG_CHECK(g.x.start + g.x.len <= len);
    SG_CHECK(g.x.reason == NULL);
    g.span = sg_strndup(tight + g.x.start, g.x.len);
  } else {
    SG_CHECK(g.x.reason != NULL && strlen(g.x.reason) > 20);
    SG_CHECK_EQ_INT(g.x.len, 0);
    g.span = NULL;
  }
  free(tight);
  return g;
}

static void expect_found(const char *text, const char *lang, const char *entry,
                         const char *want) {
  got g = extract(text, lang, entry);
  SG_CHECK_MSG(g.x.outcome == SG_EXTRACT_FOUND, "outcome %s for \"%s\" (%s)",
               sg_extract_outcome_name(g.x.outcome), text, g.x.reason);
  SG_CHECK_STR_EQ(g.span, want);
  free(g.span);
}

static const char *expect_outcome(const char *text, const char *lang,
                                  sg_extract_outcome want) {
  got g = extract(text, lang, NULL);
  SG_CHECK_MSG(g.x.outcome == want, "outcome %s, want %s, for \"%s\"",
               sg_extract_outcome_name(g.x.outcome),
               sg_extract_outcome_name(want), text);
  free(g.span);
  return g.x.reason;
}

static void test_outcome_names(void) {
  SG_CHECK_STR_EQ(sg_extract_outcome_name(SG_EXTRACT_FOUND), "found");
  SG_CHECK_STR_EQ(sg_extract_outcome_name(SG_EXTRACT_NONE), "none");
  SG_CHECK_STR_EQ(sg_extract_outcome_name(SG_EXTRACT_INCOMPLETE), "incomplete");
  SG_CHECK_STR_EQ(sg_extract_outcome_name(SG_EXTRACT_WRONG_LANG),
                  "wrong_language");
}

static void test_last_block_wins(void) {
  expect_found("Draft:\n```cuda\nint a;\n```\nBetter:\n```cuda\nint b;\n```\n"
               "Done.\n", "cuda", NULL, "int b;\n");
  /* a block of another kind after it does not count */
  expect_found("```c\nint a;\n```\n```text\noutput\n```\n", "c", NULL,
               "int a;\n");
  /* closed at the very end, without a newline */
  expect_found("```python\nx = 1\n```", "python", NULL, "x = 1\n");
  /* CRLF line ends */
  expect_found("```c\r\nint a;\r\n```\r\n", "c", NULL, "int a;\r\n");
  /* tilde fences, indented fences */
  expect_found("~~~cpp\nint t;\n~~~\n", "cuda", NULL, "int t;\n");
  expect_found("  ```c\n  int i;\n  ```\n", "c", NULL, "  int i;\n");
  /* a shorter run inside does not close a longer fence */
  expect_found("````c\nint x;\n```\nint y;\n````\n", "c", NULL,
               "int x;\n```\nint y;\n");
}

static void test_entry_block_preferred(void) {
  const char *t = "```cuda\n__global__ void k(float *x) { x[0] = 1; }\n"
                  "void launch(float *x) { k<<<1,1>>>(x); }\n```\n"
                  "A helper on its own:\n"
                  "```cuda\n__device__ float sq(float v) { return v * v; }\n```\n";
  expect_found(t, "cuda", "launch",
               "__global__ void k(float *x) { x[0] = 1; }\n"
               "void launch(float *x) { k<<<1,1>>>(x); }\n");
  /* the name inside longer identifiers first, then its definition */
  expect_found("```c\nint my_launch2;\nvoid launch_x(int *x) { x[0] = my_launch2; }\n"
               "void launch(int *x) { x[0] = 0; }\n```\n"
               "```c\nvoid other(int *x) { x[0] = 1; }\n```\n",
               "c", "launch",
               "int my_launch2;\nvoid launch_x(int *x) { x[0] = my_launch2; }\n"
               "void launch(int *x) { x[0] = 0; }\n");
  /* without an entry, the last block */
  expect_found(t, "cuda", NULL,
               "__device__ float sq(float v) { return v * v; }\n");
  /* a call or a declaration is not a definition */
  expect_found("```c\nvoid f(int *x) { x[0] = 0; }\n```\n"
               "```c\nvoid g(int *x);\nvoid h(int *x) { g(x); }\n```\n",
               "c", "f", "void f(int *x) { x[0] = 0; }\n");
  /* two blocks define it: the last */
  expect_found("```c\nvoid f(int *x) { x[0] = 0; }\n```\n"
               "```c\nvoid f(int *x) { x[0] = 1; }\n```\n"
               "```c\nint unrelated;\n```\n",
               "c", "f", "void f(int *x) { x[0] = 1; }\n");
  /* Python: def or class */
  expect_found("```python\nclass ModelNew:\n    pass\n```\n```python\nprint(1)\n```\n",
               "python", "ModelNew", "class ModelNew:\n    pass\n");
  expect_found("```py\ndef run(x):\n    return x\n```\n```python\nrun(1)\n```\n",
               "python", "run", "def run(x):\n    return x\n");
}

static void test_language_rules(void) {
  /* cuda: cuda, cu, cpp, c++; c or unlabelled only with __global__ */
  expect_found("```cu\nint a;\n```\n", "cuda", NULL, "int a;\n");
  expect_found("```C++\nint a;\n```\n", "cuda", NULL, "int a;\n");
  expect_found("```c\n__global__ void k() {}\n```\n", "cuda", NULL,
               "__global__ void k() {}\n");
  expect_found("```\n__global__ void k() {}\n```\n", "cuda", NULL,
               "__global__ void k() {}\n");
  expect_outcome("```c\nvoid k() {}\n```\n", "cuda", SG_EXTRACT_WRONG_LANG);
  /* c: c, h, cpp; unlabelled with a complete function */
  expect_found("```cpp\nvoid f() {}\n```\n", "c", NULL, "void f() {}\n");
  expect_found("```\nvoid f() {}\n```\n", "c", NULL, "void f() {}\n");
  expect_outcome("```cuda\nvoid f() {}\n```\n", "c", SG_EXTRACT_WRONG_LANG);
  /* python: python, py, python3; unlabelled with def/class/import */
  expect_found("```python3\nx = 1\n```\n", "python", NULL, "x = 1\n");
  expect_found("```\nimport torch\n```\n", "python", NULL, "import torch\n");
  expect_outcome("```cuda\n__global__ void k() {}\n```\n", "python",
                 SG_EXTRACT_WRONG_LANG);
  /* the info string's first word is the language, case-insensitively */
  expect_found("```CUDA title=\"k.cu\"\nint a;\n```\n", "cuda", NULL, "int a;\n");
  /* an unknown task language takes any code block */
  expect_found("```rust\nfn main() {}\n```\n", "zig", NULL, "fn main() {}\n");
}

static void test_kernel_in_open_text(void) {
  const char *t = "Here is my answer.\n"
                  "#include <cuda_runtime.h>\n"
                  "\n"
                  "__global__ void k(float *x) {\n"
                  "  x[threadIdx.x] = 1.0f;\n"
                  "}\n"
                  "\n"
                  "void launch(float *x) { k<<<1, 32>>>(x); }\n"
                  "That launches one warp.\n";
  expect_found(t, "cuda", "launch",
               "#include <cuda_runtime.h>\n\n__global__ void k(float *x) {\n"
               "  x[threadIdx.x] = 1.0f;\n}\n\n"
               "void launch(float *x) { k<<<1, 32>>>(x); }");
  /* prose between two definitions splits them: the last run wins */
  const char *u = "void a(int *x) { x[0] = 1; }\n"
                  "Now a better one, with a different idea.\n"
                  "void b(int *x) { x[0] = 2; }\n";
  expect_found(u, "c", NULL, "void b(int *x) { x[0] = 2; }");
  /* ...unless an earlier run defines the entry */
  expect_found(u, "c", "a", "void a(int *x) { x[0] = 1; }");
  /* prose on the signature's line is left out */
  expect_found("Answer: void f(int *x) { *x = 3; }\n", "c", NULL,
               "void f(int *x) { *x = 3; }");
  /* a fenced block of the right language wins over open text */
  expect_found("void f(int *x) { *x = 1; }\n```c\nint z;\n```\n", "c", NULL,
               "int z;\n");
  /* open text is searched around blocks of other kinds */
  expect_found("```text\nlog\n```\nvoid f(int *x) { *x = 1; }\n", "c", NULL,
               "void f(int *x) { *x = 1; }");
  /* Python has no braces: no open-text candidate */
  expect_outcome("def f(x):\n    return x\n", "python", SG_EXTRACT_NONE);
}

static void test_braces_in_literals_and_comments(void) {
  const char *t = "void f(char *s) {\n"
                  "  s[0] = '}'; s[1] = '\\''; /* } { */ // }\n"
                  "  const char *q = \"}\\\"{\";\n"
                  "}\n"
                  "trailing prose.\n";
  expect_found(t, "c", NULL,
               "void f(char *s) {\n  s[0] = '}'; s[1] = '\\''; /* } { */ // }\n"
               "  const char *q = \"}\\\"{\";\n}");
  /* and inside a block too (the block is taken whole) */
  expect_found("```c\nvoid g() { char c = '{'; }\n```\n", "c", "g",
               "void g() { char c = '{'; }\n");
}

static void test_incomplete(void) {
  const char *r1 = expect_outcome(
      "Let me write it.\n```cuda\n__global__ void k(float *x) {\n  x[0] =",
      "cuda", SG_EXTRACT_INCOMPLETE);
  SG_CHECK_CONTAINS(r1, "unclosed code block");
  /* an unlabelled block that was cut is incomplete too */
  expect_outcome("```\n__glo", "cuda", SG_EXTRACT_INCOMPLETE);
  /* a body cut in the open text */
  const char *r2 = expect_outcome(
      "__global__ void k(float *x) {\n  if (x) {\n    x[0] = 1;\n  }\n",
      "cuda", SG_EXTRACT_INCOMPLETE);
  SG_CHECK_CONTAINS(r2, "braces never balanced");
  SG_CHECK(strcmp(r1, r2) != 0);
  /* an earlier complete block is still a candidate */
  expect_found("```c\nint ok;\n```\n```c\nvoid f() {", "c", NULL, "int ok;\n");
  /* an unclosed block of another language is not incomplete code */
  expect_outcome("```rust\nfn main() {", "c", SG_EXTRACT_WRONG_LANG);
}

static void test_none_and_wrong_language(void) {
  const char *n = expect_outcome("I could not decide on a kernel.\n", "cuda",
                                 SG_EXTRACT_NONE);
  SG_CHECK_CONTAINS(n, "```cuda");
  SG_CHECK_CONTAINS(expect_outcome("", "c", SG_EXTRACT_NONE), "```c");
  SG_CHECK_CONTAINS(expect_outcome("nothing", "python", SG_EXTRACT_NONE),
                    "```python");
  /* blocks that are not code are no code */
  expect_outcome("```text\nhello\n```\n```bash\nmake\n```\n", "c",
                 SG_EXTRACT_NONE);
  expect_outcome("```cuda\n```\n", "cuda", SG_EXTRACT_NONE);
  const char *w = expect_outcome("```python\nimport torch\n```\n", "cuda",
                                 SG_EXTRACT_WRONG_LANG);
  SG_CHECK_CONTAINS(w, "CUDA");
  SG_CHECK(strcmp(n, w) != 0);
  /* NULL text is no text */
  sg_extracted x;
  sg_extract_candidate(NULL, 10, "c", NULL, &x);
  SG_CHECK_EQ_INT(x.outcome, SG_EXTRACT_NONE);
}

static void test_inline_fence_is_not_a_block(void) {
  /* not a block: for C its function is open text, for Python nothing */
  expect_found("Use ```void f() {}``` here\n", "c", NULL, "void f() {}");
  expect_outcome("Use ```import os``` here\n", "python", SG_EXTRACT_NONE);
}

/* The realistic traces the scanner tests use, end to end. */
static got extract_trace(const char *name, const char *lang, const char *entry) {
  char path[512];
  snprintf(path, sizeof path, SG_SOURCE_ROOT "/tests/core/data/triggers/%s.txt",
           name);
  char *text = NULL;
  sg_err err;
  SG_CHECK_OK(sg_file_read(path, 1 << 20, &text, NULL, &err), err);
  got g = extract(text, lang, entry);
  free(text);
  return g;
}

static void test_realistic_traces(void) {
  /* the launcher's block defines the entry; the kernel is in an earlier one
   * (the documented limit: one span) */
  got g = extract_trace("matmul_cuda", "cuda", "matmul");
  SG_CHECK_EQ_INT(g.x.outcome, SG_EXTRACT_FOUND);
  SG_CHECK(strncmp(g.span, "extern \"C\" void matmul(", 23) == 0);
  free(g.span);
  g = extract_trace("hinge_c", "c", "hinge_loss");
  SG_CHECK_EQ_INT(g.x.outcome, SG_EXTRACT_FOUND);
  SG_CHECK(strncmp(g.span, "#include <stddef.h>\n", 20) == 0);
  SG_CHECK_CONTAINS(g.span, "out[0] = (float)(total / ((double)batch * dim));\n}\n");
  free(g.span);
  /* the corrected second draft, which defines ModelNew */
  g = extract_trace("softmax_kernelbench", "python", "ModelNew");
  SG_CHECK_EQ_INT(g.x.outcome, SG_EXTRACT_FOUND);
  SG_CHECK_CONTAINS(g.span, "class ModelNew(nn.Module):");
  SG_CHECK_CONTAINS(g.span, "block_reduce");
  free(g.span);
  g = extract_trace("softmax_kernelbench", "cuda", NULL);
  SG_CHECK_EQ_INT(g.x.outcome, SG_EXTRACT_WRONG_LANG);
  /* cancelled inside the launcher */
  g = extract_trace("transpose_cancelled", "cuda", "transpose");
  SG_CHECK_EQ_INT(g.x.outcome, SG_EXTRACT_INCOMPLETE);
}

SG_TEST_MAIN(SG_TEST(test_outcome_names), SG_TEST(test_last_block_wins),
             SG_TEST(test_entry_block_preferred), SG_TEST(test_language_rules),
             SG_TEST(test_kernel_in_open_text),
             SG_TEST(test_braces_in_literals_and_comments),
             SG_TEST(test_incomplete), SG_TEST(test_none_and_wrong_language),
             SG_TEST(test_inline_fence_is_not_a_block),
             SG_TEST(test_realistic_traces))
