/* Hinge loss in one pass with a single float accumulator: the loop is
 * branch-free so the compiler can keep it tight. */
void hinge_loss(const float *predictions, const float *targets, float *out,
                int batch, int dim) {
  float sum = 0.0f;
  for (int i = 0; i < batch; i++) {
    const float *p = predictions + (long)i * dim;
    for (int j = 0; j < dim; j++) {
      float h = 1.0f - p[j] * targets[j];
      sum += h > 0.0f ? h : 0.0f;
    }
  }
  out[0] = sum / ((float)batch * (float)dim);
}
