/* Reference for matmul_transposed_both (KernelBench level 1,
 * 18_Matmul_with_transposed_both.py): C = torch.matmul(A.T, B.T) with A of
 * shape (K, M), B of shape (N, K) and C of shape (M, N):
 * C[i][j] = sum_k A[k][i] * B[j][k]. */
void matmul_transposed_both(const float *A, const float *B, float *C, int M,
                            int K, int N) {
  for (int i = 0; i < M; i++) {
    for (int j = 0; j < N; j++) {
      float sum = 0.0f;
      for (int k = 0; k < K; k++)
        sum += A[(long)k * M + i] * B[(long)j * K + k];
      C[(long)i * N + j] = sum;
    }
  }
}
