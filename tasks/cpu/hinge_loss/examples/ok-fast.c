/* Hinge loss, vectorized: each row is summed in 16 independent float lanes
 * (which the compiler maps onto SIMD registers, and which break the
 * add-latency chain of a single running sum), then the row's total goes
 * into a double so the grand total keeps its precision. */
#include <stddef.h>

#define LANES 16

void hinge_loss(const float *restrict predictions, const float *restrict targets,
                float *restrict out, int batch, int dim) {
  double total = 0.0;
  for (int i = 0; i < batch; i++) {
    const float *p = predictions + (size_t)i * dim;
    float acc[LANES] = {0};
    int j = 0;
    for (; j + LANES <= dim; j += LANES) {
      for (int l = 0; l < LANES; l++) {
        float h = 1.0f - p[j + l] * targets[j + l];
        acc[l] += h > 0.0f ? h : 0.0f;
      }
    }
    float row = 0.0f;
    for (; j < dim; j++) {
      float h = 1.0f - p[j] * targets[j];
      row += h > 0.0f ? h : 0.0f;
    }
    for (int l = 0; l < LANES; l++)
      row += acc[l];
    total += row;
  }
  out[0] = (float)(total / ((double)batch * (double)dim));
}
