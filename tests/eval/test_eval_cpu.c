/* test_eval_cpu.c: the pure parts of the cpu evaluator and the evaluator
 * contract: RNG and input distributions, poison and allclose, median and
 * mean, the ELF symbol reader and the symbol rules, diagnostic cuts, signal
 * names, device parsing, status names, options and result JSON. */
#include "common/sg_stats.h"
#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_file.h"
#include "eval/sg_eval.h"
#include "eval/sg_eval_cpu.h"
#include "sg_test.h"

#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

/* ---- RNG and distributions ------------------------------------------------ */

static void test_rng_is_deterministic(void) {
  sg_rng a, b, c;
  sg_rng_seed(&a, 42);
  sg_rng_seed(&b, 42);
  sg_rng_seed(&c, 43);
  int same_c = 0;
  for (int i = 0; i < 1000; i++) {
    uint64_t x = sg_rng_next(&a), y = sg_rng_next(&b), z = sg_rng_next(&c);
    SG_CHECK(x == y);
    same_c += x == z;
  }
  SG_CHECK(same_c < 2);
  SG_CHECK(sg_rng_derive(1, 0, 0) != sg_rng_derive(1, 1, 0));
  SG_CHECK(sg_rng_derive(1, 0, 0) != sg_rng_derive(1, 0, 1));
  SG_CHECK(sg_rng_derive(1, 0, 0) != sg_rng_derive(2, 0, 0));
  SG_CHECK(sg_rng_derive(7, 3, 2) == sg_rng_derive(7, 3, 2));
}

static void test_rng_uniform_and_normal_moments(void) {
  sg_rng r;
  sg_rng_seed(&r, 7);
  const int n = 200000;
  double su = 0, sn = 0, sn2 = 0, sn4 = 0;
  int tail = 0;
  for (int i = 0; i < n; i++) {
    double u = sg_rng_uniform(&r);
    SG_CHECK(u >= 0 && u < 1);
    su += u;
    double z = sg_rng_normal(&r);
    sn += z;
    sn2 += z * z;
    sn4 += z * z * z * z;
    tail += fabs(z) > 3.442620; /* the ziggurat's tail branch */
  }
  SG_CHECK_NEAR(su / n, 0.5, 0.005);
  SG_CHECK_NEAR(sn / n, 0.0, 0.01);
  SG_CHECK_NEAR(sn2 / n, 1.0, 0.015);
  SG_CHECK_NEAR(sn4 / n, 3.0, 0.1); /* kurtosis of a normal */
  /* P(|z| > 3.4426) = 5.76e-4: about 115 of 200000 */
  SG_CHECK_MSG(tail > 60 && tail < 180, "tail count %d", tail);
}

static sg_task_arg make_arg(sg_dtype d, int ndims, const int64_t *shape,
                            const char *dist, double p0, double p1) {
  sg_task_arg a;
  memset(&a, 0, sizeof a);
  a.name = "x";
  a.kind = SG_ARG_INPUT;
  a.dtype = d;
  a.ndims = ndims;
  a.numel = 1;
  for (int i = 0; i < ndims; i++) {
    a.shape[i] = shape[i];
    a.numel *= shape[i];
  }
  snprintf(a.init.dist, sizeof a.init.dist, "%s", dist);
  a.init.p[0] = p0;
  a.init.p[1] = p1;
  return a;
}

static void test_fill_distributions(void) {
  int64_t shape[1] = {100000};
  sg_rng r;
  sg_rng_seed(&r, 1);
  sg_task_arg a = make_arg(SG_DTYPE_F64, 1, shape, "normal", 3.0, 0.5);
  double *x = sg_malloc(100000 * sizeof *x);
  sg_eval_fill(&a, x, &r);
  double s = 0, s2 = 0;
  for (int i = 0; i < 100000; i++) {
    s += x[i];
    s2 += x[i] * x[i];
  }
  double mean = s / 1e5, var = s2 / 1e5 - mean * mean;
  SG_CHECK_NEAR(mean, 3.0, 0.01);
  SG_CHECK_NEAR(sqrt(var), 0.5, 0.01);

  a = make_arg(SG_DTYPE_F64, 1, shape, "uniform", -2.0, 6.0);
  sg_eval_fill(&a, x, &r);
  double lo = 1e9, hi = -1e9;
  s = 0;
  for (int i = 0; i < 100000; i++) {
    lo = fmin(lo, x[i]);
    hi = fmax(hi, x[i]);
    s += x[i];
  }
  SG_CHECK(lo >= -2.0 && hi < 6.0);
  SG_CHECK(lo < -1.99 && hi > 5.99);
  SG_CHECK_NEAR(s / 1e5, 2.0, 0.05);

  double vals[3] = {-1.0, 0.25, 7.0};
  a = make_arg(SG_DTYPE_F32, 1, shape, "choice", 0, 0);
  a.init.values = vals;
  a.init.nvalues = 3;
  float *f = sg_malloc(100000 * sizeof *f);
  sg_eval_fill(&a, f, &r);
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 100000; i++) {
    int k = f[i] == -1.0f ? 0 : f[i] == 0.25f ? 1 : f[i] == 7.0f ? 2 : -1;
    SG_CHECK_MSG(k >= 0, "value %g is not a choice", f[i]);
    counts[k]++;
  }
  for (int k = 0; k < 3; k++)
    SG_CHECK_MSG(counts[k] > 32000 && counts[k] < 34700, "count %d", counts[k]);

  /* integers take the rounded draw */
  a = make_arg(SG_DTYPE_I32, 1, shape, "uniform", 0.0, 10.0);
  int32_t *iv = sg_malloc(100000 * sizeof *iv);
  sg_eval_fill(&a, iv, &r);
  int seen[11] = {0};
  for (int i = 0; i < 100000; i++) {
    SG_CHECK(iv[i] >= 0 && iv[i] <= 10);
    seen[iv[i]] = 1;
  }
  for (int k = 0; k <= 10; k++)
    SG_CHECK(seen[k]);
  free(x);
  free(f);
  free(iv);
}

static void test_fill_is_reproducible(void) {
  int64_t shape[2] = {64, 64};
  sg_task_arg a = make_arg(SG_DTYPE_F32, 2, shape, "normal", 0, 1);
  float *x = sg_malloc(4096 * 4), *y = sg_malloc(4096 * 4), *z = sg_malloc(4096 * 4);
  sg_rng r;
  sg_rng_seed(&r, 99);
  sg_eval_fill(&a, x, &r);
  sg_rng_seed(&r, 99);
  sg_eval_fill(&a, y, &r);
  sg_rng_seed(&r, 100);
  sg_eval_fill(&a, z, &r);
  SG_CHECK(memcmp(x, y, 4096 * 4) == 0);
  SG_CHECK(memcmp(x, z, 4096 * 4) != 0);
  free(x);
  free(y);
  free(z);
}

static void test_fill_structures(void) {
  int64_t shape[3] = {3, 5, 5}; /* a batch of three 5x5 matrices */
  const char *structs[] = {"symmetric", "upper", "lower", "diagonal"};
  for (int s = 0; s < 4; s++) {
    sg_task_arg a = make_arg(SG_DTYPE_F64, 3, shape, "normal", 1.0, 1.0);
    snprintf(a.init.structure, sizeof a.init.structure, "%s", structs[s]);
    double x[75];
    sg_rng r;
    sg_rng_seed(&r, 5);
    sg_eval_fill(&a, x, &r);
    for (int m = 0; m < 3; m++)
      for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) {
          double v = x[m * 25 + i * 5 + j], t = x[m * 25 + j * 5 + i];
          switch (s) {
          case 0: SG_CHECK(v == t); break;
          case 1: SG_CHECK(j >= i ? v != 0 : v == 0); break;
          case 2: SG_CHECK(j <= i ? v != 0 : v == 0); break;
          case 3: SG_CHECK(j == i ? v != 0 : v == 0); break;
          }
        }
    /* not all matrices alike, and symmetric is not just a copy of one half */
    SG_CHECK(x[0] != x[25]);
    if (s == 0)
      SG_CHECK(x[1] != x[2]);
  }
}

/* ---- poison and allclose ---------------------------------------------------- */

static void test_poison(void) {
  float f[4];
  double d[4];
  int32_t i32[4];
  int64_t i64[4];
  sg_eval_poison(SG_DTYPE_F32, f, 4);
  sg_eval_poison(SG_DTYPE_F64, d, 4);
  sg_eval_poison(SG_DTYPE_I32, i32, 4);
  sg_eval_poison(SG_DTYPE_I64, i64, 4);
  for (int i = 0; i < 4; i++) {
    SG_CHECK(isnan(f[i]) && isnan(d[i]));
    SG_CHECK(sg_eval_is_poison(SG_DTYPE_F32, f, i));
    SG_CHECK(sg_eval_is_poison(SG_DTYPE_F64, d, i));
    SG_CHECK(sg_eval_is_poison(SG_DTYPE_I32, i32, i));
    SG_CHECK(sg_eval_is_poison(SG_DTYPE_I64, i64, i));
  }
  volatile float zero = 0;
  f[1] = zero / zero; /* a computed NaN is not the poison */
  d[1] = NAN;
  f[2] = 0;
  i32[2] = 0;
  SG_CHECK(!sg_eval_is_poison(SG_DTYPE_F32, f, 1));
  SG_CHECK(!sg_eval_is_poison(SG_DTYPE_F64, d, 1));
  SG_CHECK(!sg_eval_is_poison(SG_DTYPE_F32, f, 2));
  SG_CHECK(!sg_eval_is_poison(SG_DTYPE_I32, i32, 2));
}

static void test_compare_equal_and_within_tolerance(void) {
  float ref[4] = {1, -2, 0, 100};
  float cand[4] = {1, -2, 0.001f, 100.05f};
  sg_eval_cmp c;
  sg_eval_compare(SG_DTYPE_F32, ref, ref, 4, 0, 0, &c);
  SG_CHECK_EQ_INT(c.first_bad, -1);
  SG_CHECK_EQ_INT(c.nbad, 0);
  SG_CHECK(c.max_abs == 0 && c.max_rel == 0);
  /* |0.001 - 0| <= 0.002; |100.05 - 100| <= 0.002 + 0.001 * 100 */
  sg_eval_compare(SG_DTYPE_F32, cand, ref, 4, 0.002, 0.001, &c);
  SG_CHECK_EQ_INT(c.first_bad, -1);
  SG_CHECK_NEAR(c.max_abs, 0.05, 1e-5);
  SG_CHECK_NEAR(c.max_rel, 0.0005, 1e-6);
  /* tighter: the last element fails, the third too */
  sg_eval_compare(SG_DTYPE_F32, cand, ref, 4, 0.0005, 0.0001, &c);
  SG_CHECK_EQ_INT(c.first_bad, 2);
  SG_CHECK_EQ_INT(c.nbad, 2);
  SG_CHECK_EQ_INT(c.kind, SG_EVAL_BAD_MISMATCH);
  SG_CHECK_NEAR(c.cand, 0.001, 1e-7);
  SG_CHECK_NEAR(c.ref, 0, 0);
}

static void test_compare_nan_and_unwritten(void) {
  double ref[5] = {1, 2, NAN, INFINITY, 5};
  double cand[5] = {1, 2, NAN, INFINITY, 5};
  sg_eval_cmp c;
  sg_eval_compare(SG_DTYPE_F64, cand, ref, 5, 0, 0, &c);
  SG_CHECK_EQ_INT(c.first_bad, -1); /* NaN == NaN and inf == inf here */
  cand[3] = -INFINITY;
  sg_eval_compare(SG_DTYPE_F64, cand, ref, 5, 1, 1, &c);
  SG_CHECK_EQ_INT(c.first_bad, 3);
  SG_CHECK_EQ_INT(c.kind, SG_EVAL_BAD_NAN);
  cand[3] = INFINITY;
  cand[1] = NAN;
  sg_eval_compare(SG_DTYPE_F64, cand, ref, 5, 1, 1, &c);
  SG_CHECK_EQ_INT(c.first_bad, 1);
  SG_CHECK_EQ_INT(c.kind, SG_EVAL_BAD_NAN);
  SG_CHECK(isinf(c.max_abs));
  sg_eval_poison(SG_DTYPE_F64, cand + 4, 1);
  cand[1] = 2;
  sg_eval_compare(SG_DTYPE_F64, cand, ref, 5, 1, 1, &c);
  SG_CHECK_EQ_INT(c.first_bad, 4);
  SG_CHECK_EQ_INT(c.kind, SG_EVAL_BAD_UNWRITTEN);
  SG_CHECK_NEAR(c.ref, 5, 0);
}

/* The exact rules, element by element, written apart from the evaluator's
 * blocked and vectorized check: it must agree with them on everything it
 * reports. */
static void spec_compare(sg_dtype d, const void *cand, const void *ref, int64_t n,
                         double atol, double rtol, sg_eval_cmp *c) {
  memset(c, 0, sizeof *c);
  c->first_bad = -1;
  for (int64_t i = 0; i < n; i++) {
    double x = d == SG_DTYPE_F32 ? ((const float *)cand)[i] : ((const double *)cand)[i];
    double y = d == SG_DTYPE_F32 ? ((const float *)ref)[i] : ((const double *)ref)[i];
    sg_eval_bad bad = SG_EVAL_BAD_NONE;
    if (sg_eval_is_poison(d, cand, i) && !sg_eval_is_poison(d, ref, i))
      bad = SG_EVAL_BAD_UNWRITTEN;
    else if (isnan(x) || isnan(y))
      bad = isnan(x) && isnan(y) ? SG_EVAL_BAD_NONE : SG_EVAL_BAD_NAN;
    else if (isinf(x) || isinf(y))
      bad = x == y ? SG_EVAL_BAD_NONE : SG_EVAL_BAD_NAN;
    else {
      double diff = fabs(x - y);
      c->max_abs = fmax(c->max_abs, diff);
      if (y != 0)
        c->max_rel = fmax(c->max_rel, diff / fabs(y));
      if (!(diff <= atol + rtol * fabs(y)))
        bad = SG_EVAL_BAD_MISMATCH;
    }
    if (bad == SG_EVAL_BAD_NONE)
      continue;
    if (c->first_bad < 0) {
      c->first_bad = i;
      c->kind = bad;
      c->cand = x;
      c->ref = y;
    }
    c->nbad++;
    if (bad != SG_EVAL_BAD_MISMATCH)
      c->max_abs = c->max_rel = INFINITY;
  }
}

static bool same_double(double a, double b) {
  return (isnan(a) && isnan(b)) || a == b;
}

static void set_val(sg_dtype d, void *buf, int64_t i, double v) {
  if (d == SG_DTYPE_F32)
    ((float *)buf)[i] = (float)v;
  else
    ((double *)buf)[i] = v;
}

/* Sizes around the check's blocks (1024) and vector widths, every kind of
 * bad or special element, alone or with others, at the start, the end, a
 * block's edges and random places: sg_eval_compare and
 * sg_eval_compare_poison report exactly what the rules say, and the latter
 * leaves every element of cand poisoned. */
static void test_compare_fast_path_agrees_with_rules(void) {
  const int64_t sizes[] = {0, 1, 2, 3, 4, 5, 7, 1023, 1024, 1025, 2047, 2048, 3001};
  const sg_dtype types[] = {SG_DTYPE_F32, SG_DTYPE_F64};
  sg_rng r;
  sg_rng_seed(&r, 7);
  int cases = 0;
  for (size_t ti = 0; ti < 2; ti++)
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
      for (int kind = 0; kind < 10; kind++) {
        sg_dtype d = types[ti];
        int64_t n = sizes[si];
        size_t esz = d == SG_DTYPE_F32 ? 4 : 8;
        void *ref = sg_malloc((size_t)n * esz + 8), *cand = sg_malloc((size_t)n * esz + 8);
        void *copy = sg_malloc((size_t)n * esz + 8);
        for (int64_t i = 0; i < n; i++) {
          double y = sg_rng_normal(&r) * (i % 5 == 0 ? 1e3 : 1);
          if (i % 97 == 3)
            y = 0; /* no relative error where ref is 0 */
          set_val(d, ref, i, y);
          set_val(d, cand, i, y * (1 + 1e-7 * sg_rng_normal(&r)));
        }
        /* where the special elements go */
        int64_t at[4] = {0, n - 1, n > 1024 ? 1023 : n / 2,
                         n ? (int64_t)(sg_rng_next(&r) % (uint64_t)n) : 0};
        for (int k = 0; k < 4 && n > 0; k++) {
          int64_t i = at[k];
          switch (kind) {
          case 0: break; /* all close */
          case 1: set_val(d, cand, i, NAN); break;
          case 2: set_val(d, cand, i, NAN); set_val(d, ref, i, NAN); break;
          case 3: set_val(d, cand, i, INFINITY); set_val(d, ref, i, INFINITY); break;
          case 4: set_val(d, cand, i, -INFINITY); set_val(d, ref, i, INFINITY); break;
          case 5: set_val(d, cand, i, 1e30); break;
          case 6: sg_eval_poison(d, (char *)cand + (size_t)i * esz, 1); break;
          case 7: set_val(d, cand, i, -0.0); set_val(d, ref, i, 0.0); break;
          case 8: set_val(d, ref, i, INFINITY); break;
          case 9: /* a mismatch just over the tolerance */
            set_val(d, ref, i, 1.0);
            set_val(d, cand, i, 1.0 + 2e-3);
            break;
          }
        }
        sg_eval_cmp want, got, got2;
        spec_compare(d, cand, ref, n, 1e-4, 1e-3, &want);
        sg_eval_compare(d, cand, ref, n, 1e-4, 1e-3, &got);
        memcpy(copy, cand, (size_t)n * esz);
        sg_eval_compare_poison(d, copy, ref, n, 1e-4, 1e-3, &got2);
        const sg_eval_cmp *gs[2] = {&got, &got2};
        for (int g = 0; g < 2; g++) {
          SG_CHECK_MSG(gs[g]->first_bad == want.first_bad && gs[g]->nbad == want.nbad,
                       "type %zu size %lld kind %d: first bad %lld (want %lld), %lld bad "
                       "(want %lld)", ti, (long long)n, kind, (long long)gs[g]->first_bad,
                       (long long)want.first_bad, (long long)gs[g]->nbad,
                       (long long)want.nbad);
          SG_CHECK(same_double(gs[g]->max_abs, want.max_abs));
          SG_CHECK(same_double(gs[g]->max_rel, want.max_rel));
          if (want.first_bad >= 0) {
            SG_CHECK_EQ_INT(gs[g]->kind, want.kind);
            SG_CHECK(same_double(gs[g]->cand, want.cand));
            SG_CHECK(same_double(gs[g]->ref, want.ref));
          }
        }
        for (int64_t i = 0; i < n; i++)
          SG_CHECK(sg_eval_is_poison(d, copy, i));
        free(ref);
        free(cand);
        free(copy);
        cases++;
      }
  SG_CHECK_EQ_INT(cases, 2 * 13 * 10);
}

/* sg_eval_refresh is the rule docs/eval.md states, bit for bit: bit k of
 * each 64-bit draw reflects element 64 m + k about the distribution's
 * center c (x -> 2c - x; for c = 0 its sign flipped), then a contiguous
 * eighth (at least 64) at a random place is drawn anew from the same
 * generator; the rule written out here, the plain way. */
static void test_refresh_is_the_rule(void) {
  const int64_t sizes[] = {1, 63, 64, 65, 100, 512, 1000, 4096 + 17};
  const double centers[] = {0, 0.5, -3};
  for (int dt = 0; dt < 2; dt++)
    for (int ci = 0; ci < 3; ci++)
      for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        int64_t n = sizes[si];
        int64_t shape[1] = {n};
        sg_dtype d = dt ? SG_DTYPE_F64 : SG_DTYPE_F32;
        double c = centers[ci];
        /* normal about its mean, or uniform about its middle */
        sg_task_arg a = ci == 2 ? make_arg(d, 1, shape, "uniform", c - 2, c + 2)
                                : make_arg(d, 1, shape, "normal", c, 2);
        double got_c = 99;
        SG_CHECK(sg_eval_reflect_center(&a, &got_c) && got_c == c);
        SG_CHECK(sg_eval_sign_symmetric(&a) == (c == 0));
        size_t esz = dt ? 8 : 4;
        char *got = sg_malloc((size_t)n * esz), *want = sg_malloc((size_t)n * esz);
        sg_rng r;
        sg_rng_seed(&r, 11);
        sg_eval_fill(&a, got, &r);
        memcpy(want, got, (size_t)n * esz);
        sg_rng_seed(&r, 12);
        sg_eval_refresh(&a, got, &r);
        sg_rng_seed(&r, 12);
        for (int64_t i = 0; i < n; i += 64) {
          uint64_t bits = sg_rng_next(&r);
          for (int64_t k = i; k < n && k < i + 64; k++, bits >>= 1)
            if (bits & 1) {
              if (dt)
                ((double *)want)[k] = 2 * c - ((double *)want)[k];
              else
                ((float *)want)[k] = (float)(2 * c - (double)((float *)want)[k]);
            }
        }
        int64_t len = n / 8 > 64 ? n / 8 : (n < 64 ? n : 64);
        int64_t from = n > len ? (int64_t)(sg_rng_next(&r) % (uint64_t)(n - len + 1)) : 0;
        sg_task_arg part = a;
        part.shape[0] = len;
        part.numel = len;
        sg_eval_fill(&part, want + (size_t)from * esz, &r);
        SG_CHECK_MSG(memcmp(got, want, (size_t)n * esz) == 0, "type %d center %g size %lld",
                     dt, c, (long long)n);
        free(got);
        free(want);
      }
}

/* Where a reflection cannot keep the distribution the input is drawn anew:
 * a symmetric matrix (its halves, reflected apart and averaged again,
 * would turn to zeros where the bits differ), integers, a choice that is
 * not closed under negation. Ten refreshes of a symmetric matrix leave it
 * symmetric, without zeros, and new. */
static void test_refresh_draws_anew_where_it_cannot_reflect(void) {
  int64_t shape[2] = {64, 64};
  sg_task_arg a = make_arg(SG_DTYPE_F32, 2, shape, "normal", 0, 1);
  snprintf(a.init.structure, sizeof a.init.structure, "symmetric");
  double c;
  SG_CHECK(!sg_eval_reflect_center(&a, &c));
  float *x = sg_malloc(4096 * 4), *first = sg_malloc(4096 * 4);
  sg_rng r;
  sg_rng_seed(&r, 3);
  sg_eval_fill(&a, x, &r);
  memcpy(first, x, 4096 * 4);
  for (int k = 0; k < 10; k++)
    sg_eval_refresh(&a, x, &r);
  int zeros = 0, same = 0;
  for (int i = 0; i < 64; i++)
    for (int j = 0; j < 64; j++) {
      SG_CHECK(x[i * 64 + j] == x[j * 64 + i]);
      zeros += x[i * 64 + j] == 0;
      same += x[i * 64 + j] == first[i * 64 + j];
    }
  SG_CHECK_MSG(zeros == 0, "%d zeros", zeros);
  SG_CHECK_MSG(same < 40, "%d unchanged", same);
  sg_task_arg i32 = make_arg(SG_DTYPE_I32, 2, shape, "normal", 0, 1);
  SG_CHECK(!sg_eval_reflect_center(&i32, &c));
  double vals[2] = {1, 2};
  sg_task_arg ch = make_arg(SG_DTYPE_F32, 2, shape, "choice", 0, 0);
  ch.init.values = vals;
  ch.init.nvalues = 2;
  SG_CHECK(!sg_eval_reflect_center(&ch, &c));
  vals[0] = -2;
  SG_CHECK(sg_eval_reflect_center(&ch, &c) && c == 0);
  free(x);
  free(first);
}

static void test_cmp_message(void) {
  int64_t shape[2] = {3, 4};
  sg_task_arg a = make_arg(SG_DTYPE_F32, 2, shape, "normal", 0, 1);
  a.name = "C";
  a.kind = SG_ARG_OUTPUT;
  float ref[12], cand[12];
  for (int i = 0; i < 12; i++)
    ref[i] = cand[i] = (float)i;
  sg_eval_poison(SG_DTYPE_F32, cand + 6, 1);
  sg_eval_cmp c;
  sg_eval_compare(SG_DTYPE_F32, cand, ref, 12, 1e-4, 1e-4, &c);
  char *m = sg_eval_cmp_message(&a, &c, 1e-4, 1e-4);
  SG_CHECK_CONTAINS(m, "output C: element 6 (index [1, 2] of shape 3x4) was never written");
  SG_CHECK_CONTAINS(m, "the reference gives 6");
  SG_CHECK_CONTAINS(m, "1 of 12 elements are wrong");
  free(m);
  cand[6] = 6.5f;
  cand[11] = 0;
  sg_eval_compare(SG_DTYPE_F32, cand, ref, 12, 1e-4, 1e-4, &c);
  m = sg_eval_cmp_message(&a, &c, 1e-4, 1e-4);
  SG_CHECK_CONTAINS(m, "element 6 (index [1, 2] of shape 3x4) is 6.5 but the reference gives 6");
  SG_CHECK_CONTAINS(m, "2 of 12 elements are wrong");
  SG_CHECK_CONTAINS(m, "max abs error 11");
  free(m);
}

static void test_median_mean(void) {
  double odd[5] = {5, 1, 4, 2, 3};
  double even[4] = {10, 1, 3, 2};
  SG_CHECK_NEAR(sg_stats_median(odd, 5), 3, 0);
  SG_CHECK_NEAR(sg_stats_median(even, 4), 2.5, 0);
  SG_CHECK_NEAR(sg_stats_mean(even, 4), 4, 0);
  SG_CHECK_NEAR(sg_stats_mean(odd, 5), 3, 0);
  SG_CHECK(odd[0] == 5 && even[0] == 10); /* inputs untouched */
  SG_CHECK(isnan(sg_stats_median(odd, 0)) && isnan(sg_stats_mean(odd, 0)));
  double one = 7;
  SG_CHECK_NEAR(sg_stats_median(&one, 1), 7, 0);
}

/* ---- ELF symbols and rules ------------------------------------------------- */

/* Compiles src into a shared object and reads it; the caller frees. */
static char *build_so(const char *src, size_t *len) {
  char dir[] = "/tmp/sg_elf_XXXXXX";
  SG_CHECK(mkdtemp(dir));
  char *c = sg_asprintf("%s/x.c", dir), *so = sg_asprintf("%s/x.so", dir);
  sg_err err;
  SG_CHECK_OK(sg_file_write(c, src, strlen(src), &err), err);
  char *cmd = sg_asprintf("cc -shared -fPIC -o %s %s 2>&1", so, c);
  SG_CHECK_MSG(system(cmd) == 0, "%s failed", cmd);
  char *data = NULL;
  SG_CHECK_OK(sg_file_read(so, 1 << 26, &data, len, &err), err);
  sg_rm_rf(dir, &err);
  free(c);
  free(so);
  free(cmd);
  return data;
}

static const sg_elf_sym *find_sym(const sg_elf_sym *s, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(s[i].name, name) == 0)
      return &s[i];
  return NULL;
}

static void test_elf_dynamic_symbols(void) {
  size_t len = 0;
  char *so = build_so("#include <stdlib.h>\n#include <unistd.h>\n"
                      "int data_obj = 3;\n"
                      "void *kernel(int n) { if (n < 0) fork(); return malloc(n); }\n",
                      &len);
  sg_elf_sym *syms = NULL;
  size_t n = 0;
  sg_err err;
  SG_CHECK_OK(sg_elf_dynamic_symbols(so, len, &syms, &n, &err), err);
  const sg_elf_sym *k = find_sym(syms, n, "kernel");
  SG_CHECK(k && k->defined && k->func);
  const sg_elf_sym *d = find_sym(syms, n, "data_obj");
  SG_CHECK(d && d->defined && !d->func);
  const sg_elf_sym *m = find_sym(syms, n, "malloc");
  SG_CHECK(m && !m->defined);
  const sg_elf_sym *f = find_sym(syms, n, "fork");
  SG_CHECK(f && !f->defined);
  sg_elf_symbols_free(syms, n);

  /* every truncation either parses or is refused; none reads past the end
   * (an over-read shows under AddressSanitizer: each copy is exactly sized) */
  for (size_t cut = 0; cut < len; cut += (cut < 256 ? 1 : 97)) {
    char *part = sg_malloc(cut ? cut : 1);
    memcpy(part, so, cut);
    int rc = sg_elf_dynamic_symbols(part, cut, &syms, &n, &err);
    SG_CHECK(rc == 0 || rc == SG_EPARSE);
    if (rc == 0)
      sg_elf_symbols_free(syms, n);
    free(part);
  }
  SG_CHECK_EQ_INT(sg_elf_dynamic_symbols("hello", 5, &syms, &n, &err), SG_EPARSE);
  SG_CHECK_CONTAINS(err.msg, "not an ELF file");
  /* corrupt the section header offset */
  char *bad = sg_malloc(len);
  memcpy(bad, so, len);
  uint64_t huge = UINT64_MAX - 8;
  memcpy(bad + 0x28, &huge, 8); /* e_shoff */
  SG_CHECK_EQ_INT(sg_elf_dynamic_symbols(bad, len, &syms, &n, &err), SG_EPARSE);
  free(bad);
  free(so);
}

static void test_forbidden_symbols(void) {
  const char *bad[] = {"fork", "vfork", "execve", "execvp", "system", "popen",
                       "posix_spawn", "pthread_create", "thrd_create", "socket",
                       "connect", "getaddrinfo", "fopen", "open", "openat",
                       "creat", "dlopen", "dlsym", "syscall", "kill", "ptrace",
                       "reference", "reference_hinge_loss", "referenceImpl",
                       "write", "mmap", "mprotect"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    SG_CHECK_MSG(sg_eval_forbidden_symbol(bad[i]), "%s should be forbidden", bad[i]);
  const char *ok[] = {"malloc", "free", "memcpy", "memset", "sqrtf", "expf",
                      "printf", "puts", "abort", "exit", "__stack_chk_fail",
                      "my_reference", "pthread_mutex_lock", "refer"};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
    SG_CHECK_MSG(!sg_eval_forbidden_symbol(ok[i]), "%s should be allowed", ok[i]);
  SG_CHECK_CONTAINS(sg_eval_forbidden_symbol("reference_x"), "reference");
  SG_CHECK_CONTAINS(sg_eval_forbidden_symbol("fork"), "process");
  SG_CHECK_CONTAINS(sg_eval_forbidden_symbol("socket"), "network");
  SG_CHECK_CONTAINS(sg_eval_forbidden_symbol("fopen"), "files");
}

static bool fake_resolve(const char *name, void *ctx) {
  (void)ctx;
  return strcmp(name, "malloc") == 0 || strcmp(name, "sqrtf") == 0;
}

static void test_check_symbols(void) {
  sg_elf_sym good[] = {{"kern", true, false, true}, {"malloc", false, false, false},
                       {"__gmon_start__", false, true, false}};
  sg_eval_status st;
  char *msg;
  sg_eval_check_symbols(good, 3, "kern", fake_resolve, NULL, &st, &msg);
  SG_CHECK_EQ_INT(st, SG_EVAL_OK);
  SG_CHECK(msg == NULL);

  sg_elf_sym calls_ref[] = {{"kern", true, false, true},
                            {"nosuch", false, false, false},
                            {"reference_kern", false, false, false}};
  sg_eval_check_symbols(calls_ref, 3, "kern", fake_resolve, NULL, &st, &msg);
  SG_CHECK_EQ_INT(st, SG_EVAL_REJECTED); /* rejection wins over link errors */
  SG_CHECK_CONTAINS(msg, "`reference_kern`");
  free(msg);

  sg_elf_sym unresolved[] = {{"kern", true, false, true}, {"nosuch", false, false, false}};
  sg_eval_check_symbols(unresolved, 2, "kern", fake_resolve, NULL, &st, &msg);
  SG_CHECK_EQ_INT(st, SG_EVAL_COMPILE_ERROR);
  SG_CHECK_CONTAINS(msg, "undefined reference to `nosuch`");
  free(msg);

  sg_elf_sym no_entry[] = {{"other", true, false, true}, {"kern", true, false, false}};
  sg_eval_check_symbols(no_entry, 2, "kern", fake_resolve, NULL, &st, &msg);
  SG_CHECK_EQ_INT(st, SG_EVAL_COMPILE_ERROR);
  SG_CHECK_CONTAINS(msg, "does not define the entry function `kern`");
  free(msg);

  sg_elf_sym spawn[] = {{"kern", true, false, true}, {"popen", false, false, true}};
  sg_eval_check_symbols(spawn, 2, "kern", fake_resolve, NULL, &st, &msg);
  SG_CHECK_EQ_INT(st, SG_EVAL_REJECTED);
  SG_CHECK_CONTAINS(msg, "`popen`");
  free(msg);
}

/* ---- messages --------------------------------------------------------------- */

static void test_trim_diagnostics(void) {
  sg_buf b;
  sg_buf_init(&b, 0);
  for (int i = 1; i <= 30; i++) {
    sg_buf_printf(&b, "candidate.c:%d:5: error: thing %d\n", i, i);
    sg_buf_printf(&b, "   %d | code\n", i);
  }
  char *t = sg_eval_trim_diagnostics(sg_buf_str(&b), 20, 100000);
  SG_CHECK_CONTAINS(t, "candidate.c:20:5: error: thing 20\n   20 | code\n");
  SG_CHECK(strstr(t, "thing 21") == NULL);
  SG_CHECK_CONTAINS(t, "[10 more diagnostics not shown]");
  free(t);
  t = sg_eval_trim_diagnostics(sg_buf_str(&b), 20, 200);
  SG_CHECK(strlen(t) < 260);
  SG_CHECK_CONTAINS(t, "thing 1\n");
  SG_CHECK_CONTAINS(t, "more diagnostics not shown");
  free(t);
  t = sg_eval_trim_diagnostics("a.c:1:1: warning: w\nnote\n", 20, 4096);
  SG_CHECK_STR_EQ(t, "a.c:1:1: warning: w\nnote\n");
  free(t);
  t = sg_eval_trim_diagnostics("", 20, 4096);
  SG_CHECK_STR_EQ(t, "");
  free(t);
  sg_buf_free(&b);
}

static void test_signal_text(void) {
  char *s = sg_eval_signal_text(SIGSEGV);
  SG_CHECK_STR_EQ(s, "SIGSEGV (segmentation fault)");
  free(s);
  s = sg_eval_signal_text(SIGABRT);
  SG_CHECK_STR_EQ(s, "SIGABRT (aborted)");
  free(s);
  s = sg_eval_signal_text(SIGXCPU);
  SG_CHECK_CONTAINS(s, "SIGXCPU (CPU time limit exceeded)");
  free(s);
  s = sg_eval_signal_text(1000);
  SG_CHECK_STR_EQ(s, "signal 1000");
  free(s);
}

static void test_parse_device(void) {
  int cpu = -1;
  sg_err err;
  SG_CHECK_OK(sg_eval_cpu_parse_device("cpu:3", &cpu, &err), err);
  SG_CHECK_EQ_INT(cpu, 3);
  SG_CHECK_OK(sg_eval_cpu_parse_device(NULL, &cpu, &err), err);
  SG_CHECK_EQ_INT(cpu, 0);
  const char *bad[] = {"cuda:0", "cpu:", "cpu:x", "cpu:-1", "cpu:1x", "gpu", ""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    SG_CHECK_EQ_INT(sg_eval_cpu_parse_device(bad[i], &cpu, &err), SG_EINVAL);
    SG_CHECK_CONTAINS(err.msg, "cpu:N");
  }
}

/* ---- the contract ------------------------------------------------------------- */

static void test_status_names(void) {
  const char *names[] = {"ok", "compile_error", "runtime_error", "numerical_error",
                         "timeout", "rejected", "aborted", "infra_error"};
  for (int i = 0; i < SG_EVAL__COUNT; i++) {
    SG_CHECK_STR_EQ(sg_eval_status_name((sg_eval_status)i), names[i]);
    SG_CHECK_EQ_INT(sg_eval_status_parse(names[i]), i);
  }
  SG_CHECK_EQ_INT(sg_eval_status_parse("fine"), -1);
  SG_CHECK_EQ_INT(sg_eval_status_parse(NULL), -1);
}

static void test_opts_default(void) {
  sg_eval_opts o;
  memset(&o, 0xff, sizeof o);
  sg_eval_opts_default(&o);
  SG_CHECK(o.device == NULL && o.work_dir == NULL);
  SG_CHECK_EQ_INT(o.correctness_trials, 3);
  SG_CHECK_EQ_INT(o.warmup_runs, 10);
  SG_CHECK_EQ_INT(o.timed_runs, 40);
  SG_CHECK(o.compile_timeout_s > 0 && o.eval_timeout > 0);
  SG_CHECK(o.seed == 0 && !o.strict);
  SG_CHECK(sg_evaluator_find("cpu") != NULL);
  SG_CHECK_STR_EQ(sg_evaluator_find("cpu")->name, "cpu");
  SG_CHECK(sg_evaluator_find("tpu") == NULL);
  SG_CHECK_STR_EQ(sg_evaluator_find("cuda")->name, "cuda");
  SG_CHECK_STR_EQ(sg_evaluator_find("kernelbench")->name, "kernelbench");
}

static void test_result_json_round_trip(void) {
  sg_eval_result r;
  sg_eval_result_init(&r);
  SG_CHECK(isnan(r.speedup) && r.first_mismatch == -1);
  r.status = SG_EVAL_OK;
  r.message = sg_strdup("fine");
  r.speedup = 2.5;
  r.ref_ms = 10;
  r.cand_ms = 4;
  r.ref_mean_ms = 11;
  r.cand_mean_ms = 4.5;
  r.compile_s = 0.3;
  r.run_s = 1.5;
  r.max_abs_err = 1e-6;
  r.max_rel_err = 2e-6;
  r.network_isolated = true;
  r.seed = 12345;
  json_t *j = sg_eval_result_to_json(&r);
  const char *keys[] = {"status", "message", "speedup", "ref_ms", "cand_ms",
                        "compile_s", "run_s", "ref_mean_ms", "cand_mean_ms",
                        "max_abs_err", "max_rel_err", "first_mismatch",
                        "network_isolated", "seed"};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
    SG_CHECK_MSG(json_object_get(j, keys[i]), "key %s missing", keys[i]);
  SG_CHECK(json_is_null(json_object_get(j, "first_mismatch")));
  sg_eval_result back;
  sg_err err;
  SG_CHECK_OK(sg_eval_result_from_json(j, &back, &err), err);
  SG_CHECK_EQ_INT(back.status, SG_EVAL_OK);
  SG_CHECK_STR_EQ(back.message, "fine");
  SG_CHECK_NEAR(back.speedup, 2.5, 0);
  SG_CHECK_NEAR(back.cand_mean_ms, 4.5, 0);
  SG_CHECK_EQ_INT(back.seed, 12345);
  SG_CHECK(back.network_isolated);
  SG_CHECK_EQ_INT(back.first_mismatch, -1);
  sg_eval_result_free(&back);
  json_decref(j);

  /* not ok: speedup is null even if set; NaN is null */
  r.status = SG_EVAL_NUMERICAL_ERROR;
  r.first_mismatch = 17;
  r.ref_ms = NAN;
  j = sg_eval_result_to_json(&r);
  SG_CHECK(json_is_null(json_object_get(j, "speedup")));
  SG_CHECK(json_is_null(json_object_get(j, "ref_ms")));
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(j, "first_mismatch")), 17);
  SG_CHECK_OK(sg_eval_result_from_json(j, &back, &err), err);
  SG_CHECK_EQ_INT(back.status, SG_EVAL_NUMERICAL_ERROR);
  SG_CHECK(isnan(back.speedup) && isnan(back.ref_ms));
  SG_CHECK_EQ_INT(back.first_mismatch, 17);
  sg_eval_result_free(&back);
  json_decref(j);
  sg_eval_result_free(&r);

  json_t *bad = json_pack("{s:s}", "status", "great");
  SG_CHECK_EQ_INT(sg_eval_result_from_json(bad, &back, &err), SG_EPARSE);
  SG_CHECK_CONTAINS(err.msg, "status");
  json_decref(bad);
  bad = json_pack("{s:s,s:s}", "status", "ok", "ref_ms", "fast");
  SG_CHECK_EQ_INT(sg_eval_result_from_json(bad, &back, &err), SG_EPARSE);
  SG_CHECK_CONTAINS(err.msg, "ref_ms");
  json_decref(bad);
}

SG_TEST_MAIN(SG_TEST(test_rng_is_deterministic),
             SG_TEST(test_rng_uniform_and_normal_moments),
             SG_TEST(test_fill_distributions), SG_TEST(test_fill_is_reproducible),
             SG_TEST(test_fill_structures), SG_TEST(test_poison),
             SG_TEST(test_compare_equal_and_within_tolerance),
             SG_TEST(test_compare_nan_and_unwritten), SG_TEST(test_cmp_message),
             SG_TEST(test_compare_fast_path_agrees_with_rules),
             SG_TEST(test_refresh_is_the_rule),
             SG_TEST(test_refresh_draws_anew_where_it_cannot_reflect),
             SG_TEST(test_median_mean), SG_TEST(test_elf_dynamic_symbols),
             SG_TEST(test_forbidden_symbols), SG_TEST(test_check_symbols),
             SG_TEST(test_trim_diagnostics), SG_TEST(test_signal_text),
             SG_TEST(test_parse_device), SG_TEST(test_status_names),
             SG_TEST(test_opts_default), SG_TEST(test_result_json_round_trip))
