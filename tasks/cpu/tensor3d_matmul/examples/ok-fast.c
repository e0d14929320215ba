/* 3D tensor-matrix product as one (N*M) x K by K x L matrix product, in i-k-j
 * order: the innermost loop walks a row of B and a row of C contiguously, so
 * it vectorizes, and B (K x L) stays in cache across rows. Each C element still
 * accumulates its K products in k order. */
#include <stddef.h>

void tensor3d_matmul(const float *restrict A, const float *restrict B,
                     float *restrict C, int N, int M, int K, int L) {
  size_t rows = (size_t)N * M;
  for (size_t r = 0; r < rows; r++) {
    const float *a = A + r * K;
    float *c = C + r * L;
    for (int l = 0; l < L; l++)
      c[l] = 0.0f;
    for (int k = 0; k < K; k++) {
      float s = a[k];
      const float *b = B + (size_t)k * L;
      for (int l = 0; l < L; l++)
        c[l] += s * b[l];
    }
  }
}
