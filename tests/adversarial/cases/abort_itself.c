/* abort_itself: resources: abort() (a signal to itself: allowed, and it ends the call). */
#include <stdlib.h>
void vector_add(const float *a, const float *b, float *out, float alpha, int n) { (void)a, (void)b, (void)out, (void)alpha, (void)n; abort(); }
