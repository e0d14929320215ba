"""The kernelbench harness: checks and times a candidate ModelNew against a
KernelBench task's Model, in the process specgen sandboxes for it.

    python3 -m specgen_kb.harness --task TASK.py --cand CAND.py
        [--mode compile|validate|profile] [--trials N] [--warmup N]
        [--timed N] [--seed N] [--strict] [--atol X --rtol X]
        [--cache DIR] [--device N]

It writes one JSON object (the keys of the cuda runner: status, message,
ref_ms, cand_ms, ..., see docs/gpu.md) to the descriptor $SG_RESULT_FD, or to
stdout without it.

What it checks, beyond KernelBench's allclose over seeded inputs:
  - heavy work by PyTorch: ModelNew.forward may not call an ATen operator
    that does the reference's heavy work (mm, convolution, softmax, ...: the
    reference's own operators, recorded with a dispatch mode);
  - cached outputs: the inputs' values are changed in their own buffers and
    the candidate must follow (no result keyed on input pointers);
  - unwritten outputs: freed device memory is filled with NaN before each
    call, so an output taken from torch.empty and not fully written shows it;
  - unsynchronized streams: outputs are compared as soon as forward returns
    (no device-wide synchronization first), and the time the host sees for a
    call is compared with the events' time on the current stream.
Timing follows the cuda evaluator: L2 flush before each run, warm-ups, timed
runs with CUDA events, reference and candidate interleaved, medians.
load_inline builds are cached by content (specgen_kb.inline_cache).
"""

import argparse
import importlib.util
import json
import math
import os
import sys
import time
import traceback

from specgen_kb import logic


def _emit(obj):
    text = json.dumps(obj, allow_nan=False, default=str)
    fd = os.environ.get("SG_RESULT_FD")
    if fd:
        os.write(int(fd), text.encode())
    else:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError("cannot load %s" % path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _short_tb(limit=2000):
    return traceback.format_exc()[-limit:]


class _Recorder:
    """Records the ATen operators dispatched while active."""

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        rec = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                rec.ops.add(str(func))
                return func(*args, **(kwargs or {}))

        self.ops = set()
        self.mode = Mode()

    def __enter__(self):
        self.mode.__enter__()
        return self

    def __exit__(self, *a):
        return self.mode.__exit__(*a)


def _to_list(out):
    if isinstance(out, (list, tuple)):
        return list(out)
    return [out]


def _compare(torch, ref_out, cand_out, atol, rtol):
    """(ok, max_abs, max_rel, first_bad_flat_index, message)."""
    ref_l, cand_l = _to_list(ref_out), _to_list(cand_out)
    if len(ref_l) != len(cand_l):
        return False, math.inf, math.inf, -1, "ModelNew returned %d outputs, Model %d" % (
            len(cand_l), len(ref_l))
    max_abs = max_rel = 0.0
    for i, (r, c) in enumerate(zip(ref_l, cand_l)):
        if not torch.is_tensor(c):
            return False, math.inf, math.inf, -1, "output %d is a %s, not a tensor" % (
                i, type(c).__name__)
        if tuple(r.shape) != tuple(c.shape):
            return False, math.inf, math.inf, -1, "output %d has shape %s, expected %s" % (
                i, tuple(c.shape), tuple(r.shape))
        r64, c64 = r.detach().double(), c.detach().double()
        diff = (c64 - r64).abs()
        bad = ~(diff <= atol + rtol * r64.abs())
        bad |= torch.isnan(c64) & ~torch.isnan(r64)
        finite = torch.isfinite(diff)
        if finite.any():
            max_abs = max(max_abs, diff[finite].max().item())
            rel = diff[finite] / r64.abs()[finite].clamp_min(1e-30)
            max_rel = max(max_rel, rel.max().item())
        if not finite.all():
            max_abs = max_rel = math.inf
        nbad = int(bad.sum().item())
        if nbad:
            first = int(bad.flatten().nonzero()[0].item())
            idx = list(int(x) for x in torch.unravel_index(torch.tensor(first), r.shape))
            unwritten = int((torch.isnan(c64) & ~torch.isnan(r64)).sum().item())
            msg = ("output %d differs from the reference: %d of %d elements outside "
                   "atol=%g rtol=%g%s; first at %s: got %.9g, expected %.9g" % (
                       i, nbad, r.numel(), atol, rtol,
                       " (%d are NaN: unwritten memory?)" % unwritten if unwritten else "",
                       idx, c64.flatten()[first].item(), r64.flatten()[first].item()))
            return False, max_abs, max_rel, first, msg
    return True, max_abs, max_rel, -1, ""


def _poison_free_memory(torch, like, copies=3):
    """Fills blocks the caching allocator will hand out next with NaN: the
    sizes of the reference's outputs, allocated, filled and freed."""
    keep = []
    for t in like:
        if torch.is_tensor(t) and t.is_floating_point():
            for _ in range(copies):
                keep.append(torch.full_like(t, float("nan")))
    del keep


def _inputs(torch, mod, seed, device):
    torch.manual_seed(seed)
    xs = mod.get_inputs()
    return [x.to(device) if torch.is_tensor(x) else x for x in xs]


def _models(torch, task, cand, seed, device):
    init = task.get_init_inputs()
    torch.manual_seed(seed)
    ref = task.Model(*init).to(device).eval()
    torch.manual_seed(seed)
    new = cand.ModelNew(*init).to(device).eval()
    return ref, new


def _time_pair(torch, ref, new, xs, warmup, timed):
    """Interleaved timing after an L2 flush; returns per-run lists of event
    milliseconds and host wall milliseconds for both."""
    flush = torch.empty(int(256e6) // 4, dtype=torch.float32, device=xs[0].device
                        if torch.is_tensor(xs[0]) else "cuda")
    times = {"ref": [], "cand": [], "ref_wall": [], "cand_wall": []}
    fns = {"ref": ref, "cand": new}
    for i in range(warmup + timed):
        order = ("ref", "cand") if i % 2 == 0 else ("cand", "ref")
        for who in order:
            flush.zero_()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            t0 = time.perf_counter()
            with torch.no_grad():
                fns[who](*xs)
            end.record()
            torch.cuda.synchronize()
            wall = (time.perf_counter() - t0) * 1e3
            if i >= warmup:
                times[who].append(start.elapsed_time(end))
                times[who + "_wall"].append(wall)
    return times


def run(args):
    t_start = time.perf_counter()
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        return logic.result("infra_error", "PyTorch is not importable: %s" % e)
    from specgen_kb import inline_cache

    builds = inline_cache.install(args.cache)
    try:
        task = _load(args.task, "specgen_kb_task")
    except Exception:  # noqa: BLE001
        return logic.result("infra_error", "loading the task file failed:\n" + _short_tb())
    t0 = time.perf_counter()
    try:
        cand = _load(args.cand, "specgen_kb_candidate")
    except Exception:  # noqa: BLE001
        return logic.result("compile_error", "importing the candidate failed:\n" + _short_tb(),
                            build_s=time.perf_counter() - t0, inline_builds=builds)
    build_s = time.perf_counter() - t0
    if not hasattr(cand, "ModelNew"):
        return logic.result("compile_error", "the candidate defines no class ModelNew",
                            build_s=build_s, inline_builds=builds)
    if args.mode == "compile":
        return logic.result("ok", "imported; ModelNew defined", build_s=build_s,
                            inline_builds=builds)
    if not torch.cuda.is_available():
        return logic.result("infra_error", "no CUDA device visible to PyTorch")
    device = torch.device("cuda", args.device)
    torch.cuda.set_device(device)
    atol, rtol = logic.tolerances(args.strict, (args.atol, args.rtol))
    stage = "init"
    try:
        ref, new = _models(torch, task, cand, args.seed, device)
        if args.mode == "profile":
            xs = _inputs(torch, task, args.seed, device)
            with torch.no_grad():
                new(*xs)
                torch.cuda.synchronize()
                torch.cuda.profiler.start()
                new(*xs)
                torch.cuda.synchronize()
                torch.cuda.profiler.stop()
            return logic.result("ok", "profiled one call")

        stage = "run"
        worst_abs = worst_rel = 0.0
        with torch.no_grad():
            # Correctness on fresh inputs, outputs compared right away (no
            # device-wide synchronization: work left on another stream shows).
            # After the first trial, new values go into the same buffers: a
            # result cached or keyed on input pointers does not follow them.
            for trial in range(args.trials):
                xs = _inputs(torch, task, args.seed + trial, device)
                ref_out = ref(*xs)
                _poison_free_memory(torch, _to_list(ref_out))
                cand_out = new(*xs)
                ok, a, r, first, msg = _compare(torch, ref_out, cand_out, atol, rtol)
                worst_abs, worst_rel = max(worst_abs, a), max(worst_rel, r)
                if not ok:
                    return logic.result("numerical_error", "trial %d: %s" % (trial + 1, msg),
                                        max_abs_err=worst_abs, max_rel_err=worst_rel,
                                        first_mismatch=first, build_s=build_s)
                if trial == 0:
                    fresh = _inputs(torch, task, args.seed + 1000003, device)
                    for x, f in zip(xs, fresh):
                        if torch.is_tensor(x):
                            x.copy_(f)
                    ref_out = ref(*xs)
                    cand_out = new(*xs)
                    ok, a, r, first, msg = _compare(torch, ref_out, cand_out, atol, rtol)
                    if not ok:
                        return logic.result(
                            "rejected",
                            "the output did not follow new input values written into the "
                            "same buffers (a cached or pointer-keyed result?): " + msg,
                            max_abs_err=a, max_rel_err=r, first_mismatch=first)
            # Heavy work done by PyTorch's own operators.
            with _Recorder() as rec_ref:
                ref(*xs)
            with _Recorder() as rec_cand:
                new(*xs)
            torch.cuda.synchronize()
            bad = logic.forbidden_calls(rec_ref.ops, rec_cand.ops)
            if bad:
                return logic.result(
                    "rejected",
                    "ModelNew.forward calls PyTorch's %s, which does the reference's heavy "
                    "work: write your own kernel for it" % ", ".join("aten::" + b for b in bad))
        stage = "time"
        xs = _inputs(torch, task, args.seed, device)
        times = _time_pair(torch, ref, new, xs, args.warmup, args.timed)
    except Exception:  # noqa: BLE001
        return logic.result(logic.classify_exception(stage, ""),
                            "the candidate raised an exception (%s stage):\n%s" % (
                                stage, _short_tb()), build_s=build_s)
    ref_ms, cand_ms = logic.median(times["ref"]), logic.median(times["cand"])
    cand_wall = logic.median(times["cand_wall"])
    if logic.unsynced_work(cand_ms, cand_wall, slack_ms=0.5):
        return logic.result(
            "rejected",
            "the candidate's work outlasted the current stream's events (%.3f ms by "
            "events, %.3f ms by the host clock): it runs on a stream it does not "
            "synchronize with the current one" % (cand_ms, cand_wall))
    return logic.result(
        "ok", "correct on %d seeded input sets; %.4f ms against the reference's %.4f ms "
        "(median of %d runs)" % (args.trials, cand_ms, ref_ms, args.timed),
        ref_ms=ref_ms, cand_ms=cand_ms, ref_mean_ms=logic.mean(times["ref"]),
        cand_mean_ms=logic.mean(times["cand"]), speedup=ref_ms / cand_ms,
        max_abs_err=worst_abs, max_rel_err=worst_rel, first_mismatch=-1,
        trials=args.trials, build_s=build_s, inline_builds=builds,
        cand_wall_ms=cand_wall, total_s=time.perf_counter() - t_start)


def main(argv=None):
    p = argparse.ArgumentParser(prog="specgen_kb.harness")
    p.add_argument("--task", required=True)
    p.add_argument("--cand", required=True)
    p.add_argument("--mode", default="validate", choices=["compile", "validate", "profile"])
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--timed", type=int, default=40)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--strict", action="store_true")
    p.add_argument("--atol", type=float, default=1e-2)
    p.add_argument("--rtol", type=float, default=1e-2)
    p.add_argument("--cache", default=None)
    args = p.parse_args(argv)
    try:
        res = run(args)
    except Exception:  # noqa: BLE001
        res = logic.result("infra_error", "the harness failed:\n" + _short_tb())
    _emit(res)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
