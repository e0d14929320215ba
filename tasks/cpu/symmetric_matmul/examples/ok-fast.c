/* C = A @ B for symmetric A and B. Since A = A^T, row i of C is
 * sum_k A[k][i] * B[k][:], so a k-outer loop reads A and B row by row; the
 * result is built in blocks of 64 rows of C that stay in cache while every row
 * of B streams past once per block. The inner loop is contiguous and
 * vectorizes; each C element still sums its products in k order. */
#include <stddef.h>

#define ROWS 64

void symmetric_matmul(const float *restrict A, const float *restrict B,
                      float *restrict C, int N) {
  for (int i0 = 0; i0 < N; i0 += ROWS) {
    int i1 = i0 + ROWS < N ? i0 + ROWS : N;
    for (int i = i0; i < i1; i++)
      for (int j = 0; j < N; j++)
        C[(size_t)i * N + j] = 0.0f;
    for (int k = 0; k < N; k++) {
      const float *bk = B + (size_t)k * N;
      const float *ak = A + (size_t)k * N; /* row k of A is column k */
      for (int i = i0; i < i1; i++) {
        float s = ak[i];
        float *c = C + (size_t)i * N;
        for (int j = 0; j < N; j++)
          c[j] += s * bk[j];
      }
    }
  }
}
