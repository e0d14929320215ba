#!/usr/bin/env python3
"""Writes the SYNTHETIC part of the trigger corpus: made-up reasoning traces
of a model writing Triton and CUDA kernels, with their annotations.

These are not real model output. They imitate the shapes seen in reasoning
models' traces (long deliberation, self-correction, code drafted, revised
with the same last lines, quoted again, Triton as fenced Python, blocks
labelled python/triton/cuda/cpp/nothing, ~~~ fences, indented fences,
repetition loops). Each annotation is known by construction: the generator
records the offset where every expected trigger completes, independently of
the scanner.

The sentence banks are split in two by position: even entries for the tuning
set, odd entries for the held-out set, so held-out phrasings were never
looked at while tuning the scanner's pattern lists.

    python3 corpus/triggers/make_synthetic.py corpus/triggers

writes synthetic-tuning/ and synthetic-heldout/ (deterministic: seeded).
"""
import os
import random
import sys

# ---------------------------------------------------------------- banks
# Each bank is split: entries [0::2] tune, [1::2] are held out.

OPENINGS = [
    "Okay, so I need to write a fast kernel for {op}. The input is a {shape} tensor of float32.",
    "Alright, the task is to replace the PyTorch {op} with a custom kernel. Shapes: {shape}.",
    "Let's see. The reference model computes {op} on a {shape} input and I have to make it faster.",
    "So the goal here is a faster {op}. The tensor is {shape}, contiguous, float32.",
    "First, understand what the model does: it applies {op} to a {shape} input.",
    "The problem: implement {op} for inputs of shape {shape} and beat the PyTorch baseline.",
]

FILLER = [
    "The reference implementation launches several separate PyTorch operations, so there is overhead between them.",
    "Let me recall how the memory hierarchy behaves for this access pattern.",
    "The total data is about {mb} MB, so at roughly 3 TB/s the lower bound is a few microseconds.",
    "I should be careful about the edge cases where the size is not a multiple of the tile.",
    "The arithmetic intensity is low, which means this operation is memory-bound.",
    "Numerically, subtracting the maximum first keeps the exponentials from overflowing.",
    "PyTorch's version is already reasonably fast, so the gain has to come from fewer passes over memory.",
    "The output has the same shape as the input.",
    "Each row is independent of the others, which makes the problem embarrassingly parallel.",
    "I remember that the H100 has 132 SMs, so the grid should have at least a few hundred programs.",
    "The strides are standard row-major strides.",
    "Correctness first; performance after that.",
    "The test compares against the reference with a tolerance of 1e-4.",
    "Let me think about the indexing again.",
    "So for row r, the elements start at r times the number of columns.",
    "The reduction needs the maximum and then the sum.",
    "That part is straightforward.",
    "I have to remember to handle the mask on the last block.",
    "The inputs are on the GPU already.",
    "Okay, that seems right.",
]

# Sentences that mention design terms without deciding: questions, doubt,
# weighed alternatives. No trigger is expected from them.
NOT_DECISIONS = [
    "Should each program handle one row or several rows?",
    "Hmm, maybe 64x64 tiles would be better, I'm not sure.",
    "Wait, would shared memory even help here?",
    "What about using tensor cores for this?",
    "But wait, if BLOCK_SIZE is 1024, does the row still fit?",
    "Alternatively, a persistent kernel could loop over rows.",
    "Hmm, is num_warps=8 too many for such a small block?",
    "Or maybe vectorized loads would be enough on their own?",
    "Wait, no, that's wrong: the grid is over rows, not columns.",
    "Could a warp shuffle reduction be faster than tl.sum?",
    "Not sure whether double buffering is worth it here.",
    "Hmm, what if each thread computes 8 elements instead?",
]

DECISIONS = [
    "I'll use BLOCK_SIZE = {bs} so a whole row fits in one program.",
    "Each program handles one row of the input.",
    "Set num_warps=4 for this block size.",
    "I'll use {t}x{t} tiles in shared memory for the inputs.",
    "Each thread computes a 4x4 block of outputs held in registers.",
    "Use float4 vectorized loads so each access is 16 bytes.",
    "Launch 256 threads per block and a grid-stride loop over the elements.",
    "The reduction uses warp shuffles: __shfl_down_sync within each warp, then shared memory across warps.",
    "Accumulate in fp32 and use tl.dot on the {t}x{t} tiles.",
    "BLOCK_M = 128, BLOCK_N = 64 and BLOCK_K = 32 with num_stages=3.",
    "I'll go with one warp per row, since rows are short.",
    "To avoid bank conflicts, pad the shared tile to {t}x{t1}.",
    "Use an online softmax so a single pass over the row suffices.",
    "I'll make BLOCK_SIZE the next power of two of the row length.",
    "Use #pragma unroll on the inner k loop.",
    "Each block handles {rows} rows, with 4 warps per block.",
]

PHRASES = [
    "Let me write the kernel:",
    "Now I'll write the code.",
    "Here's the implementation:",
    "Let me code this up.",
    "Putting it all together:",
    "Final code:",
    "So the code would be:",
    "Let's write it out.",
    "Here is the Triton kernel:",
    "Let me try writing it.",
    "Now, writing the kernel:",
    "Let me put it together:",
    "The kernel would look like this:",
    "I'll write it now.",
    "Here's the full code:",
    "Let me draft the kernel first.",
]

REVISION_PHRASES = [
    "Let me fix the code:",
    "Here's the corrected kernel:",
    "Let me rewrite it:",
    "Revised code:",
    "Here's the updated version:",
    "Let me update the kernel:",
]

BUG_NOTES = [
    "Wait, the mask on the load is missing for the last block.",
    "Hmm, the offsets are wrong: I forgot to multiply the row index by the stride.",
    "Wait, the maximum must be taken before the exponential, not after.",
    "Oh wait, that writes to the input pointer instead of the output.",
    "Hmm, other should be minus infinity for the masked lanes, not zero.",
    "Wait, the grid uses the wrong dimension.",
]

REQUOTE = [
    "So the answer is the one above, once more:",
    "To summarise, again:",
    "Same as before, for reference:",
    "Repeating it here:",
]

OPS = [
    ("softmax", "triton"), ("relu", "triton"), ("layernorm", "triton"),
    ("vector add", "triton"), ("matmul", "triton"), ("gelu", "cuda"),
    ("softmax", "cuda"), ("matmul", "cuda"), ("sum reduction", "cuda"),
    ("scale and bias", "cuda"),
]


def half(bank, heldout):
    return bank[1::2] if heldout else bank[0::2]


# ---------------------------------------------------------------- code

def triton_kernel(r, name, variant):
    """A Triton kernel: (decorators+def+body lines). variant picks lines."""
    lines = []
    if r.random() < 0.3:
        lines += ["@triton.autotune(",
                  "    configs=[",
                  "        triton.Config({'BLOCK_SIZE': 1024}, num_warps=4),",
                  "        triton.Config({'BLOCK_SIZE': 2048}, num_warps=8),",
                  "    ],",
                  "    key=['n_cols'],",
                  ")"]
    lines += ["@triton.jit",
              "def %s(" % name,
              "    out_ptr, in_ptr, n_cols, stride,",
              "    BLOCK_SIZE: tl.constexpr,",
              "):"]
    if r.random() < 0.4:
        lines += ['    """One program per row."""']
    body = [
        "    row = tl.program_id(0)",
        "    offs = tl.arange(0, BLOCK_SIZE)",
        "    mask = offs < n_cols" if variant % 3 else "    mask = offs <= n_cols - 1",
        "    x = tl.load(in_ptr + row * stride + offs, mask=mask,",
        "                other=-float('inf'))" if variant % 2 == 0 else "                other=0.0)",
        "    x = x - tl.max(x, axis=0)",
        "    num = tl.exp(x)",
        "    den = tl.sum(num, axis=0)",
    ]
    if variant >= 2:
        body.insert(2, "    # row start")
    lines += body
    lines += ["    tl.store(out_ptr + row * stride + offs, num / den, mask=mask)"]
    return lines


def triton_launcher(name):
    return ["def run(x):",
            "    n_rows, n_cols = x.shape",
            "    out = torch.empty_like(x)",
            "    BLOCK_SIZE = triton.next_power_of_2(n_cols)",
            "    %s[(n_rows,)](out, x, n_cols, x.stride(0), BLOCK_SIZE=BLOCK_SIZE)" % name,
            "    return out"]


def cuda_kernel(r, name, variant):
    lines = ["__global__ void %s(const float* __restrict__ x, float* __restrict__ y, int n) {" % name,
             "    int i = blockIdx.x * blockDim.x + threadIdx.x;"]
    if variant % 2:
        lines += ["    for (; i < n; i += blockDim.x * gridDim.x) {",
                  "        float v = x[i];",
                  "        y[i] = v * 0.5f * (1.0f + tanhf(0.79788456f * v));" if variant == 1
                  else "        y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));",
                  "    }"]
    else:
        lines += ["    if (i < n) {",
                  "        float v = x[i];",
                  "        y[i] = v > 0.0f ? v : 0.0f;" if variant < 2 else "        y[i] = fmaxf(v, 0.0f);",
                  "    }"]
    lines += ["}"]
    return lines


def cuda_launcher(name):
    return ["torch::Tensor run(torch::Tensor x) {",
            "    auto y = torch::empty_like(x);",
            "    int n = x.numel();",
            "    %s<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);" % name,
            "    return y;",
            "}"]


# ---------------------------------------------------------------- writer

class Trace:
    def __init__(self):
        self.text = ""
        self.ann = []       # (offset, class, note)
        self.seen = set()   # whitespace-collapsed blocks already written
        self.seen_k = set()

    def put(self, s):
        self.text += s

    def sentence(self, s, cls=None, end="\n"):
        """A sentence; when cls is given, the trigger completes just past the
        first whitespace byte after its terminator (end starts with one)."""
        self.put(s + end)
        if cls:
            at = len(self.text) - len(end) + 1
            self.ann.append((at, cls, s[:60]))

    def block(self, lang, code_lines, kernel_ends, fence="```", indent=""):
        """A fenced block. kernel_ends: indexes of lines after which a kernel
        is complete (the trigger is at the end of that line's last byte)."""
        body = "\n".join(code_lines)
        key = " ".join(body.split())
        fresh = key not in self.seen
        self.seen.add(key)
        self.put(indent + fence + lang + "\n")
        for i, line in enumerate(code_lines):
            self.put((indent + line if line else line))
            if i in kernel_ends and fresh:
                start = next(j for j, l in enumerate(code_lines)
                             if l.startswith("@triton") or l.startswith("__global__"))
                kkey = " ".join("\n".join(code_lines[start:i + 1]).split())
                if kkey not in self.seen_k:
                    self.ann.append((len(self.text.rstrip(" ")), "kernel", "kernel"))
                self.seen_k.add(kkey)
            self.put("\n")
        self.put(indent + fence)
        if fresh:
            self.ann.append((len(self.text), "fence", "fence " + lang))
        self.put("\n\n")


def kernel_end_index(lines):
    """Index of the kernel's last line: the closing brace for CUDA, the last
    indented statement for Triton."""
    if lines[0].startswith("__global__"):
        return lines.index("}")
    last = 0
    for i, l in enumerate(lines):
        if l.startswith("    ") and not l.strip().startswith("#"):
            last = i
    return last


def make_trace(r, heldout, family):
    t = Trace()
    op, kind = r.choice(OPS)
    shape = r.choice(["(4096, 4096)", "(128, 16384)", "(16, 1024, 1024)", "(8192,)", "(2048, 8192)"])
    fill = lambda: r.choice(half(FILLER, heldout)).format(mb=r.choice([64, 128, 256]))
    t.sentence(r.choice(half(OPENINGS, heldout)).format(op=op, shape=shape))
    if family == "synthetic-glm-style":
        t.put("\n**Analysis**\n\n")
    for _ in range(r.randint(3, 8)):
        t.sentence(fill(), end=r.choice([" ", "\n", "\n\n"]))
        if r.random() < 0.4:
            t.sentence(r.choice(half(NOT_DECISIONS, heldout)))
    t.put("\n")
    decisions = half(DECISIONS, heldout)[:]
    r.shuffle(decisions)   # a decision said twice is a repetition: not twice

    def design():
        s = decisions.pop().format(bs=r.choice([256, 1024, 2048]), t=r.choice([16, 32, 64]),
                                                      t1=r.choice([17, 33, 65]), rows=r.choice([2, 4, 8]))
        bullet = "- " if family == "synthetic-glm-style" else ""
        t.sentence(bullet + s, cls="design")
        t.put("\n" if r.random() < 0.5 else "")
    for _ in range(r.randint(1, 3)):
        design()
        for _ in range(r.randint(1, 3)):
            t.sentence(fill(), end=r.choice([" ", "\n"]))
        t.put("\n")
    name = {"softmax": "softmax_kernel", "relu": "relu_kernel", "layernorm": "ln_kernel",
            "vector add": "add_kernel", "matmul": "matmul_kernel", "gelu": "gelu_kernel",
            "sum reduction": "sum_kernel", "scale and bias": "scale_bias_kernel"}[op]
    langs = ["python", "python", "", "triton", "py"] if kind == "triton" else ["cuda", "cpp", "", "c++", "cuda"]
    variant = r.randint(0, 3)
    loop_phrase = None
    n_versions = r.randint(1, 4)
    for v in range(n_versions):
        if v == 0:
            p = r.choice(half(PHRASES, heldout))
            t.sentence(p, cls="phrase", end="\n\n")
            if r.random() < 0.15:   # a repetition loop: fires once
                for _ in range(r.randint(2, 5)):
                    t.sentence(p, end="\n\n")
        else:
            t.sentence(r.choice(half(BUG_NOTES, heldout)), end=" ")
            t.sentence(r.choice(half(REVISION_PHRASES, heldout)), cls="phrase", end="\n\n")
            variant = (variant + 1 + r.randint(0, 2)) % 4
        code = triton_kernel(r, name, variant) if kind == "triton" else cuda_kernel(r, name, variant)
        kend = kernel_end_index(code)
        if r.random() < 0.5:
            code = (["import torch", "import triton", "import triton.language as tl", ""] if kind == "triton"
                    else ["#include <torch/extension.h>", ""]) + code
            kend += 4 if kind == "triton" else 2
        if r.random() < 0.6:
            code += [""] + (triton_launcher(name) if kind == "triton" else cuda_launcher(name))
        fence = "~~~" if r.random() < 0.1 else ("````" if r.random() < 0.05 else "```")
        indent = "   " if r.random() < 0.1 else ""
        t.block(r.choice(langs), code, {kend}, fence=fence, indent=indent)
        for _ in range(r.randint(1, 4)):
            t.sentence(fill(), end=r.choice([" ", "\n"]))
        if r.random() < 0.3:
            t.sentence(r.choice(half(NOT_DECISIONS, heldout)))
        if r.random() < 0.3 and decisions:
            design()
        t.put("\n")
        last_code, last_kend = code, kend
    if r.random() < 0.4:   # quoted again: silent
        t.sentence(r.choice(half(REQUOTE, heldout)), end="\n\n")
        t.block(r.choice(langs), last_code, {last_kend})
    t.sentence(r.choice(["I think this is correct now.", "That should work.", "Okay, done."]))
    return t


def main(out):
    families = ["synthetic-r1-style", "synthetic-qwen3-style", "synthetic-glm-style"]
    for heldout, sub, n, seed in [(False, "synthetic-tuning", 48, 1), (True, "synthetic-heldout", 24, 3)]:
        d = os.path.join(out, sub)
        os.makedirs(d, exist_ok=True)
        r = random.Random(seed)
        for i in range(n):
            fam = families[i % 3]
            t = make_trace(r, heldout, fam)
            base = os.path.join(d, "%s-%03d" % (fam.replace("synthetic-", "").replace("-style", ""), i))
            with open(base + ".txt", "w") as f:
                f.write(t.text)
            with open(base + ".ann", "w") as f:
                f.write("# family: %s\n" % fam)
                f.write("# source: SYNTHETIC, written by corpus/triggers/make_synthetic.py (seed %d);"
                        " not model output\n" % seed)
                for off, cls, note in sorted(t.ann):
                    f.write("%d\t%s\t%s\n" % (off, cls, " ".join(note.split())))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
