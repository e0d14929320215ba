// rejected example for gemm_multiply_leakyrelu: hands the product to cuBLAS (the rules
// forbid vendor libraries that do the work).
#include <cublas_v2.h>

extern "C" void gemm_multiply_leakyrelu(const float *x, const float *W, const float *b, float *y, int batch, int in_features, int out_features, float multiplier, float negative_slope) {
  const int Mr = batch, Kd = in_features, Nc = out_features;
  static cublasHandle_t h;
  if (!h) cublasCreate(&h);
  const float one = 1.0f, zero = 0.0f;
  cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, Nc, Mr, Kd, &one, W, Kd, x, Kd, &zero, y, Nc);
}
