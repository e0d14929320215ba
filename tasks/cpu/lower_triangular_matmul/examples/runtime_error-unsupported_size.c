/* tril(A @ B) for lower-triangular A and B, with 256 x 256 register-blocked
 * tiles; the tiling needs N to be a multiple of the tile. */
#include <stdio.h>
#include <stdlib.h>

#define TILE 256

void lower_triangular_matmul(const float *A, const float *B, float *C, int N) {
  if (N % TILE != 0) {
    fprintf(stderr, "lower_triangular_matmul: N=%d is not a multiple of %d\n",
            N, TILE);
    abort();
  }
  for (int i0 = 0; i0 < N; i0 += TILE)
    for (int i = i0; i < i0 + TILE; i++) {
      float *c = C + (long)i * N;
      for (int j = 0; j < N; j++)
        c[j] = 0.0f;
      for (int k = 0; k <= i; k++) {
        float a = A[(long)i * N + k];
        for (int j = 0; j <= k; j++)
          c[j] += a * B[(long)k * N + j];
      }
    }
}
