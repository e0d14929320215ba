/* einsum("bijl,lk->bijk"): every output element is a dot product of a row of
 * A with a column of B; B is read along its contiguous dimension so both
 * operands stream through the cache. */
void tensor4d_matmul(const float *A, const float *B, float *C, int b, int i,
                     int j, int l, int k) {
  long rows = (long)b * i * j;
  for (long r = 0; r < rows; r++) {
    const float *a = A + r * l;
    for (int x = 0; x < k; x++) {
      const float *bx = B + (long)x * l;
      float sum = 0.0f;
      for (int p = 0; p < l; p++)
        sum += a[p] * bx[p];
      C[r * k + x] = sum;
    }
  }
}
