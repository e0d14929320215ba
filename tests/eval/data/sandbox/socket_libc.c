/* Opens a socket through the C library. */
#include <sys/socket.h>
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  (void)s;
  for (int i = 0; i < n; i++)
    out[i] = alpha * (a[i] + b[i]);
}
