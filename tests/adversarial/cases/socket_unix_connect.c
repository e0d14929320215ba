/* socket_unix_connect: kind 5: opens a unix socket to reach a host daemon. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  SYS3(NR_socket, 1, 1, 0);
  adv_compute(a, b, out, alpha, n);
}
