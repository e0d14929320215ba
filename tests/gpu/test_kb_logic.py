"""Unit tests of the kernelbench harness's pure logic (specgen_kb.logic) and
of what the harness does without PyTorch. Needs no GPU and no torch.

    python3 tests/gpu/test_kb_logic.py   (meson: suite unit, gpu_kb_logic)
"""

import json
import math
import os
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

from specgen_kb import logic  # noqa: E402


class OpNames(unittest.TestCase):
    def test_base_names(self):
        self.assertEqual(logic.op_base_name("aten.addmm.default"), "addmm")
        self.assertEqual(logic.op_base_name("aten::mm.out"), "mm")
        self.assertEqual(logic.op_base_name("aten.convolution.default"), "convolution")
        self.assertEqual(logic.op_base_name("myext.custom"), "myext")

    def test_forbidden_only_when_reference_uses_it(self):
        ref = {"aten.mm.default", "aten.t.default", "aten.empty.memory_format"}
        self.assertEqual(logic.forbidden_calls(ref, {"aten.mm.default"}), ["mm"])
        # Light operators (views, copies, allocation) are always allowed.
        self.assertEqual(logic.forbidden_calls(ref, {"aten.t.default", "aten.empty.memory_format",
                                                     "aten.copy_.default"}), [])
        # A heavy operator the reference does not use is the candidate's business.
        self.assertEqual(logic.forbidden_calls(ref, {"aten._softmax.default"}), [])
        conv = {"aten.convolution.default", "aten.relu.default"}
        self.assertEqual(logic.forbidden_calls(conv, {"aten.convolution.default",
                                                      "aten.mm.default"}), ["convolution"])


class Numbers(unittest.TestCase):
    def test_tolerances(self):
        self.assertEqual(logic.tolerances(False), (1e-2, 1e-2))
        self.assertEqual(logic.tolerances(True), (1e-4, 1e-4))
        self.assertEqual(logic.tolerances(False, (1e-3, 1e-5)), (1e-3, 1e-5))

    def test_median_mean(self):
        self.assertEqual(logic.median([3, 1, 2]), 2)
        self.assertEqual(logic.median([4, 1, 3, 2]), 2.5)
        self.assertTrue(math.isnan(logic.median([])))
        self.assertEqual(logic.mean([1, 2, 3]), 2)

    def test_unsynced_work(self):
        self.assertFalse(logic.unsynced_work(1.0, 1.2))
        self.assertTrue(logic.unsynced_work(1.0, 3.0))
        # Host overhead on a tiny kernel is within the slack.
        self.assertFalse(logic.unsynced_work(0.01, 0.5, slack_ms=0.5))
        self.assertFalse(logic.unsynced_work(float("nan"), 3.0))

    def test_result_drops_non_finite(self):
        r = logic.result("ok", "fine", speedup=float("inf"), ref_ms=1.5)
        self.assertEqual(r["status"], "ok")
        self.assertIsNone(r["speedup"])
        self.assertEqual(r["ref_ms"], 1.5)
        json.dumps(r, allow_nan=False)

    def test_classify(self):
        self.assertEqual(logic.classify_exception("import", ""), "compile_error")
        self.assertEqual(logic.classify_exception("run", ""), "runtime_error")
        self.assertEqual(logic.classify_exception("time", ""), "runtime_error")


class KernelBenchFromSpecgen(unittest.TestCase):
    """logic.kb_surely_ok: KernelBench's count skipped only when specgen's
    own comparison already shows every element inside its tolerance."""

    def stats(self, **kw):
        s = {"bad": 0, "unwritten": 0, "first": -1, "max_abs": 1e-4, "max_rel": 1e-4,
             "max_excess": 1e-4, "max_ref": 3.0, "ref_nonfinite": 0, "n": 10}
        s.update(kw)
        return s

    def test_clearly_inside(self):
        self.assertTrue(logic.kb_surely_ok(self.stats(), logic.KB_RTOL))
        # a large output's value may use up its relative part, never the atol
        self.assertTrue(logic.kb_surely_ok(self.stats(max_excess=-50.0, max_abs=5.0,
                                                      max_ref=1e4), logic.KB_RTOL))

    def test_counted_otherwise(self):
        ok = logic.KB_RTOL
        self.assertFalse(logic.kb_surely_ok(self.stats(max_excess=0.02), ok))
        # at the edge, float32's rounding could go either way
        self.assertFalse(logic.kb_surely_ok(self.stats(max_excess=0.01 - 1e-9), ok))
        self.assertFalse(logic.kb_surely_ok(self.stats(max_excess=0.005, max_ref=1e6), ok))
        self.assertFalse(logic.kb_surely_ok(self.stats(unwritten=1), ok))
        self.assertFalse(logic.kb_surely_ok(self.stats(ref_nonfinite=2), ok))
        self.assertFalse(logic.kb_surely_ok(self.stats(max_excess=math.inf), ok))
        self.assertFalse(logic.kb_surely_ok(self.stats(max_ref=math.nan), ok))
        # specgen's rtol is not KernelBench's (--strict): its excess says nothing
        self.assertFalse(logic.kb_surely_ok(self.stats(), 1e-3))


class CacheKey(unittest.TestCase):
    base = {"name": "m", "cpp_sources": "a", "cuda_sources": "b", "functions": ["f"]}

    def test_same_input_same_key(self):
        k1 = logic.inline_cache_key(dict(self.base), "2.11", "13.0", "9.0")
        k2 = logic.inline_cache_key(dict(self.base), "2.11", "13.0", "9.0")
        self.assertEqual(k1, k2)
        self.assertEqual(len(k1), 20)

    def test_everything_that_changes_the_module_changes_the_key(self):
        k = logic.inline_cache_key(dict(self.base), "2.11", "13.0", "9.0")
        for change in ({"cuda_sources": "c"}, {"cpp_sources": "x"}, {"functions": ["g"]},
                       {"extra_cuda_cflags": ["-O3"]}, {"name": "n"}):
            kw = dict(self.base, **change)
            self.assertNotEqual(k, logic.inline_cache_key(kw, "2.11", "13.0", "9.0"), change)
        self.assertNotEqual(k, logic.inline_cache_key(dict(self.base), "2.12", "13.0", "9.0"))
        self.assertNotEqual(k, logic.inline_cache_key(dict(self.base), "2.11", "12.8", "9.0"))
        self.assertNotEqual(k, logic.inline_cache_key(dict(self.base), "2.11", "13.0", "8.0"))


class HarnessWithoutTorch(unittest.TestCase):
    def test_missing_torch_is_infra_error(self):
        try:
            import torch  # noqa: F401
            self.skipTest("torch is installed here")
        except ImportError:
            pass
        task = os.path.join(ROOT, "tasks", "kernelbench", "matmul_transposed_b", "model.py")
        cand = os.path.join(ROOT, "tasks", "kernelbench", "matmul_transposed_b", "examples",
                            "ok-load_inline.py")
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        env.pop("SG_RESULT_FD", None)
        p = subprocess.run([sys.executable, "-m", "specgen_kb.harness", "--task", task,
                            "--cand", cand, "--mode", "compile"], env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        r = json.loads(p.stdout.strip().splitlines()[-1])
        self.assertEqual(r["status"], "infra_error")
        self.assertIn("PyTorch is not importable", r["message"])


class Stricter(unittest.TestCase):
    """specgen's check beside KernelBench's (docs/gpu.md)."""

    def test_atol_follows_the_reference_magnitude(self):
        self.assertAlmostEqual(logic.specgen_atol(1e-2, 5.0, 5.0), 1e-2)
        # softmax over 393216 columns: outputs about 2.5e-6
        a = logic.specgen_atol(1e-2, 3e-6, 3e-6)
        self.assertAlmostEqual(a, 3e-8, delta=1e-20)
        # a warp-level-only sum: outputs about 32x too large
        ref, cand = 2.5e-6, 32 * 2.5e-6
        excess = abs(cand - ref) - logic.KB_RTOL * ref
        self.assertFalse(logic.passes(excess, 0, a))
        # KernelBench's own check lets it through
        self.assertTrue(abs(cand - ref) <= logic.KB_ATOL + logic.KB_RTOL * ref)
        # domain trials at another scale are judged at their scale
        self.assertAlmostEqual(logic.specgen_atol(1e-2, 1e3, 1.0), 10.0)
        self.assertAlmostEqual(logic.specgen_atol(1e-2, 1e-3, 1.0), 1e-5)
        self.assertAlmostEqual(logic.specgen_atol(1e-2, 2.0, None), 1e-2)
        self.assertEqual(logic.specgen_atol(1e-2, 0.0, 0.0), 0.0)

    def test_passes(self):
        self.assertTrue(logic.passes(0.0, 0, 1e-8))
        self.assertFalse(logic.passes(0.0, 1, 1.0))
        self.assertFalse(logic.passes(float("inf"), 0, 1.0))
        self.assertFalse(logic.passes(2e-8, 0, 1e-8))

    def test_domain(self):
        self.assertEqual(logic.DOMAIN_SCALES[0], 1.0)
        self.assertTrue(min(logic.DOMAIN_SCALES) < 1 < max(logic.DOMAIN_SCALES))
        self.assertEqual(logic.domain_magnitude(0.0), 1.0)
        self.assertEqual(logic.domain_magnitude(None), 1.0)
        self.assertEqual(logic.domain_magnitude(0.999), 0.999)

    def test_shortcuts(self):
        self.assertIn("constant", logic.shortcut(100, True, False, None))
        self.assertIsNone(logic.shortcut(100, True, True, None))
        self.assertIsNone(logic.shortcut(1, True, False, None))
        self.assertIn("returned its input", logic.shortcut(100, False, False, "x"))
        self.assertIsNone(logic.shortcut(100, False, False, None))

    def test_net_ms(self):
        self.assertAlmostEqual(logic.net_ms(1.25, 0.25), 1.0)
        self.assertEqual(logic.net_ms(0.2, 0.25), 1e-3)

    def test_combine(self):
        self.assertEqual(logic.combine("ok", "numerical_error"),
                         {"kernelbench_status": "ok", "status": "numerical_error"})
        self.assertEqual(logic.combine(None, "timeout")["kernelbench_status"], "timeout")


class GoLine(unittest.TestCase):
    """A judge started ahead reads "SEED PATH" by the cuda runner's rules."""

    def test_good_lines(self):
        self.assertEqual(logic.parse_go(b"42 /tmp/c.py"), (42, "/tmp/c.py"))
        self.assertEqual(logic.parse_go(b"0 /a b"), (0, "/a b"))
        self.assertEqual(logic.parse_go(b"%d /x" % ((1 << 64) - 1)), ((1 << 64) - 1, "/x"))

    def test_bad_lines(self):
        for bad in (b"", b"42", b"42 ", b"x /a", b" /a", b"-1 /a", b"4 2 /a",
                    b"42 rel/a", b"42  /a", b"%d /a" % (1 << 64), b"42 /a\0b",
                    b"42 /" + b"a" * 4096):
            with self.assertRaises(ValueError, msg=bad):
                logic.parse_go(bad)

    def test_usage_errors(self):
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        for args in (["--task", "t.py", "--mode", "compile", "--cand", "c.py", "--go-fd", "5"],
                     ["--task", "t.py"]):
            p = subprocess.run([sys.executable, "-m", "specgen_kb.harness"] + args,
                               env=env, capture_output=True, text=True)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("--", p.stderr)


class BytecodeCache(unittest.TestCase):
    """Where the installation keeps no bytecode and is read-only, the
    harness compiles into specgen's cache instead of every run."""

    def setUp(self):
        import tempfile
        from specgen_kb import harness

        self.harness = harness
        self.tmp = tempfile.mkdtemp()
        self.pkg = os.path.join(self.tmp, "site", "sgfakepkg")
        os.makedirs(self.pkg)
        with open(os.path.join(self.pkg, "__init__.py"), "w") as f:
            f.write("X = 1\n")
        sys.path.insert(0, os.path.join(self.tmp, "site"))
        self.saved = sys.pycache_prefix, sys.dont_write_bytecode
        sys.dont_write_bytecode = False  # PYTHONDONTWRITEBYTECODE is honoured: tested below

    def tearDown(self):
        import shutil

        sys.pycache_prefix, sys.dont_write_bytecode = self.saved
        sys.path.remove(os.path.join(self.tmp, "site"))
        shutil.rmtree(self.tmp)

    def test_writable_installation_is_left_alone(self):
        self.assertIsNone(self.harness._bytecode_cache("sgfakepkg", self.tmp))
        self.assertEqual(sys.pycache_prefix, self.saved[0])

    def test_read_only_installation_gets_a_cache(self):
        from unittest import mock

        real = os.access
        with mock.patch("os.access", lambda p, m: False if p == self.pkg else real(p, m)):
            got = self.harness._bytecode_cache("sgfakepkg", self.tmp)
        self.assertEqual(got, os.path.join(self.tmp, "pycache"))
        self.assertEqual(sys.pycache_prefix, got)
        self.assertTrue(os.path.isdir(got))

    def test_compiled_installation_is_left_alone(self):
        import importlib.util
        import py_compile
        from unittest import mock

        src = os.path.join(self.pkg, "__init__.py")
        py_compile.compile(src, cfile=importlib.util.cache_from_source(src))
        with mock.patch("os.access", lambda p, m: False):
            self.assertIsNone(self.harness._bytecode_cache("sgfakepkg", self.tmp))

    def test_no_bytecode_wanted_is_honoured(self):
        from unittest import mock

        sys.dont_write_bytecode = True
        with mock.patch("os.access", lambda p, m: False):
            self.assertIsNone(self.harness._bytecode_cache("sgfakepkg", self.tmp))

    def test_missing_module_is_left_alone(self):
        self.assertIsNone(self.harness._bytecode_cache("sg_no_such_module", self.tmp))


class SelfCheck(unittest.TestCase):
    """specgen bench --self-check wrong: the perturbation is small in extent
    and always outside specgen's tolerance."""

    def test_slice_small_and_inside(self):
        self.assertEqual(logic.wrong_slice(0), (0, 0))
        self.assertEqual(logic.wrong_slice(1), (0, 1))
        self.assertEqual(logic.wrong_slice(5000), (2498, 5))
        for n in (1, 2, 999, 1000, 10 ** 6, 6 * 10 ** 9):
            start, k = logic.wrong_slice(n)
            self.assertTrue(1 <= k <= logic.WRONG_SLICE_MAX)
            self.assertTrue(0 <= start and start + k <= n, n)

    def test_delta_outside_every_tolerance(self):
        atol, rtol = logic.tolerances(False)
        for lo, hi in ((-3.0, 2.0), (0.0, 0.0), (1e-9, 1e-6), (-1e4, 5.0), (7.0, 7.0)):
            m = max(abs(lo), abs(hi))
            d = logic.wrong_delta(lo, hi)
            # the reference's element r, |r| <= m; candidate r + d
            for r in (lo, hi, 0.5 * (lo + hi)):
                excess = d - rtol * abs(r)
                self.assertFalse(logic.passes(excess, 0, logic.specgen_atol(atol, m, m)),
                                 (lo, hi, r))
        self.assertAlmostEqual(logic.wrong_delta(float("nan"), 1.0), 0.101)
        self.assertAlmostEqual(logic.wrong_delta(float("-inf"), 1.0), 0.101)


class Unravel(unittest.TestCase):
    """The first mismatch's index, as torch.unravel_index gives it."""

    def test_row_major(self):
        self.assertEqual(logic.unravel(0, (3, 4)), [0, 0])
        self.assertEqual(logic.unravel(7, (3, 4)), [1, 3])
        self.assertEqual(logic.unravel(8388600, (4096, 4096)), [2047, 4088])
        self.assertEqual(logic.unravel(23, (2, 3, 4)), [1, 2, 3])
        self.assertEqual(logic.unravel(5, (6,)), [5])
        self.assertEqual(logic.unravel(0, ()), [])

    def test_harness_does_not_call_torch_unravel_index(self):
        import inspect
        from specgen_kb import harness
        self.assertNotIn("unravel_index", inspect.getsource(harness))


class SelfCheckBoth(unittest.TestCase):
    """specgen bench --self-check both: the wrong candidate's verdict beside
    the same one's (harness._Wrong), and when the trials may stop."""

    def setUp(self):
        from specgen_kb import harness
        self.harness = harness

    def test_trials_stop_once_both_verdicts_are_decided(self):
        self.assertTrue(logic.trials_decided(True, "numerical_error"))
        # KernelBench's verdict still open: the next trial may decide it
        self.assertFalse(logic.trials_decided(True, None))
        # a candidate that passes runs every trial
        self.assertFalse(logic.trials_decided(False, None))
        self.assertFalse(logic.trials_decided(False, "numerical_error"))

    def test_wrong_caught_in_the_trials(self):
        w = self.harness._Wrong()
        self.assertTrue(w.open())
        w.state["kb_status"] = "numerical_error"
        w.caught(("numerical_error", "output 0 differs (trial 1)"))
        self.assertFalse(w.open())  # both verdicts decided: no more calls of it
        w.caught(("numerical_error", "later"))  # the first failing check stays
        r = w.result(True, "ok")
        self.assertEqual((r["status"], r["kernelbench_status"]),
                         ("numerical_error", "numerical_error"))
        self.assertIn("trial 1", r["message"])

    def test_wrong_kept_open_for_kernelbench_in_the_trials_only(self):
        w = self.harness._Wrong()
        w.caught(("numerical_error", "output 0 differs (trial 1)"))
        self.assertTrue(w.open())   # KernelBench's check may still fail in trial 2
        w.trials_over()
        self.assertFalse(w.open())
        r = w.result(True, "ok")
        self.assertEqual((r["status"], r["kernelbench_status"]), ("numerical_error", "ok"))

    def test_wrong_never_caught(self):
        w = self.harness._Wrong()
        w.trials_over()
        self.assertTrue(w.open())   # the domain trials and timed runs still check it
        self.assertEqual(w.result(True, "ok")["status"], "ok")
        # the same candidate's validation ended first: no verdict, said so
        r = w.result(False, "infra_error")
        self.assertEqual(r["status"], "undecided")
        self.assertIn("infra_error", r["message"])

    def test_also_wrong_only_for_the_self_check(self):
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        for extra in (["--also-wrong"], ["--also-wrong", "--no-heavy-rule", "--mode", "compile"]):
            p = subprocess.run([sys.executable, "-m", "specgen_kb.harness", "--task", "t.py",
                                "--cand", "c.py"] + extra, capture_output=True, text=True,
                               env=env)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("--also-wrong is for --mode validate with --no-heavy-rule", p.stderr)


class _FakeTorch:
    """What correctness() touches of torch outside the stubbed methods."""

    class cuda:
        @staticmethod
        def synchronize():
            pass

    @staticmethod
    def is_tensor(x):
        return False


class JudgeFlow(unittest.TestCase):
    """_Judge.correctness's control flow with its device work stubbed (no
    torch, no GPU): which calls happen, in which verdict state. check()
    fails the wrong candidate's outputs ("OUT-wrong") and, with kb_catches,
    KernelBench's check with it; same_fails fails the same candidate's."""

    def judge(self, wrong=True, kb_catches=True, same_fails=False):
        from specgen_kb import harness
        j = object.__new__(harness._Judge)
        j.torch, j.device = _FakeTorch, "cuda:0"
        j.args = type("A", (), {"trials": 3, "seed": 1, "also_wrong": wrong})()
        j.phase = harness._Phases()
        j.kb_status, j.kb_message, j.m0, j.nonfinite0 = None, "", {}, {}
        j.worst_abs = j.worst_rel = 0.0
        j.first = -1
        j.wrong = harness._Wrong() if wrong else None
        j.log = []
        test = self

        class Cand:
            def ask(self, op, arg=None, timeout=None):
                j.log.append("cand " + op)
                return ("ok", "OUT-wrong" if op == "out" else None, 0.0)
        j.cand = Cand()
        j.draw = lambda fn, *a: ["x"]
        j.fill = lambda xs, cand_only=False: j.log.append("fill")
        j.release = lambda: j.log.append("release")
        j.call = lambda server, variant=None: j.log.append("call " + str(variant))
        j._ok = lambda server, reply: reply[1]

        def run_pair(xs, cand_first, poison=True):
            j.log.append("pair")
            return 1.0, 1.0, "OUT-ref", "OUT-same"

        def check(xs, r_out, c_out, when, variant, kb=False, shortcuts=False):
            test.assertEqual(r_out, "OUT-ref")  # the reference's, computed once
            bad = c_out == "OUT-wrong" or (same_fails and c_out == "OUT-same")
            if bad and kb and kb_catches and j.kb_status is None:
                j.kb_status = "numerical_error"
            j.log.append("check %s %s" % ("wrong" if c_out == "OUT-wrong" else "same", when))
            return ("numerical_error", "differs (%s)" % when) if bad else None
        j.run_pair, j.check = run_pair, check
        return j

    def test_wrong_caught_once_same_goes_on(self):
        j = self.judge()
        self.assertEqual(j.correctness(None), (3, 0))
        self.assertEqual(j.log.count("pair"), 6)        # 3 trials, 3 domain trials
        self.assertEqual(j.log.count("call wrong"), 1)  # caught in trial 1: no more
        self.assertEqual(j.log[:8], ["pair", "check same trial 1", "cand release", "fill",
                                     "cand poison", "call wrong", "cand out",
                                     "check wrong trial 1"])
        self.assertEqual(j.kb_status, "ok")  # the same candidate's, apart
        r = j.wrong.result(True, "ok")
        self.assertEqual((r["status"], r["kernelbench_status"]),
                         ("numerical_error", "numerical_error"))
        self.assertIn("trial 1", r["message"])

    def test_wrong_checked_every_trial_while_kernelbench_is_open(self):
        j = self.judge(kb_catches=False)
        j.correctness(None)
        self.assertEqual(j.log.count("call wrong"), 3)  # the trials, not the domain ones
        r = j.wrong.result(True, "ok")
        self.assertEqual((r["status"], r["kernelbench_status"]), ("numerical_error", "ok"))

    def test_failing_candidate_stops_once_both_verdicts_are_in(self):
        from specgen_kb import harness
        j = self.judge(wrong=False, same_fails=True)
        with self.assertRaises(harness._Fail) as f:
            j.correctness(None)
        self.assertIn("trial 1", f.exception.message)
        self.assertEqual(j.log.count("pair"), 1)
        j = self.judge(wrong=False, same_fails=True, kb_catches=False)
        with self.assertRaises(harness._Fail):
            j.correctness(None)
        self.assertEqual(j.log.count("pair"), 3)  # KernelBench's verdict needs them all

    def test_wrong_checked_in_the_timed_runs_while_open(self):
        # never caught in the trials: its outputs are checked on every
        # timed run's inputs too, outside the clock, and caught there
        j = self.judge(kb_catches=False)
        check = j.check

        def late_check(xs, r_out, c_out, when, variant, kb=False, shortcuts=False):
            if c_out == "OUT-wrong" and not when.startswith("timed run 2"):
                j.log.append("check wrong %s" % when)
                return None
            return check(xs, r_out, c_out, when, variant, kb, shortcuts)
        j.check = late_check
        j.quick_ok = lambda xs, r_out, c_out: c_out != "OUT-wrong"
        j.args.warmup, j.args.timed = 1, 3

        class Ref:
            def ask(self, op, arg=None, timeout=None):
                return ("done", None, 0.001)
        j.ref = Ref()
        j.correctness(None)
        times, _, runs = j.timing(None)
        self.assertEqual((len(times["ref"]), runs), (3, 4))
        self.assertEqual(j.log.count("call wrong"), 3 + 3 + 3)  # caught in timed run 2
        r = j.wrong.result(True, "ok")
        self.assertEqual((r["status"], r["kernelbench_status"]), ("numerical_error", "ok"))
        self.assertIn("timed run 2", r["message"])

    def test_no_wrong_calls_without_also_wrong(self):
        j = self.judge(wrong=False)
        j.correctness(None)
        self.assertEqual(j.log.count("call wrong"), 0)
        self.assertEqual(j.log.count("pair"), 6)


class Leftovers(unittest.TestCase):
    def test_ipc_files_of_the_given_pids_only(self):
        names = ["cuda.shm.3.1f40.1", "cuda.shm.3.1f41.1", "cuda.shm.9.1f40.2",
                 "cuda.shm.x", "torch_123", "cuda.shm.3.zz.1", "sem.cuda.shm.3.1f40.1"]
        self.assertEqual(logic.ipc_files(names, [0x1f40]),
                         ["cuda.shm.3.1f40.1", "cuda.shm.9.1f40.2"])
        self.assertEqual(logic.ipc_files(names, [0x1f40, 0x1f41]),
                         ["cuda.shm.3.1f40.1", "cuda.shm.3.1f41.1", "cuda.shm.9.1f40.2"])
        self.assertEqual(logic.ipc_files(names, [5]), [])
        # PyTorch's own segments: torch_<pid>_<random>_<n>, the pid in decimal
        torch_names = ["torch_8000_3512_0", "torch_8001_9_0", "torch_x_1_0", "torch_8000",
                       "cuda.shm.0.1f40.1"]
        self.assertEqual(logic.ipc_files(torch_names, [8000]),
                         ["cuda.shm.0.1f40.1", "torch_8000_3512_0"])

    def test_poison_within_budget(self):
        b = logic.POISON_BUDGET_BYTES
        self.assertEqual(logic.poison_copies(1 << 20), 3)
        self.assertEqual(logic.poison_copies(b // 2), 2)
        self.assertEqual(logic.poison_copies(6400 << 20), 1)   # level 1's Swish output
        self.assertEqual(logic.poison_copies(0), 3)


if __name__ == "__main__":
    unittest.main()
