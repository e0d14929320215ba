/* diag(A) @ B computed as KernelBench writes it, A.unsqueeze(1) * B: the
 * diagonal broadcast against B. The inner loop is contiguous in both A and
 * B, so it vectorizes. */
void diag_matmul(const float *A, const float *B, float *C, int N, int M) {
  for (int i = 0; i < N; i++) {
    const float *b = B + (long)i * M;
    float *c = C + (long)i * M;
    for (int j = 0; j < M; j++)
      c[j] = A[j] * b[j];
  }
}
