/* einsum("bijl,lk->bijk") is a matrix product of the (b*i*j) x l matrix A
 * with the l x k matrix B. Computed in blocks of 4 output rows so each row of
 * B is loaded once for four rows of C; the innermost loop over k is
 * contiguous and vectorizes. */
#include <stddef.h>

void tensor4d_matmul(const float *restrict A, const float *restrict B,
                     float *restrict C, int b, int i, int j, int l, int k) {
  size_t rows = (size_t)b * i * j;
  size_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    float *c0 = C + r * k, *c1 = c0 + k, *c2 = c1 + k, *c3 = c2 + k;
    const float *a0 = A + r * l, *a1 = a0 + l, *a2 = a1 + l, *a3 = a2 + l;
    for (int x = 0; x < k; x++)
      c0[x] = c1[x] = c2[x] = c3[x] = 0.0f;
    for (int p = 0; p < l; p++) {
      const float *bp = B + (size_t)p * k;
      float s0 = a0[p], s1 = a1[p], s2 = a2[p], s3 = a3[p];
      for (int x = 0; x < k; x++) {
        float bv = bp[x];
        c0[x] += s0 * bv;
        c1[x] += s1 * bv;
        c2[x] += s2 * bv;
        c3[x] += s3 * bv;
      }
    }
  }
  for (; r < rows; r++) {
    float *c = C + r * k;
    const float *a = A + r * l;
    for (int x = 0; x < k; x++)
      c[x] = 0.0f;
    for (int p = 0; p < l; p++) {
      const float *bp = B + (size_t)p * k;
      for (int x = 0; x < k; x++)
        c[x] += a[p] * bp[x];
    }
  }
}
