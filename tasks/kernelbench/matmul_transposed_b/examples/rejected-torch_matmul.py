"""rejected example: hands the product to PyTorch's own matmul (the operator
the reference times), so no kernel of the candidate's is measured."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B.T.contiguous())
