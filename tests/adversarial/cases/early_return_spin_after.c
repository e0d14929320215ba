/* early_return_spin_after: kind 1/6: answers, then keeps computing (and burning the shared core while the reference runs). */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  SYS3(NR_write, 6, "d", 1);
  for (volatile long i = 0; i < 200000000; i++)
    ;
  adv_compute(a, b, out, alpha, n);
}
