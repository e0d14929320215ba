/* 3D tensor x matrix: treat A as an (N*M) x K matrix and tile the L
 * dimension so a block of B stays in L1. */
void tensor3d_matmul(const float *A, const float *B, float *C, int N, int M,
                     int K, int L) {
  long rows = (long)N * M;
  for (long r = 0; r < rows; r++) {
    for (int l0 = 0; l0 < L; l0 += TILE_L) {
      int l1 = l0 + TILE_L < L ? l0 + TILE_L : L;
      for (int l = l0; l < l1; l++)
        C[r * L + l] = 0.0f;
      for (int k = 0; k < K; k++) {
        float a = A[r * K + k];
        for (int l = l0; l < l1; l++)
          C[r * L + l] += a * B[(long)k * L + l];
      }
    }
  }
}
