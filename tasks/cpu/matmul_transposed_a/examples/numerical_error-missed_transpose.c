/* C = A^T @ B: a row of A times B, accumulated in i-k-j order so the inner
 * loop over a row of B vectorizes. */
void matmul_transposed_a(const float *A, const float *B, float *C, int M, int K,
                         int N) {
  for (int i = 0; i < M; i++) {
    float *c = C + (long)i * N;
    for (int j = 0; j < N; j++)
      c[j] = 0.0f;
    for (int k = 0; k < K; k++) {
      float a = A[(long)i * K + k];
      const float *b = B + (long)k * N;
      for (int j = 0; j < N; j++)
        c[j] += a * b[j];
    }
  }
}
