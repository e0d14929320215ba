"""specgen_kb: the kernelbench evaluator's harness (docs/gpu.md).

specgen runs ``python3 -m specgen_kb.harness`` in a sandboxed child, under the
user's PyTorch, to check and time a candidate ``ModelNew`` against a
KernelBench task's ``Model``. ``logic`` holds the parts that need no PyTorch
(and are unit-tested without it); ``harness`` the parts that need a GPU.
"""
