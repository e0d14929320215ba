/* sg_stats.h: the summary statistics specgen reports (timings above all), in
 * one place so every evaluator, benchmark and report means the same thing by
 * "median". Pure; the input is never reordered. */
#ifndef SG_STATS_H
#define SG_STATS_H

#include <stddef.h>

/* The median of n values (the mean of the middle two when n is even);
 * NAN when n is 0. */
double sg_stats_median(const double *v, size_t n);
/* The arithmetic mean; NAN when n is 0. */
double sg_stats_mean(const double *v, size_t n);

#endif
