"""numerical_error example: only the first half of the rows is computed;
the rest of torch.empty's memory is returned as it was."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        C = torch.empty(A.shape[0], B.shape[0], device=A.device, dtype=A.dtype)
        h = A.shape[0] // 2
        C[:h] = A[:h] @ B.T
        return C
