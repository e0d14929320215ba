/* sg_cuda_judge.c: the judge's device kernels (as CUDA source, compiled
 * into the reference's shared object) and the pure rules of its verdicts.
 * See the header. The kernel source is kept as one string so that specgen
 * needs no CUDA toolkit to build; nvcc sees it when the evaluator builds a
 * reference (and the unit tests compile it where nvcc exists). */
#include "eval/sg_cuda_judge.h"

#include "common/sg_alloc.h"
#include "common/sg_stats.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

const double SG_JUDGE_DOMAIN_SCALES[SG_JUDGE_DOMAIN_TRIALS] = {1.0, 1e-3, 1e3};

void sg_judge_fill_spec(const sg_task_arg *a, int variant, sg_judge_fill *f) {
  memset(f, 0, sizeof *f);
  const sg_init_spec *s = &a->init;
  f->dtype = a->dtype;
  f->numel = a->numel;
  f->dist = strcmp(s->dist, "normal") == 0    ? 0
            : strcmp(s->dist, "uniform") == 0 ? 1
            : strcmp(s->dist, "choice") == 0 && s->nvalues ? 2
                                                           : 1;
  f->p0 = s->p[0];
  f->p1 = s->p[1];
  if (f->dist == 1 && !(s->p[1] > s->p[0])) { /* no init: U[0, 1), as torch.rand */
    f->p0 = 0;
    f->p1 = 1;
  }
  f->nvalues = (int64_t)(s->nvalues < SG_JUDGE_MAX_CHOICE ? s->nvalues : SG_JUDGE_MAX_CHOICE);
  for (int64_t i = 0; i < f->nvalues; i++)
    f->values[i] = s->values[i];
  f->structure = strcmp(s->structure, "symmetric") == 0 ? 1
                 : strcmp(s->structure, "upper") == 0   ? 2
                 : strcmp(s->structure, "lower") == 0   ? 3
                 : strcmp(s->structure, "diagonal") == 0 ? 4
                                                         : 0;
  if (f->structure && a->ndims >= 2)
    f->side = a->shape[a->ndims - 1];
  else
    f->structure = 0;
  bool floating = a->dtype == SG_DTYPE_F32 || a->dtype == SG_DTYPE_F64;
  if (variant <= 0 || variant > SG_JUDGE_DOMAIN_TRIALS || !floating || f->dist == 2)
    return;
  /* the distribution's magnitude: what its values look like in size */
  double m = f->dist == 0 ? fabs(f->p0) + f->p1 : fmax(fabs(f->p0), fabs(f->p1));
  if (!(m > 0))
    m = 1;
  f->dist = 0;
  f->p0 = 0;
  f->p1 = m * SG_JUDGE_DOMAIN_SCALES[variant - 1];
}

bool sg_judge_timing_settled(const double *v, size_t n, double overhead_ms) {
  if (n < 2)
    return false;
  double m = sg_stats_median(v, n);
  double *d = sg_malloc(n * sizeof *d);
  for (size_t i = 0; i < n; i++)
    d[i] = fabs(v[i] - m);
  double sigma = 1.4826 * sg_stats_median(d, n);
  free(d);
  double half = 1.96 * 1.2533 * sigma / sqrt((double)n);
  double work = m - overhead_ms;
  return isfinite(half) && work > 0 && half <= SG_JUDGE_TIMING_CI * work;
}

double sg_judge_atol(double atol, double m, double m0) {
  if (!(m0 > 0) || !isfinite(m0))
    m0 = m;
  double scaled = m0 > 0 ? atol * (m / m0) : atol;
  double cap = SG_JUDGE_ATOL_CAP * m;
  return scaled < cap ? scaled : cap;
}

bool sg_judge_shortcut(const sg_judge_stats *s, int equal_input,
                       const char *input_name, const char *output_name,
                       char *why, size_t why_len) {
  if (s->n > 1 && s->cand_varies == 0 && s->ref_varies > 0) {
    snprintf(why, why_len,
             "output %s is one constant value (%.9g) in all %lld elements while "
             "the reference's varies: a constant is not the computation",
             output_name, s->first_cand, (long long)s->n);
    return true;
  }
  if (equal_input >= 0) {
    snprintf(why, why_len,
             "output %s is bitwise equal to input %s while the reference's is "
             "not: the candidate returned its input",
             output_name, input_name ? input_name : "?");
    return true;
  }
  return false;
}

const char sg_cuda_judge_src[] =
    "// The judge's kernels (specgen, docs/gpu.md): compiled into the reference's\n"
    "// shared object, never into the candidate's. Inputs are drawn here from a\n"
    "// counter-based generator, outputs compared here; the judge process calls\n"
    "// the extern \"C\" functions at the end.\n"
    "#include <stdint.h>\n"
    "#include <cuda_runtime.h>\n"
    "\n"
    "#define SGJ_MAX_CHOICE 16\n"
    "typedef struct sgj_fill {\n"
    "  int64_t dtype, dist, structure, nvalues, numel, side;\n"
    "  double p0, p1;\n"
    "  double values[SGJ_MAX_CHOICE];\n"
    "} sgj_fill;\n"
    "typedef struct sgj_stats {\n"
    "  int64_t n, bad, unwritten, first_bad, cand_varies, ref_varies, ref_nonfinite;\n"
    "  double max_abs_ref, max_abs_err, max_rel_err, max_excess, first_ref, first_cand;\n"
    "} sgj_stats;\n"
    "\n"
    "__device__ __forceinline__ uint64_t sgj_mix(uint64_t x) {\n"
    "  x += 0x9e3779b97f4a7c15ULL;\n"
    "  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;\n"
    "  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;\n"
    "  return x ^ (x >> 31);\n"
    "}\n"
    "// Uniform in (0, 1) from element i of the stream (key, lane).\n"
    "__device__ __forceinline__ float sgj_u01(uint64_t key, uint64_t i, uint64_t lane) {\n"
    "  uint64_t h = sgj_mix(key ^ sgj_mix(i * 2 + lane));\n"
    "  return ((float)(h >> 40) + 0.5f) * (1.0f / 16777216.0f);\n"
    "}\n"
    "__device__ __forceinline__ double sgj_draw(const sgj_fill &f, uint64_t key, uint64_t i) {\n"
    "  if (f.dist == 0) {\n"
    "    float u1 = sgj_u01(key, i, 0), u2 = sgj_u01(key, i, 1);\n"
    "    return f.p0 + f.p1 * (double)(sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2));\n"
    "  }\n"
    "  if (f.dist == 1)\n"
    "    return f.p0 + (f.p1 - f.p0) * (double)sgj_u01(key, i, 0);\n"
    "  uint64_t h = sgj_mix(key ^ sgj_mix(i * 2));\n"
    "  return f.values[h % (uint64_t)(f.nvalues > 0 ? f.nvalues : 1)];\n"
    "}\n"
    "__device__ __forceinline__ void sgj_store(void *p, int64_t dtype, int64_t i, double v) {\n"
    "  switch (dtype) {\n"
    "  case 0: ((float *)p)[i] = (float)v; break;\n"
    "  case 1: ((double *)p)[i] = v; break;\n"
    "  case 2: ((int32_t *)p)[i] = (int32_t)rint(v); break;\n"
    "  default: ((long long *)p)[i] = (long long)rint(v); break;\n"
    "  }\n"
    "}\n"
    "__device__ __forceinline__ double sgj_load(const void *p, int64_t dtype, int64_t i) {\n"
    "  switch (dtype) {\n"
    "  case 0: return ((const float *)p)[i];\n"
    "  case 1: return ((const double *)p)[i];\n"
    "  case 2: return ((const int32_t *)p)[i];\n"
    "  default: return (double)((const long long *)p)[i];\n"
    "  }\n"
    "}\n"
    "\n"
    "__global__ void sgj_fill_kernel(void *dst, sgj_fill f, uint64_t key) {\n"
    "  int64_t stride = (int64_t)gridDim.x * blockDim.x;\n"
    "  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < f.numel; i += stride) {\n"
    "    double v;\n"
    "    if (f.structure) {\n"
    "      int64_t n = f.side, within = i % (n * n), base = i - within;\n"
    "      int64_t r = within / n, c = within % n;\n"
    "      if (f.structure == 1) {\n"
    "        // symmetric: the mean of the draws at (r, c) and (c, r)\n"
    "        v = 0.5 * ((double)(float)sgj_draw(f, key, i) +\n"
    "                   (double)(float)sgj_draw(f, key, base + c * n + r));\n"
    "      } else if ((f.structure == 2 && c < r) || (f.structure == 3 && c > r) ||\n"
    "                 (f.structure == 4 && c != r)) {\n"
    "        v = 0;\n"
    "      } else {\n"
    "        v = sgj_draw(f, key, i);\n"
    "      }\n"
    "    } else {\n"
    "      v = sgj_draw(f, key, i);\n"
    "    }\n"
    "    sgj_store(dst, f.dtype, i, v);\n"
    "  }\n"
    "}\n"
    "\n"
    "__global__ void sgj_poison_kernel(uint32_t *p, int64_t words) {\n"
    "  int64_t stride = (int64_t)gridDim.x * blockDim.x;\n"
    "  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += stride)\n"
    "    p[i] = 0xFFFFFFFFu;\n"
    "}\n"
    "\n"
    "// Non-negative doubles order like their bit patterns: atomicMax on those.\n"
    "__device__ __forceinline__ void sgj_max(double *slot, double v) {\n"
    "  if (!(v > 0)) return;\n"
    "  atomicMax((unsigned long long *)slot, (unsigned long long)__double_as_longlong(v));\n"
    "}\n"
    "\n"
    "__global__ void sgj_compare_kernel(const void *ref, const void *cand, int64_t n,\n"
    "                                   int64_t dtype, double atol, double rtol, sgj_stats *s) {\n"
    "  int64_t stride = (int64_t)gridDim.x * blockDim.x;\n"
    "  double r0 = sgj_load(ref, dtype, 0), c0 = sgj_load(cand, dtype, 0);\n"
    "  unsigned long long bad = 0, unwritten = 0, cv = 0, rv = 0, rnf = 0;\n"
    "  double mref = 0, mabs = 0, mrel = 0, mexc = 0;\n"
    "  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {\n"
    "    double r = sgj_load(ref, dtype, i), c = sgj_load(cand, dtype, i);\n"
    "    bool rn = isnan(r), cn = isnan(c);\n"
    "    if (!(c == c0 || (cn && isnan(c0)))) cv++;\n"
    "    if (!(r == r0 || (rn && isnan(r0)))) rv++;\n"
    "    bool ok;\n"
    "    double err, exc;\n"
    "    if (rn || cn) {\n"
    "      ok = rn && cn;\n"
    "      err = ok ? 0 : INFINITY;\n"
    "      exc = err;\n"
    "      if (cn && !rn) unwritten++;\n"
    "    } else if (isinf(r) || isinf(c)) {\n"
    "      ok = r == c;\n"
    "      err = ok ? 0 : INFINITY;\n"
    "      exc = err;\n"
    "    } else {\n"
    "      err = fabs(c - r);\n"
    "      ok = err <= atol + rtol * fabs(r);\n"
    "      exc = err - rtol * fabs(r);\n"
    "    }\n"
    "    if (!isfinite(r)) rnf++;\n"
    "    else mref = fmax(mref, fabs(r));\n"
    "    mabs = fmax(mabs, err);\n"
    "    if (err > 0) mrel = fmax(mrel, isinf(err) ? err : err / fmax(fabs(r), 1e-30));\n"
    "    mexc = fmax(mexc, exc);\n"
    "    if (!ok) {\n"
    "      bad++;\n"
    "      if (atomicMin((unsigned long long *)&s->first_bad, (unsigned long long)i) > (unsigned long long)i) {\n"
    "        // the smallest index wins; its values are written by whoever set it last\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "  if (bad) atomicAdd((unsigned long long *)&s->bad, bad);\n"
    "  if (unwritten) atomicAdd((unsigned long long *)&s->unwritten, unwritten);\n"
    "  if (cv) atomicAdd((unsigned long long *)&s->cand_varies, cv);\n"
    "  if (rv) atomicAdd((unsigned long long *)&s->ref_varies, rv);\n"
    "  if (rnf) atomicAdd((unsigned long long *)&s->ref_nonfinite, rnf);\n"
    "  sgj_max(&s->max_abs_ref, mref);\n"
    "  sgj_max(&s->max_abs_err, mabs);\n"
    "  sgj_max(&s->max_rel_err, mrel);\n"
    "  sgj_max(&s->max_excess, mexc);\n"
    "}\n"
    "\n"
    "__global__ void sgj_count_ne_kernel(const uint32_t *a, const uint32_t *b, int64_t words,\n"
    "                                    const unsigned char *ta, const unsigned char *tb,\n"
    "                                    int64_t tail, unsigned long long *out) {\n"
    "  int64_t stride = (int64_t)gridDim.x * blockDim.x;\n"
    "  unsigned long long ne = 0;\n"
    "  int64_t t0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  for (int64_t i = t0; i < words; i += stride)\n"
    "    ne += a[i] != b[i];\n"
    "  if (t0 < tail) ne += ta[t0] != tb[t0];\n"
    "  if (ne) atomicAdd(out, ne);\n"
    "}\n"
    "\n"
    "static int sgj_blocks(int64_t n) {\n"
    "  int64_t b = (n + 255) / 256;\n"
    "  return (int)(b < 1 ? 1 : b > 65536 ? 65536 : b);\n"
    "}\n"
    "\n"
    "#define SGJ_EXPORT extern \"C\" __attribute__((visibility(\"default\")))\n"
    "\n"
    "SGJ_EXPORT int sg_judge_fill(void *dst, const sgj_fill *f, uint64_t seed, uint64_t arg) {\n"
    "  if (f->numel <= 0) return 0;\n"
    "  uint64_t key = seed * 0x9e3779b97f4a7c15ULL ^ (arg + 1) * 0xd1b54a32d192ed03ULL;\n"
    "  sgj_fill_kernel<<<sgj_blocks(f->numel), 256>>>(dst, *f, key);\n"
    "  cudaError_t e = cudaGetLastError();\n"
    "  return e ? (int)e : (int)cudaDeviceSynchronize();\n"
    "}\n"
    "\n"
    "SGJ_EXPORT int sg_judge_poison(void *dst, int64_t bytes) {\n"
    "  int64_t words = bytes / 4;\n"
    "  if (words > 0) sgj_poison_kernel<<<sgj_blocks(words), 256>>>((uint32_t *)dst, words);\n"
    "  if (bytes % 4) cudaMemset((char *)dst + words * 4, 0xFF, (size_t)(bytes % 4));\n"
    "  cudaError_t e = cudaGetLastError();\n"
    "  return e ? (int)e : (int)cudaDeviceSynchronize();\n"
    "}\n"
    "\n"
    "// One device slot per kind of answer, allocated once: a cudaMalloc and a\n"
    "// cudaFree per check cost driver calls (cudaFree waits for the device).\n"
    "// The judge's process checks one candidate and ends.\n"
    "static sgj_stats *sgj_stats_slot;\n"
    "static unsigned long long *sgj_count_slot;\n"
    "\n"
    "SGJ_EXPORT int sg_judge_compare(const void *ref, const void *cand, int64_t n, int64_t dtype,\n"
    "                                double atol, double rtol, sgj_stats *out) {\n"
    "  sgj_stats init = {0};\n"
    "  init.n = n;\n"
    "  init.first_bad = -1;\n"
    "  cudaError_t e = sgj_stats_slot ? cudaSuccess : cudaMalloc(&sgj_stats_slot, sizeof *sgj_stats_slot);\n"
    "  if (e) return (int)e;\n"
    "  sgj_stats *d = sgj_stats_slot;\n"
    "  if (!(e = cudaMemcpy(d, &init, sizeof init, cudaMemcpyHostToDevice)) && n > 0) {\n"
    "    sgj_compare_kernel<<<sgj_blocks(n) > 4096 ? 4096 : sgj_blocks(n), 256>>>(ref, cand, n, dtype, atol, rtol, d);\n"
    "    e = cudaGetLastError();\n"
    "  }\n"
    "  if (!e) e = cudaMemcpy(out, d, sizeof *out, cudaMemcpyDeviceToHost);\n"
    "  if (!e && out->first_bad >= 0) {\n"
    "    // the values at the first bad element, read back for the message\n"
    "    int64_t sz = dtype == 0 ? 4 : dtype == 2 ? 4 : 8;\n"
    "    unsigned char rb[8] = {0}, cb[8] = {0};\n"
    "    cudaMemcpy(rb, (const char *)ref + out->first_bad * sz, (size_t)sz, cudaMemcpyDeviceToHost);\n"
    "    e = cudaMemcpy(cb, (const char *)cand + out->first_bad * sz, (size_t)sz, cudaMemcpyDeviceToHost);\n"
    "    out->first_ref = dtype == 0 ? *(float *)rb : dtype == 1 ? *(double *)rb\n"
    "                   : dtype == 2 ? *(int32_t *)rb : (double)*(long long *)rb;\n"
    "    out->first_cand = dtype == 0 ? *(float *)cb : dtype == 1 ? *(double *)cb\n"
    "                    : dtype == 2 ? *(int32_t *)cb : (double)*(long long *)cb;\n"
    "  }\n"
    "  return (int)e;\n"
    "}\n"
    "\n"
    "SGJ_EXPORT int sg_judge_count_ne(const void *a, const void *b, int64_t bytes, int64_t *out) {\n"
    "  cudaError_t e = sgj_count_slot ? cudaSuccess : cudaMalloc(&sgj_count_slot, sizeof *sgj_count_slot);\n"
    "  if (e) return (int)e;\n"
    "  unsigned long long *d = sgj_count_slot;\n"
    "  int64_t words = bytes / 4, tail = bytes % 4;\n"
    "  if (!(e = cudaMemset(d, 0, sizeof *d))) {\n"
    "    sgj_count_ne_kernel<<<sgj_blocks(words > 0 ? words : 1) > 4096 ? 4096 : sgj_blocks(words > 0 ? words : 1), 256>>>(\n"
    "        (const uint32_t *)a, (const uint32_t *)b, words,\n"
    "        (const unsigned char *)a + words * 4, (const unsigned char *)b + words * 4, tail, d);\n"
    "    e = cudaGetLastError();\n"
    "  }\n"
    "  unsigned long long h = 0;\n"
    "  if (!e) e = cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);\n"

    "  *out = (int64_t)h;\n"
    "  return (int)e;\n"
    "}\n"
    "\n";
