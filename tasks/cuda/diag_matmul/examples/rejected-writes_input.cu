// rejected example for diag_matmul: scales B in place and copies it out, so
// the input B is modified (inputs are read-only).
#include <cuda_runtime.h>

__device__ inline float *B_rw(const float *p) { return const_cast<float *>(p); }

__global__ void diag_kernel(const float *A, const float *B, float *C, int N, int M) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  size_t n = (size_t)N * M;
  if (i < n) { B_rw(B)[i] *= A[i / M]; C[i] = B[i]; }
}

extern "C" void diag_matmul(const float *A, const float *B, float *C, int N, int M) {
  size_t n = (size_t)N * M;
  diag_kernel<<<(unsigned)((n + 255) / 256), 256>>>(A, B, C, N, M);
}
