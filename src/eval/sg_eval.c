/* sg_eval.c: the evaluator contract (sg_eval.h): status names, default
 * options, results and their JSON form, and the dispatch from a task's
 * "evaluator" to the evaluator that serves it.
 *
 * The cpu evaluator is sg_eval_cpu*.c, the cuda evaluator sg_eval_cuda*.c
 * (it loads CUDA at run time, so it is always built), the kernelbench
 * evaluator sg_eval_kernelbench.c (docs/gpu.md).
 */
#include "eval/sg_eval.h"

#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "common/sg_hash.h"
#include "eval/sg_cuda_ahead.h"
#include "eval/sg_cuda_api.h"
#include "eval/sg_eval_cpu.h"
#include "eval/sg_eval_cuda.h"

#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sg_eval_opts_default(sg_eval_opts *opts) {
  memset(opts, 0, sizeof *opts);
  opts->device = NULL;
  opts->correctness_trials = 3;
  opts->warmup_runs = 10;
  opts->timed_runs = 40;
  opts->compile_timeout_s = 60;
  opts->eval_timeout = SG_EVAL_TIMEOUT_S;
  opts->work_dir = NULL;
  opts->seed = 0;
  opts->strict = false;
}

double sg_eval_timeout(const sg_eval_opts *opts) {
  return opts && opts->eval_timeout > 0 ? opts->eval_timeout : SG_EVAL_TIMEOUT_S;
}

void sg_eval_result_init(sg_eval_result *r) {
  memset(r, 0, sizeof *r);
  r->status = SG_EVAL_INFRA_ERROR; /* until an evaluator says otherwise */
  r->speedup = NAN;
  r->ref_ms = r->ref_mean_ms = NAN;
  r->cand_ms = r->cand_mean_ms = NAN;
  r->compile_s = r->run_s = NAN;
  r->max_abs_err = r->max_rel_err = NAN;
  r->first_mismatch = -1;
}

void sg_eval_result_free(sg_eval_result *r) {
  if (!r)
    return;
  free(r->message);
  free(r->profile_text);
  free(r->kernelbench_status);
  r->kernelbench_status = NULL;
  if (r->metrics)
    json_decref(r->metrics);
  if (r->isolation)
    json_decref(r->isolation);
  if (r->stages)
    json_decref(r->stages);
  if (r->self_check_wrong)
    json_decref(r->self_check_wrong);
  r->self_check_wrong = NULL;
  r->message = r->profile_text = NULL;
  r->metrics = NULL;
  r->isolation = NULL;
  r->stages = NULL;
}

/* NaN and infinities have no JSON form: null. */
static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

json_t *sg_eval_result_to_json(const sg_eval_result *r) {
  json_t *j = json_object();
  json_object_set_new(j, "status", json_string(sg_eval_status_name(r->status)));
  json_object_set_new(j, "message", json_string(r->message ? r->message : ""));
  json_object_set_new(j, "speedup",
                      r->status == SG_EVAL_OK ? num(r->speedup) : json_null());
  json_object_set_new(j, "ref_ms", num(r->ref_ms));
  json_object_set_new(j, "cand_ms", num(r->cand_ms));
  json_object_set_new(j, "ref_mean_ms", num(r->ref_mean_ms));
  json_object_set_new(j, "cand_mean_ms", num(r->cand_mean_ms));
  json_object_set_new(j, "compile_s", num(r->compile_s));
  json_object_set_new(j, "run_s", num(r->run_s));
  json_object_set_new(j, "max_abs_err", num(r->max_abs_err));
  json_object_set_new(j, "max_rel_err", num(r->max_rel_err));
  json_object_set_new(j, "first_mismatch", r->first_mismatch >= 0
                                               ? json_integer(r->first_mismatch)
                                               : json_null());
  json_object_set_new(j, "network_isolated", json_boolean(r->network_isolated));
  json_object_set_new(j, "isolation", r->isolation ? json_incref(r->isolation)
                                                   : json_null());
  json_object_set_new(j, "seed", r->seed ? json_integer((json_int_t)r->seed)
                                         : json_null());
  json_object_set_new(j, "metrics", r->metrics ? json_incref(r->metrics)
                                               : json_null());
  json_object_set_new(j, "profile_text", r->profile_text
                                             ? json_string(r->profile_text)
                                             : json_null());
  json_object_set_new(j, "kernelbench_status", r->kernelbench_status
                                                   ? json_string(r->kernelbench_status)
                                                   : json_null());
  if (r->stages)
    json_object_set(j, "stages", r->stages);
  if (r->self_check_wrong)
    json_object_set(j, "self_check_wrong", r->self_check_wrong);
  return j;
}

/* A number or null (NAN); anything else is an error naming the key. */
static int get_num(const json_t *j, const char *key, double *out, sg_err *err) {
  const json_t *v = json_object_get(j, key);
  if (!v || json_is_null(v)) {
    *out = NAN;
    return 0;
  }
  if (!json_is_number(v))
    return sg_err_set(err, SG_EPARSE, "evaluation result: %s: expected a number or null", key);
  *out = json_number_value(v);
  return 0;
}

int sg_eval_result_from_json(const json_t *j, sg_eval_result *r, sg_err *err) {
  sg_eval_result_init(r);
  if (!json_is_object(j))
    return sg_err_set(err, SG_EPARSE, "evaluation result: expected an object");
  const json_t *st = json_object_get(j, "status");
  int s = json_is_string(st) ? sg_eval_status_parse(json_string_value(st)) : -1;
  if (s < 0)
    return sg_err_set(err, SG_EPARSE, "evaluation result: status: expected one "
                      "of ok, compile_error, runtime_error, numerical_error, "
                      "timeout, rejected, aborted, infra_error");
  r->status = (sg_eval_status)s;
  const json_t *m = json_object_get(j, "message");
  if (m && !json_is_string(m) && !json_is_null(m))
    return sg_err_set(err, SG_EPARSE, "evaluation result: message: expected a string");
  r->message = sg_strdup(json_is_string(m) ? json_string_value(m) : "");
  int rc;
  struct { const char *key; double *dst; } nums[] = {
      {"speedup", &r->speedup},         {"ref_ms", &r->ref_ms},
      {"cand_ms", &r->cand_ms},         {"ref_mean_ms", &r->ref_mean_ms},
      {"cand_mean_ms", &r->cand_mean_ms}, {"compile_s", &r->compile_s},
      {"run_s", &r->run_s},             {"max_abs_err", &r->max_abs_err},
      {"max_rel_err", &r->max_rel_err},
  };
  for (size_t i = 0; i < sizeof nums / sizeof *nums; i++)
    if ((rc = get_num(j, nums[i].key, nums[i].dst, err))) {
      sg_eval_result_free(r);
      return rc;
    }
  const json_t *fm = json_object_get(j, "first_mismatch");
  if (json_is_integer(fm))
    r->first_mismatch = json_integer_value(fm);
  else if (fm && !json_is_null(fm)) {
    sg_eval_result_free(r);
    return sg_err_set(err, SG_EPARSE, "evaluation result: first_mismatch: expected an integer or null");
  }
  r->network_isolated = json_is_true(json_object_get(j, "network_isolated"));
  const json_t *iso = json_object_get(j, "isolation");
  if (json_is_object(iso))
    r->isolation = json_deep_copy(iso);
  const json_t *seed = json_object_get(j, "seed");
  if (json_is_integer(seed))
    r->seed = (unsigned long long)json_integer_value(seed);
  const json_t *metrics = json_object_get(j, "metrics");
  if (json_is_object(metrics))
    r->metrics = json_deep_copy(metrics);
  const json_t *pt = json_object_get(j, "profile_text");
  if (json_is_string(pt))
    r->profile_text = sg_strdup(json_string_value(pt));
  const json_t *kb = json_object_get(j, "kernelbench_status");
  if (json_is_string(kb) && sg_eval_status_parse(json_string_value(kb)) >= 0)
    r->kernelbench_status = sg_strdup(json_string_value(kb));
  const json_t *stages = json_object_get(j, "stages");
  if (json_is_object(stages))
    r->stages = json_deep_copy(stages);
  const json_t *wrong = json_object_get(j, "self_check_wrong");
  if (json_is_object(wrong))
    r->self_check_wrong = json_deep_copy(wrong);
  return 0;
}

void sg_eval_build_free(sg_eval_build *b) {
  if (!b)
    return;
  if (b->owns_work_dir && b->work_dir) {
    sg_err err;
    sg_rm_rf(b->work_dir, &err);
  }
  free(b->work_dir);
  free(b->artifact);
  free(b->reference_artifact);
  memset(b, 0, sizeof *b);
}

/* ---- dispatch ------------------------------------------------------------------ */

static int cpu_profile(const sg_task *task, const sg_eval_build *build,
                       const sg_eval_opts *opts, sg_eval_result *r, sg_err *err) {
  (void)task;
  (void)build;
  (void)opts;
  (void)r;
  return sg_err_set(err, SG_EUNSUPPORTED,
                    "the cpu evaluator has no hardware profiling (use validate's timing)");
}

static const sg_evaluator cpu_evaluator = {
    .name = "cpu", .device_kind = "cpu", .gpu = false, .hardware_counters = false,
    .profiling = SG_PROFILE_TIMING, .compile = sg_eval_cpu_compile,
    .run = sg_eval_cpu_run, .profile = cpu_profile};

static const sg_evaluator cuda_evaluator = {
    .name = "cuda", .device_kind = "cuda", .gpu = true, .hardware_counters = true,
    .profiling = SG_PROFILE_COUNTERS, .compile = sg_eval_cuda_compile,
    .run = sg_eval_cuda_run, .profile = sg_eval_cuda_profile,
    .expect = sg_eval_cuda_expect, .expect_profile = sg_eval_cuda_expect_profile};

/* The evaluator table: a bare task name on a device kind means the first
 * evaluator's task of that name (cuda before kernelbench). */
static const sg_evaluator *const evaluators[] = {&cpu_evaluator, &cuda_evaluator,
                                                 &sg_evaluator_kernelbench};

const sg_evaluator *sg_evaluator_at(size_t i) {
  return i < sizeof evaluators / sizeof evaluators[0] ? evaluators[i] : NULL;
}

const sg_evaluator *sg_evaluator_find(const char *name) {
  for (size_t i = 0; name && i < sizeof evaluators / sizeof evaluators[0]; i++)
    if (strcmp(name, evaluators[i]->name) == 0)
      return evaluators[i];
  return NULL;
}

const char *sg_eval_device_kind(const char *device) {
  size_t n = device ? strcspn(device, ":") : 0;
  for (size_t i = 0; n > 0 && i < sizeof evaluators / sizeof evaluators[0]; i++)
    if (strlen(evaluators[i]->device_kind) == n &&
        strncmp(device, evaluators[i]->device_kind, n) == 0)
      return evaluators[i]->device_kind;
  return NULL;
}

int sg_eval_device_check(const char *device, sg_err *err) {
  const char *kind = sg_eval_device_kind(device);
  if (kind == NULL)
    return sg_err_set(err, SG_EINVAL, "%s: no evaluator runs on this kind of device",
                      device ? device : "");
  bool gpu = false;
  for (size_t i = 0; sg_evaluator_at(i); i++)
    gpu |= strcmp(sg_evaluator_at(i)->device_kind, kind) == 0 && sg_evaluator_at(i)->gpu;
  if (!gpu) /* a core this process may not run on evaluates nothing either */
    return strcmp(kind, "cpu") == 0 ? sg_eval_cpu_device_check(device, err) : 0;
  int ordinal = 0;
  int rc = sg_eval_cuda_parse_device(device, &ordinal, err);
  if (rc < 0)
    return rc;
  sg_cuda_api api;
  sg_err e;
  sg_err_clear(&e);
  if (sg_cuda_api_load(&api, &e) < 0)
    return sg_err_set(err, SG_EINVAL, "%s: %s", device, e.msg); /* "no CUDA driver: ..." */
  int n = 0;
  sg_CUresult cr = api.cuInit(0);
  if (cr == 0)
    cr = api.cuDeviceGetCount(&n);
  char buf[256];
  if (cr != 0) {
    sg_err_set(err, SG_EINVAL, "%s: the CUDA driver finds no usable GPU (%s)", device,
               sg_cuda_api_errstr(&api, cr, buf, sizeof buf));
    dlclose(api.lib);
    return SG_EINVAL;
  }
  dlclose(api.lib);
  if (ordinal >= n)
    return sg_err_set(err, SG_EINVAL, "%s: this machine has %d CUDA device%s", device, n,
                      n == 1 ? "" : "s");
  return 0;
}

static int find(const sg_task *task, const sg_evaluator **ev, sg_err *err) {
  *ev = sg_evaluator_find(task->evaluator);
  if (!*ev)
    return sg_err_set(err, SG_EUNSUPPORTED,
                      "task %s: the %s evaluator is not available in this build",
                      task->name, task->evaluator);
  return 0;
}

int sg_eval_compile(const sg_task *task, const char *source, size_t len,
                    const sg_eval_opts *opts, sg_eval_build *build,
                    sg_eval_result *r, sg_err *err) {
  const sg_evaluator *ev;
  int rc = find(task, &ev, err);
  return rc ? rc : ev->compile(task, source, len, opts, build, r, err);
}

int sg_eval_run(const sg_task *task, const sg_eval_build *build,
                const sg_eval_opts *opts, sg_eval_result *r, sg_err *err) {
  const sg_evaluator *ev;
  int rc = find(task, &ev, err);
  return rc ? rc : ev->run(task, build, opts, r, err);
}

void sg_eval_expect(const sg_task *task, const sg_eval_build *build,
                    const sg_eval_opts *opts) {
  const sg_evaluator *ev;
  sg_err err;
  if (!task)
    sg_cuda_ahead_expect_none();
  else if (find(task, &ev, &err) == 0 && ev->expect)
    ev->expect(task, build, opts);
}

void sg_eval_expect_then(const sg_task *task, const sg_eval_build *build,
                         const sg_eval_opts *opts) {
  const sg_evaluator *ev;
  sg_err err;
  if (!task || find(task, &ev, &err) != 0 || !ev->expect)
    return;
  sg_cuda_ahead_expect_then(true);
  ev->expect(task, build, opts);
  sg_cuda_ahead_expect_then(false);
}

void sg_eval_expect_profile(const sg_task *task, const sg_eval_build *build,
                            const sg_eval_opts *opts) {
  const sg_evaluator *ev;
  sg_err err;
  if (task && find(task, &ev, &err) == 0 && ev->expect_profile)
    ev->expect_profile(task, build, opts);
}

int sg_eval_profile(const sg_task *task, const sg_eval_build *build,
                    const sg_eval_opts *opts, sg_eval_result *r, sg_err *err) {
  const sg_evaluator *ev;
  int rc = find(task, &ev, err);
  return rc ? rc : ev->profile(task, build, opts, r, err);
}

int sg_eval_validate(const sg_task *task, const char *source, size_t len,
                     const sg_eval_opts *opts, sg_eval_result *r, sg_err *err) {
  sg_eval_build build;
  memset(&build, 0, sizeof build);
  int rc = sg_eval_compile(task, source, len, opts, &build, r, err);
  if (rc == 0 && r->status == SG_EVAL_OK) {
    double compile_s = r->compile_s;
    rc = sg_eval_run(task, &build, opts, r, err);
    r->compile_s = compile_s;
  }
  sg_eval_build_free(&build);
  return rc;
}

#define REFERENCE_MAX_BYTES ((size_t)1 << 30)

int sg_eval_build_share_reference(const sg_task *task, sg_eval_build *build,
                                  const char *dir, sg_err *err) {
  if (strcmp(task->evaluator, "cuda") != 0 || !build->reference_artifact)
    return 0;
  char *bytes = NULL;
  size_t len = 0;
  int rc = sg_file_read(build->reference_artifact, REFERENCE_MAX_BYTES, &bytes, &len, err);
  if (rc)
    return rc;
  char *path = sg_asprintf("%s/ref-%016llx.so", dir,
                           (unsigned long long)sg_fnv1a64(bytes, len));
  if (access(path, R_OK) != 0)
    rc = sg_file_write(path, bytes, len, err);
  free(bytes);
  if (!rc) {
    free(build->reference_artifact);
    build->reference_artifact = path;
  } else {
    free(path);
  }
  return rc;
}
