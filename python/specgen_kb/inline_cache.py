"""A content-addressed cache for torch.utils.cpp_extension.load_inline.

KernelBench candidates build their CUDA code with load_inline, which compiles
PyTorch's headers with the candidate's sources (tens of seconds on an H200)
into a directory named after the module. install() wraps load_inline so that
each distinct build (sources, flags, PyTorch and CUDA versions, target
architectures: specgen_kb.logic.inline_cache_key) gets its own directory in a
persistent cache: the compile stage pays the build once, on the CPU, and the
run and profile stages load the built module. It also limits the target
architectures to the visible GPU's when TORCH_CUDA_ARCH_LIST is unset.
"""

import inspect
import os
import time

from specgen_kb import logic


def default_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return os.path.join(base, "specgen", "kb-inline")


def install(cache_dir=None):
    """Patches load_inline; returns the list it appends one record per build
    to ({"name", "key", "cached", "seconds"})."""
    import torch
    import torch.utils.cpp_extension as ce

    cache_dir = cache_dir or default_dir()
    records = []
    if getattr(ce.load_inline, "_specgen_cached", False):
        return records
    if "TORCH_CUDA_ARCH_LIST" not in os.environ:
        try:
            if torch.cuda.is_available():
                major, minor = torch.cuda.get_device_capability()
                os.environ["TORCH_CUDA_ARCH_LIST"] = "%d.%d" % (major, minor)
        except Exception:  # noqa: BLE001
            pass
    if "TORCH_CUDA_ARCH_LIST" not in os.environ:
        # The compile stage runs where no GPU may be: build for the target
        # the cuda evaluator is configured for (SPECGEN_CUDA_ARCH, sm_90).
        arch = os.environ.get("SPECGEN_CUDA_ARCH", "sm_90")
        digits = arch.split("_")[-1]
        if digits.isdigit() and len(digits) >= 2:
            os.environ["TORCH_CUDA_ARCH_LIST"] = "%s.%s" % (digits[:-1], digits[-1])
    orig = ce.load_inline
    sig = inspect.signature(orig)

    def cached_load_inline(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        kw = dict(bound.arguments)
        key = logic.inline_cache_key(kw, torch.__version__, torch.version.cuda,
                                     os.environ.get("TORCH_CUDA_ARCH_LIST"))
        name = "%s_%s" % (kw["name"], key)
        build_dir = os.path.join(cache_dir, name)
        cached = os.path.isdir(build_dir) and any(
            f.endswith(".so") for f in os.listdir(build_dir))
        os.makedirs(build_dir, exist_ok=True)
        kw["name"] = name
        kw["build_directory"] = build_dir
        t0 = time.perf_counter()
        mod = orig(**kw)
        records.append({"name": name, "key": key, "cached": cached,
                        "seconds": time.perf_counter() - t0})
        return mod

    cached_load_inline._specgen_cached = True
    ce.load_inline = cached_load_inline
    return records
