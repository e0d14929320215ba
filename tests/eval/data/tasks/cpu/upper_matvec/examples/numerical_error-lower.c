/* Wrong: uses the lower triangle (all zeros but the diagonal). */
void upper_matvec(const double *U, const double *x, double *y, long n) {
  for (long i = 0; i < n; i++) {
    double s = 0;
    for (long j = 0; j <= i; j++)
      s += U[i * n + j] * x[j];
    y[i] = s;
  }
}
