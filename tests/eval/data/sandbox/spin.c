/* Loops forever. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  for (volatile int go = 1; go;)
    (void)a, (void)b, (void)out, (void)alpha, (void)n;
}
