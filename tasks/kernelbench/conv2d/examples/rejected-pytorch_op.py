"""rejected example: hands the convolution to PyTorch's own (the operator
the reference times), so no kernel of the candidate's is measured."""
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2,
                              bias=False)

    def forward(self, x):
        return F.conv2d(x, self.conv.weight, padding=self.conv.padding)
