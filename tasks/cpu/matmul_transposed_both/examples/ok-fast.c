/* C = A^T @ B^T with A (K x M) and B (N x K). Transposes B once into a
 * scratch K x N buffer (B^T), then C = A^T @ B^T is computed k-outer:
 * C[i][:] += A[k][i] * BT[k][:], all row-major, the inner loop vectorized.
 * If the scratch buffer cannot be had, a direct (slower) loop is used. */
#include <stddef.h>
#include <stdlib.h>

void matmul_transposed_both(const float *restrict A, const float *restrict B,
                            float *restrict C, int M, int K, int N) {
  float *bt = malloc((size_t)K * N * sizeof *bt);
  if (bt == NULL) {
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        float s = 0.0f;
        for (int k = 0; k < K; k++)
          s += A[(size_t)k * M + i] * B[(size_t)j * K + k];
        C[(size_t)i * N + j] = s;
      }
    return;
  }
  /* Transpose in 32 x 32 tiles so both sides stay in cache. */
  for (int j0 = 0; j0 < N; j0 += 32)
    for (int k0 = 0; k0 < K; k0 += 32)
      for (int j = j0; j < j0 + 32 && j < N; j++)
        for (int k = k0; k < k0 + 32 && k < K; k++)
          bt[(size_t)k * N + j] = B[(size_t)j * K + k];
  for (size_t x = 0; x < (size_t)M * N; x++)
    C[x] = 0.0f;
  for (int k = 0; k < K; k++) {
    const float *ak = A + (size_t)k * M;
    const float *bk = bt + (size_t)k * N;
    for (int i = 0; i < M; i++) {
      float s = ak[i];
      float *c = C + (size_t)i * N;
      for (int j = 0; j < N; j++)
        c[j] += s * bk[j];
    }
  }
  free(bt);
}
