// numerical_error example for diag_matmul: the last row is never written
// (the output poison shows through).
#include <cuda_runtime.h>

__global__ void diag_kernel(const float *A, const float *B, float *C, int N, int M) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  size_t n = (size_t)N * M;
  if (i < n - M) C[i] = A[i / M] * B[i];
}

extern "C" void diag_matmul(const float *A, const float *B, float *C, int N, int M) {
  size_t n = (size_t)N * M;
  diag_kernel<<<(unsigned)((n + 255) / 256), 256>>>(A, B, C, N, M);
}
