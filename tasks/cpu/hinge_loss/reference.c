/* Reference for hinge_loss (KernelBench level 1, 100_HingeLoss.py):
 * torch.mean(torch.clamp(1 - predictions * targets, min=0)) with predictions
 * of shape (batch, dim) and targets of shape (dim,), which PyTorch broadcasts
 * along the last dimension: element (i, j) uses targets[j].
 * The running sum is a double: a float one would stop growing once it reaches
 * millions (PyTorch sums in a cascade for the same reason). */
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
