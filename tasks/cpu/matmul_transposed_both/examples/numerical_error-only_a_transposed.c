/* C = A^T @ B^T, k-outer: row k of A holds column k of A^T, and row k of B
 * the matching row of the right operand, so every access is row-major. */
void matmul_transposed_both(const float *A, const float *B, float *C, int M,
                            int K, int N) {
  for (long x = 0; x < (long)M * N; x++)
    C[x] = 0.0f;
  for (int k = 0; k < K; k++) {
    const float *a = A + (long)k * M;
    const float *b = B + (long)k * N;
    for (int i = 0; i < M; i++) {
      float s = a[i];
      float *c = C + (long)i * N;
      for (int j = 0; j < N; j++)
        c[j] += s * b[j];
    }
  }
}
