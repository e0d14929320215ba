/* Writes through a null pointer. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  (void)out;
  float *volatile p = 0;
  for (int i = 0; i < n; i++)
    p[i] = alpha * (a[i] + b[i]);
}
