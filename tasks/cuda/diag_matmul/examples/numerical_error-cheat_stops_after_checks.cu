// A cheat (kept as a test): it computes for its first calls, which are where
// a naive harness checks correctness, and from then on returns at once,
// leaving whatever the output held. The judge checks the output of every
// run, timed ones included, on fresh inputs with the output poisoned.
#include <cuda_runtime.h>

__global__ void diag_kernel(const float *A, const float *B, float *C, int N, int M) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < (size_t)N * M) C[i] = A[i / M] * B[i];
}

extern "C" void diag_matmul(const float *A, const float *B, float *C, int N, int M) {
  static int calls;
  if (++calls > 8)
    return;
  size_t n = (size_t)N * M;
  diag_kernel<<<(unsigned)((n + 255) / 256), 256>>>(A, B, C, N, M);
}
