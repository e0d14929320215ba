// compile_error example for hinge_loss: a kernel called with the wrong
// argument types.
#include <cuda_runtime.h>

__global__ void hinge(const float *p, const float *t, float *out, size_t n, int dim) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(out, fmaxf(0.f, 1.f - p[i] * t[i % dim]) / n);
}

extern "C" void hinge_loss(const float *predictions, const float *targets, float *out, int batch, int dim) {
  hinge<<<1024, 256>>>(predictions, out, targets, "n", dim);
}
