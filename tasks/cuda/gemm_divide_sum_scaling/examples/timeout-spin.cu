// timeout example for gemm_divide_sum_scaling: the column-sum shortcut of ok-fast.cu, with
// a wait in the column sums that never ends (clock64() only grows).
#include <cuda_runtime.h>

#define SPLIT 16  // row ranges of W summed by separate blocks

// part[s][k] = sum of W[j][k] over the s-th range of rows. Block 32 x 8: 32 consecutive
// columns (coalesced rows of W), 8 rows at a time.
__global__ void col_partial(const float *__restrict__ W, float *__restrict__ part, int J, int K) {
  __shared__ float sh[8][33];
  const int k = blockIdx.x * 32 + threadIdx.x;
  const int per = (J + gridDim.y - 1) / gridDim.y;
  const int j0 = blockIdx.y * per;
  const int j1 = min(J, j0 + per);
  long long t0 = clock64();
  while (clock64() >= t0) {}
  float a = 0.0f;
  if (k < K)
    for (int j = j0 + threadIdx.y; j < j1; j += 8) a += W[(size_t)j * K + k];
  sh[threadIdx.y][threadIdx.x] = a;
  __syncthreads();
  if (threadIdx.y == 0 && k < K) {
    float s = 0.0f;
#pragma unroll
    for (int q = 0; q < 8; q++) s += sh[q][threadIdx.x];
    part[(size_t)blockIdx.y * K + k] = s;
  }
}

// c[k] = sum over the ranges of part[s][k].
__global__ void col_final(const float *__restrict__ part, float *__restrict__ c, int K, int S) {
  int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= K) return;
  float a = 0.0f;
  for (int s = 0; s < S; s++) a += part[(size_t)s * K + k];
  c[k] = a;
}

// out[i] = mul * dot(x[i], c): one block of 256 threads per row, warp shuffles then shared memory.
__global__ void row_dot(const float *__restrict__ x, const float *__restrict__ c,
                        float *__restrict__ out, int K, float mul) {
  __shared__ float warp_sums[8];
  const float *xr = x + (size_t)blockIdx.x * K;
  float a = 0.0f;
  for (int k = threadIdx.x; k < K; k += blockDim.x) a += xr[k] * c[k];
  for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = a;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int w = 0; w < (int)(blockDim.x >> 5); w++) s += warp_sums[w];
    out[blockIdx.x] = s * mul;
  }
}

// SPLIT * K partial sums, then K column sums; allocated once, grown when needed.
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

extern "C" void gemm_divide_sum_scaling(const float *x, const float *W, float *out, int batch, int input_size, int hidden_size, float scaling_factor) {
  const int Mr = batch, Kd = input_size, Nc = hidden_size;
  float *part = scratch((size_t)(SPLIT + 1) * Kd);
  if (!part) return;
  float *c = part + (size_t)SPLIT * Kd;
  col_partial<<<dim3((Kd + 31) / 32, SPLIT), dim3(32, 8)>>>(W, part, Nc, Kd);
  col_final<<<(Kd + 255) / 256, 256>>>(part, c, Kd, SPLIT);
  row_dot<<<Mr, 256>>>(x, c, out, Kd, scaling_factor * 0.5f);
}
