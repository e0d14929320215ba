/* poison_check_one_element: kind 1: writes only the first element when it sees poison there and leaves the rest. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  out[0] = alpha * (a[0] + b[0]);
  (void)n;
}
