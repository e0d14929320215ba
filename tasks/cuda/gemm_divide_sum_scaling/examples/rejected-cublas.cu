// rejected example for gemm_divide_sum_scaling: the column-sum shortcut with the
// matrix-vector product handed to cuBLAS (the rules forbid vendor libraries that do the work).
#include <cublas_v2.h>
#include <cuda_runtime.h>

__global__ void col_sums(const float *__restrict__ W, float *__restrict__ c, int J, int K) {
  int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= K) return;
  float a = 0.0f;
  for (int j = 0; j < J; j++) a += W[(size_t)j * K + k];
  c[k] = a;
}

extern "C" void gemm_divide_sum_scaling(const float *x, const float *W, float *out, int batch, int input_size, int hidden_size, float scaling_factor) {
  static cublasHandle_t h;
  static float *c;
  if (!h) {
    cublasCreate(&h);
    cudaMalloc((void **)&c, (size_t)input_size * sizeof(float));
  }
  col_sums<<<(input_size + 255) / 256, 256>>>(W, c, hidden_size, input_size);
  const float mul = scaling_factor * 0.5f, zero = 0.0f;
  // out = mul * x c: x is (batch, input_size) row-major, i.e. column-major (input_size, batch).
  cublasSgemv(h, CUBLAS_OP_T, input_size, batch, &mul, x, input_size, c, 1, &zero, out, 1);
}
