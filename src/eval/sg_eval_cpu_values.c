/* sg_eval_cpu_values.c: the values the cpu evaluator's judge works on
 * (sg_eval_cpu.h): random inputs and their per-call refresh, NaN poisoning,
 * allclose (a vectorized common case in front of the exact rules) and its
 * message. Pure: nothing here does I/O, so all of it is tested directly.
 * Apart from sg_eval_cpu_check.c (the symbol rules and the rest) since the
 * per-call work made both together too long for one file.
 */
#include "eval/sg_eval_cpu.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- random numbers ----------------------------------------------------- */

/* Normal values by Marsaglia and Tsang's ziggurat ("The Ziggurat Method for
 * Generating Random Variables", 2000; 128 layers): one 32-bit draw and one
 * multiply for ~99% of values. Inputs run to tens of millions of elements,
 * and the polar method made drawing them most of an evaluation's time. The
 * tables are constants computed once. */
static struct {
  uint32_t kn[128];
  double wn[128], fn[128];
} zig;
static pthread_once_t zig_once = PTHREAD_ONCE_INIT;

static void zig_init(void) {
  const double m1 = 2147483648.0, vn = 9.91256303526217e-3;
  double dn = 3.442619855899, tn = dn;
  double q = vn / exp(-.5 * dn * dn);
  zig.kn[0] = (uint32_t)((dn / q) * m1);
  zig.kn[1] = 0;
  zig.wn[0] = q / m1;
  zig.wn[127] = dn / m1;
  zig.fn[0] = 1.0;
  zig.fn[127] = exp(-.5 * dn * dn);
  for (int i = 126; i >= 1; i--) {
    dn = sqrt(-2. * log(vn / dn + exp(-.5 * dn * dn)));
    zig.kn[i + 1] = (uint32_t)((dn / tn) * m1);
    tn = dn;
    zig.fn[i] = exp(-.5 * dn * dn);
    zig.wn[i] = dn / m1;
  }
}

/* Uniform in (0, 1): never 0, so its log is finite. */
static double uni_open(sg_rng *r) {
  return ((double)(sg_rng_next(r) >> 11) + 0.5) * 0x1.0p-53;
}

static double zig_normal(sg_rng *r) {
  for (;;) {
    int32_t hz = (int32_t)(uint32_t)(sg_rng_next(r) >> 32);
    uint32_t iz = (uint32_t)hz & 127;
    uint32_t ahz = hz < 0 ? (uint32_t)(-(int64_t)hz) : (uint32_t)hz;
    if (ahz < zig.kn[iz])
      return hz * zig.wn[iz];
    double x = hz * zig.wn[iz];
    if (iz == 0) { /* the tail beyond r */
      const double rr = 3.442620;
      double y;
      do {
        x = -log(uni_open(r)) / rr;
        y = -log(uni_open(r));
      } while (y + y < x * x);
      return hz > 0 ? rr + x : -rr - x;
    }
    if (zig.fn[iz] + uni_open(r) * (zig.fn[iz - 1] - zig.fn[iz]) <
        exp(-.5 * x * x))
      return x;
  }
}

double sg_rng_normal(sg_rng *r) {
  pthread_once(&zig_once, zig_init);
  return zig_normal(r);
}

uint64_t sg_rng_derive(uint64_t seed, uint64_t trial, uint64_t arg) {
  uint64_t x = seed;
  uint64_t a = sg_splitmix64(&x);
  x = a ^ (trial * UINT64_C(0xD1B54A32D192ED03));
  uint64_t b = sg_splitmix64(&x);
  x = b ^ (arg * UINT64_C(0xABC98388FB8FAC03));
  return sg_splitmix64(&x);
}

static double get_elem(sg_dtype d, const void *buf, int64_t i) {
  switch (d) {
  case SG_DTYPE_F32: return ((const float *)buf)[i];
  case SG_DTYPE_F64: return ((const double *)buf)[i];
  case SG_DTYPE_I32: return ((const int32_t *)buf)[i];
  case SG_DTYPE_I64: return (double)((const int64_t *)buf)[i];
  default: return 0;
  }
}

static void set_elem(sg_dtype d, void *buf, int64_t i, double v) {
  switch (d) {
  case SG_DTYPE_F32: ((float *)buf)[i] = (float)v; break;
  case SG_DTYPE_F64: ((double *)buf)[i] = v; break;
  case SG_DTYPE_I32: ((int32_t *)buf)[i] = (int32_t)llround(fmax(fmin(v, 2147483647.0), -2147483648.0)); break;
  case SG_DTYPE_I64: ((int64_t *)buf)[i] = (int64_t)llround(v); break;
  default: break;
  }
}

enum { DIST_NORMAL, DIST_UNIFORM, DIST_CHOICE };

static int dist_of(const sg_init_spec *s) {
  return strcmp(s->dist, "normal") == 0    ? DIST_NORMAL
         : strcmp(s->dist, "uniform") == 0 ? DIST_UNIFORM
                                           : DIST_CHOICE;
}

/* Elements [from, to) drawn from a->init (no structure). The float cases
 * have loops of their own (the same draws, in the same order, as the
 * general one): inputs run to tens of millions of elements. */
static void fill_range(const sg_task_arg *a, void *buf, int64_t from, int64_t to,
                       sg_rng *r) {
  const sg_init_spec *s = &a->init;
  int dist = dist_of(s);
  pthread_once(&zig_once, zig_init);
  const double p0 = s->p[0], p1 = s->p[1];
  if (dist == DIST_NORMAL && a->dtype == SG_DTYPE_F32) {
    float *f = buf;
    for (int64_t i = from; i < to; i++)
      f[i] = (float)(p0 + p1 * zig_normal(r));
    return;
  }
  if (dist == DIST_NORMAL && a->dtype == SG_DTYPE_F64) {
    double *f = buf;
    for (int64_t i = from; i < to; i++)
      f[i] = p0 + p1 * zig_normal(r);
    return;
  }
  for (int64_t i = from; i < to; i++) {
    double v;
    if (dist == DIST_NORMAL) {
      v = p0 + p1 * zig_normal(r);
    } else if (dist == DIST_UNIFORM) {
      v = p0 + (p1 - p0) * sg_rng_uniform(r);
    } else {
      v = s->nvalues ? s->values[sg_rng_next(r) % s->nvalues] : 0;
    }
    if (a->dtype == SG_DTYPE_F32)
      ((float *)buf)[i] = (float)v;
    else if (a->dtype == SG_DTYPE_F64)
      ((double *)buf)[i] = v;
    else
      set_elem(a->dtype, buf, i, v);
  }
}

/* The structure of a->init applied to each trailing square matrix. */
static void apply_structure(const sg_task_arg *a, void *buf) {
  const char *st = a->init.structure;
  if (!st[0] || a->ndims < 2)
    return;
  enum { SYM, UPPER, LOWER, DIAG } kind = strcmp(st, "symmetric") == 0 ? SYM
                                          : strcmp(st, "upper") == 0   ? UPPER
                                          : strcmp(st, "lower") == 0   ? LOWER
                                                                       : DIAG;
  int64_t n = a->shape[a->ndims - 1];
  int64_t mats = a->numel / (n * n);
  for (int64_t m = 0; m < mats; m++) {
    int64_t base = m * n * n;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        int64_t ij = base + i * n + j, ji = base + j * n + i;
        if (kind == SYM) {
          if (j > i) { /* A = (R + R^T) / 2, both halves at once */
            double v = (get_elem(a->dtype, buf, ij) + get_elem(a->dtype, buf, ji)) / 2;
            set_elem(a->dtype, buf, ij, v);
            set_elem(a->dtype, buf, ji, v);
          }
        } else if ((kind == UPPER && j < i) || (kind == LOWER && j > i) ||
                   (kind == DIAG && j != i)) {
          set_elem(a->dtype, buf, ij, 0);
        }
      }
  }
}

void sg_eval_fill(const sg_task_arg *a, void *buf, sg_rng *r) {
  fill_range(a, buf, 0, a->numel, r);
  apply_structure(a, buf);
}

bool sg_eval_reflect_center(const sg_task_arg *a, double *center) {
  const sg_init_spec *s = &a->init;
  if (a->dtype != SG_DTYPE_F32 && a->dtype != SG_DTYPE_F64)
    return false;
  /* a symmetric matrix's two halves would be flipped apart (and averaged
   * back to zeros where they differ): drawn anew instead */
  if (strcmp(s->structure, "symmetric") == 0)
    return false;
  switch (dist_of(s)) {
  case DIST_NORMAL: *center = s->p[0]; return true;
  case DIST_UNIFORM: *center = (s->p[0] + s->p[1]) / 2; return true;
  default:
    if (strcmp(s->dist, "choice") != 0 || s->nvalues == 0)
      return false;
    for (size_t i = 0; i < s->nvalues; i++) {
      bool found = false;
      for (size_t k = 0; k < s->nvalues && !found; k++)
        found = s->values[k] == -s->values[i];
      if (!found)
        return false;
    }
    *center = 0;
    return true;
  }
}

bool sg_eval_sign_symmetric(const sg_task_arg *a) {
  double c;
  return sg_eval_reflect_center(a, &c) && c == 0;
}

/* x -> 2c - x where bit k of a draw is set, for element i + k of every 64
 * (the same bits as the sign flips): computed for every element, two at a
 * time, and kept where the bit says so (no branch). */
typedef float v2f_r __attribute__((vector_size(8)));
typedef double v2d_r __attribute__((vector_size(16)));
typedef int32_t v2i_r __attribute__((vector_size(8)));
typedef int64_t v2l_r __attribute__((vector_size(16)));

static void reflect(const sg_task_arg *a, void *buf, double center, sg_rng *r) {
  const double c2 = 2 * center;
  const v2d_r c2v = {c2, c2};
  int64_t n = a->numel;
  for (int64_t i = 0; i < n; i += 64) {
    uint64_t bits = sg_rng_next(r);
    int64_t end = i + 64 < n ? i + 64 : n, k = i;
    for (; k + 2 <= end; k += 2, bits >>= 2) {
      if (a->dtype == SG_DTYPE_F32) {
        v2f_r v;
        memcpy(&v, (float *)buf + k, sizeof v);
        v2f_r w = __builtin_convertvector(c2v - __builtin_convertvector(v, v2d_r), v2f_r);
        v2i_r m = {-(int32_t)(bits & 1), -(int32_t)((bits >> 1) & 1)};
        v = (v2f_r)((m & (v2i_r)w) | (~m & (v2i_r)v));
        memcpy((float *)buf + k, &v, sizeof v);
      } else {
        v2d_r v;
        memcpy(&v, (double *)buf + k, sizeof v);
        v2d_r w = c2v - v;
        v2l_r m = {-(int64_t)(bits & 1), -(int64_t)((bits >> 1) & 1)};
        v = (v2d_r)((m & (v2l_r)w) | (~m & (v2l_r)v));
        memcpy((double *)buf + k, &v, sizeof v);
      }
    }
    if (k < end) { /* an odd last element */
      if (a->dtype == SG_DTYPE_F32) {
        float *f = buf;
        f[k] = (bits & 1) ? (float)(c2 - (double)f[k]) : f[k];
      } else {
        double *f = buf;
        f[k] = (bits & 1) ? c2 - f[k] : f[k];
      }
    }
  }
}

/* sign_masks32[b][k]: the float sign bit where bit k of b is set. */
static uint32_t sign_masks32[256][8];
static uint64_t sign_masks64[256][8];

static void sign_masks_init(void) {
  for (int b = 0; b < 256; b++)
    for (int k = 0; k < 8; k++) {
      sign_masks32[b][k] = (uint32_t)((b >> k) & 1) << 31;
      sign_masks64[b][k] = (uint64_t)((b >> k) & 1) << 63;
    }
}

/* Every sign afresh: one random bit per element, bit k of a draw for
 * element i + k, eight at a time through a table of sign masks (the
 * bit-serial loop was most of a refresh). */
static void flip_signs(const sg_task_arg *a, void *buf, sg_rng *r) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, sign_masks_init);
  int64_t n = a->numel, whole = n / 64 * 64;
  if (a->dtype == SG_DTYPE_F32) {
    uint32_t *u = buf;
    for (int64_t i = 0; i < whole; i += 64) {
      uint64_t bits = sg_rng_next(r);
      for (int b = 0; b < 8; b++, bits >>= 8) {
        const uint32_t *m = sign_masks32[bits & 255];
        uint32_t *v = u + i + 8 * b;
        for (int k = 0; k < 8; k++)
          v[k] ^= m[k];
      }
    }
  } else {
    uint64_t *u = buf;
    for (int64_t i = 0; i < whole; i += 64) {
      uint64_t bits = sg_rng_next(r);
      for (int b = 0; b < 8; b++, bits >>= 8) {
        const uint64_t *m = sign_masks64[bits & 255];
        uint64_t *v = u + i + 8 * b;
        for (int k = 0; k < 8; k++)
          v[k] ^= m[k];
      }
    }
  }
  if (whole < n) { /* the last, partial 64 */
    uint64_t bits = sg_rng_next(r);
    for (int64_t k = whole; k < n; k++, bits >>= 1) {
      if (a->dtype == SG_DTYPE_F32)
        ((uint32_t *)buf)[k] ^= (uint32_t)(bits & 1) << 31;
      else
        ((uint64_t *)buf)[k] ^= (bits & 1) << 63;
    }
  }
}

void sg_eval_refresh(const sg_task_arg *a, void *buf, sg_rng *r) {
  double center;
  if (!sg_eval_reflect_center(a, &center)) {
    sg_eval_fill(a, buf, r);
    return;
  }
  if (center == 0)
    flip_signs(a, buf, r);
  else
    reflect(a, buf, center, r);
  /* and an eighth of the values (at least 64) drawn anew, at a random place */
  int64_t n = a->numel;
  int64_t len = n / 8 > 64 ? n / 8 : (n < 64 ? n : 64);
  int64_t from = n > len ? (int64_t)(sg_rng_next(r) % (uint64_t)(n - len + 1)) : 0;
  fill_range(a, buf, from, from + len, r);
  apply_structure(a, buf);
}

/* ---- poison and allclose --------------------------------------------------- */

#define POISON_F32 UINT32_C(0x7fbadbad)          /* a signalling NaN payload */
#define POISON_F64 UINT64_C(0x7ff4badbadbadbad)
#define POISON_I32 INT32_C(-1771292723)          /* 0x9669 669D-ish sentinel */
#define POISON_I64 INT64_C(-7607829343244920523)

void sg_eval_poison(sg_dtype d, void *buf, int64_t n) {
  /* a loop per type (not a switch per element): the compiler makes stores
   * of whole vectors of it */
  switch (d) {
  case SG_DTYPE_F32: {
    uint32_t *u = buf;
    for (int64_t i = 0; i < n; i++)
      u[i] = POISON_F32;
    break;
  }
  case SG_DTYPE_F64: {
    uint64_t *u = buf;
    for (int64_t i = 0; i < n; i++)
      u[i] = POISON_F64;
    break;
  }
  case SG_DTYPE_I32: {
    int32_t *u = buf;
    for (int64_t i = 0; i < n; i++)
      u[i] = POISON_I32;
    break;
  }
  case SG_DTYPE_I64: {
    int64_t *u = buf;
    for (int64_t i = 0; i < n; i++)
      u[i] = POISON_I64;
    break;
  }
  default: break;
  }
}

bool sg_eval_is_poison(sg_dtype d, const void *buf, int64_t i) {
  switch (d) {
  case SG_DTYPE_F32: { uint32_t v; memcpy(&v, (const char *)buf + 4 * i, 4); return v == POISON_F32; }
  case SG_DTYPE_F64: { uint64_t v; memcpy(&v, (const char *)buf + 8 * i, 8); return v == POISON_F64; }
  case SG_DTYPE_I32: return ((const int32_t *)buf)[i] == POISON_I32;
  case SG_DTYPE_I64: return ((const int64_t *)buf)[i] == POISON_I64;
  default: return false;
  }
}

/* Whether element i is plainly close: both finite floats within tolerance,
 * the candidate's not the poison. The common case, kept branch-light; the
 * full classification below runs only where this says no. */
static inline bool fast_close(sg_dtype d, const void *cand, const void *ref,
                              int64_t i, double atol, double rtol, double *diff,
                              double *absy) {
  double x, y;
  if (d == SG_DTYPE_F32) {
    x = ((const float *)cand)[i];
    y = ((const float *)ref)[i];
  } else if (d == SG_DTYPE_F64) {
    x = ((const double *)cand)[i];
    y = ((const double *)ref)[i];
  } else {
    return false;
  }
  *diff = fabs(x - y);
  *absy = fabs(y);
  return *diff <= atol + rtol * *absy; /* false for NaN and inf - inf */
}

/* Elements [from, to), one by one, merged into c: the exact rules. */
static void compare_slow(sg_dtype d, const void *cand, const void *ref, int64_t from,
                         int64_t to, double atol, double rtol, sg_eval_cmp *c) {
  for (int64_t i = from; i < to; i++) {
    double fd, fy;
    if (fast_close(d, cand, ref, i, atol, rtol, &fd, &fy) && isfinite(fd)) {
      if (fd > c->max_abs)
        c->max_abs = fd;
      if (fy != 0 && fd / fy > c->max_rel)
        c->max_rel = fd / fy;
      continue;
    }
    double x = get_elem(d, cand, i), y = get_elem(d, ref, i);
    sg_eval_bad bad = SG_EVAL_BAD_NONE;
    /* an integer output may legitimately equal the sentinel only if the
     * reference does too */
    if (sg_eval_is_poison(d, cand, i) && !sg_eval_is_poison(d, ref, i)) {
      bad = SG_EVAL_BAD_UNWRITTEN;
    } else if (isnan(x) || isnan(y)) {
      if (!(isnan(x) && isnan(y)))
        bad = SG_EVAL_BAD_NAN;
    } else if (isinf(x) || isinf(y)) {
      if (x != y)
        bad = SG_EVAL_BAD_NAN;
    } else {
      double diff = fabs(x - y);
      if (diff > c->max_abs)
        c->max_abs = diff;
      if (y != 0 && diff / fabs(y) > c->max_rel)
        c->max_rel = diff / fabs(y);
      if (!(diff <= atol + rtol * fabs(y)))
        bad = SG_EVAL_BAD_MISMATCH;
    }
    if (bad != SG_EVAL_BAD_NONE) {
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
}


/* The common case, a block of floats all plainly close (both finite,
 * within tolerance, none the poison: a NaN), checked W at a time with GCC's
 * vector extensions, no branch and no early exit, in double as the exact
 * rules compute. True when the whole block is plainly close, with its
 * maxima in *mabs and *mrel (rel: where ref != 0); false sends the block to
 * compare_slow, which finds what is wrong, so the results are the exact
 * rules' either way. Defined twice, for two widths: SSE2's (every x86-64,
 * and other targets' 128-bit vectors) and AVX2's, taken when the CPU has it
 * (three times faster here: the check of a 128 MiB output takes about as
 * long as reading it). A macro, because the two differ only in W and the
 * target attribute. */
#define DEFINE_BLOCK_CLOSE(NAME, W, ATTR)                                        \
  ATTR static bool NAME(sg_dtype d, const void *cand, const void *ref,           \
                        int64_t from, int64_t to, double atol, double rtol,      \
                        double *mabs, double *mrel) {                            \
    typedef double vd __attribute__((vector_size(8 * W)));                     \
    typedef int64_t vl __attribute__((vector_size(8 * W)));                    \
    typedef float vf __attribute__((vector_size(4 * W)));                      \
    vd va, vr, inf, zero, one, ma, mr;                                           \
    vl nosign, ok;                                                               \
    for (int k = 0; k < W; k++) {                                                \
      va[k] = atol, vr[k] = rtol, inf[k] = INFINITY, zero[k] = 0, one[k] = 1;    \
      nosign[k] = INT64_MAX, ok[k] = -1, ma[k] = mr[k] = 0;                      \
    }                                                                            \
    int64_t i = from;                                                            \
    for (; i + W <= to; i += W) {                                                \
      vd x, y;                                                                   \
      if (d == SG_DTYPE_F32) {                                                   \
        vf xf, yf;                                                               \
        memcpy(&xf, (const float *)cand + i, sizeof xf);                         \
        memcpy(&yf, (const float *)ref + i, sizeof yf);                          \
        x = __builtin_convertvector(xf, vd);                                     \
        y = __builtin_convertvector(yf, vd);                                     \
      } else {                                                                   \
        memcpy(&x, (const double *)cand + i, sizeof x);                          \
        memcpy(&y, (const double *)ref + i, sizeof y);                           \
      }                                                                          \
      vd diff = (vd)((vl)(x - y) & nosign), ay = (vd)((vl)y & nosign);           \
      ok &= (diff <= va + vr * ay) & (diff < inf); /* both false for NaN */     \
      vl gt = diff > ma;                                                         \
      ma = (vd)((gt & (vl)diff) | (~gt & (vl)ma));                               \
      vl nz = ay != zero;                                                        \
      vd den = (vd)((nz & (vl)ay) | (~nz & (vl)one));                            \
      vd rel = (vd)(nz & (vl)(diff / den));                                      \
      gt = rel > mr;                                                             \
      mr = (vd)((gt & (vl)rel) | (~gt & (vl)mr));                                \
    }                                                                            \
    double a = 0, rl = 0;                                                        \
    for (int k = 0; k < W; k++) {                                                \
      if (!ok[k])                                                                \
        return false;                                                            \
      a = ma[k] > a ? ma[k] : a;                                                 \
      rl = mr[k] > rl ? mr[k] : rl;                                              \
    }                                                                            \
    for (; i < to; i++) {                                                        \
      double fd, fy;                                                             \
      if (!fast_close(d, cand, ref, i, atol, rtol, &fd, &fy) || !isfinite(fd))   \
        return false;                                                            \
      a = fd > a ? fd : a;                                                       \
      if (fy != 0 && fd / fy > rl)                                               \
        rl = fd / fy;                                                            \
    }                                                                            \
    *mabs = a;                                                                   \
    *mrel = rl;                                                                  \
    return true;                                                                 \
  }

DEFINE_BLOCK_CLOSE(block_close2, 2, )
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
DEFINE_BLOCK_CLOSE(block_close4, 4, __attribute__((target("avx2"))))
#endif

static bool block_close(sg_dtype d, const void *cand, const void *ref, int64_t from,
                        int64_t to, double atol, double rtol, double *mabs,
                        double *mrel) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static int avx2 = -1;
  if (avx2 < 0)
    avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
  if (avx2)
    return block_close4(d, cand, ref, from, to, atol, rtol, mabs, mrel);
#endif
  return block_close2(d, cand, ref, from, to, atol, rtol, mabs, mrel);
}

/* Elements per block: small enough to stay in the first-level cache for
 * the poison that may follow (compare_poison). */
#define CMP_BLOCK 1024

static void compare_blocks(sg_dtype d, void *cand, const void *ref, int64_t n,
                           double atol, double rtol, bool poison, sg_eval_cmp *c) {
  memset(c, 0, sizeof *c);
  c->first_bad = -1;
  bool floats = d == SG_DTYPE_F32 || d == SG_DTYPE_F64;
  size_t esz = d == SG_DTYPE_F32 || d == SG_DTYPE_I32 ? 4 : 8;
  for (int64_t from = 0; from < n; from += CMP_BLOCK) {
    int64_t to = n - from > CMP_BLOCK ? from + CMP_BLOCK : n;
    double a, rl;
    if (floats && block_close(d, cand, ref, from, to, atol, rtol, &a, &rl)) {
      if (a > c->max_abs)
        c->max_abs = a;
      if (rl > c->max_rel)
        c->max_rel = rl;
    } else {
      compare_slow(d, cand, ref, from, to, atol, rtol, c);
    }
    if (poison)
      sg_eval_poison(d, (char *)cand + (size_t)from * esz, to - from);
  }
}

void sg_eval_compare(sg_dtype d, const void *cand, const void *ref, int64_t n,
                     double atol, double rtol, sg_eval_cmp *c) {
  compare_blocks(d, (void *)cand, ref, n, atol, rtol, false, c);
}

void sg_eval_compare_poison(sg_dtype d, void *cand, const void *ref, int64_t n,
                            double atol, double rtol, sg_eval_cmp *c) {
  compare_blocks(d, cand, ref, n, atol, rtol, true, c);
}

char *sg_eval_cmp_message(const sg_task_arg *a, const sg_eval_cmp *c,
                          double atol, double rtol) {
  if (c->first_bad < 0)
    return sg_strdup("");
  char where[160];
  sg_task_index_str(a, c->first_bad, where, sizeof where);
  sg_buf b;
  sg_buf_init(&b, 0);
  sg_buf_printf(&b, "output %s: element %" PRId64 " (index %s of shape ", a->name,
                c->first_bad, where);
  for (int d = 0; d < a->ndims; d++)
    sg_buf_printf(&b, "%s%" PRId64, d ? "x" : "", a->shape[d]);
  sg_buf_puts(&b, ") ");
  switch (c->kind) {
  case SG_EVAL_BAD_UNWRITTEN:
    sg_buf_printf(&b, "was never written (the reference gives %.9g)", c->ref);
    break;
  case SG_EVAL_BAD_NAN:
    sg_buf_printf(&b, "is %.9g but the reference gives %.9g", c->cand, c->ref);
    break;
  default:
    sg_buf_printf(&b,
                  "is %.9g but the reference gives %.9g (|difference| %.3g > "
                  "atol %.3g + rtol %.3g * |reference|)",
                  c->cand, c->ref, fabs(c->cand - c->ref), atol, rtol);
    break;
  }
  sg_buf_printf(&b, "; %" PRId64 " of %" PRId64 " elements are wrong", c->nbad,
                a->numel);
  if (isfinite(c->max_abs))
    sg_buf_printf(&b, "; max abs error %.3g, max rel error %.3g", c->max_abs,
                  c->max_rel);
  return sg_buf_steal(&b);
}
