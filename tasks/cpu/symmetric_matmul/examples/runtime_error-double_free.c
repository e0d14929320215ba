/* A @ B for symmetric A and B, blocked: a 64-row panel of A is copied into
 * a scratch buffer, multiplied with B in i-k-j order, and the scratch buffer
 * is released after each panel. */
#include <stdlib.h>
#include <string.h>

#define PANEL 64

void symmetric_matmul(const float *A, const float *B, float *C, int N) {
  float *panel = malloc((size_t)PANEL * N * sizeof *panel);
  for (int i0 = 0; i0 < N; i0 += PANEL) {
    int rows = i0 + PANEL < N ? PANEL : N - i0;
    memcpy(panel, A + (long)i0 * N, (size_t)rows * N * sizeof *panel);
    for (int r = 0; r < rows; r++) {
      float *c = C + (long)(i0 + r) * N;
      for (int j = 0; j < N; j++)
        c[j] = 0.0f;
      for (int k = 0; k < N; k++) {
        float a = panel[(long)r * N + k];
        for (int j = 0; j < N; j++)
          c[j] += a * B[(long)k * N + j];
      }
    }
    free(panel);
  }
  free(panel);
}
