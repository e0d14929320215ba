/* Forgets the last element: it stays unwritten. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  for (int i = 0; i < n - 1; i++)
    out[i] = alpha * (a[i] + b[i]);
}
