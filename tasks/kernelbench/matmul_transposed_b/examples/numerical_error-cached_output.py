"""numerical_error example: remembers its result by the inputs' addresses,
which looks fast when a benchmark calls it again with the same buffers. The
judge refills the same buffers with fresh values before every call, so the
remembered result is wrong from the second trial on."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.memo = {}

    def forward(self, A, B):
        key = (A.data_ptr(), B.data_ptr())
        if key not in self.memo:
            self.memo[key] = torch.matmul(A, B.T)
        return self.memo[key]
