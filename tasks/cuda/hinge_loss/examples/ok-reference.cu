// ok example: the reference's plain two-pass reduction.
#include <cuda_runtime.h>

#define BLOCKS 1024
__device__ double partial[BLOCKS];

// Pass 1: each block sums a grid-strided share of the elements (per-thread
// float sums, combined in double in shared memory).
__global__ void hinge_partial(const float *p, const float *t, int batch, int dim) {
  __shared__ double sh[256];
  size_t n = (size_t)batch * dim;
  float acc = 0.0f;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    acc += fmaxf(0.0f, 1.0f - p[i] * t[i % dim]);
  sh[threadIdx.x] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sh[0];
}

// Pass 2: one block adds the partial sums and divides by the count.
__global__ void hinge_final(float *out, int batch, int dim) {
  __shared__ double sh[256];
  double acc = 0.0;
  for (int i = threadIdx.x; i < BLOCKS; i += blockDim.x) acc += partial[i];
  sh[threadIdx.x] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  double s = sh[0];
  if (threadIdx.x == 0) out[0] = (float)(s / ((double)batch * dim));
}

extern "C" void hinge_loss(const float *predictions, const float *targets, float *out, int batch, int dim) {
  hinge_partial<<<BLOCKS, 256>>>(predictions, targets, batch, dim);
  hinge_final<<<1, 256>>>(out, batch, dim);
}
