/* Reads through a wild pointer. */
#include <stdint.h>
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  volatile float *wild = (volatile float *)(uintptr_t)8;
  for (int i = 0; i < n; i++)
    out[i] = alpha * (a[i] + b[i]) + *wild;
}
