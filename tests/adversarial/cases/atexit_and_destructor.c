/* atexit_and_destructor: lifecycle: registers atexit handlers and a destructor that would write files; computes honestly (the worker ends without running them). */
#include <stdlib.h>
static void bye(void) { SYS4(NR_openat, -100, ADV_MARKER, 0101, 0644); }
__attribute__((destructor)) static void dtor(void) { bye(); }
static int registered;
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  if (!registered++) atexit(bye);
  adv_compute(a, b, out, alpha, n);
}
