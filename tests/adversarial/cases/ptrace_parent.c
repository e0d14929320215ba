/* ptrace_parent: kind 3: attaches to its parent with ptrace. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  SYS4(NR_ptrace, 16, 1, 0, 0);
  adv_compute(a, b, out, alpha, n);
}
