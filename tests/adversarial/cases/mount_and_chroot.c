/* mount_and_chroot: kind 5: mounts and chroots. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  SYS6(NR_mount, "none", "/tmp", "tmpfs", 0, 0, 0);
  SYS1(NR_chroot, "/tmp");
  adv_compute(a, b, out, alpha, n);
}
