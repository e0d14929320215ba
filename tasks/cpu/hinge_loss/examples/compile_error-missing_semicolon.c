/* Hinge loss with a running double sum and a branch-free clamp. */
#include <math.h>

void hinge_loss(const float *predictions, const float *targets, float *out,
                int batch, int dim) {
  double sum = 0.0
  for (int i = 0; i < batch; i++) {
    const float *p = predictions + (long)i * dim;
    for (int j = 0; j < dim; j++)
      sum += fmaxf(0.0f, 1.0f - p[j] * targets[j]);
  }
  out[0] = (float)(sum / ((double)batch * dim));
}
