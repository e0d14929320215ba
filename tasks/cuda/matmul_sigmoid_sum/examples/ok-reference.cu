// ok example for matmul_sigmoid_sum: the reference's steps without cuBLAS. A 16 x 16
// shared-memory tiled SGEMM (one output per thread) writes x @ W^T into a scratch matrix,
// then the same kernels as the reference: bias and sigmoid, row sums (one block per row).
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

__global__ void bias_sigmoid(float *t, const float *__restrict__ b, int Mr, int Nc) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)Mr * Nc) return;
  int c = (int)(i % Nc);
  t[i] = 1.0f / (1.0f + expf(-(t[i] + b[c])));
}

// One block of 256 threads per row: strided partial sums, then a shared-memory tree.
__global__ void row_sum(const float *__restrict__ t, float *__restrict__ out, int Nc) {
  __shared__ float sh[256];
  const float *row = t + (size_t)blockIdx.x * Nc;
  float a = 0.0f;
  for (int j = threadIdx.x; j < Nc; j += blockDim.x) a += row[j];
  sh[threadIdx.x] = a;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = sh[0];
}

// The (batch, hidden_size) activations, allocated once and grown when a call needs more.
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

extern "C" void matmul_sigmoid_sum(const float *x, const float *W, const float *b, float *out, int batch, int input_size, int hidden_size) {
  const int Mr = batch, Kd = input_size, Nc = hidden_size;
  const size_t n = (size_t)Mr * Nc;
  float *t = scratch(n);
  if (!t) return;
  dim3 blk(TS, TS), grid((Nc + TS - 1) / TS, (Mr + TS - 1) / TS);
  lin_tile16<<<grid, blk>>>(x, W, t, Mr, Kd, Nc);
  bias_sigmoid<<<(unsigned)((n + 255) / 256), 256>>>(t, b, Mr, Nc);
  row_sum<<<Mr, 256>>>(t, out, Nc);
}
