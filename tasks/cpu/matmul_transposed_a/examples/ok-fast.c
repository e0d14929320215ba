/* C = A^T @ B with A (K x M) and B (K x N). Row k of A holds column k of A^T,
 * so a k-outer loop adds A[k][i] * B[k][:] into row i of C: every access is
 * row-major and the innermost loop vectorizes. C (M x N) stays in cache. */
#include <stddef.h>

void matmul_transposed_a(const float *restrict A, const float *restrict B,
                         float *restrict C, int M, int K, int N) {
  for (size_t x = 0; x < (size_t)M * N; x++)
    C[x] = 0.0f;
  for (int k = 0; k < K; k++) {
    const float *ak = A + (size_t)k * M;
    const float *bk = B + (size_t)k * N;
    for (int i = 0; i < M; i++) {
      float s = ak[i];
      float *c = C + (size_t)i * N;
      for (int j = 0; j < N; j++)
        c[j] += s * bk[j];
    }
  }
}
