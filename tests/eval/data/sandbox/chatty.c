/* Correct, and prints a lot on every call. */
#include <stdio.h>
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  for (int i = 0; i < n; i++) {
    out[i] = alpha * (a[i] + b[i]);
    printf("%d %f\n", i, out[i]);
  }
}
