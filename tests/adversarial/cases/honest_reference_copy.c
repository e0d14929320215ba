/* honest_reference_copy: honest: the reference's loop. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) { adv_compute(a, b, out, alpha, n); }
