/* Straightforward version: the loop nest exactly as the operator is defined. */
void tensor3d_matmul(const float *A, const float *B, float *C, int N, int M,
                     int K, int L) {
  for (int n = 0; n < N; n++) {
    for (int m = 0; m < M; m++) {
      const float *a = A + ((long)n * M + m) * K;
      float *c = C + ((long)n * M + m) * L;
      for (int l = 0; l < L; l++) {
        float sum = 0.0f;
        for (int k = 0; k < K; k++)
          sum += a[k] * B[(long)k * L + l];
        c[l] = sum;
      }
    }
  }
}
