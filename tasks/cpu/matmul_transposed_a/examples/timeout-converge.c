/* C = A^T @ B, refined: compute the product, then sweep again and fix any
 * element whose recomputed value changed, until a sweep changes nothing. */
void matmul_transposed_a(const float *A, const float *B, float *C, int M, int K,
                         int N) {
  int changed = 1;
  for (long x = 0; x < (long)M * N; x++)
    C[x] = 0.0f;
  while (changed) {
    changed = 0;
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        float s = 0.0f;
        for (int k = 0; k < K; k++)
          s += A[(long)k * M + i] * B[(long)k * N + j];
        if (s != C[(long)i * N + j])
          C[(long)i * N + j] = s;
          changed = 1;
      }
  }
}
