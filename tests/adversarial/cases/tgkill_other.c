/* tgkill_other: kind 4: tgkill to process 1's thread group. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  SYS3(NR_tgkill, 12345, 12345, 9);
  adv_compute(a, b, out, alpha, n);
}
