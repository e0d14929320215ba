"""ok example: layer normalization, one warp per row (mean, then variance
about it, both reduced with shuffles; then the scaled, shifted quotients),
with the weight and bias of the candidate's own nn.LayerNorm; built with
load_inline."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__device__ float warp_sum(float v) {
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void layer_norm_rows(const float *__restrict__ x, const float *__restrict__ g,
                                const float *__restrict__ b, float *__restrict__ y, int rows,
                                int n, float eps) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float *in = x + (long)row * n;
  float *out = y + (long)row * n;
  float s = 0.f;
  for (int i = lane; i < n; i += 32) s += in[i];
  float mean = warp_sum(s) / n;
  float q = 0.f;
  for (int i = lane; i < n; i += 32) {
    float d = in[i] - mean;
    q += d * d;
  }
  float inv = rsqrtf(warp_sum(q) / n + eps);
  for (int i = lane; i < n; i += 32) out[i] = (in[i] - mean) * inv * g[i] + b[i];
}

torch::Tensor layer_norm_cuda(torch::Tensor x, torch::Tensor g, torch::Tensor b, double eps) {
  x = x.contiguous();
  int n = x.size(-1);
  int rows = x.numel() / n;
  auto y = torch::empty_like(x);
  int threads = 256, per_block = threads / 32;
  layer_norm_rows<<<(rows + per_block - 1) / per_block, threads, 0,
                    at::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), g.contiguous().data_ptr<float>(), b.contiguous().data_ptr<float>(),
      y.data_ptr<float>(), rows, n, (float)eps);
  return y;
}
"""
cpp_src = ("torch::Tensor layer_norm_cuda(torch::Tensor x, torch::Tensor g, torch::Tensor b, "
           "double eps);")

ext = load_inline(name="specgen_example_layer_norm", cpp_sources=cpp_src,
                  cuda_sources=cuda_src, functions=["layer_norm_cuda"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.ln = nn.LayerNorm(features)

    def forward(self, x):
        return ext.layer_norm_cuda(x, self.ln.weight, self.ln.bias, self.ln.eps)
