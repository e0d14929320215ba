/* Reference for symmetric_matmul (KernelBench level 1,
 * 13_Matmul_for_symmetric_matrices.py): C = torch.matmul(A, B) where A and B
 * are symmetric N x N matrices: C[i][j] = sum_k A[i][k] * B[k][j]. */
void symmetric_matmul(const float *A, const float *B, float *C, int N) {
  for (int i = 0; i < N; i++) {
    for (int j = 0; j < N; j++) {
      float sum = 0.0f;
      for (int k = 0; k < N; k++)
        sum += A[(long)i * N + k] * B[(long)k * N + j];
      C[(long)i * N + j] = sum;
    }
  }
}
