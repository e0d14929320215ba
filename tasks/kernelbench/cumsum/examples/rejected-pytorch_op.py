"""rejected example: hands the scan to torch.cumsum (the operator the
reference times), so no kernel of the candidate's is measured."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x, dim=self.dim)
