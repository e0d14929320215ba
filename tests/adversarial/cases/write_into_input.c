/* write_into_input: kind 5: writes into its input buffer (mapped read-only). */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  adv_compute(a, b, out, alpha, n);
  ((float *)b)[3] = 42;
}
