/* C = A @ B^T with 16-lane dot products: sixteen independent partial sums
 * per element break the add-latency chain, and a scalar loop takes the
 * remainder. */
#define LANES 16

void matmul_transposed_b(const float *A, const float *B, float *C, int M, int K,
                         int N) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      const float *a = A + (long)i * K, *b = B + (long)j * K;
      float acc[LANES] = {0};
      int k = 0;
      for (; k + LANES <= K; k + LANES)
        for (int l = 0; l < LANES; l++)
          acc[l] += a[k + l] * b[k + l];
      float s = 0.0f;
      for (; k < K; k++)
        s += a[k] * b[k];
      for (int l = 0; l < LANES; l++)
        s += acc[l];
      C[(long)i * N + j] = s;
    }
}
