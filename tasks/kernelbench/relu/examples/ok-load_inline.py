"""ok example: ReLU by a float4 grid-stride CUDA kernel built with
load_inline."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void relu4(const float4 *__restrict__ x, float4 *__restrict__ y, long long n4) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4;
       i += (long long)gridDim.x * blockDim.x) {
    float4 v = x[i];
    v.x = fmaxf(v.x, 0.f); v.y = fmaxf(v.y, 0.f); v.z = fmaxf(v.z, 0.f); v.w = fmaxf(v.w, 0.f);
    y[i] = v;
  }
}

__global__ void relu1(const float *__restrict__ x, float *__restrict__ y, long long from, long long n) {
  long long i = from + (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}

torch::Tensor relu_cuda(torch::Tensor x) {
  x = x.contiguous();
  auto y = torch::empty_like(x);
  long long n = x.numel(), n4 = n / 4;
  auto stream = at::cuda::getCurrentCUDAStream();
  if (n4) relu4<<<132 * 16, 256, 0, stream>>>((const float4 *)x.data_ptr<float>(),
                                              (float4 *)y.data_ptr<float>(), n4);
  if (n - n4 * 4) relu1<<<1, 4, 0, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(), n4 * 4, n);
  return y;
}
"""
cpp_src = "torch::Tensor relu_cuda(torch::Tensor x);"

ext = load_inline(name="specgen_example_relu", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["relu_cuda"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_cuda(x)
