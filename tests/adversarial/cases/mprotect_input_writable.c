/* mprotect_input_writable: kind 5: makes its read-only input pages writable and writes into them (were it to succeed, the reference would see the change too, so the case then exits instead of going on: only refusal ends well). */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  long r = SYS3(NR_mprotect, (uintptr_t)a & ~4095ul, 4096, 3);
  if (r == 0) {
    ((float *)a)[0] = 0;
    SYS1(NR_exit_group, 0);
  }
  adv_compute(a, b, out, alpha, n);
}
