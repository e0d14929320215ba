// ok example for relu_self_attention: the qkv projection is a 128 x 128
// register-tiled SGEMM with the bias in its store; then one kernel per
// (64-query tile, batch item, head) computes its scores 64 keys at a time in
// shared memory, applies the scale, mask and ReLU there and multiplies them by v
// at once, so the (batch, heads, T, T) score tensor is never written, and key
// tiles wholly above the diagonal are skipped (about half of the products). The
// projection runs at about half of cuBLAS, so it is not claimed to be faster
// than the reference. The fused kernel is written for hs = 64; other head
// sizes fall back to a plain one-thread-per-output kernel.
#include <cuda_runtime.h>
#include <math.h>

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

#define HS 64  // head size of the fused kernel
#define QT 64  // queries per block
#define KT 64  // keys per step
#define LDS 65 // padded row of the shared tiles
#define FUSED_SMEM (3 * 64 * LDS * (int)sizeof(float))

__global__ void __launch_bounds__(256)
attn_fused(const float *__restrict__ qkv, float *__restrict__ y, int T, int C, int nh,
           float scale) {
  extern __shared__ float sm[];
  float *qsT = sm;                // qsT[d * LDS + r]: the query tile, transposed
  float *kv = sm + 64 * LDS;      // ksT[d * LDS + c], later vs[c * LDS + d]
  float *ssT = sm + 2 * 64 * LDS; // ssT[c * LDS + r]: masked, ReLU'd scores, transposed
  const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;
  const int qtile = gridDim.x - 1 - blockIdx.x;  // the longest rows first
  const int z = blockIdx.y, b = z / nh, h = z % nh;
  const int i0 = qtile * QT;
  const size_t ld = (size_t)3 * C;
  const float *qb = qkv + (size_t)b * T * ld + (size_t)h * HS;
  const float *kb = qb + C, *vb = qb + 2 * (size_t)C;
  for (int idx = tid; idx < QT * HS; idx += 256) {
    int r = idx / HS, d = idx % HS, i = i0 + r;
    qsT[d * LDS + r] = i < T ? qb[(size_t)i * ld + d] : 0.0f;
  }
  float yacc[4][4] = {};
  const int jend = min(T, i0 + QT);  // keys after the tile's last query are all masked
  for (int j0 = 0; j0 < jend; j0 += KT) {
    __syncthreads();  // the previous step is done with kv and ssT; qsT is complete
    for (int idx = tid; idx < KT * HS; idx += 256) {
      int c = idx / HS, d = idx % HS, j = j0 + c;
      kv[d * LDS + c] = j < T ? kb[(size_t)j * ld + d] : 0.0f;
    }
    __syncthreads();
    float s[4][4] = {};
#pragma unroll 8
    for (int d = 0; d < HS; d++) {
      float a[4], bb[4];
#pragma unroll
      for (int q = 0; q < 4; q++) {
        a[q] = qsT[d * LDS + ty * 4 + q];
        bb[q] = kv[d * LDS + tx * 4 + q];
      }
#pragma unroll
      for (int p = 0; p < 4; p++)
#pragma unroll
        for (int q = 0; q < 4; q++) s[p][q] += a[p] * bb[q];
    }
#pragma unroll
    for (int p = 0; p < 4; p++)
#pragma unroll
      for (int q = 0; q < 4; q++) {
        int i = i0 + ty * 4 + p, j = j0 + tx * 4 + q;
        ssT[(tx * 4 + q) * LDS + ty * 4 + p] = j <= i ? fmaxf(s[p][q] * scale, 0.0f) : 0.0f;
      }
    __syncthreads();  // scores complete; nobody reads the key tile any more
    for (int idx = tid; idx < KT * HS; idx += 256) {
      int c = idx / HS, d = idx % HS, j = j0 + c;
      kv[c * LDS + d] = j < T ? vb[(size_t)j * ld + d] : 0.0f;
    }
    __syncthreads();
#pragma unroll 8
    for (int c = 0; c < KT; c++) {
      float a[4], bb[4];
#pragma unroll
      for (int q = 0; q < 4; q++) {
        a[q] = ssT[c * LDS + ty * 4 + q];
        bb[q] = kv[c * LDS + tx * 4 + q];
      }
#pragma unroll
      for (int p = 0; p < 4; p++)
#pragma unroll
        for (int q = 0; q < 4; q++) yacc[p][q] += a[p] * bb[q];
    }
  }
#pragma unroll
  for (int p = 0; p < 4; p++) {
    int i = i0 + ty * 4 + p;
    if (i >= T) continue;
    float *row = y + ((size_t)b * T + i) * C + (size_t)h * HS + tx * 4;
#pragma unroll
    for (int q = 0; q < 4; q++) row[q] = yacc[p][q];
  }
}

// Any head size: one thread per output, the scores recomputed on the fly.
__global__ void attn_plain(const float *__restrict__ qkv, float *__restrict__ y, int B, int T,
                           int C, int nh, int hs, float scale) {
  size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (size_t)B * T * C) return;
  int col = (int)(idx % C), i = (int)((idx / C) % T), b = (int)(idx / ((size_t)C * T));
  int h = col / hs, d = col % hs;
  const size_t ld = (size_t)3 * C;
  const float *qb = qkv + (size_t)b * T * ld + (size_t)h * hs;
  const float *q = qb + (size_t)i * ld;
  float acc = 0.0f;
  for (int j = 0; j <= i; j++) {
    const float *k = qb + C + (size_t)j * ld;
    float s = 0.0f;
    for (int e = 0; e < hs; e++) s += q[e] * k[e];
    acc += fmaxf(s * scale, 0.0f) * qb[2 * (size_t)C + (size_t)j * ld + d];
  }
  y[idx] = acc;
}

extern "C" void relu_self_attention(const float *x, const float *W_attn, const float *b_attn,
                                    float *y, int batch, int seq_len, int n_embd, int n_head) {
  const int B = batch, T = seq_len, C = n_embd, nh = n_head, hs = C / nh;
  static float *qkv_buf = nullptr;
  static size_t qkv_cap = 0;
  static bool smem_set = false;
  float *qkv = grow(&qkv_buf, &qkv_cap, (size_t)B * T * 3 * C);
  const float scale = (float)(1.0 / sqrt((double)hs));
  linear(x, W_attn, b_attn, qkv, B * T, C, 3 * C, 0);
  if (hs == HS) {
    if (!smem_set) {
      cudaFuncSetAttribute(attn_fused, cudaFuncAttributeMaxDynamicSharedMemorySize, FUSED_SMEM);
      smem_set = true;
    }
    attn_fused<<<dim3((T + QT - 1) / QT, B * nh), 256, FUSED_SMEM>>>(qkv, y, T, C, nh, scale);
  } else {
    size_t n = (size_t)B * T * C;
    attn_plain<<<(unsigned)((n + 255) / 256), 256>>>(qkv, y, B, T, C, nh, hs, scale);
  }
}
