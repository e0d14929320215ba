/* Hinge loss, vectorized. mean(1 - p * t) = 1 - mean(p * t), so the kernel
 * only needs the mean of the products, summed in 8 lanes. */
void hinge_loss(const float *predictions, const float *targets, float *out,
                int batch, int dim) {
  double total = 0.0;
  for (int i = 0; i < batch; i++) {
    const float *p = predictions + (long)i * dim;
    float acc[8] = {0};
    int j = 0;
    for (; j + 8 <= dim; j += 8)
      for (int l = 0; l < 8; l++)
        acc[l] += p[j + l] * targets[j + l];
    float row = 0.0f;
    for (; j < dim; j++)
      row += p[j] * targets[j];
    for (int l = 0; l < 8; l++)
      row += acc[l];
    total += row;
  }
  out[0] = (float)(1.0 - total / ((double)batch * dim));
}
