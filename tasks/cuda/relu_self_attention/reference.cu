// Reference for relu_self_attention, as PyTorch runs the module: a cuBLAS SGEMM
// (plain float32, TF32 off) for the qkv projection and a kernel for its bias;
// per batch item a strided-batched SGEMM over the heads for q k^T (scaled by
// 1/sqrt(hs) through alpha) into a materialized (batch, heads, T, T) score
// tensor; one kernel for the causal mask and ReLU; a strided-batched SGEMM for
// att @ v that writes each head's columns of y directly.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>

__global__ void add_bias(float *y, const float *__restrict__ b, int M, int N) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)M * N) return;
  y[i] += b[i % N];
}

// att (Z, T, T): zero above the diagonal, ReLU elsewhere.
__global__ void mask_relu(float *att, int Z, int T) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)Z * T * T) return;
  int col = (int)(i % T), row = (int)((i / T) % T);
  att[i] = col <= row ? fmaxf(att[i], 0.0f) : 0.0f;
}

static cublasHandle_t handle() {
  static cublasHandle_t h = nullptr;
  if (!h) {
    cublasCreate(&h);
    cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);  // plain float32, no TF32
    cublasSetStream(h, 0);
  }
  return h;
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

extern "C" void relu_self_attention(const float *x, const float *W_attn, const float *b_attn,
                                    float *y, int batch, int seq_len, int n_embd, int n_head) {
  const int B = batch, T = seq_len, C = n_embd, nh = n_head, hs = C / nh;
  static float *qkv_buf = nullptr, *att_buf = nullptr;
  static size_t qkv_cap = 0, att_cap = 0;
  float *qkv = grow(&qkv_buf, &qkv_cap, (size_t)B * T * 3 * C);
  float *att = grow(&att_buf, &att_cap, (size_t)B * nh * T * T);
  cublasHandle_t h = handle();
  const float one = 1.0f, zero = 0.0f, scale = (float)(1.0 / sqrt((double)hs));
  const int M = B * T, N3 = 3 * C;
  // qkv^T (column-major 3C x M) = W_attn x^T.
  cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, N3, M, C, &one, W_attn, C, x, C, &zero, qkv, N3);
  add_bias<<<(unsigned)(((size_t)M * N3 + 255) / 256), 256>>>(qkv, b_attn, M, N3);
  for (int b = 0; b < B; b++) {
    const float *q = qkv + (size_t)b * T * N3, *k = q + C;
    float *ab = att + (size_t)b * nh * T * T;
    // Column-major att^T (T x T) per head = K Q^T: element (j, i) = k_j . q_i.
    cublasSgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, &scale, k, N3, hs, q, N3,
                              hs, &zero, ab, T, (long long)T * T, nh);
  }
  mask_relu<<<(unsigned)(((size_t)B * nh * T * T + 255) / 256), 256>>>(att, B * nh, T);
  for (int b = 0; b < B; b++) {
    const float *v = qkv + (size_t)b * T * N3 + 2 * C;
    const float *ab = att + (size_t)b * nh * T * T;
    // Column-major y_h^T (hs x T, ld C) = V^T att^T: element (d, i) = sum_j v[j][d] att[i][j].
    cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, &one, v, N3, hs, ab, T,
                              (long long)T * T, &zero, y + (size_t)b * T * C, C, hs, nh);
  }
}
