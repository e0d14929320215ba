"""The kernelbench harness's combined self-check (--also-wrong, what
`specgen bench --self-check both` runs) on a real GPU: a small task whose
reference is its own candidate comes out ok and timed, its wrong candidate
numerical_error with KernelBench's verdict of its own, the wrong calls in
their own phase, and nothing left in /dev/shm. Needs PyTorch and a CUDA
device; skipped (exit 77) without them.

    python3 tests/gpu/test_kb_both.py   (meson: suite gpu)
"""

import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TASK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(256, 4096)]


def get_init_inputs():
    return []
"""


def main():
    try:
        import torch
    except ImportError:
        print("skipped: no PyTorch")
        return 77
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        return 77
    shm = set(os.listdir("/dev/shm"))
    with tempfile.TemporaryDirectory() as d:
        task = os.path.join(d, "19_ReLU.py")
        cand = os.path.join(d, "cand.py")
        with open(task, "w") as f:
            f.write(TASK)
        with open(cand, "w") as f:
            f.write(TASK + "\nModelNew = Model\n")
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
        p = subprocess.run([sys.executable, "-m", "specgen_kb.harness", "--task", task,
                            "--cand", cand, "--mode", "validate", "--no-heavy-rule",
                            "--also-wrong", "--warmup", "1", "--timed", "3"],
                           capture_output=True, text=True, env=env, cwd=d, timeout=300)
        if p.returncode != 0:
            print("harness exited %d: %s" % (p.returncode, p.stderr[-2000:]))
            return 1
        r = json.loads(p.stdout.strip().splitlines()[-1])
    failures = []
    if r.get("status") != "ok" or not r.get("speedup"):
        failures.append("same: %s %s" % (r.get("status"), r.get("message")))
    w = r.get("self_check_wrong") or {}
    if w.get("status") != "numerical_error" or w.get("kernelbench_status") != \
            "numerical_error":
        failures.append("wrong: %s" % json.dumps(w)[:500])
    if "trial 1" not in (w.get("message") or ""):
        failures.append("wrong not caught in trial 1: %s" % w.get("message"))
    if not (r.get("stages") or {}).get("wrong_s"):
        failures.append("no wrong_s stage: %s" % r.get("stages"))
    left = sorted(set(os.listdir("/dev/shm")) - shm)
    if left:
        failures.append("left in /dev/shm: %s" % left)
    for f in failures:
        print("FAIL " + f)
    print("ok: same %.3fx, wrong %s" % (r.get("speedup") or 0, w.get("status")))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
