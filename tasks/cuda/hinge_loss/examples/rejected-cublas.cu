// rejected example for hinge_loss: uses cuBLAS (cublasSasum) for the sum,
// which the rules forbid.
#include <cublas_v2.h>

extern "C" void hinge_loss(const float *predictions, const float *targets, float *out, int batch, int dim) {
  static cublasHandle_t h;
  if (!h) cublasCreate(&h);
  cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE);
  cublasSasum(h, batch * dim, predictions, 1, out);
}
