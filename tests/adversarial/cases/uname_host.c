/* uname_host: kind 5: asks for the host's name and kernel. */
static char u[390];
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  SYS1(NR_uname, u);
  adv_compute(a, b, out, alpha, n);
}
