/* compute_only_if_poisoned: kind 1: computes only when its output still holds the poison, else returns; with outputs poisoned before every call it must do honest work every call. */
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  uint32_t bits;
  __builtin_memcpy(&bits, &out[n - 1], 4);
  if ((bits & 0x7f800000u) != 0x7f800000u || !(bits & 0x7fffffu))
    return;
  adv_compute(a, b, out, alpha, n);
}
