"""rejected example: hands the attention to PyTorch's own (the operator the
reference times), so no kernel of the candidate's is measured."""
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)
