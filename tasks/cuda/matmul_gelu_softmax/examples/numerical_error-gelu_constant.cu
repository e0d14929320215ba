// numerical_error example for matmul_gelu_softmax: the fused kernels of ok-fused.cu, but the GELU
// multiplies by sqrt(2) where it should divide by it, erf(v * 1.414...) instead of
// erf(v / 1.414...): a different curve, off by up to about 0.1.
#include <cuda_runtime.h>

#define BM 128
#define BN 128
#define BK 8

__device__ __forceinline__ float gelu(float v) { return 0.5f * v * (1.0f + erff(v * 1.41421356237309505f)); }

__global__ void __launch_bounds__(256)
lin_gelu_stats(const float *__restrict__ x, const float *__restrict__ W, const float *__restrict__ bias,
               float *__restrict__ y, float *__restrict__ pmax, float *__restrict__ psum,
               int Mr, int Kd, int Nc) {
  __shared__ float As[BK][BM];
  __shared__ float Bs[BK][BN];
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
  // g = gelu(v + b); columns outside y become -inf so that they count in neither statistic.
#pragma unroll
  for (int j = 0; j < 8; j++) {
    const int c = col0 + tx * 8 + j;
    const float bj = c < Nc ? bias[c] : 0.0f;
#pragma unroll
    for (int i = 0; i < 8; i++) acc[i][j] = c < Nc ? gelu(acc[i][j] + bj) : -INFINITY;
  }
  // Per row: the tile's maximum, then the sum of exp(g - maximum), each over the thread's 8
  // columns and then over the 16 threads of the same rows (tid = ty * 16 + tx: 16
  // consecutive lanes of one warp, so xor offsets below 16 stay among them). Every tile
  // holds at least one column of y, so the maximum is finite.
#pragma unroll
  for (int i = 0; i < 8; i++) {
    float m = acc[i][0];
#pragma unroll
    for (int j = 1; j < 8; j++) m = fmaxf(m, acc[i][j]);
#pragma unroll
    for (int o = 8; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; j++) s += expf(acc[i][j] - m);  // exp(-inf) = 0
#pragma unroll
    for (int o = 8; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    const int r = row0 + ty * 8 + i;
    if (tx == 0 && r < Mr) {
      pmax[(size_t)r * gridDim.x + blockIdx.x] = m;
      psum[(size_t)r * gridDim.x + blockIdx.x] = s;
    }
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

// One block of 256 threads per row: the tiles' statistics combined, then y normalized.
__global__ void softmax_finish(float *y, const float *__restrict__ pmax,
                               const float *__restrict__ psum, int Nc, int tiles) {
  __shared__ float sh[256];
  const size_t r = blockIdx.x;
  float m = -INFINITY;
  for (int t = threadIdx.x; t < tiles; t += blockDim.x) m = fmaxf(m, pmax[r * tiles + t]);
  const float M = block_reduce<true>(m, sh);
  float s = 0.0f;
  for (int t = threadIdx.x; t < tiles; t += blockDim.x)
    s += psum[r * tiles + t] * expf(pmax[r * tiles + t] - M);
  const float S = block_reduce<false>(s, sh);
  float *row = y + r * Nc;
  for (int j = threadIdx.x; j < Nc; j += blockDim.x) row[j] = expf(row[j] - M) / S;
}

// The tiles' row maxima and sums (2 * batch * tiles), allocated once, grown when needed.
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

extern "C" void matmul_gelu_softmax(const float *x, const float *W, const float *b, float *y, int batch, int in_features, int out_features) {
  const int Mr = batch, Kd = in_features, Nc = out_features;
  const int tiles = (Nc + BN - 1) / BN;
  float *pmax = scratch(2 * (size_t)Mr * tiles);
  if (!pmax) return;
  float *psum = pmax + (size_t)Mr * tiles;
  dim3 grid(tiles, (Mr + BM - 1) / BM);
  lin_gelu_stats<<<grid, 256>>>(x, W, b, y, pmax, psum, Mr, Kd, Nc);
  softmax_finish<<<Mr, 256>>>(y, pmax, psum, Nc, tiles);
}
