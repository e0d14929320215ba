/* A @ B for symmetric A and B. Transpose B in place first (it is symmetric,
 * so this is a no-op on the values but makes the data layout explicit),
 * then take row-by-row dot products. */
void symmetric_matmul(const float *A, const float *B, float *C, int N) {
  for (int i = 0; i < N; i++)
    for (int j = i + 1; j < N; j++) {
      float t = B[(long)i * N + j];
      B[(long)i * N + j] = B[(long)j * N + i];
      B[(long)j * N + i] = t;
    }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      float s = 0.0f;
      for (int k = 0; k < N; k++)
        s += A[(long)i * N + k] * B[(long)j * N + k];
      C[(long)i * N + j] = s;
    }
}
