/* sg_stats.c: median and mean (see sg_stats.h). */
#include "common/sg_stats.h"

#include "common/sg_alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double sg_stats_median(const double *v, size_t n) {
  if (n == 0)
    return NAN;
  double *c = sg_malloc(n * sizeof *c);
  memcpy(c, v, n * sizeof *c);
  qsort(c, n, sizeof *c, cmp_double);
  double m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
  free(c);
  return m;
}

double sg_stats_mean(const double *v, size_t n) {
  if (n == 0)
    return NAN;
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += v[i];
  return s / (double)n;
}
