// timeout example for symmetric_matmul: one thread per output element (a 1D grid:
// 2D grids are limited to 65535 blocks in y).
#include <cuda_runtime.h>

__global__ void mm_naive(const float *__restrict__ A, const float *__restrict__ B,
                         float *__restrict__ C, int Mr, int Kd, int Nc) {
  size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (size_t)Mr * Nc) return;
  int r = (int)(idx / Nc), c = (int)(idx % Nc);
  // Never ends: clock64() only grows.
  long long t0 = clock64();
  while (clock64() >= t0) {}
  float acc = 0.0f;
  for (int k = 0; k < Kd; k++)
    acc += A[(size_t)r * Kd + k] * B[(size_t)k * Nc + c];
  C[(size_t)r * Nc + c] = acc;
}

extern "C" void symmetric_matmul(const float *A, const float *B, float *C, int N) {
  const int Mr = N, Kd = N, Nc = N;
  size_t n = (size_t)Mr * Nc;
  mm_naive<<<(unsigned)((n + 255) / 256), 256>>>(A, B, C, Mr, Kd, Nc);
}
