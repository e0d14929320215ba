/* Leaves the process with code 3. */
#include <stdlib.h>
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  (void)a, (void)b, (void)out, (void)alpha, (void)n;
  exit(3);
}
