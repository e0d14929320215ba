/* interpose_clock_gettime: kind 2: defines clock_gettime and gettimeofday returning frozen time, then computes slowly (the timing is the judge's). */
/* (the spin is some 10 ms on top of the reference's work: an honest run is slower than the reference, and 2x faster only if a busy machine stretched the reference's calls by far more than the spin; a frozen clock that fooled the timing would show a far larger speedup) */
#include <time.h>
int clock_gettime(clockid_t c, struct timespec *ts) { (void)c; ts->tv_sec = 0; ts->tv_nsec = 0; return 0; }
void vector_add(const float *a, const float *b, float *out, float alpha, int n) {
  for (volatile long i = 0; i < 20000000; i++)
    ;
  adv_compute(a, b, out, alpha, n);
}
