"""ok example: A @ B.T by a shared-memory tiled CUDA kernel built with
load_inline (KernelBench's usual way of writing a candidate)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

#define T 32

// C[i][j] = sum_k A[i][k] * B[j][k]: both operands are read along k, so
// both tiles load rows, coalesced.
__global__ void matmul_bt(const float *__restrict__ A, const float *__restrict__ B,
                          float *__restrict__ C, int M, int K, int N) {
  __shared__ float As[T][T + 1];
  __shared__ float Bs[T][T + 1];
  int row = blockIdx.y * T + threadIdx.y;
  int col = blockIdx.x * T + threadIdx.x;
  int brow = blockIdx.x * T + threadIdx.y;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += T) {
    As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[(size_t)row * K + k0 + threadIdx.x] : 0.f;
    Bs[threadIdx.y][threadIdx.x] = (brow < N && k0 + threadIdx.x < K) ? B[(size_t)brow * K + k0 + threadIdx.x] : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < T; k++) acc += As[threadIdx.y][k] * Bs[threadIdx.x][k];
    __syncthreads();
  }
  if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

torch::Tensor matmul_bt_cuda(torch::Tensor A, torch::Tensor B) {
  A = A.contiguous();
  B = B.contiguous();
  int M = A.size(0), K = A.size(1), N = B.size(0);
  auto C = torch::empty({M, N}, A.options());
  dim3 block(T, T), grid((N + T - 1) / T, (M + T - 1) / T);
  matmul_bt<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
      A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(), M, K, N);
  return C;
}
"""
cpp_src = "torch::Tensor matmul_bt_cuda(torch::Tensor A, torch::Tensor B);"

ext = load_inline(name="specgen_example_matmul_bt", cpp_sources=cpp_src,
                  cuda_sources="#include <ATen/cuda/CUDAContext.h>\n" + cuda_src,
                  functions=["matmul_bt_cuda"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return ext.matmul_bt_cuda(A, B)
