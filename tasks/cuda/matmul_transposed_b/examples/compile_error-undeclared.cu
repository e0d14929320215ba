// compile_error example for matmul_transposed_b: an undeclared identifier.
#include <cuda_runtime.h>

__global__ void mm(const float *A, const float *B, float *C, int Mr, int Kd, int Nc) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r >= Mr || c >= Nc) return;
  float acc = 0.0f;
  for (int k = 0; k < Kd; k++)
    acc += A[(size_t)r * Kd + k] * B[(size_t)k * Nc + c];
  C[(size_t)r * Nc + c] = acc * scale;
}

extern "C" void matmul_transposed_b(const float *A, const float *B, float *C, int M, int K, int N) {
  const int Mr = M, Kd = K, Nc = N;
  mm<<<dim3((Nc + 15) / 16, (Mr + 15) / 16), dim3(16, 16)>>>(A, B, C, Mr, Kd, Nc);
}
