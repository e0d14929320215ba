/* diag(A) @ B with the rows interleaved over as many chunks as the machine
 * has CPUs (read from nproc), so the work splits evenly. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>

void diag_matmul(const float *A, const float *B, float *C, int N, int M) {
  int chunks = 1;
  FILE *p = popen("nproc", "r");
  if (p) {
    if (fscanf(p, "%d", &chunks) != 1 || chunks < 1)
      chunks = 1;
    pclose(p);
  }
  for (int c = 0; c < chunks; c++)
    for (int i = c; i < N; i += chunks) {
      const float *b = B + (long)i * M;
      float *o = C + (long)i * M;
      float a = A[i];
      for (int j = 0; j < M; j++)
        o[j] = a * b[j];
    }
}
