/* tril(A @ B) for lower-triangular A and B: a while loop over the columns
 * that skips the zero part of row k of B. */
void lower_triangular_matmul(const float *A, const float *B, float *C, int N) {
  for (int i = 0; i < N; i++) {
    float *c = C + (long)i * N;
    for (int j = 0; j < N; j++)
      c[j] = 0.0f;
    for (int k = 0; k <= i; k++) {
      float a = A[(long)i * N + k];
      const float *b = B + (long)k * N;
      int j = 0;
      while (j < N) {
        if (j > k)
          continue; /* B[k][j] is zero above the diagonal */
        c[j] += a * b[j];
        j++;
      }
    }
  }
}
