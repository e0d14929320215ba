/* half_the_work: kind 1: computes only the first half of the output. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  adv_compute(a, b, out, alpha, n / 2);
}
