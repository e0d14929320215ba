/* exit_zero_in_constructor: kind 2: exits with status 0 while being loaded. */
__attribute__((constructor)) static void ctor(void) { SYS1(NR_exit_group, 0); }
void vector_add(const float *a, const float *b, float *out, float alpha, int n) { adv_compute(a, b, out, alpha, n); }
