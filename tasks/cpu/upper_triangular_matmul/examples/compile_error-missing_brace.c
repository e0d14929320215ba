/* triu(A @ B) for upper-triangular A and B: only k in [i, j] contributes to
 * C[i][j], and everything below the diagonal is zero. */
void upper_triangular_matmul(const float *A, const float *B, float *C, int N) {
  for (int i = 0; i < N; i++) {
    for (int j = 0; j < N; j++) {
      if (j < i) {
        C[(long)i * N + j] = 0.0f;
        continue;
      }
      float s = 0.0f;
      for (int k = i; k <= j; k++) {
        s += A[(long)i * N + k] * B[(long)k * N + j];
      C[(long)i * N + j] = s;
    }
  }
}
