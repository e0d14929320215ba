"""scripts/kb_levels_table.py, the table of scripts/kb-levels.sh, on made-up
bench output: a level whose bench was stopped at its limit (rows not_run),
a wrong candidate that came out ok (a miss), levels with no JSON at all
(read from their progress lines: a stopped wrong-candidate call's caught
rows count as caught), and the combined mode (--self-check both). Needs no
GPU.

    python3 tests/gpu/test_kb_levels_table.py   (meson: suite unit)
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "kb_levels_table.py")


def row(task, status, speedup=None, run_s=None, message=""):
    return {"task": task, "status": status, "speedup": speedup, "run_s": run_s,
            "message": message}


class Table(unittest.TestCase):
    def table(self, files, flags=()):
        with tempfile.TemporaryDirectory() as d:
            for name, text in files.items():
                with open(os.path.join(d, name), "w") as f:
                    f.write(text if isinstance(text, str) else json.dumps(text))
            out = subprocess.run([sys.executable, SCRIPT] + list(flags) + [d],
                                 capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            return out.stdout

    def test_stopped_level_is_partial(self):
        same = {"rows": [row("1_A", "ok", 1.0, 2.0), row("2_B", "ok", 1.1, 4.0),
                         row("3_C", "not_run"), row("4_D", "not_run")]}
        wrong = {"rows": [row("1_A", "numerical_error", run_s=1.0),
                          row("2_B", "ok", 1.0, 1.0, "no slice moved")]}
        t = self.table({"level1-same.json": same, "level1-wrong.json": wrong})
        self.assertIn("| 1 | 2 of 4 (partial) | 2 | 1.050 (1.000-1.100) | 2 | 1 of 2 | "
                      "3.00 / 4.00 / 6 | 3.00 / 4.00 / 6 |", t)
        # the rows not reached are no misses; the wrong candidate taken is
        self.assertNotIn("3_C", t)
        self.assertIn("| 1 | wrong | 2_B | ok | no slice moved |", t)

    def test_level_from_progress_lines(self):
        log = ("[1/3] 1_A: ok 1.02x (KernelBench: ok), 3.1 s\n"
               "[2/3] 2_B: runtime_error, 1.0 s\n"
               "[1/3] 1_A: numerical_error (KernelBench: fail), 2.0 s\n")
        t = self.table({"level2-same.json": "", "level2-wrong.json": "", "level2.log": log})
        self.assertIn("| 2 | 2 of 3 (partial) | 1 | 1.020 (1.020-1.020) | 1 | "
                      "1 of 1 (partial) | - | - |", t)
        self.assertIn("| 2 | same | 2_B | runtime_error |", t)

    def test_stopped_wrong_call_alone_counts_its_caught_rows(self):
        # KB_MODES=wrong: the log holds the wrong call only, ended by the
        # script's own line; its caught rows are no misses of either mode
        log = ("[1/50] 1_A: numerical_error (KernelBench: numerical_error), 2.0 s\n"
               "[2/50] 2_B: numerical_error (KernelBench: ok), 2.1 s\n"
               "level 3 wrong: exit 124, 160.0 s; left in /dev/shm: []\n")
        t = self.table({"level3.log": log})
        self.assertIn("| 3 | - | not run | - | - | 2 of 2 (partial) | - | - |", t)
        self.assertIn("No task missed.", t)

    def test_per_mode_logs(self):
        t = self.table({
            "level2-wrong.log": "[1/9] 1_A: numerical_error, 2.0 s\n[2/9] 2_B: rejected, 1 s\n",
            "level2-same.log": "[1/9] 1_A: ok 0.99x (KernelBench: ok), 3.0 s\n"})
        self.assertIn("| 2 | 1 of 9 (partial) | 1 | 0.990 (0.990-0.990) | 1 | "
                      "2 of 2 (partial) | - | - |", t)
        self.assertIn("No task missed.", t)

    def test_both_json(self):
        stages = {"check_s": 1.5, "call_s": 0.5, "wrong_s": 0.5, "judge_wait_s": 0.25}
        same = {"rows": [dict(row("1_A", "ok", 1.0, 3.0), stages=stages),
                         dict(row("2_B", "numerical_error", None, 2.0, "nondeterministic"),
                              stages=stages),
                         row("3_C", "not_run")]}
        wrong = {"rows": [row("1_A", "numerical_error", message="output 0 differs"),
                          row("2_B", "not_run", message="not decided: the validation "
                              "ended (numerical_error)"),
                          row("3_C", "not_run")]}
        t = self.table({"level1-both.json": {"self_check": "both", "same": same,
                                             "wrong": wrong}})
        # validation: the run stage less the wrong candidate's checks; the
        # row: with them
        self.assertIn("| 1 | 2 of 3 (partial) | 1 | 1.000 (1.000-1.000) | 1 | "
                      "1 of 2 (partial) | 2.00 / 2.50 / 4 | 2.50 / 3.00 / 5 |", t)
        self.assertIn("| 1 | same | 2_B | numerical_error | nondeterministic |", t)
        m = self.table({"level1-both.json": {"self_check": "both", "same": same,
                                             "wrong": wrong}}, ["--medians"])
        self.assertEqual(m, "level 1: validation median 2.00 s (max 2.50, total 4); row median "
                         "2.50 s with the wrong checks (max 3.00, total 5); 2 rows\n")
        self.assertIn("| 1 | wrong | 2_B | not_run | not decided: the validation ended "
                      "(numerical_error) |", t)
        self.assertNotIn("3_C", t)
        # where the validation went: each phase's median
        self.assertIn("| level | import | start | ahead | go_wait | judge_wait | share | build |",
                      t)
        self.assertIn("| 1 | - | - | - | - | 0.25 | - | - | - | - | - | 0.50 | - | - | 1.50 | - "
                      "| 0.50 |", t)

    def test_both_from_progress_lines(self):
        log = ("[1/4] 1_A: ok 1x (KernelBench: ok), 3.1 s; wrong: numerical_error "
               "(KernelBench: numerical_error)\n"
               "[2/4] 2_B: ok 1.1x (KernelBench: ok), 3.0 s; wrong: rejected\n"
               "[3/4] 3_C: infra_error, 1.0 s; wrong: infra_error\n")
        t = self.table({"level1-both.log": log})
        self.assertIn("| 1 | 3 of 4 (partial) | 2 | 1.050 (1.000-1.100) | 2 | "
                      "2 of 3 (partial) | - | - |", t)
        self.assertIn("| 1 | same | 3_C | infra_error |", t)
        self.assertIn("| 1 | wrong | 3_C | infra_error |", t)
        self.assertNotIn("wrong | 1_A", t)


if __name__ == "__main__":
    unittest.main()
