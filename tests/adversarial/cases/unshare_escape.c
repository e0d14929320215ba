/* unshare_escape: kind 5: tries new namespaces of its own (user namespace tricks). */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  SYS1(NR_unshare, 0x10000000);
  adv_compute(a, b, out, alpha, n);
}
