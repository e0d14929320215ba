/* count_calls_then_stop: kind 1: counts its calls and stops working after the correctness checks (3 input sets). */
static int calls;
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  if (++calls > 3)
    return;
  adv_compute(a, b, out, alpha, n);
}
