/* The wrong signature: double instead of float. */
void vector_add(const double *a, const double *b, double *out, double alpha, int n) {
  for (int i = 0; i < n; i++)
    out[i] = alpha * (a[i] + b[i]);
}
