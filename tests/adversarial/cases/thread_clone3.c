/* thread_clone3: kind 6: clone3 for a helper thread (refused; a kernel that then computes alone is fine). */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  long r = SYS2(NR_clone3, 0, 0);
  (void)r;
  adv_compute(a, b, out, alpha, n);
}
