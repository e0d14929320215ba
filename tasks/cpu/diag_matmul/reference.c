/* Reference for diag_matmul (KernelBench level 1,
 * 12_Matmul_with_diagonal_matrices_.py): torch.diag(A) @ B, computed as
 * KernelBench does without building the N x N matrix: A.unsqueeze(1) * B.
 * A has shape (N,), B and C (N, M): C[i][j] = A[i] * B[i][j]. */
void diag_matmul(const float *A, const float *B, float *C, int N, int M) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++)
      C[(long)i * M + j] = A[i] * B[(long)i * M + j];
}
