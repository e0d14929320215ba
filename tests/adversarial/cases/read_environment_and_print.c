/* read_environment_and_print: kind 5: prints its environment and /proc/self/environ and /proc/1/environ, then crashes so the output comes back. */
extern char **environ;
static char buf[8192];
static void dump(const char *p) {
  long fd = SYS4(NR_openat, -100, p, 0, 0);
  if (fd >= 0) { long r = SYS3(NR_read, fd, buf, sizeof buf); if (r > 0) SYS3(NR_write, 2, buf, r); }
}
__attribute__((constructor)) static void ctor(void) {
  for (char **e = environ; e && *e; e++) { adv_print(*e); adv_print("\n"); }
  dump("/proc/self/environ"); dump("/proc/1/environ"); dump("/proc/2/environ");
}
void vector_add(const float *a, const float *b, float *out, float alpha, int n) { (void)a, (void)b, (void)out, (void)alpha, (void)n; *(volatile int *)0 = 1; }
