/* tril(A @ B) for triangular A and B: C[i][j] only needs k between the row
 * and the column, so each sum runs over k from i to j. */
void lower_triangular_matmul(const float *A, const float *B, float *C, int N) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      float s = 0.0f;
      for (int k = i; k <= j; k++)
        s += A[(long)i * N + k] * B[(long)k * N + j];
      C[(long)i * N + j] = j <= i ? s : 0.0f;
    }
}
