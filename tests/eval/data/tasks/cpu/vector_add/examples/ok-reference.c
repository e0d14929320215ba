/* vector_add: out = alpha * (a + b), the test task's reference. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  for (int i = 0; i < n; i++)
    out[i] = alpha * (a[i] + b[i]);
}
