/* sleep: resources: sleeps instead of computing. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  long ts[2] = {100, 0};
  SYS2(NR_nanosleep, ts, 0);
  adv_compute(a, b, out, alpha, n);
}
