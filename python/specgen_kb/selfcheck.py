"""The wrong candidate of `specgen bench --self-check wrong`: the task's own
Model with a small slice of its first output perturbed past any tolerance
(logic.wrong_slice, logic.wrong_delta), so that every task shows the
harness catching a wrong answer. Imported by the generated candidate, in
the candidate's process; never by the judge.
"""

import torch

from specgen_kb import logic


def _perturb(t):
    """t (a tensor) with its slice perturbed: in place where t is contiguous
    (no copy of a large output), else on a contiguous copy."""
    o = t if t.is_contiguous() else t.contiguous()
    flat = o.view(-1)
    start, k = logic.wrong_slice(flat.numel())
    if k == 0:
        return o
    seg = flat[start:start + k]
    if o.dtype == torch.bool:
        seg.logical_not_()
    elif o.is_floating_point() or o.is_complex():
        lo, hi = torch.aminmax(flat.real if o.is_complex() else flat)
        seg.add_(logic.wrong_delta(float(lo), float(hi)))
    else:
        seg.add_(1)
    return o


def wrong(out):
    """Model's output with its first non-empty tensor perturbed; anything
    else as it was."""
    if torch.is_tensor(out):
        return _perturb(out) if out.numel() else out
    if isinstance(out, (list, tuple)):
        items = list(out)
        for i, o in enumerate(items):
            if torch.is_tensor(o) and o.numel():
                items[i] = _perturb(o)
                break
        return type(out)(items) if isinstance(out, list) else tuple(items)
    return out
