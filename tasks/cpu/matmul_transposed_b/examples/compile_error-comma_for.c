/* C = A @ B^T: each element is the dot product of row i of A and row j of
 * B, both contiguous. */
void matmul_transposed_b(const float *A, const float *B, float *C, int M, int K,
                         int N) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      const float *a = A + (long)i * K, *b = B + (long)j * K;
      float s = 0.0f;
      for (int k = 0, k < K, k++)
        s += a[k] * b[k];
      C[(long)i * N + j] = s;
    }
}
