/* C = A @ B^T with 16-lane dot products. Row results go through a shared
 * staging buffer guarded by a spinlock so the kernel stays safe if the
 * caller runs it from several threads. */
#define LANES 16

static int lock;
static float staging[4096];

static void acquire(void) {
  while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
    ;
}

static void release(void) { __atomic_store_n(&lock, 0, __ATOMIC_RELEASE); }

static void flush_row(float *c, int n) {
  acquire();
  for (int j = 0; j < n; j++)
    c[j] = staging[j];
  release();
}

void matmul_transposed_b(const float *A, const float *B, float *C, int M, int K,
                         int N) {
  for (int i = 0; i < M; i++) {
    acquire();
    for (int j0 = 0; j0 < N; j0 += 4096) {
      int n = N - j0 < 4096 ? N - j0 : 4096;
      for (int j = 0; j < n; j++) {
        const float *a = A + (long)i * K, *b = B + (long)(j0 + j) * K;
        float acc[LANES] = {0};
        int k = 0;
        for (; k + LANES <= K; k += LANES)
          for (int l = 0; l < LANES; l++)
            acc[l] += a[k + l] * b[k + l];
        float s = 0.0f;
        for (; k < K; k++)
          s += a[k] * b[k];
        for (int l = 0; l < LANES; l++)
          s += acc[l];
        staging[j] = s;
      }
      flush_row(C + (long)i * N + j0, n);
    }
    release();
  }
}
