/* Straightforward version: the loop nest exactly as the operator is defined. */
void hinge_loss(const float *predictions, const float *targets, float *out,
                int batch, int dim) {
  double sum = 0.0;
  for (int i = 0; i < batch; i++) {
    for (int j = 0; j < dim; j++) {
      float h = 1.0f - predictions[(long)i * dim + j] * targets[j];
      if (h > 0.0f)
        sum += h;
    }
  }
  out[0] = (float)(sum / ((double)batch * (double)dim));
}
