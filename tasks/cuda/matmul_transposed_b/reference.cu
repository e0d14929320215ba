// Reference for matmul_transposed_b: cuBLAS SGEMM (what PyTorch runs for this operator),
// row-major operands passed as their column-major transposes.
#include <cublas_v2.h>
#include <cuda_runtime.h>

static cublasHandle_t handle() {
  static cublasHandle_t h = nullptr;
  if (!h) {
    cublasCreate(&h);
    cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);  // plain float32, no TF32
    cublasSetStream(h, 0);
  }
  return h;
}

extern "C" void matmul_transposed_b(const float *A, const float *B, float *C, int M, int K, int N) {
  const int Mr = M, Kd = K, Nc = N;
  const float one = 1.0f, zero = 0.0f;
  // C^T (column-major Nc x Mr) = op(B)^T op(A)^T
  cublasSgemm(handle(), CUBLAS_OP_T, CUBLAS_OP_N, Nc, Mr, Kd, &one, B, Kd, A, Kd, &zero, C, Nc);
}
