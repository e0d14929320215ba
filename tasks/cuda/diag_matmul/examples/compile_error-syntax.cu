// compile_error example for diag_matmul: a missing semicolon.
#include <cuda_runtime.h>

__global__ void diag_kernel(const float *A, const float *B, float *C, int N, int M) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x
  if (i < (size_t)N * M) C[i] = A[i / M] * B[i];
}

extern "C" void diag_matmul(const float *A, const float *B, float *C, int N, int M) {
  diag_kernel<<<(unsigned)(((size_t)N * M + 255) / 256), 256>>>(A, B, C, N, M);
}
