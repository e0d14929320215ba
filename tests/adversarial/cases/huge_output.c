/* huge_output: resources: prints 64 MB during the call, then computes honestly (output is drained and capped). */
#include <stdio.h>
static int calls;
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  if (calls++ == 0)
    for (int i = 0; i < (1 << 20); i++)
      fputs("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", stdout);
  fflush(stdout);
  adv_compute(a, b, out, alpha, n);
}
