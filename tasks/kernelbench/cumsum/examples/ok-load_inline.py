"""ok example: an inclusive prefix sum along dim 1, one warp per row: each
pass scans 32 elements with shuffles and carries the running total;
built with load_inline."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void scan_rows(const float *__restrict__ x, float *__restrict__ y, int rows,
                          int len) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float *in = x + (long)row * len;
  float *out = y + (long)row * len;
  float carry = 0.f;
  for (int base = 0; base < len; base += 32) {
    int i = base + lane;
    float v = i < len ? in[i] : 0.f;
    for (int o = 1; o < 32; o <<= 1) {
      float u = __shfl_up_sync(0xffffffffu, v, o);
      if (lane >= o) v += u;
    }
    v += carry;
    if (i < len) out[i] = v;
    carry = __shfl_sync(0xffffffffu, v, 31);
  }
}

torch::Tensor cumsum_cuda(torch::Tensor x) {
  x = x.contiguous();
  int rows = x.size(0), len = x.size(1);
  auto y = torch::empty_like(x);
  int threads = 256, per_block = threads / 32;
  scan_rows<<<(rows + per_block - 1) / per_block, threads, 0,
              at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), y.data_ptr<float>(),
                                                  rows, len);
  return y;
}
"""
cpp_src = "torch::Tensor cumsum_cuda(torch::Tensor x);"

ext = load_inline(name="specgen_example_cumsum", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["cumsum_cuda"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        assert dim == 1

    def forward(self, x):
        return ext.cumsum_cuda(x)
