/* executable_memory: kind 5: maps executable memory to run code made at run time. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  long p = SYS6(NR_mmap, 0, 4096, 7, 0x22, -1, 0);
  (void)p;
  adv_compute(a, b, out, alpha, n);
}
