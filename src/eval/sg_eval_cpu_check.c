/* sg_eval_cpu_check.c: the pure parts of the CPU evaluator (sg_eval_cpu.h):
 * random inputs, NaN poisoning and allclose, statistics, the ELF symbol
 * reader and the symbol rules, compiler-diagnostic cuts, signal names.
 * Nothing here does I/O, so all of it is tested directly.
 */
#include "eval/sg_eval_cpu.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"

#include <elf.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
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

/* Elements [from, to) drawn from a->init (no structure). */
static void fill_range(const sg_task_arg *a, void *buf, int64_t from, int64_t to,
                       sg_rng *r) {
  const sg_init_spec *s = &a->init;
  int dist = dist_of(s);
  pthread_once(&zig_once, zig_init);
  for (int64_t i = from; i < to; i++) {
    double v;
    if (dist == DIST_NORMAL) {
      v = s->p[0] + s->p[1] * zig_normal(r);
    } else if (dist == DIST_UNIFORM) {
      v = s->p[0] + (s->p[1] - s->p[0]) * sg_rng_uniform(r);
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

bool sg_eval_sign_symmetric(const sg_task_arg *a) {
  const sg_init_spec *s = &a->init;
  if (a->dtype != SG_DTYPE_F32 && a->dtype != SG_DTYPE_F64)
    return false;
  switch (dist_of(s)) {
  case DIST_NORMAL: return s->p[0] == 0;
  case DIST_UNIFORM: return s->p[0] == -s->p[1];
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
    return true;
  }
}

void sg_eval_refresh(const sg_task_arg *a, void *buf, sg_rng *r) {
  if (!sg_eval_sign_symmetric(a)) {
    sg_eval_fill(a, buf, r);
    return;
  }
  /* every sign afresh: one random bit per element */
  int64_t n = a->numel;
  if (a->dtype == SG_DTYPE_F32) {
    uint32_t *u = buf;
    for (int64_t i = 0; i < n; i += 64) {
      uint64_t bits = sg_rng_next(r);
      int64_t end = i + 64 < n ? i + 64 : n;
      for (int64_t k = i; k < end; k++, bits >>= 1)
        u[k] ^= (uint32_t)(bits & 1) << 31;
    }
  } else {
    uint64_t *u = buf;
    for (int64_t i = 0; i < n; i += 64) {
      uint64_t bits = sg_rng_next(r);
      int64_t end = i + 64 < n ? i + 64 : n;
      for (int64_t k = i; k < end; k++, bits >>= 1)
        u[k] ^= (bits & 1) << 63;
    }
  }
  /* and an eighth of the values (at least 64) drawn anew, at a random place */
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
  for (int64_t i = 0; i < n; i++)
    switch (d) {
    case SG_DTYPE_F32: { uint32_t v = POISON_F32; memcpy((char *)buf + 4 * i, &v, 4); break; }
    case SG_DTYPE_F64: { uint64_t v = POISON_F64; memcpy((char *)buf + 8 * i, &v, 8); break; }
    case SG_DTYPE_I32: ((int32_t *)buf)[i] = POISON_I32; break;
    case SG_DTYPE_I64: ((int64_t *)buf)[i] = POISON_I64; break;
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

void sg_eval_compare(sg_dtype d, const void *cand, const void *ref, int64_t n,
                     double atol, double rtol, sg_eval_cmp *c) {
  memset(c, 0, sizeof *c);
  c->first_bad = -1;
  for (int64_t i = 0; i < n; i++) {
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

/* "[i, j, k]" for a flat index of a's shape. */
static void index_text(const sg_task_arg *a, int64_t flat, char *out, size_t cap) {
  int64_t idx[SG_TASK_MAX_DIMS];
  for (int d = a->ndims - 1; d >= 0; d--) {
    idx[d] = flat % a->shape[d];
    flat /= a->shape[d];
  }
  size_t k = 0;
  k += (size_t)snprintf(out + k, cap - k, "[");
  for (int d = 0; d < a->ndims && k < cap; d++)
    k += (size_t)snprintf(out + k, cap - k, "%s%" PRId64, d ? ", " : "", idx[d]);
  if (k < cap)
    snprintf(out + k, cap - k, "]");
}

char *sg_eval_cmp_message(const sg_task_arg *a, const sg_eval_cmp *c,
                          double atol, double rtol) {
  if (c->first_bad < 0)
    return sg_strdup("");
  char where[160];
  index_text(a, c->first_bad, where, sizeof where);
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

/* ---- ELF dynamic symbols --------------------------------------------------- */

void sg_elf_symbols_free(sg_elf_sym *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(s[i].name);
  free(s);
}

static bool in_bounds(size_t len, uint64_t off, uint64_t size) {
  return off <= len && size <= len - off;
}

int sg_elf_dynamic_symbols(const void *data, size_t len, sg_elf_sym **out,
                           size_t *n, sg_err *err) {
  *out = NULL;
  *n = 0;
  const unsigned char *p = data;
  Elf64_Ehdr eh;
  if (len < sizeof eh || memcmp(p, ELFMAG, SELFMAG) != 0)
    return sg_err_set(err, SG_EPARSE, "not an ELF file");
  memcpy(&eh, p, sizeof eh);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64)
    return sg_err_set(err, SG_EPARSE, "not a 64-bit ELF file");
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB)
#else
  if (eh.e_ident[EI_DATA] != ELFDATA2MSB)
#endif
    return sg_err_set(err, SG_EPARSE, "ELF byte order is not this machine's");
  if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
      !in_bounds(len, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr)))
    return sg_err_set(err, SG_EPARSE, "ELF section headers out of bounds");
  for (unsigned i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh;
    memcpy(&sh, p + eh.e_shoff + (uint64_t)i * sizeof sh, sizeof sh);
    if (sh.sh_type != SHT_DYNSYM)
      continue;
    if (sh.sh_link >= eh.e_shnum || sh.sh_entsize != sizeof(Elf64_Sym) ||
        !in_bounds(len, sh.sh_offset, sh.sh_size))
      return sg_err_set(err, SG_EPARSE, "ELF .dynsym out of bounds");
    Elf64_Shdr st;
    memcpy(&st, p + eh.e_shoff + (uint64_t)sh.sh_link * sizeof st, sizeof st);
    if (!in_bounds(len, st.sh_offset, st.sh_size))
      return sg_err_set(err, SG_EPARSE, "ELF .dynstr out of bounds");
    const char *strs = (const char *)p + st.sh_offset;
    size_t count = sh.sh_size / sizeof(Elf64_Sym);
    sg_elf_sym *syms = count ? sg_calloc(count, sizeof *syms) : NULL;
    size_t k = 0;
    for (size_t s = 1; s < count; s++) { /* symbol 0 is the null symbol */
      Elf64_Sym sym;
      memcpy(&sym, p + sh.sh_offset + s * sizeof sym, sizeof sym);
      if (sym.st_name == 0 || sym.st_name >= st.sh_size)
        continue;
      const char *name = strs + sym.st_name;
      size_t max = st.sh_size - sym.st_name;
      size_t nl = strnlen(name, max);
      if (nl == max) {
        sg_elf_symbols_free(syms, k);
        return sg_err_set(err, SG_EPARSE, "ELF symbol name not terminated");
      }
      syms[k].name = sg_strndup(name, nl);
      syms[k].defined = sym.st_shndx != SHN_UNDEF;
      syms[k].weak = ELF64_ST_BIND(sym.st_info) == STB_WEAK;
      syms[k].func = ELF64_ST_TYPE(sym.st_info) == STT_FUNC ||
                     ELF64_ST_TYPE(sym.st_info) == STT_GNU_IFUNC;
      k++;
    }
    *out = syms;
    *n = k;
    return 0;
  }
  return 0; /* no dynamic symbols at all */
}

/* ---- the symbol rules ------------------------------------------------------ */

typedef struct rule {
  const char *const *names;
  const char *why;
} rule;

static const char *const spawn_names[] = {
    "fork", "vfork", "_Fork", "clone", "clone3", "execve", "execv", "execvp",
    "execvpe", "execl", "execlp", "execle", "execveat", "fexecve", "system",
    "popen", "posix_spawn", "posix_spawnp", "daemon", NULL};
static const char *const thread_names[] = {
    "pthread_create", "thrd_create", NULL};
static const char *const net_names[] = {
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    "send", "sendto", "sendmsg", "recv", "recvfrom", "recvmsg", "getaddrinfo",
    "gethostbyname", "gethostbyname2", "gethostbyaddr", NULL};
static const char *const file_names[] = {
    "open", "open64", "openat", "openat64", "creat", "creat64", "fopen",
    "fopen64", "freopen", "freopen64", "fdopen", "opendir", "mkstemp",
    "tmpfile", "unlink", "remove", "rename", "truncate", "ftruncate", "mmap",
    "mmap64", "mprotect", "write", "writev", "pwrite", "pwrite64", "pwritev",
    "dup", "dup2", "dup3", "fcntl", "ioctl", NULL};
static const char *const dl_names[] = {
    "dlopen", "dlmopen", "dlsym", "dlvsym", "dladdr", "dlinfo", NULL};
static const char *const sys_names[] = {
    "syscall", "kill", "killpg", "tgkill", "sigqueue", "ptrace", "prctl",
    "setrlimit", "prlimit", "prlimit64", "unshare", "setns", "chroot",
    "chdir", "setpgid", "setsid", "sched_setaffinity", "seccomp", NULL};

static const rule rules[] = {
    {spawn_names, "starts a process or runs a program"},
    {thread_names, "starts threads (the kernel runs on one pinned core)"},
    {net_names, "uses the network"},
    {file_names, "opens, writes or maps files or descriptors"},
    {dl_names, "loads code or looks up symbols at run time"},
    {sys_names, "makes raw system calls or changes its process or limits"},
};

const char *sg_eval_forbidden_symbol(const char *name) {
  if (strncmp(name, "reference", 9) == 0)
    return "calls the reference implementation (symbols named reference* are "
           "off limits)";
  for (size_t i = 0; i < sizeof rules / sizeof *rules; i++)
    for (const char *const *n = rules[i].names; *n; n++)
      if (strcmp(name, *n) == 0)
        return rules[i].why;
  return NULL;
}

void sg_eval_check_symbols(const sg_elf_sym *syms, size_t n, const char *entry,
                           sg_eval_resolver resolve, void *ctx,
                           sg_eval_status *status, char **message) {
  *status = SG_EVAL_OK;
  *message = NULL;
  /* rejections first: a forbidden call is the worse news */
  for (size_t i = 0; i < n; i++) {
    if (syms[i].defined)
      continue;
    const char *why = sg_eval_forbidden_symbol(syms[i].name);
    if (why) {
      *status = SG_EVAL_REJECTED;
      *message = sg_asprintf(
          "rejected: the kernel uses `%s`, which %s. A kernel may only compute: "
          "no processes, threads, files, network, dynamic loading, system calls "
          "or calls to the reference.",
          syms[i].name, why);
      return;
    }
  }
  bool has_entry = false;
  for (size_t i = 0; i < n; i++)
    if (syms[i].defined && syms[i].func && strcmp(syms[i].name, entry) == 0)
      has_entry = true;
  if (!has_entry) {
    *status = SG_EVAL_COMPILE_ERROR;
    *message = sg_asprintf(
        "the candidate does not define the entry function `%s` (it must be "
        "defined with external linkage, with the task's signature)",
        entry);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    if (syms[i].defined || syms[i].weak)
      continue;
    if (!resolve(syms[i].name, ctx)) {
      *status = SG_EVAL_COMPILE_ERROR;
      *message = sg_asprintf(
          "link error: undefined reference to `%s` (only the C standard "
          "library and libm are available)",
          syms[i].name);
      return;
    }
  }
}

/* ---- compiler diagnostics ---------------------------------------------- */

static bool is_diagnostic_line(const char *line, size_t len) {
  static const char *const kinds[] = {": error:", ": warning:", ": fatal error:"};
  for (size_t k = 0; k < 3; k++) {
    size_t kl = strlen(kinds[k]);
    for (size_t i = 0; i + kl <= len; i++)
      if (memcmp(line + i, kinds[k], kl) == 0)
        return true;
  }
  return false;
}

char *sg_eval_trim_diagnostics(const char *text, size_t max_diags,
                               size_t max_bytes) {
  sg_buf b;
  sg_buf_init(&b, 0);
  size_t diags = 0, cut_diags = 0;
  bool cut_bytes = false, cutting = false;
  const char *p = text;
  while (*p) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
    bool diag = is_diagnostic_line(p, len);
    if (diag) {
      diags++;
      if (diags > max_diags)
        cutting = true;
    }
    if (cutting) {
      cut_diags += diag;
    } else if (b.len + len > max_bytes) {
      cut_bytes = true;
      cutting = true;
      cut_diags += diag;
    } else {
      sg_buf_append(&b, p, len);
    }
    p += len;
  }
  if (cutting) {
    if (b.len && b.data[b.len - 1] != '\n')
      sg_buf_puts(&b, "\n");
    if (cut_diags)
      sg_buf_printf(&b, "[%zu more diagnostics not shown]\n", cut_diags);
    else if (cut_bytes)
      sg_buf_printf(&b, "[output cut at %zu bytes]\n", max_bytes);
  }
  return sg_buf_steal(&b);
}

char *sg_eval_signal_text(int sig) {
  const char *abbrev = sigabbrev_np(sig);
  const char *descr = sigdescr_np(sig);
  if (!abbrev)
    return sg_asprintf("signal %d", sig);
  char d[64];
  snprintf(d, sizeof d, "%s", descr ? descr : "unknown");
  if (d[0] >= 'A' && d[0] <= 'Z' && !(d[1] >= 'A' && d[1] <= 'Z'))
    d[0] = (char)(d[0] - 'A' + 'a');
  return sg_asprintf("SIG%s (%s)", abbrev, d);
}

int sg_eval_cpu_parse_device(const char *device, int *cpu, sg_err *err) {
  *cpu = 0;
  if (!device)
    return 0;
  if (strncmp(device, "cpu:", 4) != 0 || !device[4])
    return sg_err_set(err, SG_EINVAL,
                      "device \"%s\": the cpu evaluator takes cpu:N (a core number)",
                      device);
  char *end = NULL;
  long v = strtol(device + 4, &end, 10);
  if (*end || v < 0 || v > 4095)
    return sg_err_set(err, SG_EINVAL,
                      "device \"%s\": the cpu evaluator takes cpu:N (a core number)",
                      device);
  *cpu = (int)v;
  return 0;
}
