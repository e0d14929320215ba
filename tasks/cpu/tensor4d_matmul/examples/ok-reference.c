/* Straightforward version: the loop nest exactly as the operator is defined. */
void tensor4d_matmul(const float *A, const float *B, float *C, int b, int i,
                     int j, int l, int k) {
  for (int ib = 0; ib < b; ib++) {
    for (int ii = 0; ii < i; ii++) {
      for (int ij = 0; ij < j; ij++) {
        long row = ((long)ib * i + ii) * j + ij;
        const float *a = A + row * l;
        float *c = C + row * k;
        for (int ik = 0; ik < k; ik++) {
          float sum = 0.0f;
          for (int il = 0; il < l; il++)
            sum += a[il] * B[(long)il * k + ik];
          c[ik] = sum;
        }
      }
    }
  }
}
