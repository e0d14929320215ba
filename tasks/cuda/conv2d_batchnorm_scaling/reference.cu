// Reference for conv2d_batchnorm_scaling: the convolution lowered as PyTorch's non-cuDNN path does it,
// an im2col kernel and one cuBLAS SGEMM per image (strided-batched, plain
// float32, TF32 off); then one elementwise kernel for the bias, a
// per-channel batch-statistics kernel (sums in double, biased variance) and one
// elementwise kernel for the normalization and the scaling.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>

// Batch statistics per channel of y (N, C, P): one block per channel, sums in
// double; mean and 1/sqrt(biased variance + eps), as BatchNorm in training mode.
#define ST 512
__global__ void __launch_bounds__(ST)
channel_stats(const float *__restrict__ y, float *mean, float *invstd, int N, int C, int P,
              float eps) {
  __shared__ double rs[ST], rss[ST];
  const int c = blockIdx.x, tid = threadIdx.x;
  double s = 0.0, ss = 0.0;
  for (int n = 0; n < N; n++) {
    const float *row = y + ((size_t)n * C + c) * P;
    for (int p = tid; p < P; p += ST) {
      double v = row[p];
      s += v;
      ss += v * v;
    }
  }
  rs[tid] = s;
  rss[tid] = ss;
  __syncthreads();
  for (int h = ST / 2; h > 0; h /= 2) {
    if (tid < h) {
      rs[tid] += rs[tid + h];
      rss[tid] += rss[tid + h];
    }
    __syncthreads();
  }
  if (tid == 0) {
    double cnt = (double)N * P;
    double m = rs[0] / cnt;
    double var = rss[0] / cnt - m * m;
    if (var < 0.0) var = 0.0;
    mean[c] = (float)m;
    invstd[c] = (float)(1.0 / sqrt(var + (double)eps));
  }
}

// y = (y - mean[c]) * invstd[c] * scale, y (N, C, P).
__global__ void normalize(float *y, const float *__restrict__ mean, const float *__restrict__ invstd,
                          int N, int C, int P, float scale) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)N * C * P) return;
  int c = (int)((i / P) % C);
  y[i] = (y[i] - mean[c]) * invstd[c] * scale;
}

// col (N, K, P): col[n][(ci * KS + kh) * KS + kw][oh * OW + ow] = x[n][ci][oh + kh][ow + kw].
__global__ void im2col(const float *__restrict__ x, float *__restrict__ col, int N, int Cin, int H,
                       int W, int KS, int OH, int OW) {
  const int K = Cin * KS * KS, P = OH * OW;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)N * K * P) return;
  int p = (int)(i % P), k = (int)((i / P) % K), n = (int)(i / ((size_t)P * K));
  int kw = k % KS, kh = (k / KS) % KS, ci = k / (KS * KS), oh = p / OW, ow = p % OW;
  col[i] = x[(((size_t)n * Cin + ci) * H + oh + kh) * W + ow + kw];
}

__global__ void bias_act(float *y, const float *__restrict__ bias, int N, int C, int P) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)N * C * P) return;
  float v = y[i] + bias[(i / P) % C];
  y[i] = v;
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

extern "C" void conv2d_batchnorm_scaling(const float *x, const float *weight, const float *bias, float *y,
    int batch, int in_channels, int out_channels, int height, int width, int kernel_size, float eps, float scaling_factor) {
  const int N = batch, Cin = in_channels, Cout = out_channels, H = height, W = width,
            KS = kernel_size, OH = H - KS + 1, OW = W - KS + 1, P = OH * OW;
  const int K = Cin * KS * KS;
  const size_t total = (size_t)N * Cout * P;
  static float *col_buf = nullptr;
  static size_t col_cap = 0;
  float *col = grow(&col_buf, &col_cap, (size_t)N * K * P);
  static float *st_buf = nullptr;
  static size_t st_cap = 0;
  float *mean = grow(&st_buf, &st_cap, 2 * (size_t)Cout), *invstd = mean + Cout;
  im2col<<<(unsigned)(((size_t)N * K * P + 255) / 256), 256>>>(x, col, N, Cin, H, W, KS, OH, OW);
  const float one = 1.0f, zero = 0.0f;
  // Per image, column-major y_n (P x Cout) = col_n (P x K) * weight^T (K x Cout).
  cublasSgemmStridedBatched(handle(), CUBLAS_OP_N, CUBLAS_OP_N, P, Cout, K, &one, col, P,
                            (long long)K * P, weight, K, 0, &zero, y, P, (long long)Cout * P, N);
  bias_act<<<(unsigned)((total + 255) / 256), 256>>>(y, bias, N, Cout, P);
  channel_stats<<<Cout, ST>>>(y, mean, invstd, N, Cout, P, eps);
  normalize<<<(unsigned)((total + 255) / 256), 256>>>(y, mean, invstd, N, Cout, P, scaling_factor);
}
