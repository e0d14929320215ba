/* honest_prints: honest: computes and prints a line each call (printing is allowed). */
#include <stdio.h>
void vector_add(const float *a, const float *b, float *out, float alpha, int n) { adv_compute(a, b, out, alpha, n); printf("called with n=%d\n", n); }
