"""compile_error example: the module does not parse."""
import torch.nn as nn


class ModelNew(nn.Module)
    def forward(self, A, B):
        return A
