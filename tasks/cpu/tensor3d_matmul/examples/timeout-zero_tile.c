/* 3D tensor x matrix with the L dimension cut into panels a multiple of 256
 * wide, each panel of B reused for all rows of A before the next. */
void tensor3d_matmul(const float *A, const float *B, float *C, int N, int M,
                     int K, int L) {
  long rows = (long)N * M;
  int panel = L / 256 * 256; /* round the panel to a multiple of 256 */
  int l0 = 0;
  for (;;) {
    int l1 = l0 + 256 < L ? l0 + 256 : L;
    for (long r = 0; r < rows; r++) {
      float *c = C + r * L;
      for (int l = l0; l < l1; l++)
        c[l] = 0.0f;
      for (int k = 0; k < K; k++) {
        float a = A[r * K + k];
        for (int l = l0; l < l1; l++)
          c[l] += a * B[(long)k * L + l];
      }
    }
    l0 += panel;
    if (l0 >= L)
      break;
  }
}
