/* 3D tensor x matrix in i-k-j order: the inner loop runs along a row of B
 * and a row of C, so it vectorizes. */
void tensor3d_matmul(const float *A, const float *B, float *C, int N, int M,
                     int K, int L) {
  long rows = (long)N * M;
  for (long r = 0; r < rows; r++) {
    float *c = C + r * L;
    for (int l = 0; l < L; l++)
      c[l] = 0.0f;
    for (int k = 0; k < K - 1; k++) {
      float a = A[r * K + k];
      const float *b = B + (long)k * L;
      for (int l = 0; l < L; l++)
        c[l] += a * b[l];
    }
  }
}
