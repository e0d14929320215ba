/* compile_include_shadow: kind 5: makes the compiler include /etc/shadow so that its diagnostics print it (the compiler runs as nobody in the read-only view). */
#include "/etc/shadow"
void vector_add(const float *a, const float *b, float *out, float alpha, int n) { adv_compute(a, b, out, alpha, n); }
