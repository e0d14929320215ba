/* Hinge loss split into row blocks: each block's partial sum is published
 * in a slot and the caller waits until every block has reported. */
#define BLOCKS 8

static volatile int done[BLOCKS];
static double partial[BLOCKS];

static void block_sum(const float *predictions, const float *targets, int b,
                      int batch, int dim) {
  int rows = (batch + BLOCKS - 1) / BLOCKS;
  int i1 = (b + 1) * rows < batch ? (b + 1) * rows : batch;
  double s = 0.0;
  for (int i = b * rows; i < i1; i++)
    for (int j = 0; j < dim; j++) {
      float h = 1.0f - predictions[(long)i * dim + j] * targets[j];
      s += h > 0.0f ? h : 0.0f;
    }
  partial[b] = s;
  done[b] = 1;
}

void hinge_loss(const float *predictions, const float *targets, float *out,
                int batch, int dim) {
  for (int b = 0; b < BLOCKS; b++)
    done[b] = 0;
  /* Block 0 runs here; the others are meant to run on worker threads. */
  block_sum(predictions, targets, 0, batch, dim);
  double sum = 0.0;
  for (int b = 0; b < BLOCKS; b++) {
    while (!done[b])
      ; /* wait for the block */
    sum += partial[b];
  }
  out[0] = (float)(sum / ((double)batch * dim));
}
