/* C = A^T @ B^T. Version 1: direct dot products. Version 2: through
 * (B @ A)^T, which reads both operands along their rows. */
void matmul_transposed_both(const float *A, const float *B, float *C, int M,
                            int K, int N) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float s = 0.0f;
      for (int k = 0; k < K; k++)
        s += A[(long)k * M + i] * B[(long)j * K + k];
      C[(long)i * N + j] = s;
    }
}

void matmul_transposed_both(const float *A, const float *B, float *C, int M,
                            int K, int N) {
  for (long x = 0; x < (long)M * N; x++)
    C[x] = 0.0f;
  for (int j = 0; j < N; j++)
    for (int k = 0; k < K; k++) {
      float b = B[(long)j * K + k];
      const float *a = A + (long)k * M;
      for (int i = 0; i < M; i++)
        C[(long)i * N + j] += b * a[i];
    }
}
