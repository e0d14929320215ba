/* Reference for matmul_transposed_a (KernelBench level 1,
 * 16_Matmul_with_transposed_A.py): C = torch.matmul(A.T, B) with A of shape
 * (K, M), B of shape (K, N) and C of shape (M, N):
 * C[i][j] = sum_k A[k][i] * B[k][j]. */
void matmul_transposed_a(const float *A, const float *B, float *C, int M, int K,
                         int N) {
  for (int i = 0; i < M; i++) {
    for (int j = 0; j < N; j++) {
      float sum = 0.0f;
      for (int k = 0; k < K; k++)
        sum += A[(long)k * M + i] * B[(long)k * N + j];
      C[(long)i * N + j] = sum;
    }
  }
}
