/* The golden prompt test's task: a vector scaled by a constant. */
void vector_scale(const float *x, float *out, float alpha, int n) {
  for (int i = 0; i < n; i++)
    out[i] = alpha * x[i];
}
