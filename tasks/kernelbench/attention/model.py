import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Scaled dot-product attention, no mask (KernelBench's attention
    tasks)."""

    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v)


batch_size = 4
heads = 8
seq_len = 256
head_dim = 64


def get_inputs():
    shape = (batch_size, heads, seq_len, head_dim)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
