/* infinite_loop: resources: never returns. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  (void)a, (void)b, (void)out, (void)alpha, (void)n;
  for (volatile int x = 0;; x++)
    ;
}
