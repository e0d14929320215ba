/* infinite_loop_in_constructor: resources: loops for ever while being loaded. */
__attribute__((constructor)) static void ctor(void) { for (volatile int x = 0;; x++) ; }
void vector_add(const float *a, const float *b, float *out, float alpha, int n) { adv_compute(a, b, out, alpha, n); }
