"""KernelBench-format task: a matrix product with the second operand
transposed (the semantics and shapes of KernelBench level 1,
17_Matmul_with_transposed_B)."""
import torch
import torch.nn as nn

M = 2048
K = 8192
N = 4096


class Model(nn.Module):
    """C = A @ B.T, A of shape (M, K), B of shape (N, K)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B.T)


def get_inputs():
    return [torch.rand(M, K), torch.rand(N, K)]


def get_init_inputs():
    return []
