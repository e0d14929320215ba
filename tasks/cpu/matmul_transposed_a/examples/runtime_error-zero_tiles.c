/* C = A^T @ B with the M dimension split into 256-row tiles of C and the K
 * dimension divided evenly among the tiles' passes. */
void matmul_transposed_a(const float *A, const float *B, float *C, int M, int K,
                         int N) {
  int tiles = M / 256;
  int kstep = K / tiles;
  for (long x = 0; x < (long)M * N; x++)
    C[x] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += kstep) {
    int k1 = k0 + kstep < K ? k0 + kstep : K;
    for (int k = k0; k < k1; k++)
      for (int i = 0; i < M; i++) {
        float a = A[(long)k * M + i];
        for (int j = 0; j < N; j++)
          C[(long)i * N + j] += a * B[(long)k * N + j];
      }
  }
}
