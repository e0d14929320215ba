// rejected example for gemm_add_relu: hands the product to cuBLAS (the rules
// forbid vendor libraries that do the work).
#include <cublas_v2.h>

extern "C" void gemm_add_relu(const float *x, const float *W, const float *bias, float *y, int batch, int in_features, int out_features) {
  const int Mr = batch, Kd = in_features, Nc = out_features;
  static cublasHandle_t h;
  if (!h) cublasCreate(&h);
  const float one = 1.0f, zero = 0.0f;
  cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, Nc, Mr, Kd, &one, W, Kd, x, Kd, &zero, y, Nc);
}
