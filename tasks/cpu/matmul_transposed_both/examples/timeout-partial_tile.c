/* C = A^T @ B^T: B is transposed into scratch 48 rows at a time (three
 * cache lines of floats per tile row), then the product runs k-outer over
 * the transposed copy with every access row-major. */
#include <stdlib.h>

#define TILE 48

void matmul_transposed_both(const float *A, const float *B, float *C, int M,
                            int K, int N) {
  float *bt = malloc((size_t)K * N * sizeof *bt);
  if (bt == NULL)
    return;
  int j0 = 0;
  while (j0 < N) {
    int j1 = j0 + TILE < N ? j0 + TILE : N;
    for (int k = 0; k < K; k++)
      for (int j = j0; j < j1; j++)
        bt[(size_t)k * N + j] = B[(size_t)j * K + k];
    if (j1 - j0 == TILE)
      j0 = j1; /* next full tile */
  }
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
