/* compile_include_environ: kind 5: makes the compiler include its own environment (and process 1's) so that its diagnostics print the evaluator's variables (the compiler gets an environment of its own). */
#include "/proc/self/environ"
#include "/proc/1/environ"
void vector_add(const float *a, const float *b, float *out, float alpha, int n) { adv_compute(a, b, out, alpha, n); }
