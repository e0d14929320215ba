/* Straightforward version: the loop nest exactly as the operator is defined. */
void diag_matmul(const float *A, const float *B, float *C, int N, int M) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < M; j++)
      C[(long)i * M + j] = A[i] * B[(long)i * M + j];
}
