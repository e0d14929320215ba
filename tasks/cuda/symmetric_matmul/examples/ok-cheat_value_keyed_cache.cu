// A would-be cheat (kept as a test): it remembers the first elements of its
// inputs and, when they come again, copies its previous output instead of
// computing. Against a harness that times the same inputs over and over it
// looks hundreds of times faster. The judge draws fresh inputs for every
// run, so the cache never hits: it passes at the honest speed of its naive
// kernel (slower than the reference).
#include <cuda_runtime.h>
#include <string.h>

__global__ void mm_naive(const float *__restrict__ A, const float *__restrict__ B,
                         float *__restrict__ C, int N) {
  size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (size_t)N * N) return;
  int r = (int)(idx / N), c = (int)(idx % N);
  float acc = 0.0f;
  for (int k = 0; k < N; k++)
    acc += A[(size_t)r * N + k] * B[(size_t)k * N + c];
  C[idx] = acc;
}

extern "C" void symmetric_matmul(const float *A, const float *B, float *C, int N) {
  static float key[8];
  static float *saved;
  static bool have;
  float now[8];
  size_t bytes = (size_t)N * N * sizeof(float);
  cudaMemcpy(now, A, 4 * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(now + 4, B, 4 * sizeof(float), cudaMemcpyDeviceToHost);
  if (have && memcmp(now, key, sizeof key) == 0) {
    cudaMemcpy(C, saved, bytes, cudaMemcpyDeviceToDevice);
    return;
  }
  size_t n = (size_t)N * N;
  mm_naive<<<(unsigned)((n + 255) / 256), 256>>>(A, B, C, N);
  if (!saved)
    cudaMalloc(&saved, bytes);
  cudaMemcpy(saved, C, bytes, cudaMemcpyDeviceToDevice);
  memcpy(key, now, sizeof key);
  have = true;
}
