/* Correct and faster: skips the zeros below the diagonal. */
void upper_matvec(const double *U, const double *x, double *y, long n) {
  for (long i = 0; i < n; i++) {
    double s = 0;
    for (long j = i; j < n; j++)
      s += U[i * n + j] * x[j];
    y[i] = s;
  }
}
