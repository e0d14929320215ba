/* sg_eval_kernelbench.c: the kernelbench evaluator (docs/gpu.md).
 *
 * A kernelbench task's reference is a KernelBench file (a PyTorch Model,
 * get_inputs, get_init_inputs); the candidate is Python defining ModelNew.
 * Everything that touches PyTorch runs in python/specgen_kb/harness.py, in a
 * sandboxed child under the user's python3: compile imports the candidate
 * (which builds its load_inline extensions into a content-addressed cache, on
 * the CPU), run checks and times it on the device, profile runs it once
 * under ncu. The harness answers with the cuda runner's JSON keys, so the
 * outcome is read by the same code (sg_eval_cuda_take_outcome).
 */
#include "common/sg_alloc.h"
#include "common/sg_clock.h"
#include "common/sg_file.h"
#include "eval/sg_cuda_ahead.h"
#include "eval/sg_eval_cuda.h"
#include "eval/sg_sandbox.h"
#include "eval/sg_shm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* load_inline builds PyTorch's headers: tens of seconds even on a fast
 * machine, so the compile stage gets at least this long. */
#define KB_MIN_COMPILE_S 300.0

static bool is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The directory holding the specgen_kb package: $SPECGEN_PYTHON_DIR, the
 * installed data directory, or the source tree's python/. */
static char *python_dir(void) {
  const char *e = getenv("SPECGEN_PYTHON_DIR");
  if (e && *e)
    return sg_strdup(e);
  char *c = sg_asprintf("%s/python", SG_DATA_DIR);
  char *pkg = sg_asprintf("%s/specgen_kb", c);
  bool ok = is_dir(pkg);
  free(pkg);
  if (ok)
    return c;
  free(c);
  return sg_asprintf("%s/python", SG_SOURCE_ROOT);
}

static const char *python_exe(void) {
  const char *e = getenv("SPECGEN_PYTHON");
  return e && *e ? e : "python3";
}

/* argv for the harness: env PYTHONPATH=... python3 -m specgen_kb.harness
 * followed by extra (NULL-ended). Strings in *owned are freed by the
 * caller with free_argv. */
typedef struct kb_argv {
  char *v[48];
  char *owned[12];
  int n, nowned;
} kb_argv;

static void add(kb_argv *a, const char *s) {
  if (a->n < 47)
    a->v[a->n++] = (char *)s;
  a->v[a->n] = NULL;
}

static void add_owned(kb_argv *a, char *s) {
  if (a->nowned < 12)
    a->owned[a->nowned++] = s;
  add(a, s);
}

static void free_argv(kb_argv *a) {
  for (int i = 0; i < a->nowned; i++)
    free(a->owned[i]);
}

static uint64_t harness_seed(const sg_eval_opts *opts) {
  return opts->seed ? opts->seed % 1000000007ULL : 42ULL;
}

/* cand NULL: a judge started ahead (--go-fd), which learns the candidate
 * and the seed from its go line. */
static void harness_argv(kb_argv *a, const sg_task *task, const char *cand,
                         const char *mode, const sg_eval_opts *opts, int dev) {
  memset(a, 0, sizeof *a);
  char *pydir = python_dir();
  add(a, "env");
  add_owned(a, sg_asprintf("PYTHONPATH=%s", pydir));
  free(pydir);
  add(a, "PYTHONUNBUFFERED=1");
  add(a, python_exe());
  add(a, "-m");
  add(a, "specgen_kb.harness");
  add(a, "--task");
  add(a, task->reference_path);
  if (cand) {
    add(a, "--cand");
    add(a, cand);
  } else {
    add(a, "--go-fd");
    add_owned(a, sg_asprintf("%d", SG_SANDBOX_PASS_FD(0)));
  }
  add(a, "--mode");
  add(a, mode);
  add(a, "--device");
  add_owned(a, sg_asprintf("%d", dev));
  add(a, "--trials");
  add_owned(a, sg_asprintf("%d", opts->correctness_trials > 0 ? opts->correctness_trials : 3));
  add(a, "--warmup");
  add_owned(a, sg_asprintf("%d", opts->warmup_runs >= 0 ? opts->warmup_runs : 10));
  add(a, "--timed");
  add_owned(a, sg_asprintf("%d", opts->timed_runs > 0 ? opts->timed_runs : 40));
  if (cand) {
    add(a, "--seed");
    add_owned(a, sg_asprintf("%llu", (unsigned long long)harness_seed(opts)));
  }
  add(a, "--atol");
  add_owned(a, sg_asprintf("%.17g", task->atol));
  add(a, "--rtol");
  add_owned(a, sg_asprintf("%.17g", task->rtol));
  if (opts->strict)
    add(a, "--strict");
  if (opts->heavy_rule_off)
    add(a, "--no-heavy-rule");
  if (opts->also_wrong && opts->heavy_rule_off && strcmp(mode, "validate") == 0)
    add(a, "--also-wrong");
}

/* The sandbox of a harness run. */
static void harness_limits(const sg_eval_build *build, double wall, sg_sandbox_limits *lim) {
  sg_eval_cuda_runner_limits(build, wall, lim);
  lim->isolate_network = true;
  /* load_inline's compilers write preprocessed PyTorch headers: far beyond
   * the default file-size limit (seen: cc1plus killed by SIGXFSZ). */
  lim->file_size_bytes = 0;
}

/* Whether a harness's verdict is CUDA running out of memory in the
 * candidate's process or the reference's (PyTorch's message, whatever
 * status the harness gave it). */
static bool out_of_memory(const sg_eval_result *r) {
  return (r->status == SG_EVAL_RUNTIME_ERROR || r->status == SG_EVAL_INFRA_ERROR) &&
         r->message &&
         (strstr(r->message, "CUDA out of memory") || strstr(r->message, "OutOfMemoryError"));
}

/* A validation that ran out of device memory while a judge of ours was
 * started ahead on the device (the next task's, holding its contexts and
 * shared inputs) says nothing about the candidate: the judges ahead are
 * ended and the task validated once more alone (a judge of its own, none
 * started after it). Out of memory again, alone: the retry's verdict, with
 * both reasons. r holds the first try's verdict
 * and gets the retry's; *dt holds the first try's seconds and gets the
 * retry's added. Returns 0 (r filled), or negative when the retry's judge
 * could not be started. */
static int retry_alone(int dev, char *const argv[], const char *cand, uint64_t seed,
                       const sg_sandbox_limits *lim, double wall, sg_eval_result *r,
                       double *dt, sg_err *err) {
  char *first = sg_strdup(r->message);
  double compile_s = r->compile_s;
  sg_cuda_ahead_release();
  sg_sandbox_outcome o;
  bool ahead = false;
  int rc = sg_cuda_ahead_run_once_argv(dev, argv, cand, seed, lim, &o, &ahead, err);
  if (rc == 0) {
    sg_eval_result_free(r);
    sg_eval_result_init(r);
    r->compile_s = compile_s;
    sg_eval_cuda_take_outcome(&o, wall, r);
    *dt += o.wall_s;
    sg_sandbox_outcome_free(&o);
    if (!r->stages)
      r->stages = json_object();
    json_object_set_new(r->stages, "oom_retried_alone", json_true());
    if (out_of_memory(r)) {
      /* alone on the device it is the retry's own verdict (the candidate's
       * runtime_error where the candidate ran out): a memory-hungry
       * candidate must not pass for a failing device */
      char *m = sg_asprintf("CUDA out of memory beside specgen's judge started ahead "
                            "for the next task, and again on a retry alone; first:\n%s\n"
                            "the retry:\n%s",
                            first, r->message);
      free(r->message);
      r->message = m;
    }
  }
  free(first);
  return rc;
}

static int run_harness(const sg_task *task, const sg_eval_build *build,
                       const char *cand, const char *mode,
                       const sg_eval_opts *opts, double wall, sg_eval_result *r,
                       sg_err *err) {
  int dev = 0;
  int rc = sg_eval_cuda_parse_device(opts->device, &dev, err);
  if (rc)
    return rc;
  /* Validations in sequence go to a judge started ahead (sg_cuda_ahead.h):
   * its import of PyTorch, servers and contexts overlap the previous
   * candidate. It runs in a directory of its own: absolute paths only. */
  bool ahead_mode = strcmp(mode, "validate") == 0 && sg_cuda_ahead_enabled() &&
                    task->reference_path[0] == '/';
  char *abs_cand = ahead_mode ? realpath(cand, NULL) : NULL;
  if (ahead_mode && !abs_cand)
    ahead_mode = false;
  kb_argv a;
  harness_argv(&a, task, ahead_mode ? NULL : cand, mode, opts, dev);
  sg_sandbox_limits lim;
  harness_limits(build, wall, &lim);
  sg_sandbox_outcome o;
  /* a cuda judge that returned its verdict may still be ending on the
   * device: its teardown must not overlap this run */
  sg_eval_cuda_hand_over();
  double t0 = sg_clock_now_s();
  bool ahead = false;
  if (ahead_mode)
    rc = sg_cuda_ahead_run_argv(dev, a.v, abs_cand, harness_seed(opts), &lim, &o, &ahead,
                                err);
  else
    rc = sg_sandbox_exec(&lim, a.v, &o, err);
  if (!ahead_mode && build->work_dir) { /* a judge killed leaves its and its
                                          * servers' IPC files (sg_shm.h) */
    char *pids = sg_asprintf("%s/%s", build->work_dir, SG_SHM_PIDS_FILE);
    sg_shm_remove_listed(NULL, pids);
    unlink(pids);
    free(pids);
  }
  if (rc) {
    free_argv(&a);
    free(abs_cand);
    return rc;
  }
  /* a judge started ahead: from its go */
  double dt = ahead_mode ? o.wall_s : sg_clock_now_s() - t0;
  sg_eval_cuda_take_outcome(&o, wall, r);
  sg_sandbox_outcome_free(&o);
  if (ahead_mode && !r->stages)
    r->stages = json_object();
  if (ahead)
    json_object_set_new(r->stages, "started_ahead", json_true());
  /* from the go until the judge took it: its start-up left, if any */
  double wait = ahead_mode ? sg_cuda_ahead_last_wait_s() : 0;
  if (ahead_mode && out_of_memory(r) && sg_cuda_ahead_live() > 0) {
    rc = retry_alone(dev, a.v, abs_cand, harness_seed(opts), &lim, wall, r, &dt, err);
    wait += sg_cuda_ahead_last_wait_s();
  }
  if (ahead_mode && r->stages) /* a retry's result may have none */
    json_object_set_new(r->stages, "judge_wait_s", json_real(wait));
  free_argv(&a);
  free(abs_cand);
  if (rc)
    return rc;
  if (strcmp(mode, "compile") == 0)
    r->compile_s = dt;
  else
    r->run_s = dt;
  return 0;
}

static int kb_compile(const sg_task *task, const char *source, size_t len,
                      const sg_eval_opts *opts, sg_eval_build *build,
                      sg_eval_result *r, sg_err *err) {
  memset(build, 0, sizeof *build);
  sg_eval_opts d;
  sg_eval_opts_default(&d);
  if (!opts)
    opts = &d;
  char *dir = NULL;
  int rc = sg_scratch_dir(opts->work_dir, "specgen-kb", &dir, err);
  if (rc)
    return rc;
  build->work_dir = dir;
  build->owns_work_dir = true;
  char *cand = sg_asprintf("%s/candidate.py", dir);
  if ((rc = sg_file_write(cand, source, len, err))) {
    free(cand);
    return rc;
  }
  double wall = opts->compile_timeout_s > KB_MIN_COMPILE_S ? opts->compile_timeout_s
                                                           : KB_MIN_COMPILE_S;
  rc = run_harness(task, build, cand, "compile", opts, wall, r, err);
  if (!rc && r->status == SG_EVAL_OK) {
    build->artifact = cand;
    build->reference_artifact = sg_strdup(task->reference_path);
  } else {
    free(cand);
  }
  /* A compile that ended in anything but ok or compile_error (a harness
   * that could not import torch, say) is specgen's or the machine's
   * problem: the contract allows only ok, compile_error or rejected here. */
  if (!rc && r->status != SG_EVAL_OK && r->status != SG_EVAL_COMPILE_ERROR &&
      r->status != SG_EVAL_REJECTED) {
    if (r->status == SG_EVAL_TIMEOUT)
      r->status = SG_EVAL_COMPILE_ERROR;
    else
      rc = sg_err_set(err, SG_EUNSUPPORTED, "kernelbench compile stage: %s",
                      r->message ? r->message : "failed");
  }
  return rc;
}

static int kb_run(const sg_task *task, const sg_eval_build *build,
                  const sg_eval_opts *opts, sg_eval_result *r, sg_err *err) {
  sg_eval_opts d;
  sg_eval_opts_default(&d);
  if (!opts)
    opts = &d;
  double wall = sg_eval_timeout(opts);
  return run_harness(task, build, build->artifact, "validate", opts, wall, r, err);
}

/* opts's device when task's harness may be started ahead (runners ahead
 * are on, and its paths are absolute: it runs in a directory of its own),
 * else -1. */
static int ahead_device(const sg_task *task, const sg_eval_opts *opts) {
  int dev = 0;
  sg_err err;
  if (!sg_cuda_ahead_enabled() || task->reference_path[0] != '/' ||
      sg_eval_cuda_parse_device(opts->device, &dev, &err))
    return -1;
  return dev;
}

/* A validation (mode "validate": its judge, when the current run is
 * ready, as run_harness would start it) or a profile ("profile": its
 * harness under ncu, now) of task comes next here: it starts ahead. */
static void expect_mode(const sg_task *task, const sg_eval_build *build,
                        const sg_eval_opts *opts, const char *mode) {
  sg_eval_opts d;
  sg_eval_opts_default(&d);
  if (!opts)
    opts = &d;
  int dev = ahead_device(task, opts);
  if (dev < 0)
    return;
  kb_argv a;
  harness_argv(&a, task, NULL, mode, opts, dev);
  if (strcmp(mode, "profile") == 0) {
    sg_eval_cuda_ncu_expect(build, opts, dev, a.v);
  } else {
    sg_sandbox_limits lim;
    harness_limits(build, sg_eval_timeout(opts), &lim);
    sg_cuda_ahead_expect_argv(dev, a.v, &lim);
  }
  free_argv(&a);
}

static void kb_expect(const sg_task *task, const sg_eval_build *build,
                      const sg_eval_opts *opts) {
  expect_mode(task, build, opts, "validate");
}

static void kb_expect_profile(const sg_task *task, const sg_eval_build *build,
                              const sg_eval_opts *opts) {
  expect_mode(task, build, opts, "profile");
}

static int kb_profile(const sg_task *task, const sg_eval_build *build,
                      const sg_eval_opts *opts, sg_eval_result *r, sg_err *err) {
  sg_eval_opts d;
  sg_eval_opts_default(&d);
  if (!opts)
    opts = &d;
  int dev = 0;
  int rc = sg_eval_cuda_parse_device(opts->device, &dev, err);
  if (rc)
    return rc;
  kb_argv a, ahead_argv;
  harness_argv(&a, task, build->artifact, "profile", opts, dev);
  /* With runners ahead, the harness under ncu has imported PyTorch and
   * made its context before its go (kb_expect_profile, or now). */
  char *abs_cand = ahead_device(task, opts) >= 0 ? realpath(build->artifact, NULL) : NULL;
  harness_argv(&ahead_argv, task, NULL, "profile", opts, dev);
  sg_eval_ncu_ahead go = {dev, ahead_argv.v, abs_cand, harness_seed(opts)};
  rc = sg_eval_cuda_ncu(task, build, opts, a.v, abs_cand ? &go : NULL, r, err);
  free(abs_cand);
  free_argv(&ahead_argv);
  free_argv(&a);
  return rc;
}

const sg_evaluator sg_evaluator_kernelbench = {
    .name = "kernelbench", .device_kind = "cuda", .gpu = true,
    .hardware_counters = true, .profiling = SG_PROFILE_COUNTERS,
    .compile = kb_compile, .run = kb_run, .profile = kb_profile, .expect = kb_expect,
    .expect_profile = kb_expect_profile};
