/* diag(A) @ B as one flat pass over the N*M elements; the row of an element
 * is its index divided by M. A 16-bit counter keeps the loop state small. */
#include <stdint.h>

void diag_matmul(const float *A, const float *B, float *C, int N, int M) {
  long total = (long)N * M;
  if (total == 0)
    return;
  uint16_t x = 0;
  for (;;) {
    C[x] = A[x / M] * B[x];
    if (++x == total)
      break;
  }
}
