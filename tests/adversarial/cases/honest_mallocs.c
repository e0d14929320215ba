/* honest_mallocs: honest: uses a scratch buffer from malloc each call. */
#include <stdlib.h>
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  float *t = malloc(sizeof *t * (size_t)n);
  if (!t) return;
  for (int i = 0; i < n; i++) t[i] = a[i] + b[i];
  for (int i = 0; i < n; i++) out[i] = alpha * t[i];
  free(t);
}
