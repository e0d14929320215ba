/* tril(A @ B) for lower-triangular A and B. The bottom rows carry most of
 * the work, so a forked child computes them into a shared mapping while the
 * parent does the top rows. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static void rows(const float *A, const float *B, float *C, int i0, int i1,
                 int N) {
  for (int i = i0; i < i1; i++)
    for (int j = 0; j < N; j++) {
      float s = 0.0f;
      for (int k = j; k <= i; k++)
        s += A[(long)i * N + k] * B[(long)k * N + j];
      C[(long)(i - i0) * N + j] = j <= i ? s : 0.0f;
    }
}

void lower_triangular_matmul(const float *A, const float *B, float *C, int N) {
  int split = (int)(N * 0.707);
  size_t bytes = (size_t)(N - split) * N * sizeof(float);
  float *shm = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shm == MAP_FAILED) {
    rows(A, B, C, 0, N, N);
    return;
  }
  pid_t pid = fork();
  if (pid == 0) {
    rows(A, B, shm, split, N, N);
    _exit(0);
  }
  rows(A, B, C, 0, split, N);
  if (pid > 0)
    waitpid(pid, NULL, 0);
  else
    rows(A, B, shm, split, N, N);
  memcpy(C + (long)split * N, shm, bytes);
  munmap(shm, bytes);
}
