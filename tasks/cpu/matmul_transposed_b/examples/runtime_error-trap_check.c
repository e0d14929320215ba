/* C = A @ B^T with the K loop unrolled by 256: sixteen lanes of sixteen
 * products per step. The unrolled body needs K to be a multiple of 256;
 * CHECK guards that. */
#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond))                                                               \
      __builtin_trap();                                                        \
  } while (0)

void matmul_transposed_b(const float *A, const float *B, float *C, int M, int K,
                         int N) {
  CHECK(K % 256 == 0);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      const float *a = A + (long)i * K, *b = B + (long)j * K;
      float acc[16] = {0};
      for (int k = 0; k < K; k += 256)
        for (int u = 0; u < 256; u += 16)
          for (int l = 0; l < 16; l++)
            acc[l] += a[k + u + l] * b[k + u + l];
      float s = 0.0f;
      for (int l = 0; l < 16; l++)
        s += acc[l];
      C[(long)i * N + j] = s;
    }
}
