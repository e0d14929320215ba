// rejected example for lower_triangular_matmul: hands the product to cuBLAS instead of
// computing it (the rules forbid vendor libraries that do the work).
#include <cublas_v2.h>

extern "C" void lower_triangular_matmul(const float *A, const float *B, float *C, int N) {
  const int Mr = N, Kd = N, Nc = N;
  static cublasHandle_t h;
  if (!h) cublasCreate(&h);
  const float one = 1.0f, zero = 0.0f;
  cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, Nc, Mr, Kd, &one, B, Nc, A, Kd, &zero, C, Nc);
}
