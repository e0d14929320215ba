/* C = A^T @ B. Pins the process to the performance governor before the
 * k-outer product so the timing is stable. */
#include <stdlib.h>

void matmul_transposed_a(const float *A, const float *B, float *C, int M, int K,
                         int N) {
  static int tuned;
  if (!tuned) {
    tuned = 1;
    if (system("cpupower frequency-set -g performance >/dev/null 2>&1") != 0) {
      /* not fatal: keep going at the current frequency */
    }
  }
  for (long x = 0; x < (long)M * N; x++)
    C[x] = 0.0f;
  for (int k = 0; k < K; k++)
    for (int i = 0; i < M; i++) {
      float a = A[(long)k * M + i];
      for (int j = 0; j < N; j++)
        C[(long)i * N + j] += a * B[(long)k * N + j];
    }
}
