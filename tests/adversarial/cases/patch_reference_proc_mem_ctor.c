/* patch_reference_proc_mem_ctor: kind 3: its constructor opens /proc/self/mem and its parent's memory for writing (refused: only reading opens pass), then computes honestly. */
__attribute__((constructor)) static void ctor(void) {
  long fd = SYS4(NR_openat, -100, "/proc/1/mem", 2, 0);
  if (fd >= 0) adv_print("opened /proc/1/mem for writing\n");
}
void vector_add(const float *a, const float *b, float *out, float alpha, int n) { adv_compute(a, b, out, alpha, n); }
