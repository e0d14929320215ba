"""ok example: a direct convolution, one thread per output element (each
sums in_channels x k x k products of the zero-padded input and the weights
of the candidate's own nn.Conv2d); built with load_inline."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void conv2d_direct(const float *__restrict__ x, const float *__restrict__ w,
                              float *__restrict__ y, int n, int cin, int cout, int h,
                              int wd, int k) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  long total = (long)n * cout * h * wd;
  if (i >= total) return;
  int ox = i % wd, oy = (i / wd) % h, co = (i / ((long)wd * h)) % cout;
  int b = i / ((long)wd * h * cout);
  int pad = k / 2;
  float acc = 0.f;
  for (int ci = 0; ci < cin; ci++)
    for (int ky = 0; ky < k; ky++) {
      int iy = oy + ky - pad;
      if (iy < 0 || iy >= h) continue;
      for (int kx = 0; kx < k; kx++) {
        int ix = ox + kx - pad;
        if (ix < 0 || ix >= wd) continue;
        acc += x[(((long)b * cin + ci) * h + iy) * wd + ix] *
               w[(((long)co * cin + ci) * k + ky) * k + kx];
      }
    }
  y[i] = acc;
}

torch::Tensor conv2d_cuda(torch::Tensor x, torch::Tensor w) {
  x = x.contiguous();
  w = w.contiguous();
  int n = x.size(0), cin = x.size(1), h = x.size(2), wd = x.size(3);
  int cout = w.size(0), k = w.size(2);
  auto y = torch::empty({n, cout, h, wd}, x.options());
  long total = (long)n * cout * h * wd;
  int threads = 256;
  conv2d_direct<<<(total + threads - 1) / threads, threads, 0,
                  at::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), w.data_ptr<float>(), y.data_ptr<float>(), n, cin, cout, h, wd, k);
  return y;
}
"""
cpp_src = "torch::Tensor conv2d_cuda(torch::Tensor x, torch::Tensor w);"

ext = load_inline(name="specgen_example_conv2d", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["conv2d_cuda"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2,
                              bias=False)

    def forward(self, x):
        return ext.conv2d_cuda(x, self.conv.weight)
