/* exec_shell: kind 5: runs /bin/sh. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  char *argv[] = {"/bin/sh", "-c", "touch " ADV_MARKER, 0};
  SYS3(NR_execve, "/bin/sh", argv, 0);
  adv_compute(a, b, out, alpha, n);
}
