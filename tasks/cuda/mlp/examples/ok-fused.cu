// ok example for mlp: each layer one 128 x 128 register-tiled SGEMM with the
// bias and ReLU fused into its store (three kernels, no separate epilogue pass).
// Correct, but with a batch of 128 it fills only one row of tiles, and the
// generic products of this size reach about half of cuBLAS: not expected to be
// faster than the reference.
#include <cuda_runtime.h>

// y = act(x W^T + b) as one kernel: 128 x 128 output tiles, 256 threads, 8 x 8
// outputs per thread in registers, operands staged through shared memory 8
// columns of k at a time; bias and ReLU applied before the single store.
#define BM 128
#define BN 128
#define BK 8
__global__ void __launch_bounds__(256)
linear_reg(const float *__restrict__ x, const float *__restrict__ W, const float *__restrict__ b,
           float *__restrict__ y, int M, int K, int N, int relu) {
  __shared__ float As[BK][BM];
  __shared__ float Bs[BK][BN];
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int ty = tid / 16, tx = tid % 16;
  float acc[8][8] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    {
      int rr = tid / 2, kk = (tid % 2) * 4;
      for (int q = 0; q < 4; q++) {
        int r = row0 + rr, k = k0 + kk + q;
        As[kk + q][rr] = (r < M && k < K) ? x[(size_t)r * K + k] : 0.0f;
      }
    }
    {
      // W is stored (out, in): W(k, c) = W[c * K + k].
      int cc = tid / 2, kk = (tid % 2) * 4;
      for (int q = 0; q < 4; q++) {
        int c = col0 + cc, k = k0 + kk + q;
        Bs[kk + q][cc] = (c < N && k < K) ? W[(size_t)c * K + k] : 0.0f;
      }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; k++) {
      float a[8], bb[8];
#pragma unroll
      for (int q = 0; q < 8; q++) {
        a[q] = As[k][ty * 8 + q];
        bb[q] = Bs[k][tx * 8 + q];
      }
#pragma unroll
      for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] += a[i] * bb[j];
    }
    __syncthreads();
  }
  for (int i = 0; i < 8; i++) {
    int r = row0 + ty * 8 + i;
    if (r >= M) continue;
    for (int j = 0; j < 8; j++) {
      int c = col0 + tx * 8 + j;
      if (c < N) {
        float v = acc[i][j] + b[c];
        y[(size_t)r * N + c] = relu ? fmaxf(v, 0.0f) : v;
      }
    }
  }
}

static void linear(const float *x, const float *W, const float *b, float *y, int M, int K, int N,
                   int relu) {
  dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  linear_reg<<<grid, 256>>>(x, W, b, y, M, K, N, relu);
}

// Scratch that lives across calls, grown when a larger size is asked for.
static float *grow(float **p, size_t *cap, size_t n) {
  if (n > *cap) {
    if (*p) cudaFree(*p);
    cudaMalloc((void **)p, n * sizeof(float));
    *cap = n;
  }
  return *p;
}

extern "C" void mlp(const float *x, const float *W1, const float *b1, const float *W2,
                    const float *b2, const float *W3, const float *b3, float *y, int batch,
                    int input_size, int hidden1, int hidden2, int output_size) {
  static float *h1_buf = nullptr, *h2_buf = nullptr;
  static size_t h1_cap = 0, h2_cap = 0;
  float *h1 = grow(&h1_buf, &h1_cap, (size_t)batch * hidden1);
  float *h2 = grow(&h2_buf, &h2_cap, (size_t)batch * hidden2);
  linear(x, W1, b1, h1, batch, input_size, hidden1, 1);
  linear(h1, W2, b2, h2, batch, hidden1, hidden2, 1);
  linear(h2, W3, b3, y, batch, hidden2, output_size, 0);
}
