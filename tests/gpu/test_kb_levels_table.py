"""scripts/kb_levels_table.py, the table of scripts/kb-levels.sh, on made-up
bench output: a level whose bench was stopped at its limit (rows not_run),
a wrong candidate that came out ok (a miss), and a level with no JSON at all
(read from its progress lines). Needs no GPU.

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
    def table(self, files):
        with tempfile.TemporaryDirectory() as d:
            for name, text in files.items():
                with open(os.path.join(d, name), "w") as f:
                    f.write(text if isinstance(text, str) else json.dumps(text))
            out = subprocess.run([sys.executable, SCRIPT, d], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            return out.stdout

    def test_stopped_level_is_partial(self):
        same = {"rows": [row("1_A", "ok", 1.0, 2.0), row("2_B", "ok", 1.1, 4.0),
                         row("3_C", "not_run"), row("4_D", "not_run")]}
        wrong = {"rows": [row("1_A", "numerical_error", run_s=1.0),
                          row("2_B", "ok", 1.0, 1.0, "no slice moved")]}
        t = self.table({"level1-same.json": same, "level1-wrong.json": wrong})
        self.assertIn("| 1 | 2 of 4 (partial) | 2 | 1.050 (1.000-1.100) | 2 | 1 of 2 | "
                      "3.00 / 4.00 / 6 |", t)
        # the rows not reached are no misses; the wrong candidate taken is
        self.assertNotIn("3_C", t)
        self.assertIn("| 1 | wrong | 2_B | ok | no slice moved |", t)

    def test_level_from_progress_lines(self):
        log = ("[1/3] 1_A: ok 1.02x (KernelBench: ok), 3.1 s\n"
               "[2/3] 2_B: runtime_error, 1.0 s\n"
               "[1/3] 1_A: numerical_error (KernelBench: fail), 2.0 s\n")
        t = self.table({"level2-same.json": "", "level2-wrong.json": "", "level2.log": log})
        self.assertIn("| 2 | 2 of 3 (partial) | 1 | 1.020 (1.020-1.020) | 1 | "
                      "1 of 1 (partial) | - |", t)
        self.assertIn("| 2 | same | 2_B | runtime_error |", t)


if __name__ == "__main__":
    unittest.main()
