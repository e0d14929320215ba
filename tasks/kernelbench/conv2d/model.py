import torch
import torch.nn as nn


class Model(nn.Module):
    """A 3x3 convolution, padding 1, no bias (KernelBench level 1's
    convolutions, at a size a naive kernel runs in milliseconds)."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2,
                              bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 8
in_channels = 16
out_channels = 32
kernel_size = 3
height = 64
width = 64


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
