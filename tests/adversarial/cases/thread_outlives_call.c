/* thread_outlives_call: kind 5/6: starts a thread (raw clone) that would outlive the call. */
static char stack[65536];
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  SYS6(NR_clone, 0x00010f00, stack + sizeof stack, 0, 0, 0, 0);
  adv_compute(a, b, out, alpha, n);
}
