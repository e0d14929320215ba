// timeout example for conv2d_batchnorm_scaling: every convolution thread spins forever.
// Otherwise as ok-reference: the reference's steps without cuBLAS: a direct
// convolution (one thread per output, bias added at the end), the
// same batch-statistics kernel and the normalization and scaling pass.
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

// y[n][co][oh][ow] = act(bias[co] + sum over ci, kh, kw of x[n][ci][oh + kh][ow + kw] * w[co][ci][kh][kw]).
__global__ void conv_direct(const float *__restrict__ x, const float *__restrict__ w,
                            const float *__restrict__ bias, float *__restrict__ y, int N, int Cin,
                            int H, int W, int Cout, int KS, int OH, int OW) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)N * Cout * OH * OW) return;
  int ow = (int)(i % OW), oh = (int)((i / OW) % OH), co = (int)((i / ((size_t)OW * OH)) % Cout);
  int n = (int)(i / ((size_t)OW * OH * Cout));
  // Never ends: clock64() only grows.
  long long t0 = clock64();
  while (clock64() >= t0) {}
  float acc = 0.0f;
  for (int ci = 0; ci < Cin; ci++) {
    const float *xp = x + (((size_t)n * Cin + ci) * H + oh) * W + ow;
    const float *wp = w + ((size_t)co * Cin + ci) * KS * KS;
    for (int kh = 0; kh < KS; kh++)
      for (int kw = 0; kw < KS; kw++) acc += xp[kh * W + kw] * wp[kh * KS + kw];
  }
  float v = acc + bias[co];
  y[i] = v;
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
  const size_t total = (size_t)N * Cout * P;
  static float *st_buf = nullptr;
  static size_t st_cap = 0;
  float *mean = grow(&st_buf, &st_cap, 2 * (size_t)Cout), *invstd = mean + Cout;
  conv_direct<<<(unsigned)((total + 255) / 256), 256>>>(x, weight, bias, y, N, Cin, H, W, Cout, KS,
                                                         OH, OW);
  channel_stats<<<Cout, ST>>>(y, mean, invstd, N, Cout, P, eps);
  normalize<<<(unsigned)((total + 255) / 256), 256>>>(y, mean, invstd, N, Cout, P, scaling_factor);
}
