/* Straightforward version: the loop nest exactly as the operator is defined. */
void matmul_transposed_both(const float *A, const float *B, float *C, int M,
                            int K, int N) {
  for (int i = 0; i < M; i++) {
    for (int j = 0; j < N; j++) {
      float sum = 0.0f;
      for (int k = 0; k < K; k++)
        sum += A[(long)k * M + i] * B[(long)j * K + k];
      C[(long)i * N + j] = sum;
    }
  }
}
