/* memfd_and_bpf: kind 5: memfd_create, bpf, perf_event_open, io_uring: kernel surfaces a kernel has no use for. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  SYS2(NR_memfd_create, "x", 0);
  adv_compute(a, b, out, alpha, n);
}
