// ok example for matmul_gelu_softmax: the reference's steps without cuBLAS. A 16 x 16
// shared-memory tiled SGEMM (one output per thread) writes x @ W^T into y, then the same
// kernels as the reference: bias and exact GELU, softmax per row (one block per row).
#include <cuda_runtime.h>

#define TS 16

// y = x @ W^T, x (Mr, Kd), W (Nc, Kd): both operands are read along k, staged in padded tiles.
__global__ void lin_tile16(const float *__restrict__ x, const float *__restrict__ W,
                           float *__restrict__ y, int Mr, int Kd, int Nc) {
  __shared__ float xs[TS][TS + 1];
  __shared__ float ws[TS][TS + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int r = blockIdx.y * TS + ty, c = blockIdx.x * TS + tx;
  const int wr = blockIdx.x * TS + ty;  // the W row this thread stages
  float acc = 0.0f;
  for (int k0 = 0; k0 < Kd; k0 += TS) {
    const int k = k0 + tx;
    xs[ty][tx] = (r < Mr && k < Kd) ? x[(size_t)r * Kd + k] : 0.0f;
    ws[ty][tx] = (wr < Nc && k < Kd) ? W[(size_t)wr * Kd + k] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int q = 0; q < TS; q++) acc += xs[ty][q] * ws[tx][q];
    __syncthreads();
  }
  if (r < Mr && c < Nc) y[(size_t)r * Nc + c] = acc;
}

__global__ void bias_gelu(float *y, const float *__restrict__ b, int Mr, int Nc) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)Mr * Nc) return;
  int c = (int)(i % Nc);
  float v = y[i] + b[c];
  y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
}

// Block-wide reduction of 256 threads' values (max or sum); every thread gets the result.
template <bool MAX>
__device__ float block_reduce(float v, float *sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s)
      sh[threadIdx.x] = MAX ? fmaxf(sh[threadIdx.x], sh[threadIdx.x + s])
                            : sh[threadIdx.x] + sh[threadIdx.x + s];
    __syncthreads();
  }
  float r = sh[0];
  __syncthreads();  // sh is reused by the next reduction
  return r;
}

__global__ void softmax_rows(float *y, int Nc) {
  __shared__ float sh[256];
  float *row = y + (size_t)blockIdx.x * Nc;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < Nc; j += blockDim.x) m = fmaxf(m, row[j]);
  m = block_reduce<true>(m, sh);
  float s = 0.0f;
  for (int j = threadIdx.x; j < Nc; j += blockDim.x) s += expf(row[j] - m);
  s = block_reduce<false>(s, sh);
  for (int j = threadIdx.x; j < Nc; j += blockDim.x) row[j] = expf(row[j] - m) / s;
}

extern "C" void matmul_gelu_softmax(const float *x, const float *W, const float *b, float *y, int batch, int in_features, int out_features) {
  const int Mr = batch, Kd = in_features, Nc = out_features;
  dim3 blk(TS, TS), grid((Nc + TS - 1) / TS, (Mr + TS - 1) / TS);
  lin_tile16<<<grid, blk>>>(x, W, y, Mr, Kd, Nc);
  bias_gelu<<<(unsigned)(((size_t)Mr * Nc + 255) / 256), 256>>>(y, b, Mr, Nc);
  softmax_rows<<<Mr, 256>>>(y, Nc);
}
