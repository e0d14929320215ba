/* Straightforward version: the loop nest exactly as the operator is defined. */
void symmetric_matmul(const float *A, const float *B, float *C, int N) {
  for (int i = 0; i < N; i++) {
    for (int j = 0; j < N; j++) {
      float sum = 0.0f;
      for (int k = 0; k < N; k++)
        sum += A[(long)i * N + k] * B[(long)k * N + j];
      C[(long)i * N + j] = sum;
    }
  }
}
