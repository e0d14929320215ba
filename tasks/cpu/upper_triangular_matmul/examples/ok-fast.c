/* triu(A @ B) for upper-triangular A and B. A[i][k] is zero for k < i and
 * B[k][j] is zero for j < k, so C[i][j] = sum_{k=i..j} A[i][k] * B[k][j]:
 * about a sixth of the full product's work. i-k-j order keeps the inner loop
 * contiguous over a row of B and of C. */
#include <stddef.h>

void upper_triangular_matmul(const float *restrict A, const float *restrict B,
                             float *restrict C, int N) {
  for (int i = 0; i < N; i++) {
    float *c = C + (size_t)i * N;
    for (int j = 0; j < N; j++)
      c[j] = 0.0f;
    for (int k = i; k < N; k++) {
      float a = A[(size_t)i * N + k];
      const float *b = B + (size_t)k * N;
      for (int j = k; j < N; j++)
        c[j] += a * b[j];
    }
  }
}
