/* timer_signal_finishes_later: kind 1: arms a timer whose signal handler would write the output after the call returned. */
static float *o_; static const float *a_, *b_; static float al_; static int n_;
static void later(int s) { (void)s; adv_compute(a_, b_, o_, al_, n_); }
struct ksa { void (*h)(int); unsigned long flags; void (*r)(void); unsigned long mask; };
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  o_ = out; a_ = a; b_ = b; al_ = alpha; n_ = n;
  struct ksa sa = {later, 0x04000000, 0, 0};
  SYS4(NR_rt_sigaction, 14, &sa, 0, 8);
  long it[4] = {0, 0, 0, 1000};
  SYS3(NR_setitimer, 0, it, 0);
}
