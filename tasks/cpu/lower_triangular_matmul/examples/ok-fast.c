/* tril(A @ B) for lower-triangular A and B. A[i][k] is zero for k > i and
 * B[k][j] is zero for j > k, so C[i][j] = sum_{k=j..i} A[i][k] * B[k][j] and
 * everything above the diagonal is zero. i-k-j order: for each nonzero
 * A[i][k], add it times the nonzero head of row k of B to row i of C. */
#include <stddef.h>

void lower_triangular_matmul(const float *restrict A, const float *restrict B,
                             float *restrict C, int N) {
  for (int i = 0; i < N; i++) {
    float *c = C + (size_t)i * N;
    for (int j = 0; j < N; j++)
      c[j] = 0.0f;
    for (int k = 0; k <= i; k++) {
      float a = A[(size_t)i * N + k];
      const float *b = B + (size_t)k * N;
      for (int j = 0; j <= k; j++)
        c[j] += a * b[j];
    }
  }
}
