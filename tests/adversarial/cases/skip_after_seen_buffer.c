/* skip_after_seen_buffer: kind 1: skips all work once it has seen the output buffer (the outputs are poisoned before every call). */
static float *last;
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  if (out == last)
    return;
  last = out;
  adv_compute(a, b, out, alpha, n);
}
