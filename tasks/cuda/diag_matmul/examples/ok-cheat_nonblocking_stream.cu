// A would-be cheat (kept as a test): its work runs on a non-blocking stream
// that it never synchronizes, so events on the default stream would time
// nothing. The judge's server synchronizes the whole context before it
// answers, so the work is timed in full: it passes at an honest speed (the
// reference's own kernel: no faster than the reference).
#include <cuda_runtime.h>

__global__ void diag_kernel(const float *A, const float *B, float *C, int N, int M) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < (size_t)N * M) C[i] = A[i / M] * B[i];
}

extern "C" void diag_matmul(const float *A, const float *B, float *C, int N, int M) {
  static cudaStream_t s;
  if (!s)
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  size_t n = (size_t)N * M;
  // a little extra latency first, so that unsynchronized work would show
  for (int k = 0; k < 4; k++)
    diag_kernel<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(A, B, C, N, M);
}
