// A cheat (kept as a test): a thread started when the library loads keeps
// writing "done, no error" answers into every socket the process holds, so
// that the judge stops its clock before the work ends, while the work itself
// is slow. The judge reads the outputs itself after every answer: outputs not
// yet written still hold its NaN poison, and the early answers desynchronize
// nothing that decides the verdict.
#include <cuda_runtime.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static void *answer_early(void *p) {
  (void)p;
  int zero = 0;
  for (;;) {
    for (int fd = 3; fd < 64; fd++) {
      struct stat st;
      if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode))
        (void)!write(fd, &zero, sizeof zero);
    }
    usleep(200);
  }
  return NULL;
}

__attribute__((constructor)) static void start(void) {
  pthread_t t;
  pthread_create(&t, NULL, answer_early, NULL);
}

__global__ void slow_diag(const float *A, const float *B, float *C, int N, int M) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (size_t)N * M) return;
  long long t0 = clock64();
  while (clock64() - t0 < 2000000) {}  // about a millisecond per thread
  C[i] = A[i / M] * B[i];
}

extern "C" void diag_matmul(const float *A, const float *B, float *C, int N, int M) {
  size_t n = (size_t)N * M;
  slow_diag<<<(unsigned)((n + 255) / 256), 256>>>(A, B, C, N, M);
}
