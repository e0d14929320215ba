/* exit_zero_in_call: kind 2: exits with status 0 in the middle of the protocol, hoping a clean exit reads as success. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  (void)a, (void)b, (void)out, (void)alpha, (void)n;
  SYS1(NR_exit_group, 0);
}
