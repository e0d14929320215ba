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
#include "eval/sg_eval_cpu_judge.h"
#include "eval/sg_eval_cpu_worker.h"
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
  /* The candidate steers the compiler (#include "/proc/self/environ",
   * "/etc/shadow"): it runs as nobody in the read-only view, with an
   * environment of its own, so its diagnostics hold neither. */
  lim.isolate = true;
  static char *const env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C",
                              "TMPDIR=.", NULL};
  lim.env = env;
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
  int rc = sg_scratch_dir(opts->work_dir, "specgen-eval", &dir, err);
  if (rc)
    return rc;
  build->work_dir = dir;
  build->owns_work_dir = true;
  build->artifact = sg_asprintf("%s/candidate.so", dir);
  build->reference_artifact = sg_asprintf("%s/reference.so", dir);

  char *shim = shim_source(task);
  char *wrapped = wrapped_source(task, source, len, "candidate.c");
  const char *ref_src = task->reference_source;
  size_t ref_len = task->reference_len;
  char *diag = NULL;
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
  r->compile_s = sg_clock_now_s() - t0;
  if (rc)
    sg_eval_build_free(build);
  return rc;
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

int sg_eval_cpu_device_check(const char *device, sg_err *err) {
  int cpu = 0;
  int rc = sg_eval_cpu_parse_device(device, &cpu, err);
  return rc ? rc : check_cpu_available(cpu, err);
}

int sg_eval_cpu_run_logged(const sg_task *task, const sg_eval_build *build,
                           const sg_eval_opts *opts, sg_eval_result *r,
                           json_t **log, sg_err *err) {
  if (log)
    *log = NULL;
  int cpu = 0;
  int rc = sg_eval_cpu_parse_device(opts->device, &cpu, err);
  if (rc || (rc = sg_eval_cpu_device_check(opts->device, err)))
    return rc;
  if ((rc = check_opts(opts, err)))
    return rc;
  uint64_t seed = opts->seed;
  if (!seed) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    sg_rng rng;
    sg_rng_seed(&rng, x ^ ((uint64_t)getpid() << 32));
    seed = sg_rng_next(&rng) >> 1; /* fits a JSON integer */
    if (!seed)
      seed = 1;
  }
  r->seed = seed;
  /* The workers run in a scratch directory of their own, holding copies of
   * both shared objects readable by the unprivileged user they run as: a
   * build may live anywhere (a build cache, a run directory), and the
   * sandbox makes its directory the one writable place and gives it to
   * nobody. */
  /* a real reference: links the worker (and its constructor) in */
  if (!((const volatile char *)sg_eval_cpu_worker_name)[0])
    return sg_err_set(err, SG_EINVAL, "the worker is not linked in");
  char *scratch = NULL;
  if ((rc = sg_scratch_dir(opts->work_dir, "specgen-eval", &scratch, err)))
    return sg_err_prefix(err, "running the kernel");
  char *cand_so = sg_asprintf("%s/candidate.so", scratch);
  char *ref_so = sg_asprintf("%s/reference.so", scratch);
  const char *from[2] = {build->artifact, build->reference_artifact};
  const char *to[2] = {cand_so, ref_so};
  for (int i = 0; i < 2 && rc == 0; i++) {
    char *data = NULL;
    size_t dlen = 0;
    if ((rc = sg_file_read(from[i], UINT64_C(1) << 30, &data, &dlen, err)) == 0 &&
        (rc = sg_file_write(to[i], data, dlen, err)) == 0)
      chmod(to[i], 0644);
    free(data);
  }
  if (rc) {
    sg_err ignore;
    sg_rm_rf(scratch, &ignore);
    free(scratch);
    free(cand_so);
    free(ref_so);
    return sg_err_prefix(err, "copying the builds into the run's scratch directory");
  }
  sg_eval_cpu_judge_opts jo = {
      .cand_so = cand_so,
      .ref_so = ref_so,
      .work_dir = scratch,
      .cpu = cpu,
      .trials = opts->correctness_trials,
      .warmups = opts->warmup_runs,
      .runs = opts->timed_runs,
      .seed = seed,
      .budget_s = sg_eval_timeout(opts),
  };
  jo.cpu_limit_s = 2 * jo.budget_s + 121;
  rc = sg_eval_cpu_judge(task, &jo, r, log, err);
  sg_err ignore;
  sg_rm_rf(scratch, &ignore);
  free(scratch);
  free(cand_so);
  free(ref_so);
  if (rc)
    return sg_err_prefix(err, "running the kernel");
  return 0;
}

int sg_eval_cpu_run(const sg_task *task, const sg_eval_build *build,
                    const sg_eval_opts *opts, sg_eval_result *r, sg_err *err) {
  return sg_eval_cpu_run_logged(task, build, opts, r, NULL, err);
}
