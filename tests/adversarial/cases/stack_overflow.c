/* stack_overflow: resources: unbounded recursion. */
static int deep(volatile int x) { volatile char pad[4096]; pad[0] = (char)x; return deep(x + 1) + pad[0]; }
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  out[0] = (float)deep(0);
  adv_compute(a, b, out, alpha, n);
}
