// rejected example for matmul_transposed_b: hands the product to cuBLAS instead of
// computing it (the rules forbid vendor libraries that do the work).
#include <cublas_v2.h>

extern "C" void matmul_transposed_b(const float *A, const float *B, float *C, int M, int K, int N) {
  const int Mr = M, Kd = K, Nc = N;
  static cublasHandle_t h;
  if (!h) cublasCreate(&h);
  const float one = 1.0f, zero = 0.0f;
  cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, Nc, Mr, Kd, &one, B, Kd, A, Kd, &zero, C, Nc);
}
