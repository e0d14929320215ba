"""rejected example: hands the pooling to PyTorch's own (the operator the
reference times), so no kernel of the candidate's is measured."""
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, kernel_size, stride):
        super().__init__()
        self.k, self.s = kernel_size, stride

    def forward(self, x):
        return F.max_pool2d(x, self.k, self.s)
