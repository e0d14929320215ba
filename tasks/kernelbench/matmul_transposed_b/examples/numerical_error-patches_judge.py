"""numerical_error example (a cheat, kept as a test): it patches every
checking function it can reach when it is imported (the harness's
comparisons, torch.equal and torch.allclose) to say "all good", then returns
zeros. In a harness that compares in the candidate's own process that would
pass; the judge compares in its own process, which the candidate never
runs in, so the zeros are found wrong on the first trial."""
import sys

import torch
import torch.nn as nn


def _all_good(*args, **kwargs):
    return True


for name, mod in list(sys.modules.items()):
    if name == "__main__" or name.startswith("specgen_kb"):
        for attr in ("_stats", "quick_ok", "check", "passes", "_compare", "specgen_atol"):
            if hasattr(mod, attr):
                try:
                    setattr(mod, attr, _all_good)
                except Exception:  # noqa: BLE001
                    pass
torch.equal = _all_good
torch.allclose = _all_good


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.zeros(A.shape[0], B.shape[0], device=A.device, dtype=A.dtype)
