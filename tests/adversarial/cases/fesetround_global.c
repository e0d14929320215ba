/* fesetround_global: interference: changes the floating-point rounding mode (its own process only). */
#include <fenv.h>
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  fesetround(FE_UPWARD);
  adv_compute(a, b, out, alpha, n);
}
