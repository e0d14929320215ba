/* Hinge loss on all cores: one POSIX thread per row block, each with its
 * own double partial sum, joined at the end. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <unistd.h>

#define MAX_THREADS 64

struct job {
  const float *p, *t;
  int i0, i1, dim;
  double sum;
};

static void *worker(void *arg) {
  struct job *jb = arg;
  double s = 0.0;
  for (int i = jb->i0; i < jb->i1; i++)
    for (int j = 0; j < jb->dim; j++) {
      float h = 1.0f - jb->p[(long)i * jb->dim + j] * jb->t[j];
      s += h > 0.0f ? h : 0.0f;
    }
  jb->sum = s;
  return NULL;
}

void hinge_loss(const float *predictions, const float *targets, float *out,
                int batch, int dim) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  int nt = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
  pthread_t tid[MAX_THREADS];
  struct job jobs[MAX_THREADS];
  int rows = (batch + nt - 1) / nt;
  for (int k = 0; k < nt; k++) {
    int i0 = k * rows, i1 = i0 + rows < batch ? i0 + rows : batch;
    jobs[k] = (struct job){predictions, targets, i0, i1, dim, 0.0};
    pthread_create(&tid[k], NULL, worker, &jobs[k]);
  }
  double sum = 0.0;
  for (int k = 0; k < nt; k++) {
    pthread_join(tid[k], NULL);
    sum += jobs[k].sum;
  }
  out[0] = (float)(sum / ((double)batch * dim));
}
