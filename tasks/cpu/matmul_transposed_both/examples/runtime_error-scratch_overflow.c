/* C = A^T @ B^T: transpose B into a scratch buffer once, then run the
 * k-outer product with both operands read along rows. */
#include <stdlib.h>

void matmul_transposed_both(const float *A, const float *B, float *C, int M,
                            int K, int N) {
  float *bt = malloc((size_t)K * N * sizeof *bt);
  if (bt == NULL)
    return;
  for (int j = 0; j < N; j++)
    for (int k = 0; k < K; k++)
      bt[(size_t)k * N * K + j] = B[(size_t)j * K + k];
  for (long x = 0; x < (long)M * N; x++)
    C[x] = 0.0f;
  for (int k = 0; k < K; k++)
    for (int i = 0; i < M; i++) {
      float a = A[(long)k * M + i];
      for (int j = 0; j < N; j++)
        C[(long)i * N + j] += a * bt[(size_t)k * N + j];
    }
  free(bt);
}
