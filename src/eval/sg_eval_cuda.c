/* sg_eval_cuda.c: the cuda evaluator (see sg_eval_cuda.h and docs/gpu.md).
 *
 * The candidate is CUDA C++ that defines the task's entry function, a host
 * function taking device pointers and launching its kernels on the default
 * stream. specgen never links CUDA: nvcc builds the candidate (plus a shim
 * exporting sg_launch) into a shared object, and the device stage runs in a
 * separate program, specgen-cuda-run, under the sandbox: a candidate that
 * crashes, hangs or corrupts its context takes only that child with it.
 */
#include "eval/sg_eval_cuda.h"

#include "eval/sg_cuda_judge.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_clock.h"
#include "common/sg_file.h"
#include "common/sg_hash.h"
#include "eval/sg_cuda_ahead.h"
#include "eval/sg_cuda_check.h"
#include "eval/sg_ncu.h"
#include "eval/sg_sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define SOURCE_MAX_BYTES (1u << 20)
#define MESSAGE_MAX_BYTES 4000

/* ---- finding programs ----------------------------------------------------- */

static bool executable_file(const char *p) {
  struct stat st;
  return p && stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

static char *in_path(const char *name) {
  const char *path = getenv("PATH");
  if (!path)
    return NULL;
  const char *p = path;
  while (*p) {
    const char *colon = strchr(p, ':');
    size_t len = colon ? (size_t)(colon - p) : strlen(p);
    if (len) {
      char *c = sg_asprintf("%.*s/%s", (int)len, p, name);
      if (executable_file(c))
        return c;
      free(c);
    }
    if (!colon)
      break;
    p = colon + 1;
  }
  return NULL;
}

static char *find_program(const char *env, const char *name,
                          const char *const *fallbacks) {
  const char *e = getenv(env);
  if (e && *e)
    return executable_file(e) ? sg_strdup(e) : NULL;
  char *p = in_path(name);
  if (p)
    return p;
  for (; fallbacks && *fallbacks; fallbacks++)
    if (executable_file(*fallbacks))
      return sg_strdup(*fallbacks);
  return NULL;
}

char *sg_eval_cuda_find_nvcc(void) {
  const char *cuda_home = getenv("CUDA_HOME");
  char *home_nvcc = cuda_home ? sg_asprintf("%s/bin/nvcc", cuda_home) : NULL;
  const char *const fb[] = {home_nvcc ? home_nvcc : "/usr/local/cuda/bin/nvcc",
                            "/usr/local/cuda/bin/nvcc", NULL};
  char *r = find_program("SPECGEN_NVCC", "nvcc", fb);
  free(home_nvcc);
  return r;
}

char *sg_eval_cuda_find_ncu(void) {
  const char *const fb[] = {"/usr/local/cuda/bin/ncu", NULL};
  return find_program("SPECGEN_NCU", "ncu", fb);
}

/* The runner sits next to the running program once installed
 * (libexec/specgen beside bin), or in the build tree's tests/gpu. */
char *sg_eval_cuda_find_runner(void) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  char *c1 = NULL, *c2 = NULL, *c3 = NULL, *c4 = NULL;
  if (n > 0) {
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (slash)
      *slash = 0;
    c1 = sg_asprintf("%s/specgen-cuda-run", self);
    c2 = sg_asprintf("%s/../libexec/specgen/specgen-cuda-run", self);
    c3 = sg_asprintf("%s/../../tests/gpu/specgen-cuda-run", self);
    c4 = sg_asprintf("%s/../gpu/specgen-cuda-run", self);
  }
  const char *const fb[] = {c1 ? c1 : "", c2 ? c2 : "", c3 ? c3 : "",
                            c4 ? c4 : "", NULL};
  char *r = find_program("SPECGEN_CUDA_RUNNER", "specgen-cuda-run", fb);
  free(c1);
  free(c2);
  free(c3);
  free(c4);
  return r;
}

const char *sg_eval_cuda_arch(void) {
  const char *a = getenv("SPECGEN_CUDA_ARCH");
  return a && *a ? a : "sm_90";
}

int sg_eval_cuda_parse_device(const char *device, int *ordinal, sg_err *err) {
  *ordinal = 0;
  if (!device || !*device)
    return 0;
  char *end = NULL;
  if (strncmp(device, "cuda:", 5) != 0 || !device[5])
    return sg_err_set(err, SG_EINVAL, "device \"%s\": expected cuda:N", device);
  long v = strtol(device + 5, &end, 10);
  if (*end || v < 0 || v > 1024)
    return sg_err_set(err, SG_EINVAL, "device \"%s\": expected cuda:N", device);
  *ordinal = (int)v;
  return 0;
}

/* ---- small helpers -------------------------------------------------------- */

static void set_message(sg_eval_result *r, const char *msg) {
  free(r->message);
  r->message = sg_strndup(msg, strnlen(msg, MESSAGE_MAX_BYTES));
}

/* Replaces every occurrence of dir/ in text by nothing: compiler messages
 * then name candidate.cu, not a scratch path. */
static char *strip_dir(const char *text, const char *dir) {
  char *pre = sg_asprintf("%s/", dir);
  size_t pl = strlen(pre);
  sg_buf b;
  sg_buf_init(&b, 0);
  const char *p = text;
  for (const char *q; (q = strstr(p, pre)); p = q + pl)
    sg_buf_append(&b, p, (size_t)(q - p));
  sg_buf_puts(&b, p);
  free(pre);
  return sg_buf_steal(&b);
}

/* Included before everything else (nvcc's own cuda_runtime.h too) when nvcc
 * preprocesses a source for the host or the device (__CUDACC__ is defined
 * only then; its host compile reads the preprocessed result, where the
 * prelude must do nothing). In C++17 libstdc++'s <cmath>, which
 * cuda_runtime.h includes, declares the special math functions
 * (std::riemann_zeta, std::beta...): about 10,000 lines of host-only
 * templates that cudafe++, cicc and the host compiler would each parse, a
 * quarter of a compile (docs/benchmarks.md). Device code cannot call them;
 * a candidate's host code that wants them fails to compile with a message
 * naming them. */
static const char sg_eval_cuda_prelude[] =
    "#if defined(__CUDACC__) && defined(__has_include)\n"
    "#if __has_include(<bits/c++config.h>)\n"
    "#include <bits/c++config.h>\n"
    "#undef _GLIBCXX_USE_STD_SPEC_FUNCS\n"
    "#endif\n"
    "#endif\n";

#define PRELUDE_NAME "sg_prelude.h"

/* nvcc, sandboxed and timed, in work_dir (which holds the prelude). *ok
 * says whether it succeeded; *log is its stderr and stdout (owned). Returns
 * negative only when nvcc could not be started. */
static int run_nvcc(const char *nvcc, const char *work_dir, const char *src,
                    const char *out_so, bool reference, double timeout_s,
                    bool *ok, char **log, sg_err *err) {
  char arch[64];
  snprintf(arch, sizeof arch, "-arch=%s", sg_eval_cuda_arch());
  /* The reference links cuBLAS from the toolkit that compiles it; its rpath
   * lets the loader find it where LD_LIBRARY_PATH does not say. */
  char *nvcc_dir = sg_strdup(nvcc);
  char *slash = strrchr(nvcc_dir, '/');
  if (slash)
    *slash = 0;
  char *rpath = sg_asprintf("-Xlinker=-rpath,%s/../lib64:%s/../lib", nvcc_dir,
                            nvcc_dir);
  char *libdir = sg_asprintf("-L%s/../lib64", nvcc_dir);
  char *argv[24];
  int k = 0;
  argv[k++] = (char *)nvcc;
  argv[k++] = "-O3";
  argv[k++] = "-std=c++17";
  argv[k++] = arch;
  argv[k++] = "-lineinfo";
  /* The host side (preprocessing, cudafe++) and the device side (cicc,
   * ptxas) of one source are independent until the host compile; two
   * threads let nvcc run them side by side. */
  argv[k++] = "--threads";
  argv[k++] = "2";
  /* Relative to the working directory, where gcc looks first. */
  argv[k++] = "-Xcompiler=-include," PRELUDE_NAME;
  argv[k++] = "-shared";
  /* Without -rdc nothing needs a device link, but nvcc 13 runs one for a
   * shared object (nvlink, fatbinary, a host compile of its stub). */
  argv[k++] = "-nodlink";
  argv[k++] = "-Xcompiler=-fPIC";
  argv[k++] = "-o";
  argv[k++] = (char *)out_so;
  argv[k++] = (char *)src;
  if (reference) {
    argv[k++] = libdir;
    argv[k++] = "-lcublas";
    argv[k++] = rpath;
  }
  argv[k] = NULL;
  sg_sandbox_limits lim;
  sg_sandbox_limits_default(&lim);
  lim.wall_s = timeout_s > 0 ? timeout_s : 120;
  lim.cpu_s = 0;
  lim.address_space_bytes = 0;
  lim.file_size_bytes = UINT64_C(1) << 30;
  lim.max_processes = 0;
  lim.forbid_spawn = false; /* nvcc runs cicc, ptxas, the host compiler */
  lim.isolate_network = false;
  lim.work_dir = work_dir;
  lim.output_cap_bytes = 256 * 1024;
  sg_sandbox_outcome o;
  int rc = sg_sandbox_exec(&lim, argv, &o, err);
  free(nvcc_dir);
  free(rpath);
  free(libdir);
  if (rc)
    return rc;
  *ok = o.end == SG_SANDBOX_EXITED && o.exit_code == 0;
  sg_buf b;
  sg_buf_init(&b, 0);
  if (o.end == SG_SANDBOX_TIMED_OUT)
    sg_buf_printf(&b, "nvcc did not finish within %.0f s\n", lim.wall_s);
  else if (o.end == SG_SANDBOX_SIGNALED)
    sg_buf_printf(&b, "nvcc was killed by signal %d\n", o.signal);
  sg_buf_puts(&b, o.err ? o.err : "");
  sg_buf_puts(&b, o.out ? o.out : "");
  *log = sg_buf_steal(&b);
  sg_sandbox_outcome_free(&o);
  return 0;
}

/* The prelude that run_nvcc includes, into dir. */
static int write_prelude(const char *dir, sg_err *err) {
  char *path = sg_asprintf("%s/" PRELUDE_NAME, dir);
  int rc = sg_file_write(path, sg_eval_cuda_prelude, strlen(sg_eval_cuda_prelude), err);
  free(path);
  return rc;
}

static int write_shim(const sg_task *task, const char *dir, const char *include,
                      const char *name, char **path, sg_err *err) {
  sg_buf b;
  sg_buf_init(&b, 0);
  sg_cuda_shim(task, include, &b);
  *path = sg_asprintf("%s/%s", dir, name);
  int rc = sg_file_write(*path, b.data, b.len, err);
  sg_buf_free(&b);
  return rc ? rc : write_prelude(dir, err);
}

/* Candidates of one task compile at once (specgen bench, the GPU check, a
 * run's compile workers): one builds the reference, the others wait on a
 * lock file beside the cache entry instead of running the same nvcc and
 * cuBLAS link beside it. Returns the locked descriptor (closing it unlocks)
 * or -1 (no lock: build anyway). */
static int lock_reference(const char *cache, uint64_t h) {
  sg_err err;
  if (sg_mkdir_p(cache, &err) != 0)
    return -1;
  char *lp = sg_asprintf("%s/ref-%016llx.lock", cache, (unsigned long long)h);
  int fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  free(lp);
  if (fd >= 0 && flock(fd, LOCK_EX) != 0) {
    close(fd);
    fd = -1;
  }
  return fd;
}

/* The reference's shared object, from the cache when an identical build is
 * there: ${XDG_CACHE_HOME:-$HOME/.cache}/specgen/cuda/ref-<hash>.so, keyed
 * by the reference's source, the shim, the target, nvcc's path and the
 * prelude.
 * One sequence of steps (key, lock, build, publish) a little over 80 lines:
 * split, its error paths would have to cross functions. */
static int build_reference(const sg_task *task, const char *nvcc,
                           const char *work_dir, double timeout_s, char **so,
                           sg_err *err) {
  const char *src = task->reference_source;
  size_t len = task->reference_len;
  if (len > SOURCE_MAX_BYTES)
    return sg_err_set(err, SG_ERANGE, "%s: larger than %u bytes", task->reference_path,
                      SOURCE_MAX_BYTES);
  int rc = 0;
  sg_buf shim;
  sg_buf_init(&shim, 0);
  sg_cuda_shim(task, "reference.cu", &shim);
  /* The judge's kernels (input generation, comparison) live in the trusted
   * reference build; part of the cache key like everything in the shim. */
  sg_buf_puts(&shim, sg_cuda_judge_src);
  uint64_t h = sg_fnv1a64(src, len);
  h = sg_fnv1a64_update(h, shim.data, shim.len);
  h = sg_fnv1a64_update(h, sg_eval_cuda_arch(), strlen(sg_eval_cuda_arch()));
  h = sg_fnv1a64_update(h, nvcc, strlen(nvcc));
  h = sg_fnv1a64_update(h, sg_eval_cuda_prelude, strlen(sg_eval_cuda_prelude));
  const char *xdg = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  char *cache = xdg && *xdg ? sg_asprintf("%s/specgen/cuda", xdg)
                : home && *home ? sg_asprintf("%s/.cache/specgen/cuda", home)
                                : sg_asprintf("%s/cache", work_dir);
  *so = sg_asprintf("%s/ref-%016llx.so", cache, (unsigned long long)h);
  if (access(*so, R_OK) == 0)
    goto done;
  int lock = lock_reference(cache, h);
  if (access(*so, R_OK) == 0) {
    if (lock >= 0)
      close(lock);
    goto done;
  }
  char *dir = sg_asprintf("%s/ref", work_dir);
  char *ref_cu = sg_asprintf("%s/reference.cu", dir);
  char *shim_cu = sg_asprintf("%s/sg_reference.cu", dir);
  char *tmp_so = sg_asprintf("%s/ref.so", dir);
  bool ok = false;
  char *log = NULL;
  if (!(rc = sg_mkdir_p(dir, err)) && !(rc = sg_file_write(ref_cu, src, len, err)) &&
      !(rc = sg_file_write(shim_cu, shim.data, shim.len, err)) &&
      !(rc = write_prelude(dir, err)) &&
      !(rc = run_nvcc(nvcc, dir, shim_cu, tmp_so, true, timeout_s, &ok, &log, err))) {
    if (!ok)
      rc = sg_err_set(err, SG_EIO, "building the reference %s failed: %.1500s",
                      task->reference_path, log);
    else if (sg_mkdir_p(cache, err) == 0) {
      /* Publish atomically: a concurrent build of the same key is harmless. */
      char *staged = sg_asprintf("%s.%d.tmp", *so, (int)getpid());
      char *data = NULL;
      size_t dlen = 0;
      if (sg_file_read(tmp_so, 256u << 20, &data, &dlen, err) == 0 &&
          sg_file_write(staged, data, dlen, err) == 0 && rename(staged, *so) == 0) {
        /* cached */
      } else {
        free(*so);
        *so = sg_strdup(tmp_so);
      }
      free(data);
      free(staged);
      sg_err_clear(err);
    } else {
      free(*so);
      *so = sg_strdup(tmp_so);
      sg_err_clear(err);
    }
  }
  free(log);
  free(dir);
  free(ref_cu);
  free(shim_cu);
  free(tmp_so);
  if (lock >= 0)
    close(lock); /* releases the lock */
done:
  free(cache);
  sg_buf_free(&shim);
  if (rc) {
    free(*so);
    *so = NULL;
  }
  return rc;
}

/* ---- compile -------------------------------------------------------------- */

int sg_eval_cuda_compile(const sg_task *task, const char *source, size_t len,
                         const sg_eval_opts *opts, sg_eval_build *build,
                         sg_eval_result *r, sg_err *err) {
  memset(build, 0, sizeof *build);
  double t0 = sg_clock_now_s();
  char why[256];
  if (sg_cuda_source_forbidden(source, len, why, sizeof why)) {
    r->status = SG_EVAL_REJECTED;
    char *m = sg_asprintf("rejected: the candidate %s", why);
    set_message(r, m);
    free(m);
    r->compile_s = sg_clock_now_s() - t0;
    return 0;
  }
  char *nvcc = sg_eval_cuda_find_nvcc();
  if (!nvcc)
    return sg_err_set(err, SG_EUNSUPPORTED,
                      "nvcc not found (set SPECGEN_NVCC or CUDA_HOME, or put it "
                      "in PATH): the cuda evaluator needs the CUDA toolkit");
  char *dir = NULL;
  int rc = sg_scratch_dir(opts ? opts->work_dir : NULL, "specgen-cuda", &dir, err);
  if (rc) {
    free(nvcc);
    return rc;
  }
  build->work_dir = dir;
  build->owns_work_dir = true;
  double timeout = opts && opts->compile_timeout_s > 0 ? opts->compile_timeout_s : 120;
  char *cand_cu = sg_asprintf("%s/candidate.cu", dir);
  char *shim = NULL, *so = sg_asprintf("%s/candidate.so", dir), *log = NULL;
  bool ok = false;
  rc = sg_file_write(cand_cu, source, len, err);
  if (!rc)
    rc = write_shim(task, dir, "candidate.cu", "sg_candidate.cu", &shim, err);
  if (!rc)
    rc = run_nvcc(nvcc, dir, shim, so, false, timeout, &ok, &log, err);
  if (!rc && !ok) {
    r->status = SG_EVAL_COMPILE_ERROR;
    char *clean = strip_dir(log, dir);
    set_message(r, clean);
    free(clean);
  } else if (!rc) {
    rc = build_reference(task, nvcc, dir, timeout, &build->reference_artifact, err);
    if (!rc) {
      r->status = SG_EVAL_OK;
      build->artifact = so;
      so = NULL;
    }
  }
  r->compile_s = sg_clock_now_s() - t0;
  free(cand_cu);
  free(shim);
  free(so);
  free(log);
  free(nvcc);
  return rc;
}

/* ---- run ------------------------------------------------------------------ */

static double jnum(const json_t *o, const char *k) {
  const json_t *v = json_object_get(o, k);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The runner's outcome into r. */
void sg_eval_cuda_take_outcome(const sg_sandbox_outcome *o, double timeout_s,
                               sg_eval_result *r) {
  r->network_isolated = o->network_isolated;
  json_error_t je;
  json_t *j = o->result_len ? json_loadb(o->result, o->result_len, 0, &je) : NULL;
  const char *status = j ? json_string_value(json_object_get(j, "status")) : NULL;
  int st = status ? sg_eval_status_parse(status) : -1;
  if (o->end == SG_SANDBOX_TIMED_OUT) {
    r->status = SG_EVAL_TIMEOUT;
    char *m = sg_asprintf("timeout: the candidate did not finish within %.0f s "
                          "(the child was killed)", timeout_s);
    set_message(r, m);
    free(m);
  } else if (st >= 0) {
    r->status = (sg_eval_status)st;
    const char *msg = json_string_value(json_object_get(j, "message"));
    set_message(r, msg ? msg : status);
    r->ref_ms = jnum(j, "ref_ms");
    r->ref_mean_ms = jnum(j, "ref_mean_ms");
    r->cand_ms = jnum(j, "cand_ms");
    r->cand_mean_ms = jnum(j, "cand_mean_ms");
    r->max_abs_err = jnum(j, "max_abs_err");
    r->max_rel_err = jnum(j, "max_rel_err");
    const json_t *fm = json_object_get(j, "first_mismatch");
    r->first_mismatch = json_is_integer(fm) ? json_integer_value(fm) : -1;
    const char *kb = json_string_value(json_object_get(j, "kernelbench_status"));
    if (kb && sg_eval_status_parse(kb) >= 0)
      r->kernelbench_status = sg_strdup(kb);
    if (r->status == SG_EVAL_OK && r->cand_ms > 0)
      r->speedup = r->ref_ms / r->cand_ms;
    static const char *const stage_keys[] = {"context_s", "ready_s", "correctness_s",
                                             "timing_wall_s", "ahead_s", "go_wait_s",
                                             "warm_up_ms", "judge_s"};
    for (size_t i = 0; i < sizeof stage_keys / sizeof *stage_keys; i++) {
      json_t *v = json_object_get(j, stage_keys[i]);
      if (!json_is_number(v) && !json_is_boolean(v))
        continue;
      if (!r->stages)
        r->stages = json_object();
      json_object_set(r->stages, stage_keys[i], v);
    }
    /* The kernelbench judge reports its phases as one object. */
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(j, "stages"), key, v) {
      if (!json_is_number(v))
        continue;
      if (!r->stages)
        r->stages = json_object();
      json_object_set(r->stages, key, v);
    }
    /* The kernelbench self-check's wrong candidate (sg_eval_opts.also_wrong) */
    json_t *wrong = json_object_get(j, "self_check_wrong");
    if (json_is_object(wrong))
      r->self_check_wrong = json_deep_copy(wrong);
  } else {
    /* No result: the candidate killed its process (a crash in host code, an
     * abort in the CUDA runtime) before the runner could answer. */
    r->status = SG_EVAL_RUNTIME_ERROR;
    sg_buf b;
    sg_buf_init(&b, MESSAGE_MAX_BYTES);
    if (o->end == SG_SANDBOX_SIGNALED)
      sg_buf_printf(&b, "runtime error: the candidate's process died of signal "
                        "%d (%s)", o->signal, strsignal(o->signal));
    else
      sg_buf_printf(&b, "runtime error: the candidate's process exited with "
                        "code %d without a result", o->exit_code);
    if (o->err && *o->err)
      sg_buf_printf(&b, "; stderr: %.1500s", o->err);
    set_message(r, sg_buf_str(&b));
    sg_buf_free(&b);
  }
  json_decref(j);
}

void sg_eval_cuda_runner_limits(const sg_eval_build *build, double wall_s,
                                sg_sandbox_limits *lim) {
  sg_sandbox_limits_default(lim);
  lim->wall_s = wall_s;
  lim->cpu_s = 0;               /* the wall clock bounds it */
  lim->address_space_bytes = 0; /* CUDA maps far more than it uses */
  lim->max_processes = 0;
  lim->forbid_spawn = false;    /* ncu and the driver start helpers */
  lim->work_dir = build->work_dir;
  lim->output_cap_bytes = 1 << 20;
}

char *sg_eval_cuda_find_sanitizer(void) {
  const char *const fb[] = {"/usr/local/cuda/bin/compute-sanitizer", NULL};
  return find_program("SPECGEN_COMPUTE_SANITIZER", "compute-sanitizer", fb);
}

char *sg_eval_cuda_sanitizer_summary(const char *text, size_t max_lines) {
  sg_buf b;
  sg_buf_init(&b, 2000);
  size_t lines = 0;
  const char *p = text ? text : "";
  const char *summary = NULL;
  while (*p) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if (len >= 9 && strncmp(p, "=========", 9) == 0) {
      const char *q = p + 9;
      while (*q == ' ' && q < p + len)
        q++;
      size_t ql = len - (size_t)(q - p);
      if (ql >= 13 && strncmp(q, "ERROR SUMMARY", 13) == 0)
        summary = q;
      else if (ql > 0 && lines < max_lines && strncmp(q, "COMPUTE-SANITIZER", 17) != 0) {
        sg_buf_append(&b, q, ql);
        sg_buf_puts(&b, "\n");
        lines++;
      }
    }
    p += len + (nl ? 1 : 0);
  }
  if (summary) {
    const char *e = strchr(summary, '\n');
    sg_buf_append(&b, summary, e ? (size_t)(e - summary) : strlen(summary));
  }
  return sg_buf_steal(&b);
}

/* The optional memory check ($SPECGEN_CUDA_SANITIZE=memcheck, racecheck,
 * initcheck or synccheck): one trial and one timed call of each under
 * compute-sanitizer before the real run. Returns 1 when it decided the
 * result (errors found, or the candidate failed under it), 0 to go on. */
#define SANITIZER_ERROR_EXIT 86
static int sanitize(const sg_task *task, const sg_eval_build *build,
                    char *const base_argv[], double wall, sg_eval_result *r,
                    sg_err *err) {
  const char *tool = getenv("SPECGEN_CUDA_SANITIZE");
  if (!tool || !*tool || strcmp(tool, "0") == 0)
    return 0;
  if (strcmp(tool, "1") == 0)
    tool = "memcheck";
  char *san = sg_eval_cuda_find_sanitizer();
  if (!san)
    return sg_err_set(err, SG_EUNSUPPORTED,
                      "SPECGEN_CUDA_SANITIZE is set but compute-sanitizer is not "
                      "found (set SPECGEN_COMPUTE_SANITIZER or put it in PATH)");
  char code[16];
  snprintf(code, sizeof code, "%d", SANITIZER_ERROR_EXIT);
  char *argv[64];
  int k = 0;
  argv[k++] = san;
  argv[k++] = "--tool";
  argv[k++] = (char *)tool;
  argv[k++] = "--error-exitcode";
  argv[k++] = code;
  argv[k++] = "--print-limit";
  argv[k++] = "10";
  for (int i = 0; base_argv[i] && k < 50; i++)
    argv[k++] = base_argv[i];
  argv[k++] = "--trials";
  argv[k++] = "1";
  argv[k++] = "--warmup";
  argv[k++] = "0";
  argv[k++] = "--timed";
  argv[k++] = "1";
  argv[k] = NULL;
  sg_sandbox_limits lim;
  sg_eval_cuda_runner_limits(build, wall, &lim);
  lim.output_cap_bytes = 1 << 20;
  sg_sandbox_outcome o;
  int rc = sg_sandbox_exec(&lim, argv, &o, err);
  free(san);
  if (rc)
    return rc;
  int decided = 0;
  if (o.end == SG_SANDBOX_EXITED && o.exit_code == SANITIZER_ERROR_EXIT) {
    char *sum = sg_eval_cuda_sanitizer_summary(o.out, 12);
    char *m = sg_asprintf("runtime error: compute-sanitizer (%s) found errors in a "
                          "call of the candidate or the reference:\n%s", tool, sum);
    r->status = SG_EVAL_RUNTIME_ERROR;
    set_message(r, m);
    free(m);
    free(sum);
    decided = 1;
  } else {
    sg_eval_result tmp;
    sg_eval_result_init(&tmp);
    sg_eval_cuda_take_outcome(&o, wall, &tmp);
    if (tmp.status != SG_EVAL_OK && tmp.status != SG_EVAL_INFRA_ERROR) {
      r->status = tmp.status;
      set_message(r, tmp.message ? tmp.message : "");
      decided = 1;
    }
    sg_eval_result_free(&tmp);
  }
  (void)task;
  sg_sandbox_outcome_free(&o);
  return decided;
}

/* The device ordinal opts names and the runner's path (owned), or an
 * error: both stages on the device need them. */
static int device_and_runner(const sg_eval_opts *opts, int *dev, char **runner,
                             sg_err *err) {
  int rc = sg_eval_cuda_parse_device(opts ? opts->device : NULL, dev, err);
  if (rc)
    return rc;
  if (!(*runner = sg_eval_cuda_find_runner()))
    return sg_err_set(err, SG_EUNSUPPORTED,
                      "specgen-cuda-run not found (set SPECGEN_CUDA_RUNNER)");
  return 0;
}

/* What a validation run's runner is started for (its options defaulted). */
static sg_cuda_ahead_key run_key(const char *runner, const sg_task *task,
                                 const sg_eval_build *build, const sg_eval_opts *opts,
                                 int dev) {
  sg_cuda_ahead_key k = {runner, task->dir, build->reference_artifact, dev,
                         opts->correctness_trials > 0 ? opts->correctness_trials : 3,
                         opts->warmup_runs >= 0 ? opts->warmup_runs : 10,
                         opts->timed_runs > 0 ? opts->timed_runs : 40, opts->strict};
  return k;
}

static double run_wall_s(const sg_eval_opts *opts) {
  return sg_eval_timeout(opts);
}

/* A validation's runner: its verdict is final once written, so the run ends
 * there and the judge's teardown (three CUDA contexts, 0.1-0.4 s) goes on
 * without the caller (end_at_result in sg_sandbox.h). */
static void validation_limits(const sg_eval_build *build, double wall_s,
                              sg_sandbox_limits *lim) {
  sg_eval_cuda_runner_limits(build, wall_s, lim);
  lim->end_at_result = true;
}

/* How long a run waits for the runs before it to have ended on the device:
 * far more than a teardown takes. */
#define HANDOVER_WAIT_S 10.0

double sg_eval_cuda_hand_over(void) {
  double t0 = sg_clock_now_s();
  sg_sandbox_reap(HANDOVER_WAIT_S);
  return sg_clock_now_s() - t0;
}

void sg_eval_cuda_expect(const sg_task *task, const sg_eval_build *build,
                         const sg_eval_opts *opts) {
  sg_eval_opts d;
  sg_eval_opts_default(&d);
  if (!opts)
    opts = &d;
  int dev = 0;
  sg_err err;
  char *runner = NULL;
  if (!sg_cuda_ahead_enabled() || !build->reference_artifact ||
      sg_eval_cuda_parse_device(opts->device, &dev, &err) ||
      !(runner = sg_eval_cuda_find_runner()))
    return;
  sg_cuda_ahead_key key = run_key(runner, task, build, opts, dev);
  sg_sandbox_limits lim;
  validation_limits(build, run_wall_s(opts), &lim);
  sg_cuda_ahead_expect(&key, &lim);
  free(runner);
}

int sg_eval_cuda_run(const sg_task *task, const sg_eval_build *build,
                     const sg_eval_opts *opts, sg_eval_result *r, sg_err *err) {
  int dev = 0;
  char *runner = NULL;
  int rc = device_and_runner(opts, &dev, &runner, err);
  if (rc)
    return rc;
  sg_eval_opts d;
  sg_eval_opts_default(&d);
  if (!opts)
    opts = &d;
  sg_cuda_ahead_key key = run_key(runner, task, build, opts, dev);
  int trials = key.trials, warmup = key.warmup, timed = key.timed;
  char sdev[16], strials[16], swarm[16], stimed[16], sseed[32];
  snprintf(sdev, sizeof sdev, "%d", dev);
  snprintf(strials, sizeof strials, "%d", trials);
  snprintf(swarm, sizeof swarm, "%d", warmup);
  snprintf(stimed, sizeof stimed, "%d", timed);
  unsigned long long seed = opts->seed ? opts->seed
                                       : (unsigned long long)sg_clock_now_us();
  snprintf(sseed, sizeof sseed, "%llu", seed);
  char *base[] = {runner, "--task", task->dir, "--cand", build->artifact,
                  "--ref", build->reference_artifact, "--device", sdev,
                  "--seed", sseed, opts->strict ? "--strict" : NULL, NULL};
  char *argv[] = {runner, "--task", task->dir, "--cand", build->artifact,
                  "--ref", build->reference_artifact, "--device", sdev,
                  "--trials", strials, "--warmup", swarm, "--timed", stimed,
                  "--seed", sseed, opts->strict ? "--strict" : NULL, NULL};
  double wall = run_wall_s(opts);
  /* The device is this run's once the judge before it has ended: that
   * wait is the previous run's (its teardown), not this one's run_s. */
  double handover_s = sg_eval_cuda_hand_over();
  double t0 = sg_clock_now_s();
  rc = sanitize(task, build, base, wall, r, err);
  if (rc != 0) {
    free(runner);
    if (rc > 0)
      r->run_s = sg_clock_now_s() - t0;
    return rc < 0 ? rc : 0;
  }
  sg_sandbox_limits lim;
  validation_limits(build, wall, &lim);
  sg_sandbox_outcome o;
  bool ahead = false;
  if (sg_cuda_ahead_enabled()) {
    rc = sg_cuda_ahead_run(&key, build->artifact, seed, &lim, &o, &ahead, err);
  } else {
    rc = sg_sandbox_exec(&lim, argv, &o, err);
  }
  free(runner);
  if (rc)
    return rc;
  r->run_s = sg_clock_now_s() - t0;
  sg_eval_cuda_take_outcome(&o, wall, r);
  sg_sandbox_outcome_free(&o);
  if (ahead && r->stages)
    json_object_set_new(r->stages, "started_ahead", json_true());
  if (r->stages)
    json_object_set_new(r->stages, "handover_s", json_real(handover_s));
  return 0;
}

/* ---- profile -------------------------------------------------------------- */

/* Whether this process's ncu refused a name of the metrics list: it is then
 * asked for the sections, which name what it has, from then on (each
 * refusal costs an ncu start-up, about 1.5 s). */
static bool ncu_list_refused;

/* The folder ncu reads section files from when it is asked for the list:
 * one with none, so that it parses none at start-up. The reference's folder
 * has none (and it is the same for every candidate of a task, as a runner
 * started ahead needs), else an empty one in the work directory. */
static char *ncu_section_dir(const sg_eval_build *build, sg_err *err) {
  if (build->reference_artifact && strchr(build->reference_artifact, '/')) {
    char *d = sg_strdup(build->reference_artifact);
    *strrchr(d, '/') = '\0';
    if (*d)
      return d;
    free(d);
  }
  char *empty = sg_asprintf("%s/ncu-sections", build->work_dir ? build->work_dir : ".");
  if (sg_mkdir_p(empty, err) != 0) {
    free(empty);
    return NULL;
  }
  return empty;
}

/* ncu's command line over target into argv (cap entries): the metrics the
 * report reads (sections_dir: a folder without section files), or, with
 * sections_dir NULL, the sections that hold them. Only the candidate's
 * kernels: the target brackets one call with cuProfilerStart/Stop and ncu
 * collects nothing outside it. The clocks are left as they are (the
 * machine may be shared). */
static void ncu_argv(const char *ncu, const char *sections_dir, char *const target[],
                     char **argv, int cap) {
  int k = 0;
  argv[k++] = (char *)ncu;
  argv[k++] = "--csv";
  argv[k++] = "--page";
  argv[k++] = "raw";
  argv[k++] = "--print-units";
  argv[k++] = "base";
  argv[k++] = "--profile-from-start";
  argv[k++] = "off";
  argv[k++] = "--clock-control";
  argv[k++] = "none";
  argv[k++] = "--launch-count";
  argv[k++] = "64";
  /* The guided-analysis rules only write advice to the details page, which
   * the raw CSV leaves out; running them costs each profile time. */
  argv[k++] = "--apply-rules";
  argv[k++] = "no";
  if (!sections_dir) {
    for (const char *const *s = sg_ncu_sections(); *s && k < cap - 3; s++) {
      argv[k++] = "--section";
      argv[k++] = (char *)*s;
    }
  } else {
    argv[k++] = "--section-folder";
    argv[k++] = (char *)sections_dir;
    argv[k++] = "--metrics";
    argv[k++] = (char *)sg_ncu_metrics();
  }
  for (int i = 0; target[i] && k < cap - 1; i++)
    argv[k++] = target[i];
  argv[k] = NULL;
}

/* The cuda profile's target: specgen-cuda-run in profile mode, for cand
 * (NULL: a runner started ahead, which reads its candidate and seed from
 * its go descriptor). The reference's library is there only for the
 * judge's input generator: inputs are drawn on the device. */
typedef struct profile_target {
  char dev[16], seed[32], fd[16];
  char *argv[16];
} profile_target;

static char **profile_target_argv(profile_target *t, const char *runner, const sg_task *task,
                                  const sg_eval_build *build, int dev, const char *cand,
                                  uint64_t seed) {
  snprintf(t->dev, sizeof t->dev, "%d", dev);
  snprintf(t->seed, sizeof t->seed, "%llu", (unsigned long long)seed);
  snprintf(t->fd, sizeof t->fd, "%d", SG_SANDBOX_PASS_FD(0));
  int k = 0;
  char **a = t->argv;
  a[k++] = (char *)runner;
  a[k++] = "--task";
  a[k++] = task->dir;
  a[k++] = "--ref";
  a[k++] = build->reference_artifact;
  a[k++] = "--mode";
  a[k++] = "profile";
  a[k++] = "--device";
  a[k++] = t->dev;
  if (cand) {
    a[k++] = "--cand";
    a[k++] = (char *)cand;
    a[k++] = "--seed";
    a[k++] = t->seed;
  } else {
    a[k++] = "--go-fd";
    a[k++] = t->fd;
  }
  a[k] = NULL;
  return a;
}

static void profile_limits(const sg_eval_build *build, const sg_eval_opts *opts,
                           sg_sandbox_limits *lim) {
  double wall = sg_eval_timeout(opts);
  sg_eval_cuda_runner_limits(build, wall, lim);
  lim->output_cap_bytes = 8 << 20;
}

static uint64_t profile_seed(const sg_eval_opts *opts) {
  return opts && opts->seed ? opts->seed : 1;
}

void sg_eval_cuda_ncu_expect(const sg_eval_build *build, const sg_eval_opts *opts,
                             int device, char *const ahead_target[]) {
  sg_err err;
  sg_err_clear(&err);
  if (!sg_cuda_ahead_enabled())
    return;
  char *ncu = sg_eval_cuda_find_ncu();
  char *sections = ncu_list_refused ? NULL : ncu_section_dir(build, &err);
  if (ncu && (sections || ncu_list_refused)) {
    char *argv[96];
    ncu_argv(ncu, sections, ahead_target, argv, 96);
    sg_sandbox_limits lim;
    profile_limits(build, opts, &lim);
    (void)sg_cuda_ahead_start_argv(device, argv, &lim, &err);
  }
  free(sections);
  free(ncu);
}

void sg_eval_cuda_expect_profile(const sg_task *task, const sg_eval_build *build,
                                 const sg_eval_opts *opts) {
  int dev = 0;
  sg_err err;
  sg_err_clear(&err);
  if (!sg_cuda_ahead_enabled() || !build->reference_artifact ||
      sg_eval_cuda_parse_device(opts ? opts->device : NULL, &dev, &err))
    return;
  char *runner = sg_eval_cuda_find_runner();
  if (runner) {
    profile_target t;
    sg_eval_cuda_ncu_expect(build, opts, dev,
                            profile_target_argv(&t, runner, task, build, dev, NULL, 0));
  }
  free(runner);
}

int sg_eval_cuda_profile(const sg_task *task, const sg_eval_build *build,
                         const sg_eval_opts *opts, sg_eval_result *r,
                         sg_err *err) {
  int dev = 0;
  char *runner = NULL;
  int rc = device_and_runner(opts, &dev, &runner, err);
  if (rc)
    return rc;
  uint64_t seed = profile_seed(opts);
  profile_target t, ta;
  char **target = profile_target_argv(&t, runner, task, build, dev, build->artifact, seed);
  /* With runners ahead, the profile goes to one for its task (started by
   * sg_eval_cuda_expect_profile, or now) */
  sg_eval_ncu_ahead go = {dev, profile_target_argv(&ta, runner, task, build, dev, NULL, 0),
                          build->artifact, seed};
  rc = sg_eval_cuda_ncu(task, build, opts, target, sg_cuda_ahead_enabled() ? &go : NULL, r,
                        err);
  free(runner);
  return rc;
}

/* ncu over target, in the sandbox; with go, over go's target started ahead
 * (the one waiting, else one started now) given go's candidate. */
static int run_ncu(const char *ncu, const sg_eval_build *build, char *const target[],
                   const sg_eval_ncu_ahead *go, bool by_sections,
                   const sg_sandbox_limits *lim, sg_sandbox_outcome *o, bool *ahead,
                   sg_err *err) {
  *ahead = false;
  char *sections = by_sections ? NULL : ncu_section_dir(build, err);
  if (!by_sections && !sections)
    return -1;
  char *argv[96];
  ncu_argv(ncu, sections, go ? go->target : target, argv, 96);
  int rc = go ? sg_cuda_ahead_run_once_argv(go->device, argv, go->cand, go->seed, lim, o,
                                            ahead, err)
              : sg_sandbox_exec(lim, argv, o, err);
  free(sections);
  return rc;
}

/* Whether ncu printed a table of metrics. */
static bool ncu_collected(const sg_sandbox_outcome *o) {
  return o->out && strstr(o->out, "\"ID\",");
}

/* Whether ncu stopped because it does not know a metric it was asked for
 * ("Failed to find metric ..." in the versions seen). */
static bool ncu_refused_metric(const sg_sandbox_outcome *o) {
  const char *texts[] = {o->err, o->out};
  for (int i = 0; i < 2; i++)
    if (texts[i] && strstr(texts[i], "==ERROR==") && strstr(texts[i], "metric"))
      return true;
  return false;
}

int sg_eval_cuda_ncu(const sg_task *task, const sg_eval_build *build,
                     const sg_eval_opts *opts, char *const target[],
                     const sg_eval_ncu_ahead *go, sg_eval_result *r, sg_err *err) {
  int rc;
  /* No runner started ahead may be starting beside the profiled kernel's
   * replays (its context, buffers and warm-up call would run on the same
   * device); idle ones stay for the next validations (and this profile's
   * own, when it was started ahead). Every caller, cuda and kernelbench,
   * gets this. */
  double ts = sg_clock_now_s();
  sg_cuda_ahead_settle(60);
  sg_eval_cuda_hand_over(); /* nor a judge still ending */
  double settle_s = sg_clock_now_s() - ts;
  char *ncu = sg_eval_cuda_find_ncu();
  if (!ncu)
    return sg_err_set(err, SG_EUNSUPPORTED,
                      "ncu (Nsight Compute) not found: set SPECGEN_NCU or put "
                      "it in PATH");
  sg_sandbox_limits lim;
  profile_limits(build, opts, &lim);
  sg_sandbox_outcome o;
  double t0 = sg_clock_now_s();
  bool by_sections = ncu_list_refused, ahead = false;
  rc = run_ncu(ncu, build, target, go, by_sections, &lim, &o, &ahead, err);
  if (!rc && !by_sections && o.end != SG_SANDBOX_TIMED_OUT && !ncu_collected(&o) &&
      ncu_refused_metric(&o)) {
    sg_sandbox_outcome_free(&o);
    ncu_list_refused = by_sections = true;
    rc = run_ncu(ncu, build, target, go, true, &lim, &o, &ahead, err);
  }
  free(ncu);
  if (rc)
    return rc;
  r->run_s = sg_clock_now_s() - t0;
  /* the wait before (other runners' start-up, a judge's end; this
   * profile's own runner's, when it was started ahead but not yet ready) */
  if (!r->stages)
    r->stages = json_object();
  json_object_set_new(r->stages, "settle_s", json_real(settle_s));
  if (go)
    json_object_set_new(r->stages, "started_ahead", json_boolean(ahead));
  if (o.end == SG_SANDBOX_TIMED_OUT) {
    r->status = SG_EVAL_TIMEOUT;
    set_message(r, "timeout: profiling did not finish in time");
    sg_sandbox_outcome_free(&o);
    return 0;
  }
  /* $SPECGEN_NCU_SAVE_DIR keeps ncu's raw output (for a person reading it,
   * and for recording parser test data). */
  const char *save = getenv("SPECGEN_NCU_SAVE_DIR");
  if (save && *save && o.out) {
    static int seq;
    char *path = sg_asprintf("%s/%s-%d-%d.csv", save, task->name, (int)getpid(), seq++);
    sg_err serr;
    if (sg_mkdir_p(save, &serr) == 0)
      sg_file_write(path, o.out, strlen(o.out), &serr);
    free(path);
  }
  sg_ncu_report rep;
  sg_err perr;
  sg_err_clear(&perr);
  if (sg_ncu_parse(o.out ? o.out : "", o.out ? strlen(o.out) : 0, &rep, &perr) ||
      rep.nkernels == 0) {
    r->status = o.end == SG_SANDBOX_EXITED && o.exit_code == 0
                    ? SG_EVAL_INFRA_ERROR : SG_EVAL_RUNTIME_ERROR;
    sg_buf b;
    sg_buf_init(&b, MESSAGE_MAX_BYTES);
    sg_buf_printf(&b, "profiling produced no kernel metrics (%s); ncu said: %.1200s %.1200s",
                  perr.code ? perr.msg : "no kernel launched",
                  o.err ? o.err : "", o.out ? o.out : "");
    set_message(r, sg_buf_str(&b));
    sg_buf_free(&b);
    if (rc == 0 && perr.code == 0)
      sg_ncu_report_free(&rep);
    sg_sandbox_outcome_free(&o);
    return 0;
  }
  r->status = SG_EVAL_OK;
  json_decref(r->metrics);
  r->metrics = sg_ncu_report_json(&rep);
  json_object_set_new(r->metrics, "collected_by",
                      json_string(by_sections ? "sections" : "metrics"));
  free(r->profile_text);
  r->profile_text = sg_ncu_report_text(&rep);
  set_message(r, r->profile_text);
  sg_ncu_report_free(&rep);
  sg_sandbox_outcome_free(&o);
  return 0;
}
