// Reference for gemm_scale_batchnorm, the steps PyTorch runs: cuBLAS SGEMM for x @ W^T
// (what nn.Linear runs), one elementwise kernel for the bias and the scale, a statistics
// kernel (per column: the mean, then the biased variance around it, two passes over the
// column) and the elementwise normalization (BatchNorm's weight 1 and bias 0 leave it at
// (z - mean) / sqrt(var + eps)).
#include <cublas_v2.h>
#include <cuda_runtime.h>

__global__ void bias_scale(float *y, const float *__restrict__ b, const float *__restrict__ s,
                           int Mr, int Nc) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)Mr * Nc) return;
  int c = (int)(i % Nc);
  y[i] = (y[i] + b[c]) * s[c];
}

// Block 32 x 16: 32 consecutive columns (coalesced reads of each row), 16 rows at a time.
__global__ void col_stats(const float *__restrict__ y, float *__restrict__ mean,
                          float *__restrict__ invstd, int Mr, int Nc, float eps) {
  __shared__ float sh[16][33];
  __shared__ float mu[32];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int c = blockIdx.x * 32 + tx;
  float a = 0.0f;
  if (c < Nc)
    for (int r = ty; r < Mr; r += 16) a += y[(size_t)r * Nc + c];
  sh[ty][tx] = a;
  __syncthreads();
  if (ty == 0) {
    float s = 0.0f;
    for (int q = 0; q < 16; q++) s += sh[q][tx];
    mu[tx] = s / (float)Mr;
  }
  __syncthreads();
  const float m = mu[tx];
  a = 0.0f;
  if (c < Nc)
    for (int r = ty; r < Mr; r += 16) {
      float d = y[(size_t)r * Nc + c] - m;
      a += d * d;
    }
  sh[ty][tx] = a;
  __syncthreads();
  if (ty == 0 && c < Nc) {
    float s = 0.0f;
    for (int q = 0; q < 16; q++) s += sh[q][tx];
    float var = s / (float)Mr;  // biased, as BatchNorm normalizes in training mode
    mean[c] = m;
    invstd[c] = 1.0f / sqrtf(var + eps);
  }
}

__global__ void normalize(float *y, const float *__restrict__ mean,
                          const float *__restrict__ invstd, int Mr, int Nc) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)Mr * Nc) return;
  int c = (int)(i % Nc);
  y[i] = (y[i] - mean[c]) * invstd[c];
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

// Per-column mean and 1/sqrt(var + eps); allocated once, grown when a call needs more.
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
  float *mean = scratch(2 * (size_t)Nc);
  if (!mean) return;  // y keeps its poison: the check reports it
  float *invstd = mean + Nc;
  const float one = 1.0f, zero = 0.0f;
  // y^T (column-major Nc x Mr) = W x^T: W is stored (Nc, Kd) row-major.
  cublasSgemm(handle(), CUBLAS_OP_T, CUBLAS_OP_N, Nc, Mr, Kd, &one, W, Kd, x, Kd, &zero, y, Nc);
  const unsigned blocks = (unsigned)(((size_t)Mr * Nc + 255) / 256);
  bias_scale<<<blocks, 256>>>(y, b, scale, Mr, Nc);
  col_stats<<<(Nc + 31) / 32, dim3(32, 16)>>>(y, mean, invstd, Mr, Nc, eps);
  normalize<<<blocks, 256>>>(y, mean, invstd, Mr, Nc);
}
