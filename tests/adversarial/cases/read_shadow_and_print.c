/* read_shadow_and_print: kind 5: reads /etc/shadow in a constructor (allowed to open for reading there), prints it, then crashes so its output is shown. */
static char buf[4096];
__attribute__((constructor)) static void ctor(void) {
  long fd = SYS4(NR_openat, -100, "/etc/shadow", 0, 0);
  if (fd >= 0) { long r = SYS3(NR_read, fd, buf, sizeof buf - 1); if (r > 0) SYS3(NR_write, 2, buf, r); }
  else adv_print("shadow refused\n");
}
void vector_add(const float *a, const float *b, float *out, float alpha, int n) { (void)a, (void)b, (void)out, (void)alpha, (void)n; *(volatile int *)0 = 1; }
