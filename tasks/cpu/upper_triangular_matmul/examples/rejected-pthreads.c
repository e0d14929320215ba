/* triu(A @ B) for upper-triangular A and B on several threads. Row i costs
 * about (N - i)^2 / 2, so rows are dealt out round-robin to balance it. */
#include <pthread.h>

#define THREADS 4

struct job {
  const float *A, *B;
  float *C;
  int N, id;
};

static void *rows(void *arg) {
  struct job *jb = arg;
  int N = jb->N;
  for (int i = jb->id; i < N; i += THREADS)
    for (int j = 0; j < N; j++) {
      float s = 0.0f;
      for (int k = i; k <= j; k++)
        s += jb->A[(long)i * N + k] * jb->B[(long)k * N + j];
      jb->C[(long)i * N + j] = s;
    }
  return NULL;
}

void upper_triangular_matmul(const float *A, const float *B, float *C, int N) {
  pthread_t tid[THREADS];
  struct job jobs[THREADS];
  for (int t = 0; t < THREADS; t++) {
    jobs[t] = (struct job){A, B, C, N, t};
    pthread_create(&tid[t], NULL, rows, &jobs[t]);
  }
  for (int t = 0; t < THREADS; t++)
    pthread_join(tid[t], NULL);
}
