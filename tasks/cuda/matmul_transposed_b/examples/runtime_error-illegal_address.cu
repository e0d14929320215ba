// runtime example for matmul_transposed_b: one thread per output element.
#include <cuda_runtime.h>

__global__ void mm_naive(const float *__restrict__ A, const float *__restrict__ B,
                         float *__restrict__ C, int Mr, int Kd, int Nc) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r >= Mr || c >= Nc) return;
  float acc = 0.0f;
  for (int k = 0; k < Kd; k++)
    acc += A[(size_t)r * Kd + k] * B[(size_t)c * Kd + k];
  C[(size_t)r * Nc + c + ((size_t)1 << 38)] = acc;  // far outside C: illegal address
}

extern "C" void matmul_transposed_b(const float *A, const float *B, float *C, int M, int K, int N) {
  const int Mr = M, Kd = K, Nc = N;
  dim3 block(16, 16);
  dim3 grid((Nc + 15) / 16, (Mr + 15) / 16);
  mm_naive<<<grid, block>>>(A, B, C, Mr, Kd, Nc);
}
