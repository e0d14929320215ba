/* sg_cuda_check.c: the cuda evaluator's pure pieces (see the header).
 *
 * Nothing here touches a GPU, a file or a clock: the harness that runs on the
 * device calls these, and the unit tests call them on any machine. */
#include "eval/sg_cuda_check.h"

#include "common/sg_alloc.h"

#include <assert.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- random inputs -------------------------------------------------------- */

double sg_cuda_rng_normal(sg_rng *r) {
  double u1 = sg_rng_uniform(r), u2 = sg_rng_uniform(r);
  if (u1 < 1e-300)
    u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static double get(sg_dtype d, const void *p, int64_t i) {
  switch (d) {
  case SG_DTYPE_F32: return ((const float *)p)[i];
  case SG_DTYPE_F64: return ((const double *)p)[i];
  case SG_DTYPE_I32: return ((const int32_t *)p)[i];
  case SG_DTYPE_I64: return (double)((const int64_t *)p)[i];
  default: return NAN;
  }
}

static void set(sg_dtype d, void *p, int64_t i, double v) {
  bool integer = d == SG_DTYPE_I32 || d == SG_DTYPE_I64;
  if (integer)
    v = nearbyint(v);
  switch (d) {
  case SG_DTYPE_F32: ((float *)p)[i] = (float)v; break;
  case SG_DTYPE_F64: ((double *)p)[i] = v; break;
  case SG_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)v; break;
  case SG_DTYPE_I64: ((int64_t *)p)[i] = (int64_t)v; break;
  default: break;
  }
}

void sg_cuda_fill_range(const sg_task_arg *a, void *host, uint64_t seed,
                        uint64_t arg_index, int64_t begin, int64_t end) {
  const sg_init_spec *s = &a->init;
  int dist = strcmp(s->dist, "normal") == 0    ? 0
             : strcmp(s->dist, "uniform") == 0 ? 1
             : strcmp(s->dist, "choice") == 0 && s->nvalues ? 2
                                                            : 3;
  sg_rng r;
  assert(begin % SG_CUDA_FILL_CHUNK == 0);
  for (int64_t i = begin; i < end; i++) {
    if (i % SG_CUDA_FILL_CHUNK == 0) {
      uint64_t x = seed ^ (arg_index * 0x9e3779b97f4a7c15ULL);
      x = sg_splitmix64(&x) ^ (uint64_t)(i / SG_CUDA_FILL_CHUNK);
      sg_rng_seed(&r, x);
    }
    double v;
    switch (dist) {
    case 0: v = s->p[0] + s->p[1] * sg_cuda_rng_normal(&r); break;
    case 1: v = s->p[0] + (s->p[1] - s->p[0]) * sg_rng_uniform(&r); break;
    case 2: v = s->values[sg_rng_next(&r) % s->nvalues]; break;
    default: v = 0; break;
    }
    set(a->dtype, host, i, v);
  }
}

void sg_cuda_apply_structure(const sg_task_arg *a, void *host) {
  const sg_init_spec *s = &a->init;
  if (!s->structure[0] || a->ndims < 2)
    return;
  int64_t n = a->shape[a->ndims - 1];
  int64_t mats = a->numel / (n * n);
  for (int64_t m = 0; m < mats; m++) {
    int64_t base = m * n * n;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        int64_t ij = base + i * n + j, ji = base + j * n + i;
        if (strcmp(s->structure, "symmetric") == 0) {
          if (j > i) {
            double v = 0.5 * (get(a->dtype, host, ij) + get(a->dtype, host, ji));
            set(a->dtype, host, ij, v);
            set(a->dtype, host, ji, v);
          }
        } else if ((strcmp(s->structure, "upper") == 0 && j < i) ||
                   (strcmp(s->structure, "lower") == 0 && j > i) ||
                   (strcmp(s->structure, "diagonal") == 0 && j != i)) {
          set(a->dtype, host, ij, 0);
        }
      }
  }
}

void sg_cuda_fill_input(const sg_task_arg *a, void *host, uint64_t seed,
                        uint64_t arg_index) {
  sg_cuda_fill_range(a, host, seed, arg_index, 0, a->numel);
  sg_cuda_apply_structure(a, host);
}

/* ---- comparison ----------------------------------------------------------- */

void sg_cuda_compare(sg_dtype dtype, const void *ref, const void *cand,
                     int64_t n, double atol, double rtol, sg_cuda_cmp *out) {
  memset(out, 0, sizeof *out);
  out->n = n;
  out->first_bad = -1;
  for (int64_t i = 0; i < n; i++) {
    double r = get(dtype, ref, i), c = get(dtype, cand, i);
    bool ok;
    double abs_err;
    if (isnan(r) || isnan(c)) {
      ok = isnan(r) && isnan(c);
      abs_err = ok ? 0 : INFINITY;
      if (isnan(c) && !isnan(r))
        out->unwritten++;
    } else if (isinf(r) || isinf(c)) {
      ok = r == c;
      abs_err = ok ? 0 : INFINITY;
    } else {
      abs_err = fabs(c - r);
      ok = abs_err <= atol + rtol * fabs(r);
    }
    double rel_err = abs_err == 0 ? 0 : abs_err / fmax(fabs(r), 1e-30);
    if (abs_err > out->max_abs)
      out->max_abs = abs_err;
    if (rel_err > out->max_rel)
      out->max_rel = rel_err;
    if (!ok) {
      if (out->bad == 0) {
        out->first_bad = i;
        out->first_ref = r;
        out->first_cand = c;
      }
      out->bad++;
    }
  }
}

/* ---- candidate rules ------------------------------------------------------ */

/* The source with comments replaced by spaces (string literals kept: a
 * dlopen("libcublas.so") hides in one). */
static char *strip_comments(const char *src, size_t len) {
  char *o = sg_malloc(len + 1);
  size_t i = 0;
  while (i < len) {
    if (src[i] == '/' && i + 1 < len && src[i + 1] == '/') {
      while (i < len && src[i] != '\n')
        o[i++] = ' ';
    } else if (src[i] == '/' && i + 1 < len && src[i + 1] == '*') {
      o[i] = o[i + 1] = ' ';
      i += 2;
      while (i < len && !(src[i] == '*' && i + 1 < len && src[i + 1] == '/')) {
        o[i] = src[i] == '\n' ? '\n' : ' ';
        i++;
      }
      if (i < len) {
        o[i] = o[i + 1] = ' ';
        i += 2;
      }
    } else if (src[i] == '"' || src[i] == '\'') {
      char q = src[i];
      o[i] = src[i];
      i++;
      while (i < len && src[i] != q) {
        if (src[i] == '\\' && i + 1 < len) {
          o[i] = src[i];
          i++;
        }
        o[i] = src[i];
        i++;
      }
      if (i < len) {
        o[i] = src[i];
        i++;
      }
    } else {
      o[i] = src[i];
      i++;
    }
  }
  o[len] = 0;
  return o;
}

/* Case-insensitive search for needle as the start of a word. */
static const char *find_word_start(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (const char *p = hay; *p; p++) {
    if (p != hay && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
      continue;
    if (strncasecmp(p, needle, n) == 0)
      return p;
  }
  return NULL;
}

/* Exact search for an identifier called as a function: name followed by '('. */
static const char *find_call(const char *hay, const char *name) {
  size_t n = strlen(name);
  for (const char *p = strstr(hay, name); p; p = strstr(p + 1, name)) {
    if (p != hay && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
      continue;
    const char *q = p + n;
    while (*q == ' ' || *q == '\t')
      q++;
    if (*q == '(')
      return p;
  }
  return NULL;
}

bool sg_cuda_source_forbidden(const char *src, size_t len, char *why,
                              size_t why_len) {
  static const struct {
    const char *prefix, *rule;
  } libs[] = {
      {"cublas", "uses cuBLAS: the matrix products must be the candidate's own kernels"},
      {"cudnn", "uses cuDNN: the work must be the candidate's own kernels"},
      {"cusparse", "uses cuSPARSE: the work must be the candidate's own kernels"},
      {"cusolver", "uses cuSOLVER: the work must be the candidate's own kernels"},
      {"cufft", "uses cuFFT: the work must be the candidate's own kernels"},
      {"cutlass", "uses CUTLASS: the work must be the candidate's own kernels"},
  };
  static const struct {
    const char *name, *rule;
  } calls[] = {
      {"dlopen", "loads code at run time (dlopen)"},
      {"dlsym", "looks up symbols at run time (dlsym)"},
      {"system", "starts a process (system)"},
      {"popen", "starts a process (popen)"},
      {"fork", "starts a process (fork)"},
      {"execv", "starts a process (execv)"},
      {"execve", "starts a process (execve)"},
      {"execvp", "starts a process (execvp)"},
      {"execl", "starts a process (execl)"},
      {"execlp", "starts a process (execlp)"},
  };
  char *s = strip_comments(src, len);
  bool bad = false;
  /* Calls first: dlopen("libcublas.so") is about loading code. */
  for (size_t i = 0; !bad && i < sizeof calls / sizeof calls[0]; i++)
    if (find_call(s, calls[i].name)) {
      snprintf(why, why_len, "%s", calls[i].rule);
      bad = true;
    }
  for (size_t i = 0; !bad && i < sizeof libs / sizeof libs[0]; i++) {
    const char *p = find_word_start(s, libs[i].prefix);
    /* Also inside a path: <cublas_v2.h>, "libcublas.so". */
    if (!p) {
      char lib[32];
      snprintf(lib, sizeof lib, "lib%s", libs[i].prefix);
      p = find_word_start(s, lib);
    }
    if (p) {
      snprintf(why, why_len, "%s", libs[i].rule);
      bad = true;
    }
  }
  free(s);
  return bad;
}

/* ---- the launcher shim ---------------------------------------------------- */

static const char *c_type(sg_dtype d) {
  switch (d) {
  case SG_DTYPE_F32: return "float";
  case SG_DTYPE_F64: return "double";
  case SG_DTYPE_I32: return "int";
  case SG_DTYPE_I64: return "long long";
  default: return "void";
  }
}

void sg_cuda_shim(const sg_task *task, const char *include_name, sg_buf *out) {
  sg_buf_printf(out,
                "/* Generated by specgen: calls the candidate's entry with the "
                "task's arguments. */\n"
                "#include \"%s\"\n"
                "extern \"C\" __attribute__((visibility(\"default\"))) void "
                "sg_launch(void **a) {\n  %s(",
                include_name, task->entry);
  for (size_t i = 0; i < task->nargs; i++) {
    const sg_task_arg *g = &task->args[i];
    const char *t = c_type(g->dtype);
    if (g->kind == SG_ARG_SCALAR)
      sg_buf_printf(out, "%s*(const %s *)a[%zu]", i ? ", " : "", t, i);
    else
      sg_buf_printf(out, "%s(%s *)a[%zu]", i ? ", " : "", t, i);
  }
  sg_buf_puts(out, ");\n}\n");
}
