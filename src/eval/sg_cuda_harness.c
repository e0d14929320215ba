/* sg_cuda_harness.c: the cuda evaluator's device program, profile mode.
 *
 * Validation (correctness and timing) is the judge's (sg_cuda_validate.c),
 * which never loads the candidate into its own process. Profiling produces
 * no verdict, only counters for ncu, so it keeps one process: the device's
 * primary context is made current, the candidate's shared object (its
 * statically linked CUDA runtime attaches to that context) is loaded with
 * RTLD_LOCAL, inputs are drawn on the device by the judge's generator (from
 * the reference's shared object, as validation draws them: a billion host
 * draws took 5 s), and one warm-up call is followed by one call between
 * cuProfilerStart and cuProfilerStop after an L2 flush.
 * It never returns control to the candidate's process after a sticky CUDA
 * error: the result says runtime_error and the process ends.
 */
#include "common/sg_stats.h"
#include "eval/sg_cuda_harness.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_clock.h"
#include "eval/sg_cuda_api.h"
#include "eval/sg_cuda_judge.h"
#include "eval/sg_cuda_server.h"
#include "eval/sg_cuda_validate.h"

#include <dlfcn.h>
#include <unistd.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*sg_launch_fn)(void **args);

#define LEGACY_STREAM ((sg_CUstream)0)

typedef int (*fill_fn)(void *, const sg_judge_fill *, uint64_t, uint64_t);

typedef struct harness {
  const sg_cuda_harness_cfg *cfg;
  sg_cuda_api api;
  sg_CUcontext ctx;
  sg_CUdevice dev;
  json_t *out;
  fill_fn fill;           /* the judge's generator (sg_judge_fill) */
  /* per argument: the candidate's device buffer, scalar storage */
  size_t nargs;
  sg_CUdeviceptr *dcand;
  union {
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
  } *scalar;
  void **args_cand;
  sg_CUdeviceptr flush;
  size_t flush_bytes;
} harness;

static json_t *finish(harness *h, const char *status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static json_t *finish(harness *h, const char *status, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  json_object_set_new(h->out, "status", json_string(status));
  json_object_set_new(h->out, "message", json_string(msg));
  return h->out;
}

static const char *cuerr(harness *h, sg_CUresult rc) {
  static char buf[256];
  return sg_cuda_api_errstr(&h->api, rc, buf, sizeof buf);
}

/* The CUDA error left behind by a call (launch errors are reported by the
 * next synchronization; sticky errors by every call after). */
static sg_CUresult sync_all(harness *h) { return h->api.cuCtxSynchronize(); }

static size_t arg_bytes(const sg_task_arg *a) {
  return (size_t)a->numel * sg_dtype_size(a->dtype);
}

static int setup(harness *h, char *msg, size_t msg_len) {
  const sg_task *t = h->cfg->task;
  h->nargs = t->nargs;
  h->dcand = sg_calloc(t->nargs, sizeof *h->dcand);
  h->scalar = sg_calloc(t->nargs, sizeof *h->scalar);
  h->args_cand = sg_calloc(t->nargs, sizeof *h->args_cand);
  for (size_t i = 0; i < t->nargs; i++) {
    const sg_task_arg *a = &t->args[i];
    if (a->kind == SG_ARG_SCALAR) {
      switch (a->dtype) {
      case SG_DTYPE_F32: h->scalar[i].f32 = (float)a->scalar_value; break;
      case SG_DTYPE_F64: h->scalar[i].f64 = a->scalar_value; break;
      case SG_DTYPE_I32: h->scalar[i].i32 = (int32_t)a->scalar_value; break;
      default: h->scalar[i].i64 = (int64_t)a->scalar_value; break;
      }
      h->args_cand[i] = &h->scalar[i];
      continue;
    }
    size_t n = arg_bytes(a);
    sg_CUresult rc = h->api.cuMemAlloc(&h->dcand[i], n);
    if (rc) {
      snprintf(msg, msg_len, "allocating %zu bytes for %s: %s", n, a->name,
               cuerr(h, rc));
      return -1;
    }
    h->args_cand[i] = (void *)(uintptr_t)h->dcand[i];
  }
  int l2 = 0;
  h->api.cuDeviceGetAttribute(&l2, SG_CU_ATTR_L2_CACHE_SIZE, h->dev);
  h->flush_bytes = (size_t)(l2 > 0 ? l2 : 64 << 20) * 2;
  json_object_set_new(h->out, "l2_bytes", json_integer(l2));
  json_object_set_new(h->out, "flush_bytes", json_integer((json_int_t)h->flush_bytes));
  sg_CUresult rc = h->api.cuMemAlloc(&h->flush, h->flush_bytes);
  if (rc) {
    snprintf(msg, msg_len, "allocating the L2 flush buffer: %s", cuerr(h, rc));
    return -1;
  }
  return 0;
}

/* Draws the inputs on the device (the task's own distributions, as the
 * first correctness trial of seed draws them) and poisons the outputs. */
static sg_CUresult prepare_trial(harness *h, uint64_t seed) {
  const sg_task *t = h->cfg->task;
  for (size_t i = 0; i < t->nargs; i++) {
    const sg_task_arg *a = &t->args[i];
    sg_CUresult rc = 0;
    if (a->kind == SG_ARG_INPUT) {
      sg_judge_fill f;
      sg_judge_fill_spec(a, 0, &f);
      rc = (sg_CUresult)h->fill((void *)(uintptr_t)h->dcand[i], &f, seed, i);
    } else if (a->kind == SG_ARG_OUTPUT) {
      /* All-ones bytes: NaN for float32 and float64, -1 for integers. */
      size_t words = arg_bytes(a) / 4;
      rc = h->api.cuMemsetD32Async(h->dcand[i], 0xFFFFFFFFu, words, LEGACY_STREAM);
    }
    if (rc)
      return rc;
  }
  return sync_all(h);
}

static void *load_so(const char *path, sg_launch_fn *fn, char *msg, size_t len) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(msg, len, "%s", dlerror());
    return NULL;
  }
  *fn = (sg_launch_fn)(uintptr_t)dlsym(lib, "sg_launch");
  if (!*fn) {
    snprintf(msg, len, "%.900s: no sg_launch symbol", path);
    return NULL;
  }
  return lib;
}

/* A profile runner started ahead (under ncu, whose start-up, injection and
 * the context's creation are then behind it): says it is ready ('R'),
 * takes its go (the seed and the candidate's library) and says so ('G'),
 * as a validation runner does. Returns 0, or -1 with h->out finished. */
static int take_go(harness *h, int fd, double t0, uint64_t *seed, char *path,
                   size_t cap) {
  char msg[1536];
  double tw = sg_clock_now_s();
  char c = 'R';
  if (write(fd, &c, 1) != 1) {
    finish(h, "infra_error", "go: the evaluator closed the channel");
    return -1;
  }
  if (sg_cuda_go_read(fd, seed, path, cap, msg, sizeof msg)) {
    finish(h, "infra_error", "%s", msg);
    return -1;
  }
  c = 'G';
  if (write(fd, &c, 1) != 1) {
    finish(h, "infra_error", "go: the evaluator closed the channel");
    return -1;
  }
  json_object_set_new(h->out, "ahead_s", json_real(tw - t0));
  json_object_set_new(h->out, "go_wait_s", json_real(sg_clock_now_s() - tw));
  return 0;
}

static json_t *profile(harness *h, sg_launch_fn cand, uint64_t seed) {
  sg_CUresult rc = prepare_trial(h, seed);
  if (rc)
    return finish(h, "infra_error", "preparing inputs: %s", cuerr(h, rc));
  cand(h->args_cand); /* warm-up: module load, first-call costs */
  if ((rc = sync_all(h)))
    return finish(h, "runtime_error", "the candidate failed: %s", cuerr(h, rc));
  h->api.cuMemsetD32Async(h->flush, 0, h->flush_bytes / 4, LEGACY_STREAM);
  sync_all(h);
  h->api.cuProfilerStart();
  cand(h->args_cand);
  rc = sync_all(h);
  h->api.cuProfilerStop();
  if (rc)
    return finish(h, "runtime_error", "the candidate failed: %s", cuerr(h, rc));
  return finish(h, "ok", "profiled one call");
}

void sg_cuda_harness_end(void) { sg_cuda_validate_end(); }

json_t *sg_cuda_harness_run(const sg_cuda_harness_cfg *cfg) {
  /* Validation: the candidate in its own process, judged from this one. */
  if (cfg->mode == SG_CUDA_MODE_VALIDATE)
    return sg_cuda_validate_run(cfg);
  harness hh, *h = &hh;
  memset(h, 0, sizeof *h);
  h->cfg = cfg;
  h->out = json_object();
  sg_err err;
  sg_err_clear(&err);
  double t0 = sg_clock_now_s();
  if (sg_cuda_api_load(&h->api, &err))
    return finish(h, "infra_error", "%s", err.msg);
  sg_CUresult rc;
  int count = 0;
  if ((rc = h->api.cuInit(0)) || (rc = h->api.cuDeviceGetCount(&count)))
    return finish(h, "infra_error", "no CUDA device: cuInit: %s", cuerr(h, rc));
  if (cfg->device < 0 || cfg->device >= count)
    return finish(h, "infra_error", "no CUDA device %d (%d present)", cfg->device,
                  count);
  if ((rc = h->api.cuDeviceGet(&h->dev, cfg->device)) ||
      (rc = h->api.cuDevicePrimaryCtxRetain(&h->ctx, h->dev)) ||
      (rc = h->api.cuCtxSetCurrent(h->ctx)))
    return finish(h, "infra_error", "creating a CUDA context: %s", cuerr(h, rc));
  char name[256] = "";
  h->api.cuDeviceGetName(name, sizeof name, h->dev);
  json_object_set_new(h->out, "device_name", json_string(name));
  json_object_set_new(h->out, "context_s", json_real(sg_clock_now_s() - t0));

  char msg[1024];
  sg_launch_fn cand = NULL;
  void *reflib = cfg->ref_so ? dlopen(cfg->ref_so, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!reflib)
    return finish(h, "infra_error", "loading the reference (for its input generator): %s",
                  cfg->ref_so ? dlerror() : "no --ref given");
  h->fill = (fill_fn)(uintptr_t)dlsym(reflib, "sg_judge_fill");
  if (!h->fill)
    return finish(h, "infra_error", "%s lacks the judge's kernels (sg_judge_*): rebuild it",
                  cfg->ref_so);
  if (setup(h, msg, sizeof msg))
    return finish(h, "infra_error", "%s", msg);
  const char *cand_so = cfg->cand_so;
  uint64_t seed = cfg->seed;
  char go_path[SG_CUDA_SERVER_PATH_MAX + 1];
  if (cfg->go_fd >= 0 && take_go(h, cfg->go_fd, t0, &seed, go_path, sizeof go_path))
    return h->out;
  if (!cand_so && cfg->go_fd >= 0)
    cand_so = go_path;
  if (!cand_so)
    return finish(h, "infra_error", "no candidate library given");
  if (!load_so(cand_so, &cand, msg, sizeof msg)) {
    bool vendor = strstr(msg, "cublas") || strstr(msg, "cudnn");
    return finish(h, vendor ? "rejected" : "runtime_error",
                  "loading the candidate: %s", msg);
  }
  return profile(h, cand, seed);
}
