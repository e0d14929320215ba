/* A @ B for symmetric A and B. Matrix products of symmetric matrices can be
 * taken in either order, so compute B @ A in i-k-j order, which reads A
 * along its rows. */
void symmetric_matmul(const float *A, const float *B, float *C, int N) {
  for (int i = 0; i < N; i++) {
    float *c = C + (long)i * N;
    for (int j = 0; j < N; j++)
      c[j] = 0.0f;
    for (int k = 0; k < N; k++) {
      float b = B[(long)i * N + k];
      const float *a = A + (long)k * N;
      for (int j = 0; j < N; j++)
        c[j] += b * a[j];
    }
  }
}
