/* Reference for matmul_transposed_b (KernelBench level 1,
 * 17_Matmul_with_transposed_B.py): C = torch.matmul(A, B.T) with A of shape
 * (M, K), B of shape (N, K) and C of shape (M, N):
 * C[i][j] = sum_k A[i][k] * B[j][k]. */
void matmul_transposed_b(const float *A, const float *B, float *C, int M, int K,
                         int N) {
  for (int i = 0; i < M; i++) {
    for (int j = 0; j < N; j++) {
      float sum = 0.0f;
      for (int k = 0; k < K; k++)
        sum += A[(long)i * K + k] * B[(long)j * K + k];
      C[(long)i * N + j] = sum;
    }
  }
}
