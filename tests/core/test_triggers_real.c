/* test_triggers_real.c: the trigger scanner on the shapes of real reasoning.
 *
 * Real traces of models writing Triton and CUDA kernels differ from the
 * tidy ones in test_triggers.c: Triton kernels are Python (`@triton.jit`
 * over a def), blocks are labelled python, triton or nothing, kernels are
 * revised again and again with the same last lines, and implementation
 * phrases come in every plain form. Every case here is fed at every split
 * (trig_harness.c).
 */
#include "common/sg_alloc.h"
#include "core/sg_triggers.h"
#include "sg_test.h"
#include "trig_harness.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- triton */

#define TRITON_ADD                                                     \
  "@triton.jit\n"                                                      \
  "def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"   \
  "    pid = tl.program_id(0)\n"                                       \
  "    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"                     \
  "    mask = offs < n\n"                                              \
  "    x = tl.load(x_ptr + offs, mask=mask)\n"                         \
  "    tl.store(out_ptr + offs, x + tl.load(y_ptr + offs, mask=mask), mask=mask)\n"

static void test_triton_kernels(void) {
  static const tcase t[] = {
      /* in a python block: the kernel, then the block */
      {"```python\n" TRITON_ADD "```\n", "KF"},
      /* a launcher after it: the body ends at the dedent */
      {"```python\n" TRITON_ADD "\ndef add(x, y):\n    return x\n```\n", "KF"},
      /* unlabelled, triton-labelled and ~~~ blocks */
      {"```\n" TRITON_ADD "```\n", "KF"},
      {"```triton\n" TRITON_ADD "```\n", "KF"},
      {"~~~py\n" TRITON_ADD "~~~\n", "KF"},
      /* in the open text, ended by prose or by the end of the text */
      {TRITON_ADD "\nThat is the whole kernel.\n", "K"},
      {TRITON_ADD, "K"},
      /* autotune and heuristics decorators, a multi-line decorator */
      {"@triton.autotune(configs=[\n"
       "    triton.Config({'BLOCK': 128}, num_warps=4),\n"
       "], key=['n'])\n"
       "@triton.jit\n"
       "def k(x_ptr, n, BLOCK: tl.constexpr):\n"
       "    tl.store(x_ptr, 1)\n", "K"},
      {"@triton.heuristics({'EVEN': lambda a: a['n'] % 2 == 0})\n"
       "@triton.jit()\n"
       "def k(x_ptr):\n    tl.store(x_ptr, 1)\n", "K"},
      /* a docstring and wrapped arguments at column 0 do not end the body */
      {"```python\n@triton.jit\ndef k(x_ptr, n):\n"
       "    \"\"\"Doc.\nat column 0\n    \"\"\"\n"
       "    x = tl.load(x_ptr,\nmask=None)\n"
       "    tl.store(x_ptr, x)\n```\n", "KF"},
      /* multi-line parameters, comments, blank lines inside the body */
      {"```python\n@triton.jit\ndef k(\n    x_ptr,  # input\n    n,\n):\n"
       "    # load\n\n    x = tl.load(x_ptr)\n\n    tl.store(x_ptr, x)\n"
       "# after\n```\n", "KF"},
      /* no jit decorator, no body, a cut body: not a Triton kernel */
      {"```python\ndef k(x):\n    return x\n```\n", "F"},
      {"```python\n@torch.compile\ndef k(x):\n    return x\n```\n", "F"},
      {"```python\n@triton.jitter\ndef k(x):\n    return x\n```\n", "F"},
      {"@triton.jit\ndef k(x_ptr):\n", ""},
      {"```python\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1)\n", ""},  /* cut */
      {"@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr,\n", ""},
      {"```python\n@triton.jit\ndef k(x_ptr):\n    s = \"\"\"open\n```\n", "F"},
      /* prose mentioning the decorator is not a kernel */
      {"Decorate it with @triton.jit and call it.\n", ""},
      {"@triton.jit is the decorator we need.\n", ""},
  };
  RUN_TABLE(t);
}

/* The kernel's offset is just past its last statement byte; the fence's
 * just past its closing run. */
static void test_triton_offsets(void) {
  const char *in = "```python\n" TRITON_ADD "\n\ndef launch(x):\n    pass\n```\nok";
  sg_scanner_opts o = trig_gap0();
  result r;
  trig_scan_all_splits(in, &o, &r);
  SG_CHECK_EQ_INT(r.n, 2);
  SG_CHECK_EQ_INT(r.t[0].cls, SG_TRIGGER_KERNEL);
  SG_CHECK_EQ_INT(r.t[0].offset, strstr(in, "mask=mask), mask=mask)\n") - in + 22);
  SG_CHECK_STR_EQ(r.t[0].text,
                  "def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):");
  SG_CHECK_EQ_INT(r.t[1].cls, SG_TRIGGER_FENCE);
  SG_CHECK_EQ_INT(r.t[1].offset, strstr(in, "\nok") - in);
  /* in the open text the body ends before the prose's line */
  const char *in2 = TRITON_ADD "   \n\n  # trailing comment\nNow test it.\n";
  trig_scan_all_splits(in2, &o, &r);
  SG_CHECK_EQ_INT(r.n, 1);
  SG_CHECK_EQ_INT(r.t[0].offset, strstr(in2, "mask=mask), mask=mask)\n") - in2 + 22);
}

/* A CUDA kernel in a block fires at its brace, the block at its close: both,
 * each at its own exact offset (never the block reported early as a kernel). */
static void test_cuda_kernel_then_fence_offsets(void) {
  const char *in = "```cuda\n__global__ void k(float *x) {\n  x[0] = 1;\n}\n```\nok";
  sg_scanner_opts o = trig_gap0();
  result r;
  trig_scan_all_splits(in, &o, &r);
  SG_CHECK_EQ_INT(r.n, 2);
  SG_CHECK_EQ_INT(r.t[0].cls, SG_TRIGGER_KERNEL);
  SG_CHECK_EQ_INT(r.t[0].offset, strstr(in, "}\n```") - in + 1);
  SG_CHECK_EQ_INT(r.t[1].cls, SG_TRIGGER_FENCE);
  SG_CHECK_EQ_INT(r.t[1].offset, strstr(in, "\nok") - in);
  /* the defaults keep both */
  result d;
  trig_run(in, strlen(in), NULL, 3, 0, &d);
  SG_CHECK(trig_same(&d, &r));
}

/* ---------------------------------------------------------------- revisions */

/* "Differs" is decided on the whole block with whitespace runs collapsed:
 * any change of a token anywhere is a new candidate, a re-indented or
 * re-wrapped copy is not. */
static void test_revision_chain(void) {
  static const tcase t[] = {
      /* v1, v2 differing in the first line only, same ending: both fire */
      {"```cuda\n__global__ void k(float *x) {\n  x[0] = 1;\n  x[1] = 2;\n}\n```\n"
       "Here's the corrected kernel:\n"
       "```cuda\n__global__ void k(float *x) {\n  x[0] = 3;\n  x[1] = 2;\n}\n```\n",
       "KFPKF"},
      /* v3 is v1 again, re-indented: silent */
      {"```python\n@triton.jit\ndef k(p):\n    tl.store(p, 1)\n    tl.store(p + 1, 2)\n```\n"
       "```python\n@triton.jit\ndef k(p):\n    tl.store(p, 3)\n    tl.store(p + 1, 2)\n```\n"
       "```python\n@triton.jit\ndef k(p):\n  tl.store(p,  1)\n  tl.store(p + 1, 2)\n```\n",
       "KFKF"},
      /* a revision that only adds a line at the top */
      {"```python\nx = 1\ny = 2\n```\n```python\nimport triton\nx = 1\ny = 2\n```\n",
       "FF"},
      /* a revision in the open text after a fenced version */
      {"```cuda\n__global__ void k(float *x) { x[0] = 1; }\n```\n"
       "__global__ void k(float *x) { x[0] = 2; }\n", "KFK"},
      /* the same kernel quoted in the open text: silent */
      {"```cuda\n__global__ void k(float *x) { x[0] = 1; }\n```\n"
       "__global__ void k(float *x) {\n  x[0] = 1;\n}\n", "KF"},
  };
  RUN_TABLE(t);
}

/* ---------------------------------------------------------------- phrases */

static void test_plain_implementation_phrases(void) {
  static const tcase t[] = {
      {"Let me write the kernel:\n", "P"},
      {"Now I'll write the code.\n", "P"},
      {"Here's the implementation:\n", "P"},
      {"Let me code this up.\n", "P"},
      {"Putting it all together:\n", "P"},
      {"Final code:\n", "P"},
      {"So the code would be:\n", "P"},
      {"Let's put it all together.\n", "P"},
      {"Here is the Triton kernel:\n", "P"},
      {"Here's the updated kernel:\n", "P"},
      {"Let me now write the full code.\n", "P"},
      {"Let me rewrite it with masking.\n", "P"},
      {"Let me fix the code:\n", "P"},
      {"I'll now implement it.\n", "P"},
      {"Let me try writing it out.\n", "P"},
      {"The kernel would look like this:\n", "P"},
      {"Revised code:\n", "P"},
      {"So the kernel code is something like:\n", "P"},
      {"Let's proceed to write the code.\n", "P"},
      {"I'll structure the code as follows:\n", "P"},
      {"Now, implementing this in Triton:\n", "P"},
      {"Here's what the code looks like:\n", "P"},
      {"Translating this into Triton:\n", "P"},
      {"Here's an attempt:\n", "P"},
      /* deliberation and restating the task are not phrases */
      {"Wait, let me rewrite that.\n", ""},
      {"Should I write the kernel now?\n", ""},
      {"I need to optimize the model's forward pass.\n", ""},
      {"The code is slow.\n", ""},
  };
  RUN_TABLE(t);
}

static void test_triton_design_decisions(void) {
  static const tcase t[] = {
      {"Each program handles one row of the matrix.\n", "D"},
      {"I'll use num_warps=8 and num_stages=3.\n", "D"},
      {"Set BLOCK_SIZE to 1024.\n", "D"},
      {"BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 64.\n", "D"},
      {"Use the next power of two of n_cols as BLOCK_SIZE.\n", "D"},
      {"Accumulate in fp32 and use tl.dot for the tile product.\n", "D"},
      {"Use triton.autotune over a few configs.\n", "D"},
      {"Launch with 4 warps.\n", "D"},
      {"Use an online softmax so one pass suffices.\n", "D"},
      {"Use 128-bit vector loads.\n", "D"},
      {"Set the number of warps to 4.\n", "D"},
      {"Use a 2D grid over the output tiles.\n", "D"},
      {"Loop over K in steps of BLOCK_K.\n", "D"},
      {"Alternatively, use a persistent kernel.\n", ""},  /* weighed */
      {"We could use shared memory here.\n", ""},
      {"The original code uses shared memory for each tile.\n", ""},
      {"PyTorch's version launches 256 threads per block.\n", ""},
      {"Another option is a warp per row.\n", ""},
      {"But maybe 128 threads per block is enough.\n", ""},
      {"What about split-k?\n", ""},
  };
  RUN_TABLE(t);
}

/* ---------------------------------------------------------------- noise */

static void test_noise_of_real_traces(void) {
  static const tcase t[] = {
      /* a self-correction right after a decision: only the decision */
      {"I'll use 64x64 tiles.\nWait, no, 32x32 tiles fit better.\n", "D"},
      /* a repetition loop of a phrase and a block */
      {"Let me write the kernel:\nLet me write the kernel:\nLet me write the kernel:\n",
       "P"},
      {"```python\nx = 1\n```\n```python\nx = 1\n```\n```python\nx = 1\n```\n", "F"},
      /* code quoted in prose backticks is neither a block nor a kernel */
      {"The line `@triton.jit` goes above `def k(x):`.\n", ""},
  };
  RUN_TABLE(t);
}

SG_TEST_MAIN(SG_TEST(test_triton_kernels), SG_TEST(test_triton_offsets),
             SG_TEST(test_cuda_kernel_then_fence_offsets),
             SG_TEST(test_revision_chain),
             SG_TEST(test_plain_implementation_phrases),
             SG_TEST(test_triton_design_decisions),
             SG_TEST(test_noise_of_real_traces))
