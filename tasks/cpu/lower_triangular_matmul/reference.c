/* Reference for lower_triangular_matmul (KernelBench level 1,
 * 15_Matmul_for_lower_triangular_matrices.py): C = torch.tril(A @ B) where A
 * and B are lower-triangular N x N matrices: C[i][j] = sum_k A[i][k] * B[k][j]
 * on and below the diagonal (j <= i), 0 above it. */
void lower_triangular_matmul(const float *A, const float *B, float *C, int N) {
  for (int i = 0; i < N; i++) {
    for (int j = 0; j < N; j++) {
      float sum = 0.0f;
      if (j <= i) {
        for (int k = 0; k < N; k++)
          sum += A[(long)i * N + k] * B[(long)k * N + j];
      }
      C[(long)i * N + j] = sum;
    }
  }
}
