/* triu(A @ B) for upper-triangular A and B, computing only the upper
 * triangle: C[i][j] for j >= i, as a sum over k in [i, j]. The lower
 * triangle of the result is zero anyway. */
void upper_triangular_matmul(const float *A, const float *B, float *C, int N) {
  for (int i = 0; i < N; i++)
    for (int j = i; j < N; j++) {
      float s = 0.0f;
      for (int k = i; k <= j; k++)
        s += A[(long)i * N + k] * B[(long)k * N + j];
      C[(long)i * N + j] = s;
    }
}
