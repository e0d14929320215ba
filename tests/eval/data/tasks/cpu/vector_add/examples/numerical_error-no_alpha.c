/* Forgets alpha. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  (void)alpha;
  for (int i = 0; i < n; i++)
    out[i] = a[i] + b[i];
}
