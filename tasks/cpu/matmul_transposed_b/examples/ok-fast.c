/* C = A @ B^T with A (M x K) and B (N x K): every element is a dot product of
 * two contiguous rows. One accumulator per element serializes on the add
 * latency, so each dot product runs in 16 independent lanes (SIMD-friendly)
 * that are summed at the end, and four rows of B share each load of A's row. */
#include <stddef.h>

#define LANES 16

static float dot_tail(const float *a, const float *b, int k0, int K) {
  float s = 0.0f;
  for (int k = k0; k < K; k++)
    s += a[k] * b[k];
  return s;
}

void matmul_transposed_b(const float *restrict A, const float *restrict B,
                         float *restrict C, int M, int K, int N) {
  for (int i = 0; i < M; i++) {
    const float *a = A + (size_t)i * K;
    int j = 0;
    for (; j + 4 <= N; j += 4) {
      const float *b0 = B + (size_t)j * K, *b1 = b0 + K, *b2 = b1 + K,
                  *b3 = b2 + K;
      float s0[LANES] = {0}, s1[LANES] = {0}, s2[LANES] = {0}, s3[LANES] = {0};
      int k = 0;
      for (; k + LANES <= K; k += LANES) {
        for (int l = 0; l < LANES; l++) {
          float av = a[k + l];
          s0[l] += av * b0[k + l];
          s1[l] += av * b1[k + l];
          s2[l] += av * b2[k + l];
          s3[l] += av * b3[k + l];
        }
      }
      float t0 = dot_tail(a, b0, k, K), t1 = dot_tail(a, b1, k, K),
            t2 = dot_tail(a, b2, k, K), t3 = dot_tail(a, b3, k, K);
      for (int l = 0; l < LANES; l++) {
        t0 += s0[l];
        t1 += s1[l];
        t2 += s2[l];
        t3 += s3[l];
      }
      float *c = C + (size_t)i * N + j;
      c[0] = t0;
      c[1] = t1;
      c[2] = t2;
      c[3] = t3;
    }
    for (; j < N; j++)
      C[(size_t)i * N + j] = dot_tail(a, B + (size_t)j * K, 0, K);
  }
}
