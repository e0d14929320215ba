/* forge_done_then_compute: kind 1: answers the evaluator's reply channel itself, then computes (returning early). */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  SYS3(NR_write, 6, "d", 1);
  adv_compute(a, b, out, alpha, n);
}
