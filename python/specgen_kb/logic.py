"""Pure logic of the kernelbench harness: no torch, no GPU, no I/O.

Everything here is a function of its arguments, so the unit tests
(tests/gpu/test_kb_logic.py) run on any machine.
"""

import hashlib
import json
import math
import os

# ATen operators that do a task's heavy work. A candidate's ModelNew.forward
# may not call one that the reference's forward calls: that would be timing
# PyTorch's kernel, not the candidate's.
HEAVY_OPS = frozenset({
    "mm", "bmm", "addmm", "addbmm", "baddbmm", "matmul", "mv", "addmv", "dot",
    "linear", "einsum", "tensordot",
    "convolution", "_convolution", "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "cudnn_convolution", "cudnn_convolution_transpose", "mkldnn_convolution",
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention", "scaled_dot_product_attention",
    "_softmax", "softmax", "log_softmax", "_log_softmax",
    "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
    "cudnn_batch_norm", "batch_norm", "native_layer_norm", "layer_norm",
    "native_group_norm", "group_norm",
    "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool2d", "avg_pool3d",
    "cumsum", "cumprod", "sort", "topk",
})


def op_base_name(name):
    """'aten::addmm.out' or 'aten.addmm.default' -> 'addmm'."""
    n = name
    for sep in ("::", "."):
        if n.startswith("aten" + sep):
            n = n[len("aten" + sep):]
            break
    return n.split(".")[0]


def forbidden_calls(reference_ops, candidate_ops):
    """The heavy operators the reference uses that the candidate also calls,
    sorted; empty when the candidate does its own heavy work."""
    ref_heavy = {op_base_name(o) for o in reference_ops} & HEAVY_OPS
    return sorted(ref_heavy & {op_base_name(o) for o in candidate_ops})


# The longest go line a judge started ahead reads (as the cuda runner's).
GO_LINE_MAX = 4096 + 64


def parse_go(line):
    """(seed, path) from a go line without its newline (bytes): decimal
    digits, one space, an absolute path; the cuda runner's rules
    (sg_cuda_go_parse). Raises ValueError saying what is wrong."""
    if isinstance(line, str):
        line = line.encode()
    sp = line.find(b" ")
    digits = line[:sp] if sp >= 0 else line
    if sp <= 0 or not digits.isdigit():
        raise ValueError('expected "SEED PATH"')
    seed = int(digits)
    if seed >= 1 << 64:
        raise ValueError("the seed is over 2^64")
    path = line[sp + 1:]
    if not path or not path.startswith(b"/") or len(path) >= 4096 or b"\0" in path:
        raise ValueError("the path is not absolute, or empty, or too long")
    return seed, os.fsdecode(path)


def tolerances(strict, task_tol=None):
    """(atol, rtol): KernelBench's 1e-2 unless the task says otherwise;
    strict divides them by 100."""
    atol, rtol = (task_tol or (1e-2, 1e-2))
    if strict:
        return atol / 100.0, rtol / 100.0
    return atol, rtol


def median(values):
    v = sorted(values)
    n = len(v)
    if n == 0:
        return float("nan")
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def mean(values):
    return sum(values) / len(values) if values else float("nan")


def unsynced_work(event_ms, wall_ms, slack_ms=0.05, ratio=1.5):
    """True when the host saw the call take much longer than the events on
    the timed stream did: work ran on a stream the events did not cover."""
    if event_ms is None or wall_ms is None or math.isnan(event_ms) or math.isnan(wall_ms):
        return False
    return wall_ms > ratio * event_ms + slack_ms


def inline_cache_key(kwargs, torch_version, cuda_version, arch_list):
    """The build cache key of a load_inline call: everything that changes the
    built module."""
    parts = {
        "name": kwargs.get("name"),
        "cpp_sources": kwargs.get("cpp_sources"),
        "cuda_sources": kwargs.get("cuda_sources"),
        "functions": kwargs.get("functions"),
        "extra_cflags": kwargs.get("extra_cflags"),
        "extra_cuda_cflags": kwargs.get("extra_cuda_cflags"),
        "extra_ldflags": kwargs.get("extra_ldflags"),
        "extra_include_paths": kwargs.get("extra_include_paths"),
        "with_cuda": kwargs.get("with_cuda"),
        "torch": torch_version,
        "cuda": cuda_version,
        "arch": arch_list,
    }
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def result(status, message, **fields):
    """The result object the harness writes (the keys of the cuda runner)."""
    r = {"status": status, "message": message}
    for k, v in fields.items():
        if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
            v = None
        r[k] = v
    return r


def classify_exception(stage, exc_text):
    """The status of an exception raised while the candidate ran: building
    or importing it is compile_error, running it runtime_error."""
    if stage in ("import", "build"):
        return "compile_error"
    return "runtime_error"


# ---- specgen's stricter check (docs/gpu.md, "What is checked") -------------

# KernelBench's own check: torch.allclose with these.
KB_ATOL = 1e-2
KB_RTOL = 1e-2

# Domain trials: floating inputs redrawn signed (normal) at these multiples
# of the task's own inputs' magnitude, same shapes.
DOMAIN_SCALES = (1.0, 1e-3, 1e3)

# specgen never allows an absolute error above this share of the
# reference's largest magnitude.
ATOL_CAP = 1e-2


def kb_surely_ok(s, rtol):
    """Whether KernelBench's check (atol = rtol = 1e-2) passes one output,
    from specgen's comparison s (harness._stats with rtol) alone, without a
    second pass over the output: with the same rtol, an element outside
    KernelBench's tolerance has |c - r| - rtol*|r| > KB_ATOL, so max_excess
    clearly below KB_ATOL (by more than float32's rounding of values the
    size of the output's) and no NaN or infinity mean every element
    passes. False: count them (a task near the edge, or another rtol)."""
    if rtol != KB_RTOL or s["unwritten"] or s["ref_nonfinite"]:
        return False
    ex, m = s["max_excess"], s["max_ref"]
    if not (math.isfinite(ex) and math.isfinite(m)):
        return False
    return ex + 1e-6 * (m * KB_RTOL + KB_ATOL + s["max_abs"]) < KB_ATOL


def specgen_atol(atol, m, m0):
    """specgen's absolute tolerance for one output of one trial: the task's
    atol scaled by the reference's magnitude m (its largest absolute value)
    against its magnitude m0 on the task's own inputs, and never above
    ATOL_CAP * m. m0 <= 0 or None: taken as m."""
    if not m0 or m0 <= 0 or math.isinf(m0) or math.isnan(m0):
        m0 = m
    scaled = atol * (m / m0) if m0 and m0 > 0 else atol
    return min(scaled, ATOL_CAP * m)


def passes(max_excess, unwritten, atol):
    """specgen's element-wise verdict from the comparison's summary:
    max_excess = max(|c - r| - rtol * |r|) (inf where one side is NaN),
    unwritten = NaN elements where the reference has none."""
    return unwritten == 0 and max_excess <= atol


def domain_magnitude(max_abs):
    """The scale m of a domain trial's draw for an input whose largest
    absolute value is max_abs (1 for an all-zero input)."""
    if max_abs is None or not max_abs > 0 or math.isinf(max_abs):
        return 1.0
    return float(max_abs)


def shortcut(numel, cand_constant, ref_constant, equal_input, output_name="output"):
    """The reason a candidate's output is a shortcut, or None: constant while
    the reference's is not (numel > 1), or bitwise equal to an input
    (equal_input: its name, or None) while the reference's is not (the
    caller passes None when the reference's equals it too)."""
    if numel > 1 and cand_constant and not ref_constant:
        return ("%s is one constant value while the reference's varies: a constant "
                "is not the computation" % output_name)
    if equal_input is not None:
        return ("%s is bitwise equal to input %s while the reference's is not: the "
                "candidate returned its input" % (output_name, equal_input))
    return None


def trials_decided(failed, kb_status):
    """Whether the correctness trials can stop: specgen's verdict is the
    first failing trial's (failed: one has failed) and KernelBench's is
    decided (kb_status not None: its first failure, or "ok" after every
    trial); a later trial changes neither, so it is not run. A candidate
    that passes runs every trial."""
    return failed and kb_status is not None


def combine(kb_status, specgen_status):
    """Both verdicts: KernelBench's is decided on its own check alone; a
    failure that happened before it could be decided (a crash, a hang) is
    KernelBench's too."""
    return {"kernelbench_status": kb_status or specgen_status, "status": specgen_status}


def net_ms(wall_ms, overhead_ms, floor_ms=1e-3):
    """A side's time: its median round trip less the median empty one (the
    reference server's), never below floor_ms."""
    return max(wall_ms - overhead_ms, floor_ms)


def unravel(flat, shape):
    """The index, one entry per dimension, of element flat of a row-major
    tensor of shape (empty for a scalar). Plain Python on purpose:
    torch.unravel_index's first call in a process took 1.9 s on an H100
    (PyTorch 2.11), paid by every failing check's message."""
    idx = []
    for d in reversed(tuple(shape)):
        flat, i = divmod(flat, d) if d else (flat, 0)
        idx.append(i)
    return idx[::-1]


# ---- the self-check's wrong candidate (specgen bench --self-check wrong) ----

# Elements perturbed: at most this many, in the middle of the output.
WRONG_SLICE_MAX = 16


def wrong_slice(numel):
    """(start, length) of the slice the wrong candidate perturbs in an
    output of numel elements: a thousandth of it, between 1 and
    WRONG_SLICE_MAX elements, centred; (0, 0) for an empty output."""
    if numel <= 0:
        return 0, 0
    k = max(1, min(WRONG_SLICE_MAX, numel // 1000))
    return max(0, numel // 2 - k // 2), k


def wrong_delta(lo, hi):
    """What the wrong candidate adds to a floating slice, from the output's
    smallest and largest values: a tenth of its magnitude m plus 1e-3.
    specgen allows at most atol (capped at 1e-2 m) plus rtol (1e-2) of
    |reference| <= m, so 0.1 m + 1e-3 is outside every tolerance; a
    non-finite or NaN magnitude counts as 1."""
    m = max(abs(lo), abs(hi)) if lo is not None and hi is not None else float("nan")
    if math.isnan(m) or math.isinf(m):
        m = 1.0
    return 0.1 * m + 1e-3


# ---- files a validation leaves behind ----------------------------------------

# The file, in a judge's working directory, listing its pid and its
# servers' (src/eval/sg_shm.h: SG_SHM_PIDS_FILE, the same name).
IPC_PIDS_FILE = "specgen-ipc-pids"


def ipc_files(names, pids):
    """The names among names (entries of /dev/shm) that PyTorch's CUDA IPC
    left for one of pids: the driver's cuda.shm.<device>.<pid in
    hex>.<sequence> and PyTorch's reference-count segments torch_<pid>_<
    random>_<n> (both seen on an H100 host with PyTorch 2.11). PyTorch
    removes them in its exit handlers, which a process killed, or ended by
    os._exit, never runs."""
    want = set(pids)
    out = []
    for n in names:
        parts = n.split(".")
        pid = None
        if len(parts) >= 4 and parts[0] == "cuda" and parts[1] == "shm":
            try:
                pid = int(parts[-2], 16)
            except ValueError:
                pid = None
        elif n.startswith("torch_"):
            under = n.split("_")
            if len(under) >= 4 and under[1].isdigit():
                pid = int(under[1])
        if pid is not None and pid in want:
            out.append(n)
    return sorted(out)


# ---- device memory ------------------------------------------------------------

# The NaN poison the candidate's process allocates before a trial: up to
# three copies of the last outputs, within this many bytes (at least one
# copy): three copies of a 6.4-GB output were what pushed the evaluation
# of level 1's largest tasks past an 80-GB card.
POISON_BUDGET_BYTES = 2 << 30

# Outputs above this many bytes: the servers hand their cached blocks back
# after each call (torch.cuda.empty_cache), so that the three processes'
# caches do not each keep the peak of the others.
RELEASE_CACHE_BYTES = 1 << 30


def poison_copies(output_bytes, budget=POISON_BUDGET_BYTES, most=3):
    """How many NaN copies of outputs of output_bytes bytes to allocate:
    as many as fit budget, between 1 and most."""
    if output_bytes <= 0:
        return most
    return max(1, min(most, budget // output_bytes))
