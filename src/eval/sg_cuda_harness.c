/* sg_cuda_harness.c: correctness and timing of a CUDA candidate on a device.
 *
 * How it works (the paper's protocol, docs/gpu.md):
 *  - One CUDA context per process: the device's primary context, made current
 *    before the candidate's code runs, so the candidate's CUDA runtime (linked
 *    statically into its shared object) attaches to the same context and the
 *    device pointers handed to it are valid there.
 *  - The reference and the candidate are separate shared objects loaded with
 *    RTLD_LOCAL: the candidate cannot reach the reference's symbols.
 *  - Correctness: for each trial, fresh random inputs are drawn on the host
 *    (seed + trial), copied to separate buffers for the candidate and the
 *    reference, outputs are poisoned with all-ones bytes (NaN for floats)
 *    before each call, the candidate runs first, and every output element is
 *    compared; inputs are checked unchanged afterwards.
 *  - Timing: warm-ups then timed runs, reference and candidate interleaved
 *    (alternating which goes first), each run preceded by a write of a buffer
 *    twice the L2's size on the same stream (the L2 flush), bracketed by
 *    events on the legacy default stream, which orders every blocking stream
 *    the candidate may use. The context is synchronized before the events are
 *    read, so an error in any stream surfaces.
 * It never returns control to the candidate's process after a sticky CUDA
 * error: the result says runtime_error and the process ends.
 */
#include "common/sg_stats.h"
#include "eval/sg_cuda_harness.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_clock.h"
#include "eval/sg_cuda_api.h"
#include "eval/sg_cuda_check.h"

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*sg_launch_fn)(void **args);

#define LEGACY_STREAM ((sg_CUstream)0)

typedef struct harness {
  const sg_cuda_harness_cfg *cfg;
  sg_cuda_api api;
  sg_CUcontext ctx;
  sg_CUdevice dev;
  json_t *out;
  /* per argument: device buffers for the candidate and the reference, host
   * copies of the inputs and of both outputs, and scalar storage */
  size_t nargs;
  sg_CUdeviceptr *dcand, *dref;
  void **host_in, **host_cand, **host_ref;
  union {
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
  } *scalar;
  void **args_cand, **args_ref;
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
  h->dref = sg_calloc(t->nargs, sizeof *h->dref);
  h->host_in = sg_calloc(t->nargs, sizeof *h->host_in);
  h->host_cand = sg_calloc(t->nargs, sizeof *h->host_cand);
  h->host_ref = sg_calloc(t->nargs, sizeof *h->host_ref);
  h->scalar = sg_calloc(t->nargs, sizeof *h->scalar);
  h->args_cand = sg_calloc(t->nargs, sizeof *h->args_cand);
  h->args_ref = sg_calloc(t->nargs, sizeof *h->args_ref);
  for (size_t i = 0; i < t->nargs; i++) {
    const sg_task_arg *a = &t->args[i];
    if (a->kind == SG_ARG_SCALAR) {
      switch (a->dtype) {
      case SG_DTYPE_F32: h->scalar[i].f32 = (float)a->scalar_value; break;
      case SG_DTYPE_F64: h->scalar[i].f64 = a->scalar_value; break;
      case SG_DTYPE_I32: h->scalar[i].i32 = (int32_t)a->scalar_value; break;
      default: h->scalar[i].i64 = (int64_t)a->scalar_value; break;
      }
      h->args_cand[i] = h->args_ref[i] = &h->scalar[i];
      continue;
    }
    size_t n = arg_bytes(a);
    sg_CUresult rc;
    if ((rc = h->api.cuMemAlloc(&h->dcand[i], n)) ||
        (h->cfg->ref_so && (rc = h->api.cuMemAlloc(&h->dref[i], n)))) {
      snprintf(msg, msg_len, "allocating %zu bytes for %s: %s", n, a->name,
               cuerr(h, rc));
      return -1;
    }
    h->args_cand[i] = (void *)(uintptr_t)h->dcand[i];
    h->args_ref[i] = (void *)(uintptr_t)h->dref[i];
    h->host_cand[i] = sg_malloc(n);
    h->host_ref[i] = sg_malloc(n);
    if (a->kind == SG_ARG_INPUT)
      h->host_in[i] = sg_malloc(n);
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

typedef struct fill_job {
  const sg_task_arg *a;
  void *host;
  uint64_t seed, arg;
  int64_t begin, end;
} fill_job;

static void *fill_thread(void *p) {
  fill_job *j = p;
  sg_cuda_fill_range(j->a, j->host, j->seed, j->arg, j->begin, j->end);
  return NULL;
}

/* Large inputs (a 32768 x 32768 matrix is a billion draws) are drawn by
 * several threads, each over whole chunks; the values are the same as one
 * thread's (sg_cuda_fill_range). */
static void fill_parallel(const sg_task_arg *a, void *host, uint64_t seed,
                          uint64_t arg) {
  enum { MAX_THREADS = 16 };
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int64_t chunks = (a->numel + SG_CUDA_FILL_CHUNK - 1) / SG_CUDA_FILL_CHUNK;
  int nt = (int)(cpus < 1 ? 1 : cpus > MAX_THREADS ? MAX_THREADS : cpus);
  if (chunks < nt)
    nt = (int)chunks;
  pthread_t th[MAX_THREADS];
  fill_job jobs[MAX_THREADS];
  int started = 0;
  for (int t = 0; t < nt; t++) {
    int64_t c0 = chunks * t / nt, c1 = chunks * (t + 1) / nt;
    jobs[t] = (fill_job){a, host, seed, arg, c0 * SG_CUDA_FILL_CHUNK,
                         c1 * SG_CUDA_FILL_CHUNK < a->numel ? c1 * SG_CUDA_FILL_CHUNK
                                                           : a->numel};
    if (nt > 1 && pthread_create(&th[t], NULL, fill_thread, &jobs[t]) == 0)
      started |= 1 << t;
    else
      fill_thread(&jobs[t]);
  }
  for (int t = 0; t < nt; t++)
    if (started & (1 << t))
      pthread_join(th[t], NULL);
  sg_cuda_apply_structure(a, host);
}

/* Draws this trial's inputs and uploads them to both sides; poisons outputs. */
static sg_CUresult prepare_trial(harness *h, uint64_t seed) {
  const sg_task *t = h->cfg->task;
  for (size_t i = 0; i < t->nargs; i++) {
    const sg_task_arg *a = &t->args[i];
    sg_CUresult rc = 0;
    if (a->kind == SG_ARG_INPUT) {
      fill_parallel(a, h->host_in[i], seed, i);
      rc = h->api.cuMemcpyHtoD(h->dcand[i], h->host_in[i], arg_bytes(a));
      if (!rc && h->dref[i])
        rc = h->api.cuMemcpyHtoD(h->dref[i], h->host_in[i], arg_bytes(a));
    } else if (a->kind == SG_ARG_OUTPUT) {
      /* All-ones bytes: NaN for float32 and float64, -1 for integers. */
      size_t words = arg_bytes(a) / 4;
      rc = h->api.cuMemsetD32Async(h->dcand[i], 0xFFFFFFFFu, words, LEGACY_STREAM);
      if (!rc && h->dref[i])
        rc = h->api.cuMemsetD32Async(h->dref[i], 0xFFFFFFFFu, words, LEGACY_STREAM);
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
    snprintf(msg, len, "%s: no sg_launch symbol", path);
    return NULL;
  }
  return lib;
}

static int check_trial(harness *h, int trial, sg_cuda_cmp *worst, char *msg,
                       size_t msg_len) {
  const sg_task *t = h->cfg->task;
  double atol = t->atol, rtol = t->rtol;
  if (h->cfg->strict) {
    atol /= 10;
    rtol /= 10;
  }
  for (size_t i = 0; i < t->nargs; i++) {
    const sg_task_arg *a = &t->args[i];
    if (a->kind == SG_ARG_SCALAR)
      continue;
    size_t n = arg_bytes(a);
    sg_CUresult rc = h->api.cuMemcpyDtoH(h->host_cand[i], h->dcand[i], n);
    if (rc) {
      snprintf(msg, msg_len, "reading %s back: %s", a->name, cuerr(h, rc));
      return -2;
    }
    if (a->kind == SG_ARG_INPUT) {
      if (memcmp(h->host_cand[i], h->host_in[i], n) != 0) {
        snprintf(msg, msg_len,
                 "the candidate wrote into its input %s (inputs are read-only)",
                 a->name);
        return -1;
      }
      continue;
    }
    if ((rc = h->api.cuMemcpyDtoH(h->host_ref[i], h->dref[i], n))) {
      snprintf(msg, msg_len, "reading the reference's %s: %s", a->name,
               cuerr(h, rc));
      return -3;
    }
    sg_cuda_cmp c;
    sg_cuda_compare(a->dtype, h->host_ref[i], h->host_cand[i], a->numel, atol,
                    rtol, &c);
    if (c.max_abs > worst->max_abs)
      worst->max_abs = c.max_abs;
    if (c.max_rel > worst->max_rel)
      worst->max_rel = c.max_rel;
    if (c.bad) {
      char idx[128];
      sg_cuda_index_str(a, c.first_bad, idx, sizeof idx);
      worst->first_bad = c.first_bad;
      snprintf(msg, msg_len,
               "output %s differs from the reference on trial %d: %lld of %lld "
               "elements outside atol=%g rtol=%g%s; first at %s: got %.9g, "
               "expected %.9g; max abs error %.3g, max rel error %.3g",
               a->name, trial + 1, (long long)c.bad, (long long)c.n, atol, rtol,
               c.unwritten ? " (some still hold the NaN poison: never written)"
                           : "",
               idx, c.first_cand, c.first_ref, c.max_abs, c.max_rel);
      return -1;
    }
  }
  return 0;
}

static json_t *times_json(const double *v, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(a, json_real(v[i]));
  return a;
}

/* Waits for everything queued on the legacy stream, at most limit_s: a
 * kernel that never ends is reported as a timeout here, long before the
 * sandbox's wall clock, and the process then ends (which is what stops it). */
static sg_CUresult wait_bounded(harness *h, double limit_s, bool *timed_out) {
  *timed_out = false;
  sg_CUevent e;
  sg_CUresult rc = h->api.cuEventCreate(&e, 0);
  if (rc || (rc = h->api.cuEventRecord(e, LEGACY_STREAM)))
    return rc;
  double deadline = sg_clock_now_s() + limit_s;
  struct timespec ts = {0, 200000};
  while ((rc = h->api.cuEventQuery(e)) == SG_CUDA_ERROR_NOT_READY) {
    if (sg_clock_now_s() > deadline) {
      *timed_out = true;
      return 0;
    }
    nanosleep(&ts, NULL);
  }
  h->api.cuEventDestroy(e);
  return rc ? rc : sync_all(h);
}

static double call_limit_s(const sg_task *t) {
  const json_t *v = json_object_get(t->raw, "call_timeout_s");
  return json_is_number(v) && json_number_value(v) > 0 ? json_number_value(v) : 10.0;
}

static json_t *validate(harness *h, sg_launch_fn cand, sg_launch_fn ref) {
  const sg_cuda_harness_cfg *cfg = h->cfg;
  char msg[1536];
  sg_cuda_cmp worst;
  memset(&worst, 0, sizeof worst);
  worst.first_bad = -1;
  for (int trial = 0; trial < cfg->trials; trial++) {
    sg_CUresult rc = prepare_trial(h, cfg->seed + (uint64_t)trial);
    if (rc)
      return finish(h, "infra_error", "preparing inputs: %s", cuerr(h, rc));
    cand(h->args_cand);
    bool late = false;
    if ((rc = wait_bounded(h, call_limit_s(cfg->task), &late)))
      return finish(h, "runtime_error", "the candidate failed on trial %d: %s",
                    trial + 1, cuerr(h, rc));
    if (late)
      return finish(h, "timeout",
                    "one call of the candidate did not finish within %.1f s "
                    "(trial %d); it was stopped", call_limit_s(cfg->task),
                    trial + 1);
    ref(h->args_ref);
    if ((rc = sync_all(h)))
      return finish(h, "infra_error", "the reference failed: %s", cuerr(h, rc));
    int bad = check_trial(h, trial, &worst, msg, sizeof msg);
    json_object_set_new(h->out, "max_abs_err", json_real(worst.max_abs));
    json_object_set_new(h->out, "max_rel_err", json_real(worst.max_rel));
    json_object_set_new(h->out, "first_mismatch", json_integer(worst.first_bad));
    if (bad == -1)
      return finish(h, strstr(msg, "wrote into its input") ? "rejected"
                                                            : "numerical_error",
                    "%s", msg);
    if (bad == -2)
      return finish(h, "runtime_error", "%s", msg);
    if (bad < 0)
      return finish(h, "infra_error", "%s", msg);
  }
  json_object_set_new(h->out, "trials", json_integer(cfg->trials));

  /* Timing: interleaved, each run after an L2 flush. */
  int runs = cfg->warmup + cfg->timed;
  sg_CUevent *ev = sg_calloc((size_t)runs * 4, sizeof *ev);
  for (int i = 0; i < runs * 4; i++)
    if (h->api.cuEventCreate(&ev[i], 0))
      return finish(h, "infra_error", "cuEventCreate failed");
  double t0 = sg_clock_now_s();
  for (int i = 0; i < runs; i++) {
    for (int k = 0; k < 2; k++) {
      int who = (i + k) % 2; /* 0: reference, 1: candidate */
      sg_CUevent *e = &ev[(i * 2 + who) * 2];
      h->api.cuMemsetD32Async(h->flush, (unsigned)i, h->flush_bytes / 4,
                              LEGACY_STREAM);
      h->api.cuEventRecord(e[0], LEGACY_STREAM);
      if (who)
        cand(h->args_cand);
      else
        ref(h->args_ref);
      h->api.cuEventRecord(e[1], LEGACY_STREAM);
    }
    /* Keep the host from racing far ahead of the device: a slow kernel
     * should not queue hundreds of launches before the timeout sees it. */
    sg_CUresult rc = h->api.cuEventSynchronize(ev[(i * 2 + 1) * 2 + 1]);
    if (rc)
      return finish(h, "runtime_error", "the candidate failed while timed: %s",
                    cuerr(h, rc));
  }
  sg_CUresult rc = sync_all(h);
  if (rc)
    return finish(h, "runtime_error", "the candidate failed while timed: %s",
                  cuerr(h, rc));
  double *tr = sg_calloc((size_t)cfg->timed, sizeof *tr);
  double *tc = sg_calloc((size_t)cfg->timed, sizeof *tc);
  for (int i = cfg->warmup; i < runs; i++) {
    float ms_ref = 0, ms_cand = 0;
    if (h->api.cuEventElapsedTime(&ms_ref, ev[(i * 2) * 2], ev[(i * 2) * 2 + 1]) ||
        h->api.cuEventElapsedTime(&ms_cand, ev[(i * 2 + 1) * 2],
                                  ev[(i * 2 + 1) * 2 + 1]))
      return finish(h, "infra_error", "cuEventElapsedTime failed");
    tr[i - cfg->warmup] = ms_ref;
    tc[i - cfg->warmup] = ms_cand;
  }
  json_object_set_new(h->out, "timing_wall_s", json_real(sg_clock_now_s() - t0));
  json_object_set_new(h->out, "ref_times_ms", times_json(tr, (size_t)cfg->timed));
  json_object_set_new(h->out, "cand_times_ms", times_json(tc, (size_t)cfg->timed));
  json_object_set_new(h->out, "ref_mean_ms", json_real(sg_stats_mean(tr, (size_t)cfg->timed)));
  json_object_set_new(h->out, "cand_mean_ms", json_real(sg_stats_mean(tc, (size_t)cfg->timed)));
  double mr = sg_stats_median(tr, (size_t)cfg->timed);
  double mc = sg_stats_median(tc, (size_t)cfg->timed);
  json_object_set_new(h->out, "ref_ms", json_real(mr));
  json_object_set_new(h->out, "cand_ms", json_real(mc));
  json_object_set_new(h->out, "speedup", json_real(mr / mc));
  free(tr);
  free(tc);
  for (int i = 0; i < runs * 4; i++)
    h->api.cuEventDestroy(ev[i]);
  free(ev);
  return finish(h, "ok", "correct on %d random input sets; %.4f ms against the "
                "reference's %.4f ms (median of %d runs)",
                cfg->trials, mc, mr, cfg->timed);
}

static json_t *profile(harness *h, sg_launch_fn cand) {
  sg_CUresult rc = prepare_trial(h, h->cfg->seed);
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

json_t *sg_cuda_harness_run(const sg_cuda_harness_cfg *cfg) {
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
  sg_launch_fn cand = NULL, ref = NULL;
  if (cfg->ref_so && !load_so(cfg->ref_so, &ref, msg, sizeof msg))
    return finish(h, "infra_error", "loading the reference: %s", msg);
  if (!load_so(cfg->cand_so, &cand, msg, sizeof msg)) {
    bool vendor = strstr(msg, "cublas") || strstr(msg, "cudnn");
    return finish(h, vendor ? "rejected" : "runtime_error",
                  "loading the candidate: %s", msg);
  }
  if (setup(h, msg, sizeof msg))
    return finish(h, "infra_error", "%s", msg);
  if (cfg->mode == SG_CUDA_MODE_PROFILE)
    return profile(h, cand);
  if (!ref)
    return finish(h, "infra_error", "validation needs the reference");
  return validate(h, cand, ref);
}
