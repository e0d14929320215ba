/* triu(A @ B) for upper-triangular A and B. A[i][k] is zero for k < i and
 * B[k][j] is zero for k > j, so the sum runs over k from i to j. */
void upper_triangular_matmul(const float *A, const float *B, float *C, int N) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      float s = 0.0f;
      for (int k = i; k < j; k++)
        s += A[(long)i * N + k] * B[(long)k * N + j];
      C[(long)i * N + j] = s;
    }
}
