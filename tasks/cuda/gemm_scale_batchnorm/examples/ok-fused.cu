// Fused example for gemm_scale_batchnorm: a 128 x 128 register-tiled SGEMM (256 threads,
// 8 x 8 outputs per thread, operands staged through shared memory 8 columns of k at a
// time) that applies the bias and the scale in registers and, before its single store of z,
// computes each of its 128 columns' mean and sum of squared deviations over its 128 rows
// (two passes over the registers). A second kernel combines the tiles' statistics per
// column (Chan's parallel formula, in double), a third normalizes y in place. It saves the
// reference's separate passes over z for the scale and the statistics, but its SGEMM runs at
// about half of cuBLAS's speed, so it is not expected to be faster: hence "fused", not "fast".
#include <cuda_runtime.h>

#define BM 128
#define BN 128
#define BK 8

__global__ void __launch_bounds__(256)
lin_tiled_stats(const float *__restrict__ x, const float *__restrict__ W, float *__restrict__ y,
                const float *__restrict__ bias, const float *__restrict__ scale,
                float *__restrict__ pmean, float *__restrict__ pm2, int Mr, int Kd, int Nc) {
  __shared__ float As[BK][BM];
  __shared__ float Bs[BK][BN];
  __shared__ float red[16][BN];
  __shared__ float tmean[BN];
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int ty = tid / 16, tx = tid % 16;
  float acc[8][8] = {};
  for (int k0 = 0; k0 < Kd; k0 += BK) {
    {
      int rr = tid / 2, kk = (tid % 2) * 4;
      for (int q = 0; q < 4; q++) {
        int r = row0 + rr, k = k0 + kk + q;
        As[kk + q][rr] = (r < Mr && k < Kd) ? x[(size_t)r * Kd + k] : 0.0f;
      }
    }
    {
      // W is stored (out, in): W(k, c) = W[c * Kd + k].
      int cc = tid / 2, kk = (tid % 2) * 4;
      for (int q = 0; q < 4; q++) {
        int c = col0 + cc, k = k0 + kk + q;
        Bs[kk + q][cc] = (c < Nc && k < Kd) ? W[(size_t)c * Kd + k] : 0.0f;
      }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; k++) {
      float a[8], b[8];
#pragma unroll
      for (int q = 0; q < 8; q++) {
        a[q] = As[k][ty * 8 + q];
        b[q] = Bs[k][tx * 8 + q];
      }
#pragma unroll
      for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++)
          acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
  // z = (v + b) * s in registers; rows or columns outside y hold 0 and are not counted.
  const int rows = min(BM, Mr - row0);
  float part[8];
#pragma unroll
  for (int j = 0; j < 8; j++) part[j] = 0.0f;
#pragma unroll
  for (int j = 0; j < 8; j++) {
    const int c = col0 + tx * 8 + j;
    const float bj = c < Nc ? bias[c] : 0.0f, sj = c < Nc ? scale[c] : 0.0f;
#pragma unroll
    for (int i = 0; i < 8; i++) {
      const bool in = row0 + ty * 8 + i < Mr && c < Nc;
      acc[i][j] = in ? (acc[i][j] + bj) * sj : 0.0f;
      part[j] += acc[i][j];
    }
  }
  // The tile's column means: the 16 row groups' partial sums added in shared memory.
#pragma unroll
  for (int j = 0; j < 8; j++) red[ty][tx * 8 + j] = part[j];
  __syncthreads();
  if (tid < BN) {
    float s = 0.0f;
    for (int q = 0; q < 16; q++) s += red[q][tid];
    tmean[tid] = s / (float)rows;
  }
  __syncthreads();
  // Sums of squared deviations from the tile's means, over the valid rows only.
#pragma unroll
  for (int j = 0; j < 8; j++) {
    const float m = tmean[tx * 8 + j];
    float a = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; i++) {
      const float d = acc[i][j] - m;
      if (row0 + ty * 8 + i < Mr) a += d * d;
    }
    red[ty][tx * 8 + j] = a;
  }
  __syncthreads();
  if (tid < BN && col0 + tid < Nc) {
    float s = 0.0f;
    for (int q = 0; q < 16; q++) s += red[q][tid];
    pmean[(size_t)blockIdx.y * Nc + col0 + tid] = tmean[tid];
    pm2[(size_t)blockIdx.y * Nc + col0 + tid] = s;
  }
  for (int i = 0; i < 8; i++) {
    int r = row0 + ty * 8 + i;
    if (r >= Mr) continue;
    for (int j = 0; j < 8; j++) {
      int c = col0 + tx * 8 + j;
      if (c < Nc) y[(size_t)r * Nc + c] = acc[i][j];
    }
  }
}

// Per column: the row tiles' (count, mean, M2) combined with Chan's formula, in double.
__global__ void combine(const float *__restrict__ pmean, const float *__restrict__ pm2,
                        float *__restrict__ mean, float *__restrict__ invstd,
                        int Mr, int Nc, int tiles, float eps) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= Nc) return;
  double n = 0.0, mu = 0.0, m2 = 0.0;
  for (int t = 0; t < tiles; t++) {
    const double nb = (double)min(BM, Mr - t * BM);
    const double mb = pmean[(size_t)t * Nc + c], m2b = pm2[(size_t)t * Nc + c];
    const double nn = n + nb, d = mb - mu;
    mu += d * nb / nn;
    m2 += m2b + d * d * n * nb / nn;
    n = nn;
  }
  const double var = m2 / n;  // biased, as BatchNorm normalizes in training mode
  mean[c] = (float)mu;
  invstd[c] = (float)(1.0 / sqrt(var + (double)eps));
}

__global__ void normalize(float *y, const float *__restrict__ mean,
                          const float *__restrict__ invstd, int Mr, int Nc) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)Mr * Nc) return;
  int c = (int)(i % Nc);
  y[i] = (y[i] - mean[c]) * invstd[c];
}

// Tile statistics (2 * tiles * Nc) and the final mean and invstd (2 * Nc), allocated once.
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
  const int tiles = (Mr + BM - 1) / BM;
  float *pmean = scratch((2 * (size_t)tiles + 2) * Nc);
  if (!pmean) return;
  float *pm2 = pmean + (size_t)tiles * Nc;
  float *mean = pm2 + (size_t)tiles * Nc, *invstd = mean + Nc;
  dim3 grid((Nc + BN - 1) / BN, tiles);
  lin_tiled_stats<<<grid, 256>>>(x, W, y, b, scale, pmean, pm2, Mr, Kd, Nc);
  combine<<<(Nc + 255) / 256, 256>>>(pmean, pm2, mean, invstd, Mr, Nc, tiles, eps);
  normalize<<<(unsigned)(((size_t)Mr * Nc + 255) / 256), 256>>>(y, mean, invstd, Mr, Nc);
}
