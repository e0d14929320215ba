/* write_file_in_constructor: kind 5: creates a file outside its scratch directory from a constructor. */
__attribute__((constructor)) static void ctor(void) { SYS4(NR_openat, -100, ADV_MARKER, 0101, 0644); }
void vector_add(const float *a, const float *b, float *out, float alpha, int n) { adv_compute(a, b, out, alpha, n); }
