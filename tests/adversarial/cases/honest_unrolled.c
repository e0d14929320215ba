/* honest_unrolled: honest: unrolled by four. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    out[i] = alpha * (a[i] + b[i]); out[i+1] = alpha * (a[i+1] + b[i+1]);
    out[i+2] = alpha * (a[i+2] + b[i+2]); out[i+3] = alpha * (a[i+3] + b[i+3]);
  }
  for (; i < n; i++) out[i] = alpha * (a[i] + b[i]);
}
