/* diag(A) @ B, row by row, with non-temporal (streaming) stores: C is written
 * once and never read here, so streaming it straight to memory skips the
 * read-for-ownership of every C cache line, a third of the memory traffic
 * of this bandwidth-bound kernel. Falls back to plain stores without AVX. */
#include <stddef.h>
#include <stdint.h>
#ifdef __AVX__
#include <immintrin.h>
#endif

void diag_matmul(const float *restrict A, const float *restrict B,
                 float *restrict C, int N, int M) {
  for (int i = 0; i < N; i++) {
    const float *b = B + (size_t)i * M;
    float *c = C + (size_t)i * M;
    float a = A[i];
    int j = 0;
#ifdef __AVX__
    while (j < M && ((uintptr_t)(c + j) & 31) != 0) {
      c[j] = a * b[j];
      j++;
    }
    __m256 va = _mm256_set1_ps(a);
    for (; j + 8 <= M; j += 8)
      _mm256_stream_ps(c + j, _mm256_mul_ps(va, _mm256_loadu_ps(b + j)));
#endif
    for (; j < M; j++)
      c[j] = a * b[j];
  }
#ifdef __AVX__
  _mm_sfence();
#endif
}
