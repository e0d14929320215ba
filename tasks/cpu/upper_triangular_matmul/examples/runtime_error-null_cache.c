/* triu(A @ B) for upper-triangular A and B. The nonzero part of each row of
 * A is packed once into a cached buffer (kept across calls, reallocated when
 * N grows) so the inner loops run over contiguous memory. */
#include <stdlib.h>

static float *packed;
static int packed_n;

void upper_triangular_matmul(const float *A, const float *B, float *C, int N) {
  if (packed != NULL && packed_n < N) {
    free(packed);
    packed = malloc((size_t)N * sizeof *packed);
    packed_n = N;
  }
  for (int i = 0; i < N; i++) {
    int len = N - i;
    for (int k = 0; k < len; k++)
      packed[k] = A[(long)i * N + i + k];
    float *c = C + (long)i * N;
    for (int j = 0; j < N; j++)
      c[j] = 0.0f;
    for (int k = 0; k < len; k++) {
      float a = packed[k];
      const float *b = B + (long)(i + k) * N;
      for (int j = i + k; j < N; j++)
        c[j] += a * b[j];
    }
  }
}
