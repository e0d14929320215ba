#!/usr/bin/env python3
"""scripts/pool_report.py: the overlap check and the split timeline on
hand-made data, then the whole report on a real short `specgen run` over two
CPU devices, checked against the run store it read."""
import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from run_checks import assert_each_kernel_evaluated_once  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "pool_report.py")
SPECGEN = os.environ.get("SG_SPECGEN")

spec = importlib.util.spec_from_file_location("pool_report", SCRIPT)
pool_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pool_report)


class Pure(unittest.TestCase):
    def test_touching_intervals_do_not_overlap(self):
        self.assertEqual(pool_report.overlaps([(0, 5), (5, 9), (9, 10)]), [])

    def test_nested_and_crossing_intervals_overlap(self):
        self.assertEqual(len(pool_report.overlaps([(0, 10), (2, 3), (4, 12)])), 2)
        # Unsorted input: the same answer.
        self.assertEqual(len(pool_report.overlaps([(4, 12), (2, 3), (0, 10)])), 2)

    def test_split_timeline_folds_one_decision_per_workflow(self):
        rows = [(1_000_000, '{"validate_devices":3,"profile_devices":1}')] * 4 + \
               [(3_500_000, '{"validate_devices":2,"profile_devices":2}')]
        self.assertEqual(pool_report.split_timeline(rows, 0),
                         [(1.0, 3, 1), (3.5, 2, 2)])

    def test_percentile(self):
        self.assertEqual(pool_report.percentile([5, 1, 3], 0.5), 3)
        self.assertIsNone(pool_report.percentile([], 0.9))


@unittest.skipUnless(SPECGEN, "SG_SPECGEN not set: the real-run test needs the built specgen")
class RealRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.rundir = os.path.join(cls.tmp.name, "run")
        subprocess.run([SPECGEN, "run", "--task", "cpu/hinge_loss", "--task",
                        "cpu/diag_matmul", "--devices", "cpu:0-1", "--iterations",
                        "1", "--server-speed", "2000", "--quiet", "--out", cls.rundir],
                       check=True, timeout=600, stdout=subprocess.DEVNULL)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_each_kernel_evaluated_once(self):
        assert_each_kernel_evaluated_once(self, self.rundir)

    def test_report_matches_the_store(self):
        out = subprocess.run([sys.executable, SCRIPT, "--json", self.rundir],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        r = json.loads(out.stdout)[0]
        con = sqlite3.connect(os.path.join(self.rundir, "run.db"))
        n = con.execute("SELECT COUNT(*) FROM device_intervals").fetchone()[0]
        self.assertGreater(n, 0)
        self.assertEqual(sum(d["intervals"] for d in r["per_device"]), n)
        self.assertEqual(r["devices"], 2)
        self.assertEqual(r["iterations"], 2)
        self.assertEqual(r["overlapping_pairs"], 0)
        for d in r["per_device"]:
            self.assertGreaterEqual(d["utilization"], 0)
            self.assertLessEqual(d["utilization"], 1.0)
        self.assertLessEqual(r["utilization"], 1.0)

    def test_sim_settings_name_the_measured_workload(self):
        out = subprocess.run([sys.executable, SCRIPT, "--sim-set", self.rundir],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        args = out.stdout.split()
        self.assertIn("workflows=2", args)
        self.assertIn("devices=2", args)
        self.assertTrue(any(a.startswith("val.mean_s=") for a in args))

    def test_an_overlap_in_the_store_fails_the_check(self):
        broken = os.path.join(self.tmp.name, "broken")
        os.makedirs(broken, exist_ok=True)
        db = os.path.join(broken, "run.db")
        con = sqlite3.connect(db)
        src = sqlite3.connect(os.path.join(self.rundir, "run.db"))
        src.backup(con)
        iv = con.execute("SELECT device, phase, started_us, ended_us FROM "
                         "device_intervals LIMIT 1").fetchone()
        con.execute("INSERT INTO device_intervals (device, phase, started_us, ended_us) "
                    "VALUES (?, ?, ?, ?)", (iv[0], iv[1], iv[2] + 1, iv[3] + 1))
        con.commit()
        con.close()
        out = subprocess.run([sys.executable, SCRIPT, broken],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 1)
        self.assertIn("1 overlapping pairs", out.stdout)

    def test_not_a_run_directory_is_bad_input(self):
        out = subprocess.run([sys.executable, SCRIPT, self.tmp.name + "/nothing"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 2)
        self.assertIn("no run.db", out.stderr)


if __name__ == "__main__":
    unittest.main()
