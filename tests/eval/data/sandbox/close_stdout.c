/* Closes its standard output and error, prints anyway, and is correct. */
#include <stdio.h>
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  fclose(stdout);
  fclose(stderr);
  printf("into the void\n");
  for (int i = 0; i < n; i++)
    out[i] = alpha * (a[i] + b[i]);
}
