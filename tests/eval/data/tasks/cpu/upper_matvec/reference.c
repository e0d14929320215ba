/* upper_matvec: y = U x for an upper-triangular U, the test task's reference
 * (it walks the whole matrix, as a generic matvec would). */
void upper_matvec(const double *U, const double *x, double *y, long n) {
  for (long i = 0; i < n; i++) {
    double s = 0;
    for (long j = 0; j < n; j++)
      s += U[i * n + j] * x[j];
    y[i] = s;
  }
}
