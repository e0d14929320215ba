/* write_file_scratch_escape: kind 5: writes ../ out of its scratch directory. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  SYS4(NR_openat, -100, "../sg-adversarial-pwned", 0101, 0644);
  adv_compute(a, b, out, alpha, n);
}
