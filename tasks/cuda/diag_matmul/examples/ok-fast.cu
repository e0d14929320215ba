// Fast example for diag_matmul: one block per row, the row's diagonal value read
// once, B and C moved as float4 (16-byte loads and stores). The operation is
// bound by memory bandwidth, so the gain over the plain kernel is modest.
#include <cuda_runtime.h>

__global__ void diag_rows(const float *__restrict__ A, const float4 *__restrict__ B,
                          float4 *__restrict__ C, int M4) {
  const float a = A[blockIdx.x];
  const size_t base = (size_t)blockIdx.x * M4;
  for (int j = threadIdx.x; j < M4; j += blockDim.x) {
    float4 b = B[base + j];
    C[base + j] = make_float4(a * b.x, a * b.y, a * b.z, a * b.w);
  }
}

__global__ void diag_scalar(const float *A, const float *B, float *C, int N, int M) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < (size_t)N * M) C[i] = A[i / M] * B[i];
}

extern "C" void diag_matmul(const float *A, const float *B, float *C, int N, int M) {
  if (M % 4 == 0)
    diag_rows<<<N, 256>>>(A, (const float4 *)B, (float4 *)C, M / 4);
  else
    diag_scalar<<<(unsigned)(((size_t)N * M + 255) / 256), 256>>>(A, B, C, N, M);
}
