"""numerical_error example (a wrong candidate KernelBench accepts): the
sum of exponentials stops at warp level, so each warp divides by its own
partial sum, about a 32nd of the row's, and the outputs are about 32 times
too large. They are about 2.5e-6 against KernelBench's absolute tolerance
of 1e-2, so KernelBench's check passes them; specgen checks outputs at the
reference's scale."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

#define THREADS 1024

__device__ float warp_max(float v) {
  for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ float warp_sum(float v) {
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// One block per row: the row's maximum, the sum of exp(x - max), then the
// quotients.
__global__ void softmax_rows(const float *__restrict__ x, float *__restrict__ y, int dim) {
  __shared__ float red[32];
  const float *row = x + (size_t)blockIdx.x * dim;
  float *out = y + (size_t)blockIdx.x * dim;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float m = -INFINITY;
  for (int i = threadIdx.x; i < dim; i += THREADS) m = fmaxf(m, row[i]);
  m = warp_max(m);
  if (lane == 0) red[warp] = m;
  __syncthreads();
  m = warp_max(lane < THREADS / 32 ? red[lane] : -INFINITY);
  __syncthreads();
  float s = 0.f;
  for (int i = threadIdx.x; i < dim; i += THREADS) s += __expf(row[i] - m);
  s = warp_sum(s);
  // The bug: each warp normalizes by its own partial sum; the partial sums
  // of the row's 32 warps are never added together.
  float inv = 1.f / s;
  for (int i = threadIdx.x; i < dim; i += THREADS) out[i] = __expf(row[i] - m) * inv;
}

torch::Tensor softmax_cuda(torch::Tensor x) {
  x = x.contiguous();
  auto y = torch::empty_like(x);
  int rows = x.size(0), dim = x.size(1);
  softmax_rows<<<rows, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), y.data_ptr<float>(), dim);
  return y;
}
"""
cpp_src = "torch::Tensor softmax_cuda(torch::Tensor x);"

ext = load_inline(name="specgen_example_softmax_warp", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["softmax_cuda"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.softmax_cuda(x)
