"""The kernelbench harness's comparison (harness._stats): its pass for
chunks with both sides finite gives exactly the figures of its pass for any
values, and chunks with NaN or infinities still get the full one. Needs
PyTorch (on a GPU when there is one, else on the CPU); skipped without it.

    python3 tests/gpu/test_kb_stats.py   (meson: suite unit, exit 77 = skipped)
"""

import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

try:
    import torch
except ImportError:
    print("skipped: no PyTorch")
    sys.exit(77)

from specgen_kb import harness  # noqa: E402


def exact(r, c, atol, rtol):
    """_stats with every chunk through the pass for any values."""
    fast = harness._chunk_finite
    harness._chunk_finite = lambda *a: (None, None)
    try:
        return harness._stats(torch, r, c, atol, rtol)
    finally:
        harness._chunk_finite = fast


def main():
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    g = torch.Generator(device=dev).manual_seed(1)
    harness.CHUNK = 1000  # several chunks, some clean and some not
    failures = 0
    for dtype in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
        r = torch.randn(4096, generator=g, device=dev).mul_(3).to(dtype)
        cases = {"equal": r.clone(),
                 "noise": (r.float() + 1e-3 * torch.randn(4096, generator=g, device=dev)).to(dtype),
                 "off": r.clone().index_fill_(0, torch.tensor([17, 2500], device=dev), 9.0)}
        nan = r.clone()
        nan[1500] = math.nan
        cases["nan"] = nan
        inf = r.clone()
        inf[3999] = math.inf
        cases["inf"] = inf
        for name, c in cases.items():
            for ref in (r, c):  # NaN and infinities on either side
                got = harness._stats(torch, ref, c if ref is r else r, 1e-2, 1e-2)
                want = exact(ref, c if ref is r else r, 1e-2, 1e-2)
                if got != want:
                    failures += 1
                    print("%s %s: %r != %r" % (dtype, name, got, want))
    print("%s: %d mismatches" % (dev, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
