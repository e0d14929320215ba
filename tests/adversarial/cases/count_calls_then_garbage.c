/* count_calls_then_garbage: kind 1: after the checks writes zeros instead of the answer (every element written, so poison does not see it). */
static int calls;
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  if (++calls > 3) {
    for (int i = 0; i < n; i++) out[i] = 0;
    return;
  }
  adv_compute(a, b, out, alpha, n);
}
