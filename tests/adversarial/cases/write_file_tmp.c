/* write_file_tmp: kind 5: creates a file in /tmp during a call. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  SYS4(NR_openat, -100, ADV_MARKER, 0101 | 01000, 0644);
  adv_compute(a, b, out, alpha, n);
}
