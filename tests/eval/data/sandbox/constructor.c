/* Crashes as soon as it is loaded. */
#include <stdint.h>
__attribute__((constructor)) static void boom(void) { *(volatile int *)(uintptr_t)8 = 1; }
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  for (int i = 0; i < n; i++)
    out[i] = alpha * (a[i] + b[i]);
}
