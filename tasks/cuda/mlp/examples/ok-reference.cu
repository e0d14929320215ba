// ok example for mlp: the reference's three layers without cuBLAS, each a
// 16 x 16 shared-memory tiled product with the bias and ReLU in the same kernel.
#include <cuda_runtime.h>

// y[r][c] = act(sum_k x[r][k] * W[c][k] + b[c]): x (M, K), W (N, K) as nn.Linear
// stores it, 16 x 16 output tiles, both operands staged through shared memory.
#define TS 16
__global__ void linear_tiled(const float *__restrict__ x, const float *__restrict__ W,
                             const float *__restrict__ b, float *__restrict__ y, int M, int K,
                             int N, int relu) {
  __shared__ float xs[TS][TS + 1];
  __shared__ float ws[TS][TS + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int r = blockIdx.y * TS + ty, c = blockIdx.x * TS + tx;
  const int wr = blockIdx.x * TS + ty;  // the row of W this thread stages
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TS) {
    const int k = k0 + tx;
    xs[ty][tx] = (r < M && k < K) ? x[(size_t)r * K + k] : 0.0f;
    ws[ty][tx] = (wr < N && k < K) ? W[(size_t)wr * K + k] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < TS; kk++) acc += xs[ty][kk] * ws[tx][kk];
    __syncthreads();
  }
  if (r < M && c < N) {
    const float v = acc + b[c];
    y[(size_t)r * N + c] = relu ? fmaxf(v, 0.0f) : v;
  }
}

static void linear(const float *x, const float *W, const float *b, float *y, int M, int K, int N,
                   int relu) {
  dim3 grid((N + TS - 1) / TS, (M + TS - 1) / TS);
  linear_tiled<<<grid, dim3(TS, TS)>>>(x, W, b, y, M, K, N, relu);
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
