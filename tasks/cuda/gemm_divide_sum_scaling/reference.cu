// Reference for gemm_divide_sum_scaling, the four steps PyTorch runs: cuBLAS SGEMM for
// x @ W^T into a scratch matrix, an elementwise division by 2, a row-sum kernel (one block
// per row, tree reduction) and an elementwise scaling of the sums.
#include <cublas_v2.h>
#include <cuda_runtime.h>

__global__ void divide2(float *t, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) t[i] = t[i] / 2.0f;
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

__global__ void scale(float *out, int n, float f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = out[i] * f;
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

// The (batch, hidden_size) product, allocated once and grown when a call needs more.
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
  const size_t n = (size_t)Mr * Nc;
  float *t = scratch(n);
  if (!t) return;  // out keeps its poison: the check reports it
  const float one = 1.0f, zero = 0.0f;
  // t^T (column-major Nc x Mr) = W x^T: W is stored (Nc, Kd) row-major.
  cublasSgemm(handle(), CUBLAS_OP_T, CUBLAS_OP_N, Nc, Mr, Kd, &one, W, Kd, x, Kd, &zero, t, Nc);
  divide2<<<(unsigned)((n + 255) / 256), 256>>>(t, n);
  row_sum<<<Mr, 256>>>(t, out, Nc);
  scale<<<(Mr + 255) / 256, 256>>>(out, Mr, scaling_factor);
}
