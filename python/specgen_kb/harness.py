"""The kernelbench harness: checks and times a candidate ModelNew against a
KernelBench task's Model, in the process specgen sandboxes for it.

    python3 -m specgen_kb.harness --task TASK.py --cand CAND.py
        [--mode compile|validate|profile] [--trials N] [--warmup N]
        [--timed N] [--seed N] [--strict] [--atol X --rtol X]
        [--cache DIR] [--device N]

It writes one JSON object (the keys of the cuda runner: status, message,
kernelbench_status, ref_ms, cand_ms, ..., see docs/gpu.md) to the descriptor
$SG_RESULT_FD, or to stdout without it.

Validation is a judge and two servers (docs/gpu.md, "What is checked"). The
judge (this process) forks, before it touches CUDA, one server that builds
ModelNew and one that builds Model (the same seed: identical weights). It
draws every input on the device, owns the input buffers each server reads
(shared through CUDA IPC, refilled in place before every call), asks for one
forward at a time and times it by its own clock around the round trip (the
server synchronizes the whole device before it answers, so work on any
stream counts), then takes the outputs (CUDA IPC again) and compares them
itself. Nothing the candidate's process computes or claims decides the
verdict on correctness or time.

What is checked:
  - the task's own get_inputs() (trials): KernelBench's allclose (its
    verdict, kernelbench_status) and specgen's rules: the task's tolerance
    with atol scaled to the reference's magnitude, no NaN left in memory the
    candidate should have written, inputs unchanged, no constant output and
    no output equal to an input where the reference's is neither;
  - domain trials: the same shapes, floating inputs redrawn signed at 1,
    1e-3 and 1e3 of their magnitude;
  - every warm-up and timed run, on fresh inputs, against the reference's
    output for the same inputs;
  - heavy work by PyTorch: ModelNew.forward may not call an ATen operator
    that does the reference's heavy work (recorded by the operator profiler in
    the servers: a rule, not a measurement, and the one check that runs in
    the candidate's process).
"""

import argparse
import contextlib
import importlib.util
import json
import math
import os
import sys
import time
import traceback

from specgen_kb import logic

# How long `import torch` took, and whether bytecode went to specgen's
# cache (_bytecode_cache): reported with the phases.
_IMPORT = {}

# Elements compared at once (float64 temporaries of this many elements).
CHUNK = 1 << 26


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
    """Records the ATen operators dispatched while active, through PyTorch's
    operator profiler (its RecordFunction hooks in the dispatcher see calls
    from Python and from C++ extensions alike). A TorchDispatchMode would
    see the same calls, but its first use imports torch._dynamo and sympy:
    about 4 s per process on an H200 host, against 0.02 s for this."""

    def __init__(self):
        import torch.autograd.profiler as profiler

        self.ops = set()
        self.prof = profiler.profile()

    def __enter__(self):
        self.prof.__enter__()
        return self

    def __exit__(self, *a):
        r = self.prof.__exit__(*a)
        self.ops = {e.name for e in self.prof.function_events if e.name.startswith("aten::")}
        return r


def _to_list(out):
    if isinstance(out, (list, tuple)):
        return list(out)
    return [out]


class _Phases:
    """Seconds spent per phase of a validation (the result's stages), so
    a slow run says where its time went."""

    def __init__(self):
        self.s = {}

    @contextlib.contextmanager
    def __call__(self, name):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.s[name] = self.s.get(name, 0.0) + time.perf_counter() - t0


# ---- inputs, drawn on the device ---------------------------------------------

def _draw(torch, task, seed, device):
    """The task's get_inputs() under seed, allocated on the device (its
    torch.rand and friends draw there: no host generation, no upload)."""
    torch.manual_seed(seed)
    with torch.device(device):
        xs = task.get_inputs()
    return [x.to(device) if torch.is_tensor(x) else x for x in xs]


class _FloatSpec:
    """A floating input's shape, dtype and magnitude: what a domain trial
    needs of the task's first inputs, without keeping them on the device."""

    def __init__(self, torch, x):
        self.shape, self.dtype = x.shape, x.dtype
        self.m = logic.domain_magnitude(
            float(torch.linalg.vector_norm(x, ord=math.inf).item()) if x.numel() else 0.0)


def _domain_spec(torch, xs):
    return [_FloatSpec(torch, x) if torch.is_tensor(x) and x.is_floating_point() else x
            for x in xs]


def _domain(torch, like, scale, seed, device):
    """Inputs of like's shapes (_domain_spec) for a domain trial: floating
    tensors redrawn from a normal (signed) at scale times their magnitude;
    others kept."""
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    out = []
    for x in like:
        if isinstance(x, _FloatSpec):
            out.append(torch.randn(x.shape, generator=g, device=device,
                                   dtype=x.dtype).mul_(x.m * scale))
        else:
            out.append(x)
    return out


def _poison_free_memory(torch, like):
    """Fills blocks the caching allocator will hand out next with NaN: the
    sizes of the last outputs, allocated, filled and freed (up to three
    copies, within logic.POISON_BUDGET_BYTES)."""
    total = sum(_nbytes(shape, dtype) for shape, dtype in like)
    copies = logic.poison_copies(total)
    keep = []
    for shape, dtype in like:
        for _ in range(copies):
            keep.append(torch.full(shape, float("nan"), dtype=dtype, device="cuda"))
    del keep


def _nbytes(shape, dtype):
    n = 1
    for d in shape:
        n *= d
    return n * (dtype.itemsize if hasattr(dtype, "itemsize") else 4)


# ---- the servers ---------------------------------------------------------------

def _build(torch, cand_path, seed, role, device):
    """The server's model: ModelNew (importing the candidate) or Model, from
    get_init_inputs() under the run's seed (both given with the build: a
    judge started ahead learns them only at its go)."""
    task = sys.modules["specgen_kb_task"]
    if role == "candidate":
        cls = _load(cand_path, "specgen_kb_candidate").ModelNew
    else:
        cls = task.Model
    init = task.get_init_inputs()
    torch.manual_seed(seed)
    model = cls(*init).to(device).eval()
    torch.cuda.synchronize()
    return model


def _serve(conn, args, role):
    """A server's life (in a forked child): CUDA and the task file first,
    then, on 'build' (sent once the judge has shared its buffers and made
    itself unreadable to other processes), the model; then requests until
    'quit'. Never returns."""
    code = 0
    model = None
    try:
        import torch
        import torch.multiprocessing  # noqa: F401  (CUDA tensors over the pipe)
        from specgen_kb import inline_cache

        inline_cache.install(args.cache)
        torch.cuda.set_device(args.device)
        device = torch.device("cuda", args.device)
        _load(args.task, "specgen_kb_task")
        torch.cuda.synchronize()
        conn.send(("hello", None))
    except BaseException:  # noqa: BLE001
        conn.send(("error", _short_tb()))
        os._exit(0)
    xs, outs, shapes = None, None, []
    while True:
        try:
            op, arg = conn.recv()
        except EOFError:
            break
        try:
            if op == "inputs":
                xs = arg
                conn.send(("ok", None))
            elif op == "build":
                model = _build(torch, arg[0], arg[1], role, device)
                conn.send(("ready", None))
            elif op == "poison":
                _poison_free_memory(torch, shapes)
                torch.cuda.synchronize()
                conn.send(("ok", None))
            elif op == "call":
                outs = None  # a call's outputs never live beside the last call's
                with torch.no_grad():
                    outs = model(*xs)
                    if arg == "wrong":  # the self-check's wrong candidate (--also-wrong)
                        from specgen_kb import selfcheck
                        outs = selfcheck.wrong(outs)
                # The whole device: work on any stream counts.
                torch.cuda.synchronize()
                conn.send(("done", None))
            elif op == "nop":
                torch.cuda.synchronize()
                conn.send(("done", None))
            elif op == "out":
                # An output that is (a view of) an input lives in the judge's
                # memory, which cannot be shared back: send a copy (outside
                # the clock; the judge then sees it equals the input).
                ins = {x.untyped_storage().data_ptr() for x in xs if torch.is_tensor(x)}
                lst = [o.clone() if torch.is_tensor(o) and
                       o.untyped_storage().data_ptr() in ins else o
                       for o in _to_list(outs)]
                shapes = [(tuple(t.shape), t.dtype) for t in lst
                          if torch.is_tensor(t) and t.is_floating_point()]
                conn.send(("out", lst))
            elif op == "release":
                outs = None
                if sum(_nbytes(sh, dt) for sh, dt in shapes) > logic.RELEASE_CACHE_BYTES:
                    torch.cuda.empty_cache()
                conn.send(("ok", None))
            elif op == "ops":
                with torch.no_grad(), _Recorder() as rec:
                    model(*xs)
                torch.cuda.synchronize()
                conn.send(("ops", sorted(rec.ops)))
            elif op == "quit":
                conn.send(("bye", None))
                break
        except BaseException:  # noqa: BLE001
            try:
                conn.send(("error", _short_tb()))
            except Exception:  # noqa: BLE001
                code = 3
                break
    os._exit(code)


class _Server:
    """The judge's handle on a server process."""

    def __init__(self, args, role, result_fd):
        """result_fd and the go channel (args.go_fd) are the judge's: closed
        in the server."""
        import multiprocessing

        self.role = role
        self.conn, child = multiprocessing.Pipe(duplex=True)
        sys.stdout.flush()
        sys.stderr.flush()
        self.pid = os.fork()
        if self.pid == 0:
            self.conn.close()
            for fd in (result_fd, args.go_fd):
                if fd is not None:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            os.environ.pop("SG_RESULT_FD", None)
            _serve(child, args, role)
        child.close()

    def ask(self, op, arg=None, timeout=None):
        """(reply op, value, seconds by this process's clock); raises
        _Fail on a dead or late server."""
        t0 = time.perf_counter()
        try:
            self.conn.send((op, arg))
            if timeout is not None and not self.conn.poll(timeout):
                self.kill()
                raise _Fail("timeout", "one call of the %s did not finish within %.1f s; "
                            "it was stopped" % (self.role, timeout))
            rop, val = self.conn.recv()
        except (EOFError, OSError):
            raise _Fail("runtime_error" if self.role == "candidate" else "infra_error",
                        "the %s's process %s" % (self.role, self.end()))
        except _Fail:
            raise
        except Exception as e:  # noqa: BLE001  (a message that does not unpickle)
            self.kill()
            raise _Fail("runtime_error" if self.role == "candidate" else "infra_error",
                        "the %s's process answered something that is no message (%s): "
                        "its code wrote into the judge's connection" % (
                            self.role, type(e).__name__))
        return rop, val, time.perf_counter() - t0

    def end(self):
        try:
            pid, st = os.waitpid(self.pid, 0)
        except ChildProcessError:
            return "ended"
        if os.WIFSIGNALED(st):
            return "died of signal %d" % os.WTERMSIG(st)
        return "exited with code %d without answering" % os.WEXITSTATUS(st)

    def kill(self):
        try:
            os.kill(self.pid, 9)
        except OSError:
            pass

    def stop(self):
        """Ends the server: asked to quit (it answers once its requests are
        done), then killed in any case, and reaped."""
        try:
            self.conn.send(("quit", None))
            self.conn.poll(2.0)
        except Exception:  # noqa: BLE001
            pass
        self.kill()
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


class _Fail(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


# ---- comparison, on the judge's side ------------------------------------------

def _stats(torch, r, c, atol, rtol):
    """Element-wise comparison of one output, in chunks of CHUNK elements
    (in float64 when either side is float64, else float32: rounding of
    about 1e-7 of a value, far below any tolerance): a dict of bad (outside
    atol + rtol*|r|), unwritten, first (flat index or -1), max_abs,
    max_rel, max_excess, max_ref, ref_nonfinite. One device sync per chunk:
    the per-chunk figures come back together."""
    rf, cf = r.detach().reshape(-1), c.detach().reshape(-1)
    n = rf.numel()
    s = {"bad": 0, "unwritten": 0, "first": -1, "max_abs": 0.0, "max_rel": 0.0,
         "max_excess": 0.0, "max_ref": 0.0, "ref_nonfinite": 0, "n": n}
    wide = torch.float64 if torch.float64 in (r.dtype, c.dtype) else torch.float32
    for lo in range(0, n, CHUNK):
        rw = rf[lo:lo + CHUNK].to(wide)
        cw = cf[lo:lo + CHUNK].to(wide)
        figures, bad = _chunk_finite(torch, rw, cw, atol, rtol)
        if figures is None:
            figures, bad = _chunk_any(torch, rw, cw, atol, rtol)
        nbad = int(figures[0])
        if nbad and s["first"] < 0:
            s["first"] = lo + int(bad.nonzero()[0].item())
        s["bad"] += nbad
        s["unwritten"] += int(figures[1])
        s["ref_nonfinite"] += int(figures[2])
        s["max_ref"] = max(s["max_ref"], figures[3])
        s["max_abs"] = max(s["max_abs"], figures[4])
        s["max_rel"] = max(s["max_rel"], figures[5])
        s["max_excess"] = max(s["max_excess"], figures[6])
    return s


def _chunk_finite(torch, rw, cw, atol, rtol):
    """_stats's figures of one chunk where both sides are finite, in about
    half the passes over memory of _chunk_any (which a large output, a
    level-1 elementwise task's 6 GB, pays in seconds): the same expressions
    without the NaN and infinity masks. (None, None) when a maximum is not
    finite: then some element is NaN or infinite, and _chunk_any decides."""
    diff = torch.sub(cw, rw).abs_()
    ra = rw.abs()
    max_ref = ra.amax()  # before ra is clamped in place below
    lim = ra.mul(rtol)
    exc = diff - lim
    bad = diff > lim.add_(atol)
    del lim
    rel = diff / ra.clamp_min_(1e-30)
    zero = torch.zeros((), dtype=torch.float64, device=rw.device)
    figures = torch.stack([
        bad.sum().to(torch.float64), zero, zero, max_ref.to(torch.float64),
        diff.amax().to(torch.float64), rel.amax().to(torch.float64),
        exc.amax().to(torch.float64)]).tolist()
    if not all(math.isfinite(v) for v in figures[3:]):
        return None, None
    return figures, bad


def _chunk_any(torch, rw, cw, atol, rtol):
    """_stats's figures of one chunk, NaN and infinities included."""
    rnan, cnan = torch.isnan(rw), torch.isnan(cw)
    diff = torch.sub(cw, rw).abs_()
    diff.masked_fill_(rnan & cnan, 0.0)
    diff.masked_fill_(rnan ^ cnan, math.inf)
    ra = rw.abs()
    bad = ~(diff <= ra.mul(rtol).add_(atol))
    rel = diff / ra.clamp_min(1e-30)
    exc = diff - ra.mul(rtol)
    exc.masked_fill_(torch.isnan(exc), math.inf)
    finite_r = torch.isfinite(rw)
    ra.masked_fill_(~finite_r, 0.0)
    figures = torch.stack([
        bad.sum().to(torch.float64), (cnan & ~rnan).sum().to(torch.float64),
        (~finite_r).sum().to(torch.float64), ra.amax().to(torch.float64),
        diff.amax().to(torch.float64), rel.amax().to(torch.float64),
        exc.amax().to(torch.float64)]).tolist()
    return figures, bad


def _constant(torch, t):
    f = t.reshape(-1)
    if f.numel() < 2:
        return True
    return bool((f == f[0]).all().item())


class _Wrong:
    """The self-check's wrong candidate (--also-wrong): the same ModelNew
    with a slice of its first output perturbed in the candidate's process
    (selfcheck.wrong), checked beside the same candidate against the same
    reference outputs. Its verdict is what a validation of its own would
    give: its first failing check (trials first, then domain trials, then
    the timed runs' outputs), KernelBench's from the trials alone."""

    KEYS = ("kb_status", "kb_message", "m0", "nonfinite0", "worst_abs", "worst_rel",
            "first")

    def __init__(self):
        self.state = {"kb_status": None, "kb_message": "", "m0": {}, "nonfinite0": {},
                      "worst_abs": 0.0, "worst_rel": 0.0, "first": -1}
        self.bad = None
        self.in_trials = True

    def open(self):
        """Whether a call of it can still change its verdict."""
        if self.bad is None:
            return True
        return self.in_trials and self.state["kb_status"] is None

    def caught(self, bad):
        if self.bad is None:
            self.bad = bad

    def trials_over(self):
        self.in_trials = False
        if self.state["kb_status"] is None:
            self.state["kb_status"] = "ok"

    def result(self, same_done, same_status):
        """Its result object: caught (its first failing check), ok (never
        caught though the same candidate went through every check), or
        "undecided" (the same candidate's validation ended first)."""
        st = self.state
        errs = {"max_abs_err": st["worst_abs"], "max_rel_err": st["worst_rel"],
                "first_mismatch": st["first"]}
        if self.bad:
            res = logic.result(self.bad[0], self.bad[1], **errs)
            res.update(logic.combine(st["kb_status"], self.bad[0]))
            if st["kb_status"] not in (None, "ok"):
                res["kernelbench_message"] = st["kb_message"]
            return res
        if same_done:
            res = logic.result("ok", "the wrong candidate passed every check the same "
                               "candidate passed: its perturbed slice was not caught", **errs)
            res.update(logic.combine(st["kb_status"], "ok"))
            return res
        return logic.result("undecided", "not decided: the same candidate's validation "
                            "ended (%s) before the wrong candidate was caught" % same_status,
                            **errs)


class _Judge:
    def __init__(self, torch, task, args, ref, cand, device):
        self.torch, self.task, self.args = torch, task, args
        self.ref, self.cand, self.device = ref, cand, device
        self.atol, self.rtol = logic.tolerances(args.strict, (args.atol, args.rtol))
        self.kb_status, self.kb_message = None, ""
        self.m0 = {}
        self.nonfinite0 = {}
        self.worst_abs = self.worst_rel = 0.0
        self.first = -1
        self.flush = None  # allocated with the inputs (share)
        self.xs_ref = self.xs_cand = None
        self.call_limit = float(os.environ.get("SPECGEN_KB_CALL_TIMEOUT_S", "60"))
        self.phase = _Phases()
        self.wrong = _Wrong() if getattr(args, "also_wrong", False) else None

    def share(self, xs):
        """First inputs: each server gets its own copy, which the judge
        refills in place before every call; and the buffer that flushes the
        L2 cache before a timed call."""
        t = self.torch
        self.flush = t.empty(int(256e6) // 4, dtype=t.float32, device=self.device)
        self.xs_ref = [x.clone() if t.is_tensor(x) else x for x in xs]
        self.xs_cand = [x.clone() if t.is_tensor(x) else x for x in xs]
        for s, xs_s in ((self.ref, self.xs_ref), (self.cand, self.xs_cand)):
            self._ok(s, s.ask("inputs", xs_s, timeout=120))

    def _ok(self, server, reply):
        op, val, _ = reply
        if op == "error":
            if server is self.ref:
                raise _Fail("infra_error", "the reference failed:\n" + str(val))
            raise _Fail("runtime_error", "the candidate raised an exception:\n" + str(val))
        return val

    def fill(self, xs, cand_only=False):
        t = self.torch
        for dst in (self.xs_cand,) if cand_only else (self.xs_ref, self.xs_cand):
            for d, x in zip(dst, xs):
                if t.is_tensor(d):
                    d.copy_(x)
        t.cuda.synchronize()

    def call(self, server, variant=None):
        """One timed call after an L2 flush; milliseconds. variant "wrong":
        the candidate's server gives the self-check's wrong candidate."""
        self.flush.zero_()
        self.torch.cuda.synchronize()
        limit = self.call_limit if server is self.cand else max(60.0, 6 * self.call_limit)
        reply = server.ask("call", variant, timeout=limit)
        self._ok(server, reply)
        return reply[2] * 1e3

    def run_pair(self, xs, cand_first, poison=True):
        """Fresh inputs into both sides, both called (order given), outputs
        taken; returns (ref_ms, cand_ms, ref_out, cand_out). poison: first
        fill the candidate's free device memory with NaN (the trials)."""
        with self.phase("fill"):
            self.fill(xs)
        if poison:
            with self.phase("poison"):
                self._ok(self.cand, self.cand.ask("poison", timeout=120))
        ms = {}
        with self.phase("call"):
            for s in ((self.cand, self.ref) if cand_first else (self.ref, self.cand)):
                ms[s.role] = self.call(s)
        with self.phase("out"):
            r_out = self._ok(self.ref, self.ref.ask("out", timeout=120))
            c_out = self._ok(self.cand, self.cand.ask("out", timeout=120))
        return ms["reference"], ms["candidate"], r_out, c_out

    def release(self):
        with self.phase("release"):
            for s in (self.ref, self.cand):
                s.ask("release", timeout=120)

    def stages(self):
        """The phases' seconds, and the judge's peak device memory in GB."""
        st = {k + "_s": round(v, 4) for k, v in self.phase.s.items()}
        st.update(_IMPORT)
        st["judge_peak_gb"] = round(self.torch.cuda.max_memory_allocated(self.device) / 1e9, 3)
        return st

    def draw(self, fn, *a):
        """Inputs from fn (_draw or _domain), timed as the draw phase."""
        with self.phase("draw"):
            xs = fn(self.torch, *a)
            self.torch.cuda.synchronize()
        return xs

    def quick_ok(self, xs, r_out, c_out):
        """The timed runs' check, in the outputs' own precision with
        in-place temporaries: True when every output passes specgen's rule
        (and the inputs are unchanged); False sends the run to check()."""
        t = self.torch
        for x, xc in zip(xs, self.xs_cand):
            if t.is_tensor(x) and not t.equal(x, xc):
                return False
        if len(r_out) != len(c_out):
            return False
        for r, c in zip(r_out, c_out):
            if not (t.is_tensor(c) and t.is_tensor(r) and c.shape == r.shape and
                    c.dtype == r.dtype and r.is_floating_point()):
                return False
            if not r.numel():
                continue
            # |r| once, for the magnitude and the relative tolerance: 12
            # passes over the output's memory instead of 18; in chunks of
            # CHUNK elements, so that the temporaries stay small beside a
            # large output.
            rf, cf = r.reshape(-1), c.reshape(-1)
            parts = []
            for lo in range(0, rf.numel(), CHUNK):
                ra = rf[lo:lo + CHUNK].abs()
                d = t.sub(cf[lo:lo + CHUNK], rf[lo:lo + CHUNK]).abs_().sub_(ra, alpha=self.rtol)
                parts.append(t.stack([ra.amax(), d.amax()]))
                del d, ra
            # amax propagates NaN: one in any chunk reaches m or exc
            m, exc = t.stack(parts).amax(0).tolist()
            if math.isnan(exc) or math.isnan(m):
                return False
            if exc > logic.specgen_atol(self.atol, m, m):
                return False
        return True

    def check(self, xs, r_out, c_out, when, variant, kb=False, shortcuts=False):
        """None when the outputs pass; else (status, message). 'skip' for a
        domain trial outside the operator's domain."""
        t = self.torch
        for i, (x, xc) in enumerate(zip(xs, self.xs_cand)):
            if t.is_tensor(x) and not t.equal(x, xc):
                return ("rejected", "the candidate wrote into its input %d (%s; inputs are "
                        "read-only)" % (i, when))
        if len(r_out) != len(c_out):
            return ("numerical_error", "ModelNew returned %d outputs, Model %d (%s)" % (
                len(c_out), len(r_out), when))
        for i, (r, c) in enumerate(zip(r_out, c_out)):
            name = "output %d" % i
            if not t.is_tensor(c):
                return ("numerical_error", "%s is a %s, not a tensor" % (name, type(c).__name__))
            if tuple(r.shape) != tuple(c.shape):
                return ("numerical_error", "%s has shape %s, expected %s" % (
                    name, tuple(c.shape), tuple(r.shape)))
            s = _stats(t, r, c, self.atol, self.rtol)
            if variant > 0 and s["ref_nonfinite"] and not self.nonfinite0.get(i):
                return ("skip", "")
            if variant == 0 and i not in self.m0:
                self.m0[i] = s["max_ref"]
                self.nonfinite0[i] = s["ref_nonfinite"] > 0
            self.worst_abs = max(self.worst_abs, s["max_abs"])
            self.worst_rel = max(self.worst_rel, s["max_rel"])
            if kb and self.kb_status is None and not logic.kb_surely_ok(s, self.rtol):
                k = _stats(t, r, c, logic.KB_ATOL, logic.KB_RTOL)
                if k["bad"]:
                    self.kb_status = "numerical_error"
                    self.kb_message = ("%s: %d of %d elements outside KernelBench's "
                                       "atol=rtol=1e-2 (%s)" % (name, k["bad"], k["n"], when))
            m0 = s["max_ref"] if variant == 0 else self.m0.get(i)
            atol = logic.specgen_atol(self.atol, s["max_ref"], m0)
            if not logic.passes(s["max_excess"], s["unwritten"], atol):
                b = _stats(t, r, c, atol, self.rtol)
                first = b["first"] if b["first"] >= 0 else 0
                self.first = first
                rf, cf = r.reshape(-1), c.reshape(-1)
                idx = logic.unravel(first, r.shape)
                return ("numerical_error",
                        "%s differs from the reference (%s): %d of %d elements outside "
                        "atol=%.3g rtol=%g (atol scaled to the reference's magnitude %.3g)%s; "
                        "first at %s: got %.9g, expected %.9g; max abs error %.3g" % (
                            name, when, max(b["bad"], 1), s["n"], atol, self.rtol,
                            s["max_ref"],
                            " (%d are NaN: unwritten memory?)" % s["unwritten"]
                            if s["unwritten"] else "",
                            idx, float(cf[first].item()), float(rf[first].item()),
                            s["max_abs"]))
            if shortcuts:
                equal = None
                for k, (xr, xc) in enumerate(zip(self.xs_ref, self.xs_cand)):
                    if (t.is_tensor(xc) and xc.shape == c.shape and xc.dtype == c.dtype
                            and t.equal(c, xc) and not t.equal(r, xr)):
                        equal = "%d" % k
                        break
                why = logic.shortcut(c.numel(), _constant(t, c), _constant(t, r), equal, name)
                if why:
                    return ("rejected", "%s (%s)" % (why, when))
        return None

    @contextlib.contextmanager
    def _verdict_of(self, wrong):
        """check() on the wrong candidate's verdict (its own KernelBench
        status, magnitudes and worst errors), the same candidate's put
        aside meanwhile."""
        mine = {k: getattr(self, k) for k in _Wrong.KEYS}
        for k in _Wrong.KEYS:
            setattr(self, k, wrong.state[k])
        try:
            yield
        finally:
            wrong.state = {k: getattr(self, k) for k in _Wrong.KEYS}
            for k, v in mine.items():
                setattr(self, k, v)

    def check_wrong(self, xs, r_out, when, variant, kb=False, shortcuts=False, quick=False):
        """--also-wrong: the self-check's wrong candidate on the same inputs,
        against the same reference outputs r_out (computed once for both),
        while its verdict is open. Its call is not timed; the candidate's
        server first lets go of the same candidate's outputs (as between any
        two calls: no more memory than a validation of its own), then gets
        the inputs refilled and, in the trials, its free memory poisoned."""
        w = self.wrong
        if not w or not w.open():
            return
        with self.phase("wrong"):
            c_out = None
            try:
                self.cand.ask("release", timeout=120)
                self.fill(xs, cand_only=True)
                if kb:  # the trials poison; the domain trials and timed runs do not
                    self._ok(self.cand, self.cand.ask("poison", timeout=120))
                self.call(self.cand, "wrong")
                c_out = self._ok(self.cand, self.cand.ask("out", timeout=120))
                with self._verdict_of(w):
                    bad = None
                    if not (quick and self.quick_ok(xs, r_out, c_out)):
                        bad = self.check(xs, r_out, c_out, when, variant, kb=kb,
                                         shortcuts=shortcuts)
            except _Fail as f:
                bad = (f.status, f.message)
            del c_out
        if bad and bad[0] != "skip":
            w.caught(bad)

    def correctness(self, task):
        t, args = self.torch, self.args
        first = None
        xs0 = None
        for trial in range(args.trials):
            # Both verdicts decided (specgen's by its first failing trial,
            # KernelBench's by its first failure): later trials change
            # neither; a wrong candidate still open keeps them going.
            if logic.trials_decided(first is not None, self.kb_status) and not (
                    self.wrong and self.wrong.open()):
                break
            xs = self.draw(_draw, task, args.seed + trial, self.device)
            if xs0 is None:
                xs0 = _domain_spec(self.torch, xs)
            when = "trial %d" % (trial + 1)
            _, _, r_out, c_out = self.run_pair(xs, cand_first=True)
            with self.phase("check"):
                bad = self.check(xs, r_out, c_out, when, 0, kb=True, shortcuts=True)
            del c_out
            self.check_wrong(xs, r_out, when, 0, kb=True, shortcuts=True)
            del r_out
            self.release()
            if bad and first is None:
                first = bad
        if self.kb_status is None:
            self.kb_status = "ok"
        if self.wrong:
            self.wrong.trials_over()
        if first:
            raise _Fail(*first)
        skipped = 0
        for v, scale in enumerate(logic.DOMAIN_SCALES, start=1):
            xs = self.draw(_domain, xs0, scale, args.seed + 7919 * v, self.device)
            when = "domain trial %d: signed inputs at %g x the task's scale" % (v, scale)
            _, _, r_out, c_out = self.run_pair(xs, cand_first=True)
            with self.phase("check"):
                bad = self.check(xs, r_out, c_out, when, v)
            del c_out
            self.check_wrong(xs, r_out, when, v)
            del r_out
            self.release()
            if bad and bad[0] == "skip":
                skipped += 1
            elif bad:
                raise _Fail(*bad)
        return len(logic.DOMAIN_SCALES) - skipped, skipped

    def heavy_ops(self):
        if self.args.no_heavy_rule:
            return
        with self.phase("ops"):
            ref_ops = self._ok(self.ref, self.ref.ask("ops", timeout=300))
            cand_ops = self._ok(self.cand, self.cand.ask("ops", timeout=300))
        bad = logic.forbidden_calls(ref_ops, cand_ops)
        if bad:
            raise _Fail("rejected",
                        "ModelNew.forward calls PyTorch's %s, which does the reference's "
                        "heavy work: write your own kernel for it" % ", ".join(
                            "aten::" + b for b in bad))

    def timing(self, task):
        t, args = self.torch, self.args
        nops = []
        times = {"ref": [], "cand": []}
        runs = args.warmup + args.timed
        for i in range(runs):
            xs = self.draw(_draw, task, args.seed + 1000003 + i, self.device)
            warm = i < args.warmup
            when = "%s run %d" % ("warm-up" if warm else "timed",
                                  i + 1 if warm else i - args.warmup + 1)
            ref_ms, cand_ms, r_out, c_out = self.run_pair(xs, cand_first=(i % 2 == 1),
                                                          poison=False)
            # The round trip alone, measured on the reference's server (the
            # candidate's could slow its empty calls to inflate it).
            with self.phase("nop"):
                nop_ms = self.ref.ask("nop", timeout=60)[2] * 1e3
            bad = None
            with self.phase("check"):
                if not self.quick_ok(xs, r_out, c_out):
                    bad = self.check(xs, r_out, c_out, when, 0)
            del c_out
            self.check_wrong(xs, r_out, when, 0, quick=True)
            del r_out
            self.release()
            if bad:
                raise _Fail(*bad)
            if not warm:
                times["ref"].append(ref_ms)
                times["cand"].append(cand_ms)
                nops.append(nop_ms)
        return times, logic.median(nops), runs


def _started(srv, cand, expect, limit):
    """Waits for a server's expect message (its start-up steps)."""
    if not srv.conn.poll(limit):
        srv.kill()
        raise _Fail("timeout" if srv is cand else "infra_error",
                    "the %s's process did not start within %d s" % (srv.role, limit))
    try:
        op, val = srv.conn.recv()
    except (EOFError, OSError):
        raise _Fail("runtime_error" if srv is cand else "infra_error",
                    "the %s's process %s while starting" % (srv.role, srv.end()))
    except Exception as e:  # noqa: BLE001  (a message that does not unpickle)
        srv.kill()
        raise _Fail("runtime_error" if srv is cand else "infra_error",
                    "the %s's process answered something that is no message (%s)" % (
                        srv.role, type(e).__name__))
    if op == "error":
        if srv is cand:
            raise _Fail("runtime_error", "building ModelNew failed:\n" + str(val))
        raise _Fail("infra_error", "the reference's process failed:\n" + str(val))
    if op != expect:
        raise _Fail("runtime_error" if srv is cand else "infra_error",
                    "the %s's process answered %r, not %r" % (srv.role, op, expect))


def _remove_ipc_files(pids, shm="/dev/shm"):
    """Removes PyTorch's CUDA IPC reference-count files of pids (this judge
    and its servers, all ended or ending): its exit handlers would, but a
    killed server and this process's os._exit never run them (three files
    were left per evaluation)."""
    try:
        names = os.listdir(shm)
    except OSError:
        return
    for n in logic.ipc_files(names, pids):
        try:
            os.unlink(os.path.join(shm, n))
        except OSError:
            pass


def _list_pids(pids, path=None):
    """Lists this judge's processes in its working directory
    (logic.IPC_PIDS_FILE): a judge killed before its finally (a stop, a
    time limit) leaves its servers' IPC files too, and the evaluator that
    ends it removes every listed process's files (sg_shm.h). Written before
    any of them shares memory (the judge's share phase comes later)."""
    try:
        with open(path or logic.IPC_PIDS_FILE, "w") as f:
            f.write(" ".join("%d" % p for p in pids) + "\n")
    except OSError:
        pass


def _nodump():
    """From here the candidate's code runs: no process of the same user may
    read or write the judge's memory (PR_SET_DUMPABLE 0)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)
    except Exception:  # noqa: BLE001
        pass


def _take_go(fd):
    """A judge started ahead (--go-fd): says it is ready ('R': its servers
    and contexts are up; its inputs come after the go), reads its go line ("SEED PATH\n":
    the candidate's seed and file), and says it took it ('G': from here the
    outcome is the candidate's). Returns (seed, path)."""
    try:
        os.write(fd, b"R")
        line = b""
        while not line.endswith(b"\n"):
            if len(line) > logic.GO_LINE_MAX:
                raise _Fail("infra_error", "go: the line is longer than %d bytes" %
                            logic.GO_LINE_MAX)
            b = os.read(fd, 1)
            if not b:
                raise _Fail("infra_error", "go: the evaluator closed the channel")
            line += b
        try:
            seed, path = logic.parse_go(line[:-1])
        except ValueError as e:
            raise _Fail("infra_error", "go: %s" % e)
        os.write(fd, b"G")
    except OSError as e:
        raise _Fail("infra_error", "go: the evaluator closed the channel (%s)" % e)
    return seed, path


def _validate(torch, task, args, t_start, build_s, builds):
    t_ref = t_start
    result_fd = int(os.environ["SG_RESULT_FD"]) if os.environ.get("SG_RESULT_FD") else None
    # The servers first: forked before this process touches CUDA.
    ref = _Server(args, "reference", result_fd)
    cand = _Server(args, "candidate", result_fd)
    _list_pids((os.getpid(), ref.pid, cand.pid))
    judge = None
    try:
        if not torch.cuda.is_available():
            return logic.result("infra_error", "no CUDA device visible to PyTorch")
        device = torch.device("cuda", args.device)
        torch.cuda.set_device(device)
        judge = _Judge(torch, task, args, ref, cand, device)
        with judge.phase("start"):
            for srv in (ref, cand):
                _started(srv, cand, "hello", 600)
        if args.go_fd is not None:
            # Started ahead, it waits with its contexts alone: its inputs
            # (the task's device memory) are drawn after its go, so that
            # judges waiting beside a validation take none of its memory.
            _IMPORT["ahead_held_gb"] = round(torch.cuda.memory_reserved(device) / 1e9, 3)
            t_wait = time.perf_counter()
            args.seed, args.cand = _take_go(args.go_fd)
            t_start = time.perf_counter()  # the candidate's time starts here
            _IMPORT["ahead_s"] = round(t_wait - t_ref, 4)
            _IMPORT["go_wait_s"] = round(t_start - t_wait, 4)
        with judge.phase("share"):
            # any values: every call's inputs are refilled in place first
            judge.share(_draw(torch, task, args.seed, device))
        _nodump()
        with judge.phase("build"):
            for srv in (ref, cand):
                srv.conn.send(("build", (args.cand, args.seed)))
            for srv in (ref, cand):
                _started(srv, cand, "ready", 900)
        ready_s = time.perf_counter() - t_start
        domain, skipped = judge.correctness(task)
        judge.heavy_ops()
        times, overhead, runs = judge.timing(task)
    except _Fail as f:
        kb = judge.kb_status if judge else None
        res = logic.result(f.status, f.message, build_s=build_s,
                           max_abs_err=judge.worst_abs if judge else None,
                           max_rel_err=judge.worst_rel if judge else None,
                           first_mismatch=judge.first if judge else -1,
                           stages=judge.stages() if judge else None)
        res.update(logic.combine(kb, f.status))
        if judge and judge.kb_status not in (None, "ok"):
            res["kernelbench_message"] = judge.kb_message
        if judge and judge.wrong:
            res["self_check_wrong"] = judge.wrong.result(False, f.status)
        return res
    finally:
        ref.stop()
        cand.stop()
        _remove_ipc_files((os.getpid(), ref.pid, cand.pid))
    ref_wall, cand_wall = logic.median(times["ref"]), logic.median(times["cand"])
    ref_ms, cand_ms = logic.net_ms(ref_wall, overhead), logic.net_ms(cand_wall, overhead)
    res = logic.result(
        "ok", "correct on %d input sets of the task's and %d domain trials, and on every "
        "one of %d runs' fresh inputs; %.4f ms against the reference's %.4f ms (median of "
        "%d runs by the judge's clock, less the %.3f ms round trip of an empty call)%s" % (
            args.trials, domain, runs, cand_ms, ref_ms, args.timed, overhead,
            "; the heavy-operator rule was off (self-check)" if args.no_heavy_rule else ""),
        ref_ms=ref_ms, cand_ms=cand_ms, ref_mean_ms=logic.mean(times["ref"]) - overhead,
        cand_mean_ms=logic.mean(times["cand"]) - overhead, speedup=ref_ms / cand_ms,
        ref_wall_ms=ref_wall, cand_wall_ms=cand_wall,
        ref_times_ms=times["ref"], cand_times_ms=times["cand"],
        max_abs_err=judge.worst_abs, max_rel_err=judge.worst_rel, first_mismatch=-1,
        trials=args.trials, domain_trials=domain, domain_trials_skipped=skipped,
        timed_outputs_checked=runs, call_overhead_ms=overhead, build_s=build_s,
        inline_builds=builds, ready_s=ready_s, total_s=time.perf_counter() - t_start,
        stages=judge.stages())
    res.update(logic.combine(judge.kb_status, "ok"))
    if judge.kb_status != "ok":
        res["kernelbench_message"] = judge.kb_message
    if judge.wrong:
        res["self_check_wrong"] = judge.wrong.result(True, "ok")
    return res


def run(args):
    t_start = time.perf_counter()
    try:
        import torch
        import torch.multiprocessing  # noqa: F401  (CUDA tensors over the pipe)
    except Exception as e:  # noqa: BLE001
        return logic.result("infra_error", "PyTorch is not importable: %s" % e)
    _IMPORT["import_s"] = round(time.perf_counter() - t_start, 4)
    from specgen_kb import inline_cache

    try:
        task = _load(args.task, "specgen_kb_task")
    except Exception:  # noqa: BLE001
        return logic.result("infra_error", "loading the task file failed:\n" + _short_tb())
    if args.mode == "validate":
        # The judge never imports the candidate (its servers do).
        return _validate(torch, task, args, t_start, None, None)
    builds = inline_cache.install(args.cache)
    if args.go_fd is not None:
        # A profile started ahead, under ncu: PyTorch's import, ncu's
        # injection and the context are behind it when its go comes.
        if not torch.cuda.is_available():
            return logic.result("infra_error", "no CUDA device visible to PyTorch")
        torch.cuda.set_device(torch.device("cuda", args.device))
        torch.zeros(1, device="cuda")
        t_wait = time.perf_counter()
        try:
            args.seed, args.cand = _take_go(args.go_fd)
        except _Fail as f:
            return logic.result(f.status, f.message)
        _IMPORT["ahead_s"] = round(t_wait - t_start, 4)
        _IMPORT["go_wait_s"] = round(time.perf_counter() - t_wait, 4)
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
    try:
        init = task.get_init_inputs()
        torch.manual_seed(args.seed)
        new = cand.ModelNew(*init).to(device).eval()
        xs = _draw(torch, task, args.seed, device)
        with torch.no_grad():
            new(*xs)
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            new(*xs)
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
    except Exception:  # noqa: BLE001
        return logic.result("runtime_error", "the candidate raised an exception:\n" +
                            _short_tb())
    return logic.result("ok", "profiled one call")


def _bytecode_cache(module="torch", cache_root=None):
    """Where PyTorch's installation holds no compiled bytecode and cannot
    take any (a read-only site-packages), every import compiles its sources
    again: about 2.5 of the 4-5 s that `import torch` took on an H200 host.
    Then the bytecode goes to specgen's cache (sys.pycache_prefix), compiled
    once for every later run. Returns the prefix set, or None."""
    if sys.pycache_prefix or sys.dont_write_bytecode:
        return None
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    if os.path.exists(importlib.util.cache_from_source(spec.origin)):
        return None
    if os.access(os.path.dirname(spec.origin), os.W_OK):
        return None  # Python writes it there itself
    root = cache_root or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "specgen")
    prefix = os.path.join(root, "pycache")
    try:
        os.makedirs(prefix, exist_ok=True)
    except OSError:
        return None
    sys.pycache_prefix = prefix
    return prefix


def main(argv=None):
    _IMPORT["bytecode_cached"] = 1 if _bytecode_cache() else 0
    p = argparse.ArgumentParser(prog="specgen_kb.harness")
    p.add_argument("--task", required=True)
    p.add_argument("--cand", default=None)
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
    p.add_argument("--no-heavy-rule", action="store_true",
                   help="validate without the heavy-operator rule (only specgen bench "
                   "--self-check, whose candidates are the references)")
    p.add_argument("--also-wrong", action="store_true",
                   help="validate: also check the self-check's wrong candidate (ModelNew "
                   "with a slice of its first output perturbed, in the candidate's process) "
                   "against the same reference outputs, untimed; its verdict under "
                   "self_check_wrong (only specgen bench --self-check both, with "
                   "--no-heavy-rule)")
    p.add_argument("--go-fd", type=int, default=None,
                   help="validate or profile: start ahead; the candidate and seed come "
                   "on this descriptor as \"SEED PATH\\n\" (docs/gpu.md)")
    args = p.parse_args(argv)
    if args.go_fd is not None and args.mode == "compile":
        p.error("--go-fd is for --mode validate or profile")
    if args.go_fd is None and not args.cand:
        p.error("--cand is required (or --go-fd)")
    if args.also_wrong and not (args.no_heavy_rule and args.mode == "validate"):
        p.error("--also-wrong is for --mode validate with --no-heavy-rule (the self-check)")
    try:
        res = run(args)
    except Exception:  # noqa: BLE001
        res = logic.result("infra_error", "the harness failed:\n" + _short_tb())
    _emit(res)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
