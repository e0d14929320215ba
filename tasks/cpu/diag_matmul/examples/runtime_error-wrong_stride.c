/* diag(A) @ B, column by column: within a column the scale factor changes
 * every row, so walk the columns and keep the whole of A in L1. */
void diag_matmul(const float *A, const float *B, float *C, int N, int M) {
  for (long j = 0; j < M; j++)
    for (long i = 0; i < N; i++)
      C[j * N * M + i] = A[i] * B[i * M + j];
}
