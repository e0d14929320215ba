"""Side-by-side build times of one load_inline candidate, on a GPU machine:

  1. KernelBench's path: a plain torch.utils.cpp_extension.load_inline call
     in a fresh process and a fresh build directory (a cold build);
  2. specgen's path on a warm cache: the same candidate imported through
     specgen_kb.inline_cache in a fresh process, after specgen's compile
     stage has built it once (scripts/gpu-check.sh runs that first).

    python3 -m specgen_kb.gpu_check [CANDIDATE.py]

Prints a table; exits 1 if a build fails.
"""

import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT = os.path.join(ROOT, "tasks", "kernelbench", "matmul_transposed_b", "examples",
                       "ok-load_inline.py")

PLAIN = r"""
import importlib.util, sys, time
t0 = time.perf_counter()
spec = importlib.util.spec_from_file_location("cand", sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
print("%.3f" % (time.perf_counter() - t0))
"""

CACHED = r"""
import importlib.util, sys, time
t0 = time.perf_counter()
from specgen_kb import inline_cache
inline_cache.install()
spec = importlib.util.spec_from_file_location("cand", sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
print("%.3f" % (time.perf_counter() - t0))
"""


def timed(code, cand, env):
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code, cand], env=env, capture_output=True,
                       text=True, timeout=900)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        print(p.stdout[-2000:], p.stderr[-2000:])
        return None, wall
    return float(p.stdout.strip().splitlines()[-1]), wall


def main():
    cand = sys.argv[1] if len(sys.argv) > 1 else DEFAULT
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(HERE) + os.pathsep + env.get("PYTHONPATH", "")
    rows = []
    with tempfile.TemporaryDirectory() as ext_dir:
        plain_env = dict(env, TORCH_EXTENSIONS_DIR=ext_dir)
        plain_env.pop("TORCH_CUDA_ARCH_LIST", None)
        rows.append(("load_inline, cold (KernelBench path)",) + timed(PLAIN, cand, plain_env))
    rows.append(("specgen_kb cache, warm",) + timed(CACHED, cand, env))
    print("%-42s %12s %12s" % ("build", "import_s", "process_s"))
    ok = True
    for name, t, wall in rows:
        ok &= t is not None
        print("%-42s %12s %12.3f" % (name, "failed" if t is None else "%.3f" % t, wall))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
