/* C = A^T @ B with AVX: for each k, broadcast A[k][i] and add it times row k
 * of B into row i of C, eight floats at a time. */
void matmul_transposed_a(const float *A, const float *B, float *C, int M, int K,
                         int N) {
  for (long x = 0; x < (long)M * N; x++)
    C[x] = 0.0f;
  for (int k = 0; k < K; k++)
    for (int i = 0; i < M; i++) {
      __m256 a = _mm256_set1_ps(A[(long)k * M + i]);
      float *c = C + (long)i * N;
      const float *b = B + (long)k * N;
      int j = 0;
      for (; j + 8 <= N; j += 8)
        _mm256_storeu_ps(c + j, _mm256_fmadd_ps(a, _mm256_loadu_ps(b + j),
                                                _mm256_loadu_ps(c + j)));
      for (; j < N; j++)
        c[j] += A[(long)k * M + i] * b[j];
    }
}
