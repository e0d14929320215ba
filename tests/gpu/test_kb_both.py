"""The kernelbench harness's combined self-check (--also-wrong, what
`specgen bench --self-check both` runs) on a real GPU: a small task whose
reference is its own candidate comes out ok and timed, its wrong candidate
numerical_error with KernelBench's verdict of its own, the wrong calls in
their own phase, and nothing left in /dev/shm. Once more as a judge started
ahead (--go-fd, as `specgen bench` runs it): until its go it holds none of
the task's device memory (its inputs are drawn after the go). Needs PyTorch
and a CUDA device; skipped (exit 77) without them.

    python3 tests/gpu/test_kb_both.py   (meson: suite gpu)
"""

import json
import os
import socket
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


def started_ahead(args, cand, env, d):
    """The harness as a judge started ahead: it says R, takes its go line
    ("SEED PATH"), says G and validates. Returns (result, error)."""
    ours, theirs = socket.socketpair()
    p = subprocess.Popen(args + ["--go-fd", str(theirs.fileno())], pass_fds=(theirs.fileno(),),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         cwd=d)
    theirs.close()
    ours.settimeout(300)
    try:
        if ours.recv(1) != b"R":
            return None, "no R from the judge started ahead"
        ours.sendall(b"42 " + os.fsencode(cand) + b"\n")
        if ours.recv(1) != b"G":
            return None, "no G after the go"
        out, err = p.communicate(timeout=300)
    finally:
        ours.close()
        if p.poll() is None:
            p.kill()
            p.wait()
    if p.returncode != 0:
        return None, "harness exited %d: %s" % (p.returncode, err[-2000:])
    return json.loads(out.strip().splitlines()[-1]), None


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
        args = [sys.executable, "-m", "specgen_kb.harness", "--task", task, "--mode",
                "validate", "--no-heavy-rule", "--also-wrong", "--warmup", "1", "--timed", "3"]
        p = subprocess.run(args + ["--cand", cand], capture_output=True, text=True, env=env,
                           cwd=d, timeout=300)
        if p.returncode != 0:
            print("harness exited %d: %s" % (p.returncode, p.stderr[-2000:]))
            return 1
        r = json.loads(p.stdout.strip().splitlines()[-1])
        ra, why = started_ahead(args, cand, env, d)
    failures = []
    if why:
        failures.append(why)
    else:
        st = ra.get("stages") or {}
        if ra.get("status") != "ok":
            failures.append("started ahead: %s %s" % (ra.get("status"), ra.get("message")))
        # nothing of the task's on the device while it waited for its go
        if st.get("ahead_held_gb") != 0 or "share_s" not in st or "ahead_s" not in st:
            failures.append("started ahead, its stages: %s" % st)
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
    print("ok: same %.3fx, wrong %s; started ahead: %s, held %s GB before its go" % (
        r.get("speedup") or 0, w.get("status"), (ra or {}).get("status"),
        ((ra or {}).get("stages") or {}).get("ahead_held_gb")))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
