/* 3D tensor x matrix as a cache-oblivious recursive product: split the
 * largest of (rows, L, K) in two until a block fits in L1, then run a plain
 * kernel on it. Splits are rounded to multiples of 32 floats so every block
 * starts on a 128-byte boundary. */
static long split(long n) { return (n / 2 + 31) / 32 * 32; }

static void block(const float *A, const float *B, float *C, long rows, long L,
                  long K, long lda, long ldb, long ldc) {
  if (rows * L * K <= 16 * 1024) {
    for (long r = 0; r < rows; r++)
      for (long k = 0; k < K; k++) {
        float a = A[r * lda + k];
        for (long l = 0; l < L; l++)
          C[r * ldc + l] += a * B[k * ldb + l];
      }
    return;
  }
  if (rows >= L && rows >= K) {
    long h = split(rows);
    block(A, B, C, h, L, K, lda, ldb, ldc);
    block(A + h * lda, B, C + h * ldc, rows - h, L, K, lda, ldb, ldc);
  } else if (L >= K) {
    long h = split(L);
    block(A, B, C, rows, h, K, lda, ldb, ldc);
    block(A, B + h, C + h, rows, L - h, K, lda, ldb, ldc);
  } else {
    long h = split(K);
    block(A, B, C, rows, L, h, lda, ldb, ldc);
    block(A + h, B + h * ldb, C, rows, L, K - h, lda, ldb, ldc);
  }
}

void tensor3d_matmul(const float *A, const float *B, float *C, int N, int M,
                     int K, int L) {
  long rows = (long)N * M;
  for (long x = 0; x < rows * L; x++)
    C[x] = 0.0f;
  block(A, B, C, rows, L, K, K, L, L);
}
