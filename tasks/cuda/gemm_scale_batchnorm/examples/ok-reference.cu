// ok example for gemm_scale_batchnorm: the reference's steps without cuBLAS. A 16 x 16
// shared-memory tiled SGEMM (one output per thread) writes x @ W^T into y, then the same
// kernels as the reference: bias and scale, per-column mean and biased variance (two
// passes), normalization.
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

__global__ void bias_scale(float *y, const float *__restrict__ b, const float *__restrict__ s,
                           int Mr, int Nc) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)Mr * Nc) return;
  int c = (int)(i % Nc);
  y[i] = (y[i] + b[c]) * s[c];
}

// Block 32 x 16: 32 consecutive columns (coalesced reads of each row), 16 rows at a time.
__global__ void col_stats(const float *__restrict__ y, float *__restrict__ mean,
                          float *__restrict__ invstd, int Mr, int Nc, float eps) {
  __shared__ float sh[16][33];
  __shared__ float mu[32];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int c = blockIdx.x * 32 + tx;
  float a = 0.0f;
  if (c < Nc)
    for (int r = ty; r < Mr; r += 16) a += y[(size_t)r * Nc + c];
  sh[ty][tx] = a;
  __syncthreads();
  if (ty == 0) {
    float s = 0.0f;
    for (int q = 0; q < 16; q++) s += sh[q][tx];
    mu[tx] = s / (float)Mr;
  }
  __syncthreads();
  const float m = mu[tx];
  a = 0.0f;
  if (c < Nc)
    for (int r = ty; r < Mr; r += 16) {
      float d = y[(size_t)r * Nc + c] - m;
      a += d * d;
    }
  sh[ty][tx] = a;
  __syncthreads();
  if (ty == 0 && c < Nc) {
    float s = 0.0f;
    for (int q = 0; q < 16; q++) s += sh[q][tx];
    float var = s / (float)Mr;  // biased, as BatchNorm normalizes in training mode
    mean[c] = m;
    invstd[c] = 1.0f / sqrtf(var + eps);
  }
}

__global__ void normalize(float *y, const float *__restrict__ mean,
                          const float *__restrict__ invstd, int Mr, int Nc) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)Mr * Nc) return;
  int c = (int)(i % Nc);
  y[i] = (y[i] - mean[c]) * invstd[c];
}

// Per-column mean and 1/sqrt(var + eps); allocated once, grown when a call needs more.
static float *scratch(size_t n) {
  static float *p = nullptr;
  static size_t cap = 0;
  if (n > cap) {
    if (p) cudaFree(p);
    p = nullptr;
    cap = 0;
    if (cudaMalloc((void **)&p, n * sizeof(float)) != cudaSuccess) return nullptr;
    cap = n;
  }
  return p;
}

extern "C" void gemm_scale_batchnorm(const float *x, const float *W, const float *b, const float *scale, float *y, int batch, int in_features, int out_features, float eps) {
  const int Mr = batch, Kd = in_features, Nc = out_features;
  float *mean = scratch(2 * (size_t)Nc);
  if (!mean) return;
  float *invstd = mean + Nc;
  dim3 blk(TS, TS), grid((Nc + TS - 1) / TS, (Mr + TS - 1) / TS);
  lin_tile16<<<grid, blk>>>(x, W, y, Mr, Kd, Nc);
  const unsigned blocks = (unsigned)(((size_t)Mr * Nc + 255) / 256);
  bias_scale<<<blocks, 256>>>(y, b, scale, Mr, Nc);
  col_stats<<<(Nc + 31) / 32, dim3(32, 16)>>>(y, mean, invstd, Mr, Nc, eps);
  normalize<<<blocks, 256>>>(y, mean, invstd, Mr, Nc);
}
