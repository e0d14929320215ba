"""rejected example: hands the normalization to PyTorch's layer_norm (the
operator the reference times), so no kernel of the candidate's is
measured."""
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.ln = nn.LayerNorm(features)

    def forward(self, x):
        return F.layer_norm(x, self.ln.normalized_shape, self.ln.weight, self.ln.bias,
                            self.ln.eps)
