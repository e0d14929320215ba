/* tril(A @ B) for lower-triangular A and B, with sizes as size_t so the
 * index arithmetic cannot overflow for large N. */
#include <stddef.h>

void lower_triangular_matmul(const float *A, const float *B, float *C, int N);

void lower_triangular_matmul(const float *A, const float *B, float *C,
                             size_t N) {
  for (size_t i = 0; i < N; i++)
    for (size_t j = 0; j < N; j++) {
      float s = 0.0f;
      if (j <= i)
        for (size_t k = j; k <= i; k++)
          s += A[i * N + k] * B[k * N + j];
      C[i * N + j] = s;
    }
}
