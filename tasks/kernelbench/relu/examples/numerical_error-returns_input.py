"""numerical_error example (a wrong candidate KernelBench accepts): it
returns its input. KernelBench's inputs (torch.rand) are never negative, so
relu(x) == x there and KernelBench's check passes it at thousands of times
the reference's speed; specgen's domain trials draw signed inputs."""
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x
