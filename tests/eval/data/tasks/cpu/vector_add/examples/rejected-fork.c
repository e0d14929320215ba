/* Starts a process. */
#include <unistd.h>
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  if (fork() == 0)
    _exit(0);
  for (int i = 0; i < n; i++)
    out[i] = alpha * (a[i] + b[i]);
}
