/* process_vm_writev_parent: kind 3: writes into the parent's memory with process_vm_writev. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  SYS6(NR_process_vm_writev, SYS0(NR_getppid), 0, 0, 0, 0, 0);
  adv_compute(a, b, out, alpha, n);
}
