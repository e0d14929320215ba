/* einsum("bijl,lk->bijk") on two cores: the rows are split between this
 * process and a forked child that writes its half into shared memory. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static void rows_range(const float *A, const float *B, float *C, long r0,
                       long r1, int l, int k) {
  for (long r = r0; r < r1; r++) {
    float *c = C + r * k;
    for (int x = 0; x < k; x++)
      c[x] = 0.0f;
    for (int p = 0; p < l; p++) {
      float a = A[r * l + p];
      for (int x = 0; x < k; x++)
        c[x] += a * B[(long)p * k + x];
    }
  }
}

void tensor4d_matmul(const float *A, const float *B, float *C, int b, int i,
                     int j, int l, int k) {
  long rows = (long)b * i * j, half = rows / 2;
  size_t bytes = (size_t)(rows - half) * k * sizeof(float);
  float *shared = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  pid_t pid = shared == MAP_FAILED ? -1 : fork();
  if (pid == 0) {
    rows_range(A, B, shared - half * k, half, rows, l, k);
    _exit(0);
  }
  rows_range(A, B, C, 0, pid > 0 ? half : rows, l, k);
  if (pid > 0) {
    waitpid(pid, NULL, 0);
    memcpy(C + half * k, shared, bytes);
  }
  if (shared != MAP_FAILED)
    munmap(shared, bytes);
}
