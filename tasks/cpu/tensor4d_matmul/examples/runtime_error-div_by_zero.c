/* einsum("bijl,lk->bijk"): rows of A times B, with the k dimension cut into
 * equal strips about 512 wide so a strip of B stays in L2; each strip is
 * processed for all rows before moving to the next. */
void tensor4d_matmul(const float *A, const float *B, float *C, int b, int i,
                     int j, int l, int k) {
  long rows = (long)b * i * j;
  int strips = k / 512;
  int width = k / strips;
  for (int k0 = 0; k0 < k; k0 += width) {
    int k1 = k0 + width < k ? k0 + width : k;
    for (long r = 0; r < rows; r++) {
      float *c = C + r * k;
      for (int x = k0; x < k1; x++)
        c[x] = 0.0f;
      for (int p = 0; p < l; p++) {
        float a = A[r * l + p];
        const float *bp = B + (long)p * k;
        for (int x = k0; x < k1; x++)
          c[x] += a * bp[x];
      }
    }
  }
}
