/* sg_eval_cpu.c: the cpu evaluator: C kernels compiled with the system C
 * compiler and checked and timed on one pinned core (docs/eval.md).
 *
 * compile: the candidate is written to candidate.c in a fresh scratch
 * directory and compiled, in a sandboxed child, into a shared object together
 * with a small call shim that specgen generates from the task's arguments
 * (specgen_call__(void *const *args) calls the entry with each argument in its
 * C type, so the evaluator never has to build a call frame by hand). The
 * candidate is compiled as candidate_build.c: the task's signature as a
 * prototype, then `#line 1 "candidate.c"` and the candidate, so a wrong
 * signature is a compile error and the diagnostics' line numbers are the
 * candidate's own. The reference is built the same way. Then the candidate's
 * dynamic symbols are read from the ELF file and checked against the rules.
 *
 * run: one sandboxed child (forked, pinned to the core of cpu:N, no network,
 * no new processes) loads both shared objects with RTLD_LOCAL, checks the
 * candidate against the reference on fresh random input sets (outputs
 * poisoned with NaN before every call), then times the reference and the
 * candidate alternately (10 warm-ups and 40 timed calls each by default) over
 * rotated copies of the inputs. It writes progress lines and one final JSON
 * object to the result pipe; the parent turns the sandbox's outcome and that
 * report into an sg_eval_result.
 *
 * What it must never do: load candidate code into this process, or trust a
 * report the child did not finish (a nonce ties the report to this run).
 */
#include "common/sg_stats.h"
#include "eval/sg_eval_cpu.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_clock.h"
#include "common/sg_file.h"
#include "common/sg_hash.h"
#include "eval/sg_sandbox.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define SHIM_SYMBOL "specgen_call__"
#define SOURCE_MAX_BYTES (4u << 20)
#define DIAG_MAX 20
#define DIAG_MAX_BYTES 4096
/* Inputs are kept in up to this many copies, cycled through while timing. */
#define ROTATE_MAX 8
#define ROTATE_BYTES (UINT64_C(256) << 20)

static const char *c_type(sg_dtype d) {
  switch (d) {
  case SG_DTYPE_F32: return "float";
  case SG_DTYPE_F64: return "double";
  case SG_DTYPE_I32: return "int32_t";
  default: return "int64_t";
  }
}

/* The shim: specgen_call__(args) calls the entry with each argument in its
 * declared type (pointers as void *, scalars read from their slot). */
static char *shim_source(const sg_task *t) {
  sg_buf b;
  sg_buf_init(&b, 0);
  sg_buf_printf(&b,
                "#include <stddef.h>\n#include <stdint.h>\n"
                "#line 1 \"<task signature>\"\n%s;\n"
                "#line 1 \"<specgen call shim>\"\n"
                "void " SHIM_SYMBOL "(void *const *a);\n"
                "void " SHIM_SYMBOL "(void *const *a) {\n  %s(",
                t->signature, t->entry);
  for (size_t i = 0; i < t->nargs; i++) {
    if (t->args[i].kind == SG_ARG_SCALAR)
      sg_buf_printf(&b, "%s*(const %s *)a[%zu]", i ? ", " : "",
                    c_type(t->args[i].dtype), i);
    else
      sg_buf_printf(&b, "%sa[%zu]", i ? ", " : "", i);
  }
  sg_buf_puts(&b, ");\n}\n");
  return sg_buf_steal(&b);
}

/* What the candidate's file becomes: the prototype, then the candidate with
 * its own line numbers. */
static char *wrapped_source(const sg_task *t, const char *src, size_t len,
                            const char *shown_name) {
  sg_buf b;
  sg_buf_init(&b, 0);
  sg_buf_printf(&b,
                "#include <stddef.h>\n#include <stdint.h>\n"
                "#line 1 \"<task signature>\"\n%s;\n#line 1 \"%s\"\n",
                t->signature, shown_name);
  sg_buf_append(&b, src, len);
  sg_buf_puts(&b, "\n");
  return sg_buf_steal(&b);
}

static const char *compiler(void) {
  const char *cc = getenv("SPECGEN_CC");
  return cc && cc[0] ? cc : "cc";
}

/* Runs the compiler in dir on src_a and src_b into out_so. On failure
 * *diag is the trimmed output and the return is 1; 0 on success; negative
 * if the compiler could not be run at all. */
static int run_compiler(const char *dir, const char *src_a, const char *src_b,
                        const char *out_so, double timeout_s, char **diag,
                        sg_err *err) {
  *diag = NULL;
  char *argv[] = {(char *)compiler(), "-std=c11", "-O3", "-march=native",
                  "-fPIC", "-shared", "-fdiagnostics-color=never",
                  "-D_GNU_SOURCE", "-Werror=implicit-function-declaration",
                  "-o", (char *)out_so, (char *)src_a, (char *)src_b, "-lm",
                  NULL};
  sg_sandbox_limits lim;
  sg_sandbox_limits_default(&lim);
  lim.wall_s = timeout_s;
  lim.cpu_s = timeout_s;
  lim.address_space_bytes = UINT64_C(8) << 30;
  lim.file_size_bytes = UINT64_C(256) << 20;
  lim.max_processes = 0;
  lim.output_cap_bytes = 256 * 1024;
  lim.isolate_network = false; /* the compiler is trusted not to dial out */
  lim.forbid_spawn = false;    /* cc runs cc1, as and ld */
  lim.work_dir = dir;
  sg_sandbox_outcome o;
  int rc = sg_sandbox_exec(&lim, argv, &o, err);
  if (rc)
    return sg_err_prefix(err, "running the C compiler (%s)", compiler());
  int result = 0;
  if (o.end == SG_SANDBOX_TIMED_OUT) {
    *diag = sg_asprintf("the compiler did not finish within %.0f s", timeout_s);
    result = 1;
  } else if (o.end == SG_SANDBOX_SIGNALED) {
    char *s = sg_eval_signal_text(o.signal);
    *diag = sg_asprintf("the compiler was killed by %s", s);
    free(s);
    result = 1;
  } else if (o.exit_code != 0) {
    *diag = sg_eval_trim_diagnostics(o.err[0] ? o.err : o.out, DIAG_MAX,
                                     DIAG_MAX_BYTES);
    result = 1;
  }
  sg_sandbox_outcome_free(&o);
  return result;
}

static int write_file(const char *dir, const char *name, const char *text,
                      size_t len, sg_err *err) {
  char *path = sg_asprintf("%s/%s", dir, name);
  int rc = sg_file_write(path, text, len, err);
  free(path);
  return rc;
}

/* The libraries a candidate may import from. */
static bool resolve_allowed(const char *name, void *ctx) {
  (void)ctx;
  static const char *const libs[] = {"libc.so.6", "libm.so.6"};
  for (size_t i = 0; i < 2; i++) {
    void *h = dlopen(libs[i], RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
      h = dlopen(libs[i], RTLD_LAZY);
    if (!h)
      continue;
    void *sym = dlsym(h, name);
    dlclose(h);
    if (sym)
      return true;
  }
  return false;
}

static void set_message(sg_eval_result *r, char *msg) {
  free(r->message);
  r->message = msg;
}

/* A fresh scratch directory: under opts->work_dir, else under $TMPDIR. */
static int make_scratch(const sg_eval_opts *opts, char **out, sg_err *err) {
  const char *root = opts->work_dir;
  if (!root) {
    root = getenv("TMPDIR");
    if (!root || !root[0])
      root = "/tmp";
  } else {
    int rc = sg_mkdir_p(root, err);
    if (rc)
      return rc;
  }
  char *tmpl = sg_asprintf("%s/specgen-eval-XXXXXX", root);
  if (!mkdtemp(tmpl)) {
    int rc = sg_err_set(err, SG_EIO, "%s: cannot create a scratch directory: %s",
                        root, strerror(errno));
    free(tmpl);
    return rc;
  }
  *out = tmpl;
  return 0;
}

/* The compiler flags, as text, for the reference cache's key. */
#define CC_FLAGS_TEXT                                                        \
  "-std=c11 -O3 -march=native -fPIC -shared -D_GNU_SOURCE "                  \
  "-Werror=implicit-function-declaration -lm"

/* The CPU's model and feature flags (what -march=native reads), so a cache
 * shared between machines never hands one CPU another's instructions. */
static const char *cpu_features(void) {
  static char buf[4096];
  static bool done;
  if (done)
    return buf;
  done = true;
  FILE *f = fopen("/proc/cpuinfo", "re");
  if (!f)
    return buf;
  char line[4096];
  size_t k = 0;
  int found = 0;
  while (found < 2 && fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) == 0 || strncmp(line, "flags", 5) == 0 ||
        strncmp(line, "Features", 8) == 0 || strncmp(line, "CPU part", 8) == 0) {
      size_t l = strlen(line);
      if (k + l < sizeof buf) {
        memcpy(buf + k, line, l);
        k += l;
        buf[k] = '\0';
      }
      found++;
    }
  }
  fclose(f);
  return buf;
}

/* $SPECGEN_CACHE_DIR, else $XDG_CACHE_HOME/specgen, else ~/.cache/specgen;
 * NULL (no cache) when SPECGEN_CACHE_DIR is "off" or no home is known. */
static char *ref_cache_dir(void) {
  const char *d = getenv("SPECGEN_CACHE_DIR");
  if (d && strcmp(d, "off") == 0)
    return NULL;
  if (d && d[0])
    return sg_strdup(d);
  const char *x = getenv("XDG_CACHE_HOME");
  if (x && x[0])
    return sg_asprintf("%s/specgen", x);
  const char *h = getenv("HOME");
  if (h && h[0])
    return sg_asprintf("%s/.cache/specgen", h);
  return NULL;
}

/* Options the evaluator cannot honour; checked before any work. */
static int check_opts(const sg_eval_opts *opts, sg_err *err) {
  if (opts->correctness_trials < 3)
    return sg_err_set(err, SG_EINVAL,
                      "options: correctness_trials is %d; at least 3 input "
                      "sets are checked", opts->correctness_trials);
  if (opts->timed_runs < 1 || opts->warmup_runs < 0)
    return sg_err_set(err, SG_EINVAL,
                      "options: timed_runs must be at least 1 and warmup_runs "
                      "at least 0");
  int cpu;
  return sg_eval_cpu_parse_device(opts->device, &cpu, err);
}

int sg_eval_cpu_compile(const sg_task *task, const char *source, size_t len,
                        const sg_eval_opts *opts, sg_eval_build *build,
                        sg_eval_result *r, sg_err *err) {
  memset(build, 0, sizeof *build);
  double t0 = sg_clock_now_s();
  int rc0 = check_opts(opts, err);
  if (rc0)
    return rc0;
  if (len > SOURCE_MAX_BYTES) {
    r->status = SG_EVAL_COMPILE_ERROR;
    set_message(r, sg_asprintf("the candidate is %zu bytes; the limit is %u",
                               len, SOURCE_MAX_BYTES));
    r->compile_s = sg_clock_now_s() - t0;
    return 0;
  }
  char *dir = NULL;
  int rc = make_scratch(opts, &dir, err);
  if (rc)
    return rc;
  build->work_dir = dir;
  build->owns_work_dir = true;
  build->artifact = sg_asprintf("%s/candidate.so", dir);
  build->reference_artifact = sg_asprintf("%s/reference.so", dir);

  char *shim = shim_source(task);
  char *wrapped = wrapped_source(task, source, len, "candidate.c");
  char *ref_src = NULL;
  size_t ref_len = 0;
  char *diag = NULL;
  if ((rc = sg_file_read(task->reference_path, SOURCE_MAX_BYTES, &ref_src,
                         &ref_len, err)))
    goto done;
  char *ref_wrapped = wrapped_source(task, ref_src, ref_len, "reference.c");
  if ((rc = write_file(dir, "specgen_call.c", shim, strlen(shim), err)) ||
      (rc = write_file(dir, "candidate.c", source, len, err)) ||
      (rc = write_file(dir, "candidate_build.c", wrapped, strlen(wrapped), err)) ||
      (rc = write_file(dir, "reference.c", ref_src, ref_len, err)) ||
      (rc = write_file(dir, "reference_build.c", ref_wrapped,
                       strlen(ref_wrapped), err))) {
    free(ref_wrapped);
    goto done;
  }
  free(ref_wrapped);

  double timeout = opts->compile_timeout_s > 0 ? opts->compile_timeout_s : 60;
  /* The reference's build is cached: its key covers everything it is made
   * from (source, shim, compiler, flags, this CPU's features for
   * -march=native), and a cache entry appears by an atomic rename. */
  char *ref_key_text = sg_asprintf("%s\n%s\n%s\n%s", compiler(), CC_FLAGS_TEXT,
                                   shim, cpu_features());
  uint64_t key = sg_fnv1a64_update(sg_fnv1a64(ref_key_text, strlen(ref_key_text)),
                                   ref_src, ref_len);
  free(ref_key_text);
  char *cache_dir = ref_cache_dir();
  char *cached = cache_dir ? sg_asprintf("%s/ref-%016" PRIx64 ".so", cache_dir, key)
                           : NULL;
  struct stat cst;
  if (cached && stat(cached, &cst) == 0 && S_ISREG(cst.st_mode)) {
    free(build->reference_artifact);
    build->reference_artifact = cached;
    cached = NULL;
  } else {
    rc = run_compiler(dir, "reference_build.c", "specgen_call.c", "reference.so",
                      timeout, &diag, err);
    if (rc < 0) {
      free(cached);
      free(cache_dir);
      goto done;
    }
    if (rc == 1) {
      rc = sg_err_set(err, SG_EINVAL, "task %s: %s does not compile:\n%s",
                      task->name, task->reference_path, diag);
      free(cached);
      free(cache_dir);
      goto done;
    }
    if (cached && sg_mkdir_p(cache_dir, NULL) == 0) {
      /* copy, then rename into place: readers never see half a file */
      char *data = NULL;
      size_t dlen = 0;
      sg_err ignore;
      if (sg_file_read(build->reference_artifact, UINT64_C(1) << 30, &data,
                       &dlen, &ignore) == 0)
        (void)sg_file_write(cached, data, dlen, &ignore); /* best effort */
      free(data);
    }
    free(cached);
  }
  free(cache_dir);
  free(diag);
  diag = NULL;
  rc = run_compiler(dir, "candidate_build.c", "specgen_call.c", "candidate.so",
                    timeout, &diag, err);
  if (rc < 0)
    goto done;
  if (rc == 1) {
    r->status = SG_EVAL_COMPILE_ERROR;
    set_message(r, sg_asprintf("compilation failed:\n%s", diag));
    rc = 0;
    goto done;
  }

  /* the rules, on what the shared object imports and exports */
  char *so = NULL;
  size_t so_len = 0;
  if ((rc = sg_file_read(build->artifact, UINT64_C(1) << 30, &so, &so_len, err)))
    goto done;
  sg_elf_sym *syms = NULL;
  size_t nsyms = 0;
  rc = sg_elf_dynamic_symbols(so, so_len, &syms, &nsyms, err);
  free(so);
  if (rc) {
    sg_err_prefix(err, "%s", build->artifact);
    goto done;
  }
  sg_eval_status st;
  char *why = NULL;
  sg_eval_check_symbols(syms, nsyms, task->entry, resolve_allowed, NULL, &st,
                        &why);
  sg_elf_symbols_free(syms, nsyms);
  r->status = st;
  set_message(r, why ? why : sg_strdup("compiled"));
  rc = 0;

done:
  free(diag);
  free(shim);
  free(wrapped);
  free(ref_src);
  r->compile_s = sg_clock_now_s() - t0;
  if (rc)
    sg_eval_build_free(build);
  return rc;
}

/* ---- the child ------------------------------------------------------------- */

typedef void (*call_fn)(void *const *args);

typedef struct child_ctx {
  const sg_task *task;
  const char *cand_so, *ref_so;
  int trials, warmups, runs;
  uint64_t seed;
  char nonce[40];
  call_fn fns[2]; /* the reference's and the candidate's call shims */
  double cand_budget_s; /* wall-clock time the candidate's calls may take */
  double cand_used_s;
} child_ctx;

/* The candidate's time limit is kept by the child itself: an interval timer
 * armed around each call with what is left of the budget, whose SIGALRM
 * (default action: terminate) ends the child. Input drawing and the
 * reference's calls do not count against the candidate; the sandbox's own
 * wall-clock limit, larger, catches a kernel that blocks SIGALRM. */
static void arm(const child_ctx *c) {
  double left = c->cand_budget_s - c->cand_used_s;
  if (left < 1e-6)
    left = 1e-6;
  struct itimerval it;
  memset(&it, 0, sizeof it);
  it.it_value.tv_sec = (time_t)left;
  it.it_value.tv_usec = (suseconds_t)((left - (double)(time_t)left) * 1e6);
  if (it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0)
    it.it_value.tv_usec = 1;
  setitimer(ITIMER_REAL, &it, NULL);
}

static void disarm(child_ctx *c, int64_t elapsed_ns) {
  struct itimerval it;
  memset(&it, 0, sizeof it);
  setitimer(ITIMER_REAL, &it, NULL);
  c->cand_used_s += (double)elapsed_ns / 1e9;
}

static void emit(int fd, json_t *j) {
  char *s = json_dumps(j, JSON_COMPACT);
  size_t n = strlen(s);
  s[n] = '\0';
  sg_buf b;
  sg_buf_init(&b, 0);
  sg_buf_append(&b, s, n);
  sg_buf_puts(&b, "\n");
  const char *p = b.data;
  size_t left = b.len;
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      break;
    p += w;
    left -= (size_t)w;
  }
  sg_buf_free(&b);
  free(s);
  json_decref(j);
}

static void progress(int fd, const char *phase, int trial, const char *who) {
  json_t *j = json_pack("{s:s}", "phase", phase);
  if (trial >= 0)
    json_object_set_new(j, "trial", json_integer(trial));
  if (who)
    json_object_set_new(j, "who", json_string(who));
  emit(fd, j);
}

static int final(int fd, const child_ctx *c, json_t *j) {
  json_object_set_new(j, "nonce", json_string(c->nonce));
  emit(fd, j);
  return 0;
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static call_fn load(const char *path, void **handle, char **why) {
  *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!*handle) {
    *why = sg_strdup(dlerror());
    return NULL;
  }
  call_fn f;
  void *sym = dlsym(*handle, SHIM_SYMBOL);
  memcpy(&f, &sym, sizeof f);
  if (!f)
    *why = sg_strdup("the call shim is missing");
  return f;
}

/* Draws input set `set` into copy k, runs the reference and the candidate
 * on it with poisoned outputs, and compares. NULL when all is well; else the
 * final report (status numerical_error or infra_error) without its nonce. */
static int64_t now_ns(void);

static json_t *check_once(child_ctx *c, int fd, int k, uint64_t set,
                          int copies, void **in, void **pristine, void **out_c,
                          void **out_r, void **args_c, void **args_r,
                          double *max_abs, double *max_rel) {
  const sg_task *t = c->task;
  size_t n = t->nargs;
  (void)copies;
  for (size_t i = 0; i < n; i++) {
    const sg_task_arg *a = &t->args[i];
    if (a->kind == SG_ARG_INPUT) {
      sg_rng rng;
      sg_rng_seed(&rng, sg_rng_derive(c->seed, set, i));
      sg_eval_fill(a, in[(size_t)k * n + i], &rng);
      memcpy(pristine[i], in[(size_t)k * n + i],
             (size_t)a->numel * sg_dtype_size(a->dtype));
    } else if (a->kind == SG_ARG_OUTPUT) {
      sg_eval_poison(a->dtype, out_r[i], a->numel);
      sg_eval_poison(a->dtype, out_c[i], a->numel);
    }
  }
  int trial = set < 1000 ? (int)set : -1;
  progress(fd, set < 1000 ? "correctness" : "recheck", trial, "reference");
  c->fns[0](args_r + (size_t)k * n);
  progress(fd, set < 1000 ? "correctness" : "recheck", trial, "candidate");
  arm(c);
  int64_t c0 = now_ns();
  c->fns[1](args_c + (size_t)k * n);
  disarm(c, now_ns() - c0);
  for (size_t i = 0; i < n; i++) {
    const sg_task_arg *a = &t->args[i];
    size_t es = sg_dtype_size(a->dtype);
    size_t bytes = (size_t)a->numel * es;
    const char *cur = in[(size_t)k * n + i];
    if (a->kind == SG_ARG_INPUT && memcmp(pristine[i], cur, bytes) != 0) {
      int64_t at = 0;
      while (memcmp((const char *)pristine[i] + at * (int64_t)es,
                    cur + at * (int64_t)es, es) == 0)
        at++;
      char *m = sg_asprintf("the kernel wrote into its input %s (element %" PRId64
                            " changed); inputs are read-only",
                            a->name, at);
      json_t *j = json_pack("{s:s,s:s,s:I}", "status", "numerical_error",
                            "message", m, "first_mismatch", (json_int_t)at);
      free(m);
      return j;
    }
    if (a->kind != SG_ARG_OUTPUT)
      continue;
    for (int64_t e = 0; e < a->numel; e++)
      if (sg_eval_is_poison(a->dtype, out_r[i], e))
        return json_pack("{s:s,s:s++}", "status", "infra_error", "message",
                         "the reference left elements of ", a->name,
                         " unwritten (a bug in the task)");
    sg_eval_cmp cmp;
    sg_eval_compare(a->dtype, out_c[i], out_r[i], a->numel, t->atol, t->rtol, &cmp);
    if (cmp.max_abs > *max_abs)
      *max_abs = cmp.max_abs;
    if (cmp.max_rel > *max_rel)
      *max_rel = cmp.max_rel;
    if (cmp.first_bad >= 0) {
      char *msg = sg_eval_cmp_message(a, &cmp, t->atol, t->rtol);
      json_t *j = json_pack("{s:s,s:s,s:I}", "status", "numerical_error",
                            "message", msg, "first_mismatch",
                            (json_int_t)cmp.first_bad);
      json_object_set_new(j, "max_abs_err", isfinite(*max_abs) ? json_real(*max_abs) : json_null());
      json_object_set_new(j, "max_rel_err", isfinite(*max_rel) ? json_real(*max_rel) : json_null());
      free(msg);
      return j;
    }
  }
  return NULL;
}

/* The child's whole job; runs in the sandbox. */
static int child_main(void *arg, int fd) {
  child_ctx *c = arg;
  signal(SIGALRM, SIG_DFL);
  sigset_t alrm;
  sigemptyset(&alrm);
  sigaddset(&alrm, SIGALRM);
  sigprocmask(SIG_UNBLOCK, &alrm, NULL);
  const sg_task *t = c->task;
  double t_start = sg_clock_now_s();
  json_t *phases = json_object();
  progress(fd, "load", -1, NULL);
  void *hc = NULL, *hr = NULL;
  char *why = NULL;
  call_fn ref = load(c->ref_so, &hr, &why);
  if (!ref)
    return final(fd, c, json_pack("{s:s,s:s+}", "status", "infra_error",
                                  "message", "the reference cannot be loaded: ", why));
  call_fn cand = load(c->cand_so, &hc, &why);
  if (!cand)
    return final(fd, c, json_pack("{s:s,s:s+}", "status", "runtime_error",
                                  "message", "the kernel cannot be loaded: ", why));
  c->fns[0] = ref;
  c->fns[1] = cand;
  json_object_set_new(phases, "load", json_real(sg_clock_now_s() - t_start));

  /* buffers: inputs in `copies` rotated copies, one pristine copy of set 0,
   * outputs for each side, scalars in typed slots */
  size_t n = t->nargs;
  uint64_t in_bytes = 0;
  for (size_t i = 0; i < n; i++)
    if (t->args[i].kind == SG_ARG_INPUT)
      in_bytes += (uint64_t)t->args[i].numel * sg_dtype_size(t->args[i].dtype);
  int copies = in_bytes ? (int)(ROTATE_BYTES / in_bytes) : ROTATE_MAX;
  copies = copies < 2 ? 2 : copies > ROTATE_MAX ? ROTATE_MAX : copies;
  void **in = sg_calloc(n * (size_t)copies, sizeof *in);
  void **pristine = sg_calloc(n, sizeof *pristine);
  void **out_c = sg_calloc(n, sizeof *out_c), **out_r = sg_calloc(n, sizeof *out_r);
  union { float f; double d; int32_t i32; int64_t i64; } *scalars =
      sg_calloc(n, sizeof *scalars);
  for (size_t i = 0; i < n; i++) {
    const sg_task_arg *a = &t->args[i];
    size_t bytes = (size_t)a->numel * sg_dtype_size(a->dtype);
    if (a->kind == SG_ARG_INPUT) {
      for (int k = 0; k < copies; k++)
        in[(size_t)k * n + i] = sg_malloc(bytes);
      pristine[i] = sg_malloc(bytes);
    } else if (a->kind == SG_ARG_OUTPUT) {
      out_c[i] = sg_malloc(bytes);
      out_r[i] = sg_malloc(bytes);
    } else {
      switch (a->dtype) {
      case SG_DTYPE_F32: scalars[i].f = (float)a->scalar_value; break;
      case SG_DTYPE_F64: scalars[i].d = a->scalar_value; break;
      case SG_DTYPE_I32: scalars[i].i32 = (int32_t)a->scalar_value; break;
      default: scalars[i].i64 = (int64_t)a->scalar_value; break;
      }
    }
  }
  /* argument vectors: per copy, for each side */
  void **args_c = sg_calloc(n * (size_t)copies, sizeof *args_c);
  void **args_r = sg_calloc(n * (size_t)copies, sizeof *args_r);
  for (int k = 0; k < copies; k++)
    for (size_t i = 0; i < n; i++) {
      const sg_task_arg *a = &t->args[i];
      void *p = a->kind == SG_ARG_INPUT ? in[(size_t)k * n + i]
                : a->kind == SG_ARG_SCALAR ? (void *)&scalars[i] : NULL;
      args_c[(size_t)k * n + i] = a->kind == SG_ARG_OUTPUT ? out_c[i] : p;
      args_r[(size_t)k * n + i] = a->kind == SG_ARG_OUTPUT ? out_r[i] : p;
    }

  /* correctness: input set t goes into copy t % copies, where the timed
   * runs find it again (drawing inputs is the slow part for big tasks) */
  double t_corr = sg_clock_now_s();
  double max_abs = 0, max_rel = 0;
  for (int trial = 0; trial < c->trials; trial++) {
    int k = trial % copies;
    json_t *bad = check_once(c, fd, k, (uint64_t)trial, copies, in, pristine,
                             out_c, out_r, args_c, args_r, &max_abs, &max_rel);
    if (bad) {
      char *m = sg_asprintf("wrong result on input set %d of %d: %s", trial + 1,
                            c->trials,
                            json_string_value(json_object_get(bad, "message")));
      json_object_set_new(bad, "message", json_string(m));
      free(m);
      return final(fd, c, bad);
    }
  }
  json_object_set_new(phases, "correctness", json_real(sg_clock_now_s() - t_corr));

  /* timing: copies no trial filled get fresh values; then ref, cand, ref,
   * cand, ... cycling through the copies */
  double t_time = sg_clock_now_s();
  for (int k = c->trials; k < copies; k++)
    for (size_t i = 0; i < n; i++)
      if (t->args[i].kind == SG_ARG_INPUT) {
        sg_rng rng;
        sg_rng_seed(&rng, sg_rng_derive(c->seed, 1000u + (uint64_t)k, i));
        sg_eval_fill(&t->args[i], in[(size_t)k * n + i], &rng);
      }
  progress(fd, "timing", -1, NULL);
  int total = c->warmups + c->runs;
  char *order = sg_calloc((size_t)total * 2 + 1, 1);
  json_t *ref_ns = json_array(), *cand_ns = json_array();
  for (int it = 0; it < total; it++) {
    int k = it % copies;
    bool timed = it >= c->warmups;
    int64_t a0 = now_ns();
    ref(args_r + (size_t)k * n);
    int64_t r1 = now_ns();
    arm(c);
    int64_t a1 = now_ns();
    cand(args_c + (size_t)k * n);
    int64_t a2 = now_ns();
    disarm(c, a2 - a1);
    order[2 * it] = timed ? 'R' : 'r';
    order[2 * it + 1] = timed ? 'C' : 'c';
    if (timed) {
      json_array_append_new(ref_ns, json_integer(r1 - a0));
      json_array_append_new(cand_ns, json_integer(a2 - a1));
    }
  }
  json_object_set_new(phases, "timing", json_real(sg_clock_now_s() - t_time));
  /* one more check, on new values in buffers the kernel has seen before: a
   * kernel that caches its answer by pointer fails here */
  double t_final = sg_clock_now_s();
  json_t *bad = check_once(c, fd, 0, 2000, copies, in, pristine, out_c, out_r,
                           args_c, args_r, &max_abs, &max_rel);
  if (bad) {
    char *m = sg_asprintf("wrong result when called again on the same buffers "
                          "holding new values (is the kernel caching results?): %s",
                          json_string_value(json_object_get(bad, "message")));
    json_object_set_new(bad, "message", json_string(m));
    free(m);
    free(order);
    json_decref(ref_ns);
    json_decref(cand_ns);
    return final(fd, c, bad);
  }
  json_object_set_new(phases, "recheck", json_real(sg_clock_now_s() - t_final));
  json_t *j = json_pack("{s:s,s:s,s:o,s:o,s:o,s:i,s:f,s:f}", "status", "ok",
                        "order", order, "ref_ns", ref_ns, "cand_ns", cand_ns,
                        "phase_s", phases, "copies", copies, "max_abs_err",
                        max_abs, "max_rel_err", max_rel);
  free(order);
  return final(fd, c, j);
}

/* ---- the parent ------------------------------------------------------------ */

/* Splits the child's report into its last progress line and its final
 * object (with the right nonce); either may be NULL. */
static void parse_report(const char *text, const char *nonce, json_t **last_progress,
                         json_t **final_obj) {
  *last_progress = *final_obj = NULL;
  const char *p = text;
  while (*p) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    json_t *j = json_loadb(p, len, 0, NULL);
    if (json_is_object(j)) {
      const json_t *st = json_object_get(j, "status");
      const json_t *nn = json_object_get(j, "nonce");
      if (st && json_is_string(nn) && strcmp(json_string_value(nn), nonce) == 0) {
        if (*final_obj)
          json_decref(*final_obj);
        *final_obj = j;
        j = NULL;
      } else if (json_object_get(j, "phase")) {
        if (*last_progress)
          json_decref(*last_progress);
        *last_progress = j;
        j = NULL;
      }
    }
    if (j)
      json_decref(j);
    p += len;
    if (*p == '\n')
      p++;
  }
}

/* "during correctness check 2 of 3, in the candidate" etc. */
static char *phase_text(const json_t *prog, int trials) {
  if (!prog)
    return sg_strdup("before the kernel was loaded");
  const char *phase = json_string_value(json_object_get(prog, "phase"));
  if (!phase)
    return sg_strdup("");
  if (strcmp(phase, "load") == 0)
    return sg_strdup("while loading the kernel (constructors run here)");
  if (strcmp(phase, "correctness") == 0) {
    const char *who = json_string_value(json_object_get(prog, "who"));
    return sg_asprintf("during correctness check %d of %d, in the %s",
                       (int)json_integer_value(json_object_get(prog, "trial")) + 1,
                       trials, who ? who : "kernel");
  }
  if (strcmp(phase, "recheck") == 0) {
    const char *who = json_string_value(json_object_get(prog, "who"));
    return sg_asprintf("during the final check on new input values, in the %s",
                       who ? who : "kernel");
  }
  if (strcmp(phase, "timing") == 0)
    return sg_strdup("during the timed runs (after the correctness checks passed)");
  return sg_strdup(phase);
}

static bool in_reference(const json_t *prog) {
  const char *who = prog ? json_string_value(json_object_get(prog, "who")) : NULL;
  return who && strcmp(who, "reference") == 0;
}

/* The last bytes of what the child printed, for the message. */
static void append_output(sg_buf *b, const sg_sandbox_outcome *o) {
  const char *s = o->err[0] ? o->err : o->out;
  size_t len = strlen(s);
  if (!len)
    return;
  size_t keep = len > 1024 ? 1024 : len;
  sg_buf_printf(b, "\n%s (last %zu bytes):\n%s", o->err[0] ? "stderr" : "stdout",
                keep, s + (len - keep));
}

static double ns_array_ms(const json_t *arr, bool median) {
  size_t n = json_array_size(arr);
  if (n == 0)
    return NAN;
  double *x = sg_malloc(n * sizeof *x);
  for (size_t i = 0; i < n; i++)
    x[i] = (double)json_integer_value(json_array_get(arr, i)) / 1e6;
  double v = median ? sg_stats_median(x, n) : sg_stats_mean(x, n);
  free(x);
  return v;
}

static int check_cpu_available(int cpu, sg_err *err) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return sg_err_set(err, SG_EIO, "sched_getaffinity: %s", strerror(errno));
  if (cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set))
    return 0;
  sg_buf b;
  sg_buf_init(&b, 200);
  for (int i = 0, k = 0; i < CPU_SETSIZE; i++)
    if (CPU_ISSET(i, &set))
      sg_buf_printf(&b, "%s%d", k++ ? ", " : "", i);
  int rc = sg_err_set(err, SG_EINVAL,
                      "device cpu:%d: no such core here (this process may use "
                      "cores %s)",
                      cpu, sg_buf_str(&b));
  sg_buf_free(&b);
  return rc;
}

int sg_eval_cpu_run_logged(const sg_task *task, const sg_eval_build *build,
                           const sg_eval_opts *opts, sg_eval_result *r,
                           json_t **log, sg_err *err) {
  if (log)
    *log = NULL;
  int cpu = 0;
  int rc = sg_eval_cpu_parse_device(opts->device, &cpu, err);
  if (rc || (rc = check_cpu_available(cpu, err)))
    return rc;
  if ((rc = check_opts(opts, err)))
    return rc;
  child_ctx c;
  memset(&c, 0, sizeof c);
  c.task = task;
  c.cand_so = build->artifact;
  c.ref_so = build->reference_artifact;
  c.trials = opts->correctness_trials;
  c.warmups = opts->warmup_runs;
  c.runs = opts->timed_runs;
  c.seed = opts->seed;
  if (!c.seed) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    sg_rng rng;
    sg_rng_seed(&rng, x ^ ((uint64_t)getpid() << 32));
    c.seed = sg_rng_next(&rng) >> 1; /* fits a JSON integer */
    if (!c.seed)
      c.seed = 1;
  }
  {
    sg_rng rng;
    sg_rng_seed(&rng, c.seed ^ (uint64_t)sg_clock_now_us() ^ (uint64_t)getpid());
    snprintf(c.nonce, sizeof c.nonce, "%016" PRIx64 "%016" PRIx64,
             sg_rng_next(&rng), sg_rng_next(&rng));
  }
  r->seed = c.seed;

  /* memory: every buffer the child allocates, plus room for the kernel */
  uint64_t need = 0, in_bytes = 0;
  for (size_t i = 0; i < task->nargs; i++) {
    uint64_t b = (uint64_t)task->args[i].numel * sg_dtype_size(task->args[i].dtype);
    if (task->args[i].kind == SG_ARG_INPUT)
      in_bytes += b;
    else if (task->args[i].kind == SG_ARG_OUTPUT)
      need += 2 * b;
  }
  need += in_bytes * (ROTATE_MAX + 1);
  sg_sandbox_limits lim;
  sg_sandbox_limits_default(&lim);
  c.cand_budget_s = opts->run_timeout_s > 0 ? opts->run_timeout_s : 60;
  /* the backstop: the kernel's budget, plus room for drawing inputs and
   * running the reference */
  lim.wall_s = 2 * c.cand_budget_s + 120;
  lim.cpu_s = lim.wall_s + 1;
  if (lim.address_space_bytes < need + (UINT64_C(2) << 30))
    lim.address_space_bytes = need + (UINT64_C(2) << 30);
  lim.pin_cpu = cpu;
  lim.work_dir = build->work_dir;
  lim.isolate_network = true;
  lim.forbid_spawn = true;

  sg_sandbox_outcome o;
  rc = sg_sandbox_run(&lim, child_main, &c, &o, err);
  if (rc)
    return sg_err_prefix(err, "running the kernel");
  r->run_s = o.wall_s;
  r->network_isolated = o.network_isolated;

  json_t *prog = NULL, *fin = NULL;
  parse_report(o.result, c.nonce, &prog, &fin);
  char *where = phase_text(prog, c.trials);
  sg_buf msg;
  sg_buf_init(&msg, 0);
  r->speedup = r->ref_ms = r->cand_ms = r->ref_mean_ms = r->cand_mean_ms = NAN;
  r->max_abs_err = r->max_rel_err = NAN;
  r->first_mismatch = -1;

  if (fin && o.end == SG_SANDBOX_EXITED && o.exit_code == 0) {
    const char *st = json_string_value(json_object_get(fin, "status"));
    int s = sg_eval_status_parse(st);
    r->status = s >= 0 ? (sg_eval_status)s : SG_EVAL_INFRA_ERROR;
    const json_t *fm = json_object_get(fin, "first_mismatch");
    if (json_is_integer(fm))
      r->first_mismatch = json_integer_value(fm);
    const json_t *ma = json_object_get(fin, "max_abs_err");
    const json_t *mr = json_object_get(fin, "max_rel_err");
    r->max_abs_err = json_is_number(ma) ? json_number_value(ma) : NAN;
    r->max_rel_err = json_is_number(mr) ? json_number_value(mr) : NAN;
    if (r->status == SG_EVAL_OK) {
      const json_t *rn = json_object_get(fin, "ref_ns");
      const json_t *cn = json_object_get(fin, "cand_ns");
      r->ref_ms = ns_array_ms(rn, true);
      r->cand_ms = ns_array_ms(cn, true);
      r->ref_mean_ms = ns_array_ms(rn, false);
      r->cand_mean_ms = ns_array_ms(cn, false);
      r->speedup = r->ref_ms / r->cand_ms;
      sg_buf_printf(&msg,
                    "correct on %d random input sets (max abs error %.3g, max "
                    "rel error %.3g); median of %d runs: reference %.4g ms, "
                    "kernel %.4g ms, speedup %.3gx",
                    c.trials, r->max_abs_err, r->max_rel_err, c.runs, r->ref_ms,
                    r->cand_ms, r->speedup);
    } else {
      const char *m = json_string_value(json_object_get(fin, "message"));
      sg_buf_puts(&msg, m ? m : "");
    }
    if (log)
      *log = json_incref(fin);
  } else if (o.end == SG_SANDBOX_TIMED_OUT) {
    r->status = in_reference(prog) ? SG_EVAL_INFRA_ERROR : SG_EVAL_TIMEOUT;
    sg_buf_printf(&msg, "%s did not finish within %.3g s (wall clock) %s",
                  in_reference(prog) ? "the reference" : "the kernel", lim.wall_s,
                  where);
    append_output(&msg, &o);
  } else if (o.end == SG_SANDBOX_SIGNALED) {
    char *sig = sg_eval_signal_text(o.signal);
    if (in_reference(prog)) {
      r->status = SG_EVAL_INFRA_ERROR;
      sg_buf_printf(&msg, "the reference was killed by %s %s", sig, where);
    } else if (o.signal == SIGALRM) {
      r->status = SG_EVAL_TIMEOUT;
      sg_buf_printf(&msg, "the kernel ran for more than %.3g s in total (wall "
                    "clock) %s", c.cand_budget_s, where);
    } else if (o.signal == SIGXCPU) {
      r->status = SG_EVAL_TIMEOUT;
      sg_buf_printf(&msg, "killed by %s: the kernel used more than %.3g s of CPU time %s",
                    sig, lim.cpu_s, where);
    } else if (o.signal == SIGSYS) {
      r->status = SG_EVAL_REJECTED;
      sg_buf_printf(&msg,
                    "rejected: killed by %s %s: the kernel made a forbidden "
                    "system call (creating a process, running a program, "
                    "opening a network socket or signalling another process)",
                    sig, where);
    } else if (o.signal == SIGXFSZ) {
      r->status = SG_EVAL_RUNTIME_ERROR;
      sg_buf_printf(&msg, "killed by %s: the kernel wrote a file larger than %" PRIu64
                    " bytes %s", sig, lim.file_size_bytes, where);
    } else {
      r->status = SG_EVAL_RUNTIME_ERROR;
      sg_buf_printf(&msg, "killed by %s %s", sig, where);
      if (o.signal == SIGSEGV || o.signal == SIGBUS)
        sg_buf_printf(&msg, " (an out-of-bounds or null access, or memory "
                      "exhausted: the address space is limited to %" PRIu64 " MiB)",
                      lim.address_space_bytes >> 20);
    }
    append_output(&msg, &o);
    free(sig);
  } else {
    r->status = in_reference(prog) ? SG_EVAL_INFRA_ERROR : SG_EVAL_RUNTIME_ERROR;
    sg_buf_printf(&msg, "exited with code %d before reporting a result %s",
                  o.exit_code, where);
    append_output(&msg, &o);
  }
  if (!o.network_isolated && o.note)
    sg_buf_printf(&msg, "\n(note: %s)", o.note);
  set_message(r, sg_buf_steal(&msg));
  free(where);
  if (prog)
    json_decref(prog);
  if (fin)
    json_decref(fin);
  sg_sandbox_outcome_free(&o);
  return 0;
}

int sg_eval_cpu_run(const sg_task *task, const sg_eval_build *build,
                    const sg_eval_opts *opts, sg_eval_result *r, sg_err *err) {
  return sg_eval_cpu_run_logged(task, build, opts, r, NULL, err);
}
