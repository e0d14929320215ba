/* sg_cuda_validate.c: the cuda evaluator's judge (see the header).
 *
 * The protocol (docs/gpu.md):
 *  1. Correctness on the task's own inputs (correctness_trials sets), each
 *     checked twice: with KernelBench's own allclose (atol = rtol = 1e-2:
 *     the "kernelbench" verdict, for comparison with published numbers) and
 *     with specgen's rules (the task's tolerance, its atol scaled to the
 *     reference's magnitude, no unwritten element, inputs unchanged, no
 *     constant output and no output equal to an input where the reference's
 *     is neither).
 *  2. Domain trials: the same shapes, floating inputs drawn signed at 1,
 *     1e-3 and 1e3 of the task distribution's magnitude (a trial whose
 *     reference output is not finite, where the task's own was, is skipped
 *     and counted).
 *  3. Timing: warm-ups and timed runs, reference and candidate alternating
 *     which goes first; before every run fresh inputs are drawn on the
 *     device and the outputs poisoned, before every call the L2 is flushed,
 *     and after every run the candidate's outputs are checked against the
 *     reference's of the same inputs. Each call is timed by this process's
 *     clock around the round trip to its server, which synchronizes its
 *     whole context before it answers; the median round trip of an empty
 *     call is taken off each side's median.
 * The first failure decides specgen's verdict; the kernelbench verdict
 * comes from step 1 alone (KernelBench checks nothing else).
 */
#include "eval/sg_cuda_validate.h"

#include "common/sg_alloc.h"
#include "common/sg_clock.h"
#include "common/sg_stats.h"
#include "eval/sg_cuda_api.h"
#include "eval/sg_cuda_check.h"
#include "eval/sg_cuda_judge.h"
#include "eval/sg_cuda_server.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#define LEGACY_STREAM ((sg_CUstream)0)

typedef int (*fill_fn)(void *, const sg_judge_fill *, uint64_t, uint64_t);
typedef int (*compare_fn)(const void *, const void *, int64_t, int64_t, double,
                          double, sg_judge_stats *);
typedef int (*count_ne_fn)(const void *, const void *, int64_t, int64_t *);

typedef struct judge {
  const sg_cuda_harness_cfg *cfg;
  const sg_task *t;
  sg_cuda_api api;
  sg_CUcontext ctx;
  sg_CUdevice dev;
  json_t *out;
  sg_cuda_server cand, ref;
  sg_CUdeviceptr *dc, *dr, flush;
  size_t flush_bytes;
  unsigned char *scalars; /* 8 bytes per argument */
  fill_fn fill;
  compare_fn compare;
  count_ne_fn count_ne;
  double atol, rtol, cand_limit_s, ref_limit_s;
  double *m0;             /* per output: the reference's magnitude on the
                             task's own inputs; 0 until known */
  bool *nonfinite0;       /* per output: the reference had non-finite values
                             on the task's own inputs */
  double worst_abs, worst_rel;
  int64_t first_bad;
  double t_go;            /* when the candidate's own time started */
  const char *kb_status;  /* KernelBench's verdict; NULL until decided */
  char kb_msg[1024];
} judge;

static json_t *finish(judge *j, const char *status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The servers of the judge that finished, for sg_cuda_validate_end. */
static sg_cuda_server ended[2] = {{.fd = -1}, {.fd = -1}};

void sg_cuda_validate_end(void) {
  sg_cuda_server *const servers[] = {&ended[0], &ended[1]};
  sg_cuda_server_stop(servers, 2);
}

static json_t *finish(judge *j, const char *status, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* The servers end after the result is written (sg_cuda_validate_end):
   * their teardown is not the verdict's to wait for. */
  ended[0] = j->cand;
  ended[1] = j->ref;
  double te = sg_clock_now_s();
  /* the run as the judge saw it, from the go to its verdict: the rest of
   * the evaluator's run_s is the go itself and the result's way out */
  if (j->t_go > 0)
    json_object_set_new(j->out, "judge_s", json_real(te - j->t_go));
  json_object_set_new(j->out, "status", json_string(status));
  json_object_set_new(j->out, "message", json_string(msg));
  /* A failure before KernelBench's check was decided is its failure too
   * (it would have crashed, hung or failed the same way). */
  const char *kb = j->kb_status ? j->kb_status : status;
  json_object_set_new(j->out, "kernelbench_status", json_string(kb));
  if (j->kb_status && strcmp(j->kb_status, "ok") != 0 && j->kb_msg[0])
    json_object_set_new(j->out, "kernelbench_message", json_string(j->kb_msg));
  json_object_set_new(j->out, "max_abs_err", json_real(j->worst_abs));
  json_object_set_new(j->out, "max_rel_err", json_real(j->worst_rel));
  json_object_set_new(j->out, "first_mismatch", json_integer(j->first_bad));
  return j->out;
}

static const char *cuerr(judge *j, int rc) {
  static char buf[256];
  return sg_cuda_api_errstr(&j->api, rc, buf, sizeof buf);
}

static size_t arg_bytes(const sg_task_arg *a) {
  return (size_t)a->numel * sg_dtype_size(a->dtype);
}

static double call_limit_s(const sg_task *t) {
  const json_t *v = json_object_get(t->raw, "call_timeout_s");
  return json_is_number(v) && json_number_value(v) > 0 ? json_number_value(v) : 10.0;
}

/* The judge's kernels, from the reference's shared object. */
static int load_kernels(judge *j, char *msg, size_t len) {
  void *lib = dlopen(j->cfg->ref_so, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(msg, len, "loading the reference: %s", dlerror());
    return -1;
  }
  j->fill = (fill_fn)(uintptr_t)dlsym(lib, "sg_judge_fill");
  j->compare = (compare_fn)(uintptr_t)dlsym(lib, "sg_judge_compare");
  j->count_ne = (count_ne_fn)(uintptr_t)dlsym(lib, "sg_judge_count_ne");
  if (!j->fill || !j->compare || !j->count_ne) {
    snprintf(msg, len, "%s lacks the judge's kernels (sg_judge_*): rebuild it",
             j->cfg->ref_so);
    return -1;
  }
  return 0;
}

/* Device buffers for both sides, their IPC handles, scalars; the servers'
 * argument tables. */
static int setup(judge *j, char *msg, size_t len) {
  const sg_task *t = j->t;
  size_t n = t->nargs ? t->nargs : 1;
  j->dc = sg_calloc(n, sizeof *j->dc);
  j->dr = sg_calloc(n, sizeof *j->dr);
  j->scalars = sg_calloc(n, 8);
  j->m0 = sg_calloc(n, sizeof *j->m0);
  j->nonfinite0 = sg_calloc(n, sizeof *j->nonfinite0);
  sg_CUipcMemHandle *hc = sg_calloc(n, sizeof *hc), *hr = sg_calloc(n, sizeof *hr);
  int rc = 0;
  for (size_t i = 0; i < t->nargs && !rc; i++) {
    const sg_task_arg *a = &t->args[i];
    if (a->kind == SG_ARG_SCALAR) {
      unsigned char *p = j->scalars + 8 * i;
      switch (a->dtype) {
      case SG_DTYPE_F32: { float v = (float)a->scalar_value; memcpy(p, &v, 4); break; }
      case SG_DTYPE_F64: { double v = a->scalar_value; memcpy(p, &v, 8); break; }
      case SG_DTYPE_I32: { int32_t v = (int32_t)a->scalar_value; memcpy(p, &v, 4); break; }
      default: { int64_t v = (int64_t)a->scalar_value; memcpy(p, &v, 8); break; }
      }
      continue;
    }
    size_t bytes = arg_bytes(a);
    if ((rc = j->api.cuMemAlloc(&j->dc[i], bytes)) ||
        (rc = j->api.cuMemAlloc(&j->dr[i], bytes)) ||
        (rc = j->api.cuIpcGetMemHandle(&hc[i], j->dc[i])) ||
        (rc = j->api.cuIpcGetMemHandle(&hr[i], j->dr[i])))
      snprintf(msg, len, "allocating and sharing %zu bytes for %s: %s", bytes,
               a->name, cuerr(j, rc));
  }
  if (!rc) {
    int l2 = 0;
    j->api.cuDeviceGetAttribute(&l2, SG_CU_ATTR_L2_CACHE_SIZE, j->dev);
    j->flush_bytes = (size_t)(l2 > 0 ? l2 : 64 << 20) * 2;
    json_object_set_new(j->out, "l2_bytes", json_integer(l2));
    json_object_set_new(j->out, "flush_bytes", json_integer((json_int_t)j->flush_bytes));
    if ((rc = j->api.cuMemAlloc(&j->flush, j->flush_bytes)))
      snprintf(msg, len, "allocating the L2 flush buffer: %s", cuerr(j, rc));
  }
  if (!rc && (sg_cuda_server_setup(&j->ref, t, hr, j->scalars, msg, len) ||
              sg_cuda_server_setup(&j->cand, t, hc, j->scalars, msg, len)))
    rc = -1;
  free(hc);
  free(hr);
  return rc ? -1 : 0;
}

/* Fresh inputs (the same values on both sides) and poisoned outputs. */
static int prepare(judge *j, uint64_t seed, int variant) {
  const sg_task *t = j->t;
  for (size_t i = 0; i < t->nargs; i++) {
    const sg_task_arg *a = &t->args[i];
    int rc = 0;
    if (a->kind == SG_ARG_INPUT) {
      sg_judge_fill f;
      sg_judge_fill_spec(a, variant, &f);
      if (!(rc = j->fill((void *)(uintptr_t)j->dr[i], &f, seed, i)))
        rc = j->fill((void *)(uintptr_t)j->dc[i], &f, seed, i);
    } else if (a->kind == SG_ARG_OUTPUT) {
      /* all-ones bytes: NaN for floats, -1 for integers */
      size_t words = arg_bytes(a) / 4;
      if (!(rc = j->api.cuMemsetD32Async(j->dc[i], 0xFFFFFFFFu, words, LEGACY_STREAM)))
        rc = j->api.cuMemsetD32Async(j->dr[i], 0xFFFFFFFFu, words, LEGACY_STREAM);
    }
    if (rc)
      return rc;
  }
  return j->api.cuCtxSynchronize();
}

/* One timed call of one side after an L2 flush. Returns 0, or -1 with the
 * outcome finished (timeout, runtime error, infra error). */
static int call(judge *j, bool cand, double *ms, const char *when, json_t **done) {
  j->api.cuMemsetD32Async(j->flush, 0x5a5a5a5au, j->flush_bytes / 4, LEGACY_STREAM);
  j->api.cuCtxSynchronize();
  sg_cuda_server *s = cand ? &j->cand : &j->ref;
  int cu = 0;
  char msg[512];
  double limit = cand ? j->cand_limit_s : j->ref_limit_s;
  sg_cuda_call_end e = sg_cuda_server_call(s, false, limit, ms, &cu, msg, sizeof msg);
  if (e == SG_CALL_DONE && cu == 0)
    return 0;
  if (!cand) {
    *done = finish(j, "infra_error", "the reference failed %s: %s", when,
                   e == SG_CALL_DONE ? cuerr(j, cu) : msg);
  } else if (e == SG_CALL_TIMEOUT) {
    *done = finish(j, "timeout",
                   "one call of the candidate did not finish within %.1f s (%s); "
                   "it was stopped", limit, when);
  } else if (e == SG_CALL_DIED) {
    *done = finish(j, "runtime_error", "the candidate failed %s: %s", when, msg);
  } else if (cu < 0 || cu > 10000) {
    /* CUDA's status codes are small: anything else was written by the
     * candidate's code into its server's socket */
    *done = finish(j, "runtime_error",
                   "the candidate's process answered %s with something that is no "
                   "CUDA status (%d): its code wrote into the judge's connection",
                   when, cu);
  } else {
    *done = finish(j, "runtime_error", "the candidate failed %s: %s", when,
                   cuerr(j, cu));
  }
  return -1;
}

/* What check() found. */
enum { CHECK_OK, CHECK_NUMERICAL, CHECK_REJECTED, CHECK_SKIP, CHECK_INFRA };

/* Inputs unchanged (bitwise, against the reference's copy). */
static int check_inputs(judge *j, const char *when, char *msg, size_t len) {
  const sg_task *t = j->t;
  for (size_t i = 0; i < t->nargs; i++) {
    const sg_task_arg *a = &t->args[i];
    if (a->kind != SG_ARG_INPUT)
      continue;
    int64_t ne = 0;
    int rc = j->count_ne((void *)(uintptr_t)j->dc[i], (void *)(uintptr_t)j->dr[i],
                         (int64_t)arg_bytes(a), &ne);
    if (rc) {
      snprintf(msg, len, "comparing input %s: %s", a->name, cuerr(j, rc));
      return CHECK_INFRA;
    }
    if (ne) {
      snprintf(msg, len, "the candidate wrote into its input %s (%s; inputs are "
               "read-only)", a->name, when);
      return CHECK_REJECTED;
    }
  }
  return CHECK_OK;
}

/* KernelBench's own check of output i (its verdict; decided once). */
static int check_kernelbench(judge *j, size_t i, const char *when, char *msg,
                             size_t len) {
  const sg_task_arg *a = &j->t->args[i];
  sg_judge_stats k;
  int rc = j->compare((void *)(uintptr_t)j->dr[i], (void *)(uintptr_t)j->dc[i],
                      a->numel, a->dtype, SG_JUDGE_KB_ATOL, SG_JUDGE_KB_RTOL, &k);
  if (rc) {
    snprintf(msg, len, "comparing output %s: %s", a->name, cuerr(j, rc));
    return CHECK_INFRA;
  }
  if (k.bad) {
    j->kb_status = "numerical_error";
    snprintf(j->kb_msg, sizeof j->kb_msg,
             "output %s: %lld of %lld elements outside KernelBench's atol=rtol=1e-2 (%s)",
             a->name, (long long)k.bad, (long long)k.n, when);
  }
  return CHECK_OK;
}

/* The message for output i failing specgen's tolerance atol: a second
 * comparison at that tolerance counts the bad elements and finds the
 * first. */
static int report_numerical(judge *j, size_t i, const sg_judge_stats *s, double atol,
                            const char *when, char *msg, size_t len) {
  const sg_task_arg *a = &j->t->args[i];
  sg_judge_stats b;
  int rc = j->compare((void *)(uintptr_t)j->dr[i], (void *)(uintptr_t)j->dc[i],
                      a->numel, a->dtype, atol, j->rtol, &b);
  if (rc) {
    snprintf(msg, len, "comparing output %s: %s", a->name, cuerr(j, rc));
    return CHECK_INFRA;
  }
  char idx[128] = "?";
  if (b.first_bad >= 0) {
    sg_task_index_str(a, b.first_bad, idx, sizeof idx);
    j->first_bad = b.first_bad;
  }
  snprintf(msg, len,
           "output %s differs from the reference (%s): %lld of %lld elements "
           "outside atol=%.3g rtol=%g (atol scaled to the reference's magnitude "
           "%.3g)%s; first at %s: got %.9g, expected %.9g; max abs error %.3g",
           a->name, when, (long long)(b.bad ? b.bad : 1), (long long)s->n, atol,
           j->rtol, s->max_abs_ref,
           s->unwritten ? " (some still hold the NaN poison: never written)" : "", idx,
           b.first_cand, b.first_ref, s->max_abs_err);
  return CHECK_NUMERICAL;
}

/* The shortcut rules for output i: constant, or bitwise an input, where
 * the reference's output is neither. */
static int check_shortcuts(judge *j, size_t i, const sg_judge_stats *s, char *msg,
                           size_t len) {
  const sg_task *t = j->t;
  const sg_task_arg *a = &t->args[i];
  const void *r = (void *)(uintptr_t)j->dr[i], *c = (void *)(uintptr_t)j->dc[i];
  int equal = -1;
  for (size_t k = 0; k < t->nargs && equal < 0; k++) {
    const sg_task_arg *in = &t->args[k];
    if (in->kind != SG_ARG_INPUT || in->dtype != a->dtype || in->numel != a->numel)
      continue;
    int64_t ne_c = 0, ne_r = 0;
    if (j->count_ne(c, (void *)(uintptr_t)j->dc[k], (int64_t)arg_bytes(a), &ne_c) ||
        j->count_ne(r, (void *)(uintptr_t)j->dr[k], (int64_t)arg_bytes(a), &ne_r))
      continue;
    if (ne_c == 0 && ne_r > 0)
      equal = (int)k;
  }
  if (sg_judge_shortcut(s, equal, equal >= 0 ? t->args[equal].name : NULL, a->name,
                        msg, len))
    return CHECK_REJECTED;
  return CHECK_OK;
}

/* Compares every output and input of the last call. variant as prepare's;
 * kb: also apply KernelBench's check (sets j->kb_status on failure);
 * shortcuts: also look for constant outputs and returned inputs. */
static int check(judge *j, int variant, bool kb, bool shortcuts, const char *when,
                 char *msg, size_t len) {
  const sg_task *t = j->t;
  int rc = check_inputs(j, when, msg, len);
  for (size_t i = 0; rc == CHECK_OK && i < t->nargs; i++) {
    const sg_task_arg *a = &t->args[i];
    if (a->kind != SG_ARG_OUTPUT)
      continue;
    sg_judge_stats s;
    int cu = j->compare((void *)(uintptr_t)j->dr[i], (void *)(uintptr_t)j->dc[i],
                        a->numel, a->dtype, j->atol, j->rtol, &s);
    if (cu) {
      snprintf(msg, len, "comparing output %s: %s", a->name, cuerr(j, cu));
      return CHECK_INFRA;
    }
    if (variant > 0 && s.ref_nonfinite > 0 && !j->nonfinite0[i])
      return CHECK_SKIP; /* outside the operator's domain */
    if (variant == 0 && j->m0[i] == 0) {
      j->m0[i] = s.max_abs_ref;
      j->nonfinite0[i] = s.ref_nonfinite > 0;
    }
    if (s.max_abs_err > j->worst_abs)
      j->worst_abs = s.max_abs_err;
    if (s.max_rel_err > j->worst_rel)
      j->worst_rel = s.max_rel_err;
    if (kb && !j->kb_status && (rc = check_kernelbench(j, i, when, msg, len)))
      return rc;
    double m0 = variant == 0 ? s.max_abs_ref : j->m0[i];
    double atol = sg_judge_atol(j->atol, s.max_abs_ref, m0);
    if (s.unwritten || s.max_excess > atol)
      return report_numerical(j, i, &s, atol, when, msg, len);
    if (shortcuts)
      rc = check_shortcuts(j, i, &s, msg, len);
  }
  return rc;
}

static const char *check_status(int c) {
  return c == CHECK_NUMERICAL ? "numerical_error"
         : c == CHECK_REJECTED ? "rejected"
                               : "infra_error";
}

/* Steps 1 and 2. Returns NULL to go on, or the finished outcome. */
static json_t *correctness(judge *j) {
  const sg_cuda_harness_cfg *cfg = j->cfg;
  char msg[1536], when[128], first[1536] = "";
  int first_code = CHECK_OK;
  double ms;
  json_t *done = NULL;
  for (int trial = 0; trial < cfg->trials; trial++) {
    int rc = prepare(j, cfg->seed + (uint64_t)trial, 0);
    if (rc)
      return finish(j, "infra_error", "preparing inputs: %s", cuerr(j, rc));
    snprintf(when, sizeof when, "trial %d", trial + 1);
    if (call(j, true, &ms, when, &done) || call(j, false, &ms, when, &done))
      return done;
    int c = check(j, 0, true, true, when, msg, sizeof msg);
    if (c == CHECK_INFRA)
      return finish(j, "infra_error", "%s", msg);
    /* specgen's first failure stands; the trials go on for KernelBench's */
    if (c != CHECK_OK && first_code == CHECK_OK) {
      first_code = c;
      snprintf(first, sizeof first, "%s", msg);
    }
  }
  if (!j->kb_status)
    j->kb_status = "ok";
  if (first_code != CHECK_OK)
    return finish(j, check_status(first_code), "%s", first);
  int skipped = 0;
  for (int v = 1; v <= SG_JUDGE_DOMAIN_TRIALS; v++) {
    int rc = prepare(j, cfg->seed + 7919u * (uint64_t)v, v);
    if (rc)
      return finish(j, "infra_error", "preparing inputs: %s", cuerr(j, rc));
    snprintf(when, sizeof when, "domain trial %d: signed inputs at %g x the task's scale",
             v, SG_JUDGE_DOMAIN_SCALES[v - 1]);
    if (call(j, true, &ms, when, &done) || call(j, false, &ms, when, &done))
      return done;
    /* no shortcut rules here: at other scales a legitimate kernel's
     * rounding can make outputs that only just vary come out constant */
    int c = check(j, v, false, false, when, msg, sizeof msg);
    if (c == CHECK_SKIP) {
      skipped++;
      continue;
    }
    if (c != CHECK_OK)
      return finish(j, check_status(c), "%s", msg);
  }
  json_object_set_new(j->out, "trials", json_integer(cfg->trials));
  json_object_set_new(j->out, "domain_trials",
                      json_integer(SG_JUDGE_DOMAIN_TRIALS - skipped));
  json_object_set_new(j->out, "domain_trials_skipped", json_integer(skipped));
  return NULL;
}

static json_t *times_json(const double *v, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(a, json_real(v[i]));
  return a;
}

/* An empty call of server s (it only synchronizes its context): the round
 * trip that every timed call of it includes besides its work. */
static int nop_ms(judge *j, sg_cuda_server *s, double *ms, json_t **done) {
  int cu;
  char m[256];
  if (sg_cuda_server_call(s, true, s == &j->cand ? j->cand_limit_s : j->ref_limit_s, ms,
                          &cu, m, sizeof m) != SG_CALL_DONE || cu) {
    *done = finish(j, s == &j->cand ? "runtime_error" : "infra_error",
                   "the %s's process stopped answering: %s", s->who, m);
    return -1;
  }
  return 0;
}

/* Step 3. Each run: fresh inputs, both sides called (alternating which goes
 * first), one empty call of the reference's server, the outputs checked. A
 * side's time is the median of its calls minus the median empty call (the
 * round trip to a server, a few tenths of a millisecond, which would
 * otherwise flatten every speedup of a short kernel toward 1); the raw
 * medians are reported too. The timed runs stop before cfg->timed once
 * both medians are precise (sg_judge_timing_settled): a kernel of
 * milliseconds rarely needs more than the first ten. cfg->warmup counts
 * the calls of each side before the first timed one, the correctness
 * steps' among them: those have loaded both sides' code and brought the
 * clocks up as well as a warm-up run would. */
static json_t *timing(judge *j) {
  const sg_cuda_harness_cfg *cfg = j->cfg;
  int warmup = cfg->warmup - cfg->trials - SG_JUDGE_DOMAIN_TRIALS;
  if (warmup < 0)
    warmup = 0;
  int runs = warmup + cfg->timed;
  size_t n = 0, cap = (size_t)cfg->timed;
  double *tr = sg_calloc(cap, sizeof *tr), *tc = sg_calloc(cap, sizeof *tc);
  double *nr = sg_calloc(cap, sizeof *nr);
  double t0 = sg_clock_now_s();
  char when[128], msg[1536];
  json_t *done = NULL;
  int i = 0;
  for (; i < runs && !done; i++) {
    int rc = prepare(j, cfg->seed + 1000003u + (uint64_t)i, 0);
    if (rc) {
      done = finish(j, "infra_error", "preparing inputs: %s", cuerr(j, rc));
      break;
    }
    snprintf(when, sizeof when, "%s run %d", i < warmup ? "warm-up" : "timed",
             i < warmup ? i + 1 : i - warmup + 1);
    double ms[2] = {0, 0}, nop[1] = {0};
    for (int k = 0; k < 2 && !done; k++) {
      int who = (i + k) % 2; /* 0: reference, 1: candidate */
      if (call(j, who == 1, &ms[who], when, &done))
        break;
    }
    if (done || nop_ms(j, &j->ref, &nop[0], &done))
      break;
    int c = check(j, 0, false, false, when, msg, sizeof msg);
    if (c != CHECK_OK) {
      done = finish(j, check_status(c), "%s", msg);
      break;
    }
    if (i >= warmup) {
      tr[n] = ms[0];
      tc[n] = ms[1];
      nr[n] = nop[0];
      n++;
      double ov = sg_stats_median(nr, n);
      if (n >= SG_JUDGE_MIN_TIMED && n < cap && sg_judge_timing_settled(tr, n, ov) &&
          sg_judge_timing_settled(tc, n, ov)) {
        i++;
        break;
      }
    }
  }
  runs = i;
  if (!done) {
    /* The reference's server measures the round trip for both sides: the
     * candidate's could tell an empty call from a real one and slow the
     * empty ones down to inflate what is taken off. */
    double ovr = sg_stats_median(nr, n), ovc = ovr;
    double wr = sg_stats_median(tr, n), wc = sg_stats_median(tc, n);
    /* the work's time: never below a microsecond */
    double mr = wr - ovr > 1e-3 ? wr - ovr : 1e-3, mc = wc - ovc > 1e-3 ? wc - ovc : 1e-3;
    json_object_set_new(j->out, "timing_wall_s", json_real(sg_clock_now_s() - t0));
    json_object_set_new(j->out, "timed_outputs_checked", json_integer(runs));
    json_object_set_new(j->out, "timed_runs", json_integer((json_int_t)n));
    json_object_set_new(j->out, "ref_times_ms", times_json(tr, n));
    json_object_set_new(j->out, "cand_times_ms", times_json(tc, n));
    json_object_set_new(j->out, "ref_wall_ms", json_real(wr));
    json_object_set_new(j->out, "cand_wall_ms", json_real(wc));
    json_object_set_new(j->out, "call_overhead_ms", json_real(ovr));
    json_object_set_new(j->out, "ref_mean_ms", json_real(sg_stats_mean(tr, n) - ovr));
    json_object_set_new(j->out, "cand_mean_ms", json_real(sg_stats_mean(tc, n) - ovc));
    json_object_set_new(j->out, "ref_ms", json_real(mr));
    json_object_set_new(j->out, "cand_ms", json_real(mc));
    json_object_set_new(j->out, "speedup", json_real(mr / mc));
    done = finish(j, "ok",
                  "correct on %d input sets of the task's and %lld domain trials, "
                  "and on every one of %d runs' fresh inputs; %.4f ms against the "
                  "reference's %.4f ms (median of %d runs by the judge's clock, less "
                  "the %.3f ms round trip of an empty call)",
                  cfg->trials,
                  (long long)json_integer_value(json_object_get(j->out, "domain_trials")),
                  runs, mc, mr, (int)n, ovc);
  }
  free(tr);
  free(tc);
  free(nr);
  return done;
}

int sg_cuda_go_parse(const char *line, size_t len, uint64_t *seed, char *path,
                     size_t path_cap, char *msg, size_t msg_len) {
  size_t i = 0;
  uint64_t v = 0;
  while (i < len && line[i] >= '0' && line[i] <= '9') {
    unsigned d = (unsigned)(line[i] - '0');
    if (v > (UINT64_MAX - d) / 10) {
      snprintf(msg, msg_len, "go: the seed is over 2^64");
      return -1;
    }
    v = v * 10 + d;
    i++;
  }
  if (i == 0 || i >= len || line[i] != ' ') {
    snprintf(msg, msg_len, "go: expected \"SEED PATH\"");
    return -1;
  }
  const char *p = line + i + 1;
  size_t n = len - i - 1;
  if (n == 0 || p[0] != '/' || n >= path_cap || memchr(p, '\0', n)) {
    snprintf(msg, msg_len, "go: the path is not absolute, or empty, or too long");
    return -1;
  }
  memcpy(path, p, n);
  path[n] = '\0';
  *seed = v;
  return 0;
}

int sg_cuda_go_read(int fd, uint64_t *seed, char *path, size_t path_cap, char *msg,
                    size_t msg_len) {
  char line[SG_CUDA_SERVER_PATH_MAX + 64];
  size_t n = 0;
  while (n < sizeof line) {
    ssize_t r = read(fd, line + n, 1);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      snprintf(msg, msg_len, "go: the evaluator closed the channel");
      return -1;
    }
    if (line[n] == '\n')
      return sg_cuda_go_parse(line, n, seed, path, path_cap, msg, msg_len);
    n++;
  }
  snprintf(msg, msg_len, "go: the line is longer than %zu bytes", sizeof line);
  return -1;
}

/* A runner started ahead (cfg->go_fd): everything so far overlapped the
 * evaluator's previous candidate. Unless its go is already there, one call of
 * the reference on inputs of its own (a seed no trial uses) warms it too
 * (most references make their cuBLAS handle on their first call); then
 * "ready" ('R': the evaluator starts the
 * next runner only now, so that two start-ups never compete), the go line
 * (the candidate's seed and library into cfg), and "go taken" ('G': from
 * here the outcome is the candidate's, never retried). *t_go is when the
 * candidate's own time starts. Returns NULL, or the finished outcome. */
static json_t *take_go(judge *j, sg_cuda_harness_cfg *cfg, char *path, size_t cap,
                       double t0, double *t_go) {
  char msg[1536];
  struct pollfd pending = {cfg->go_fd, POLLIN, 0};
  if (poll(&pending, 1, 0) == 0) {
    /* nobody waits yet (a go already sent: the first trial warms it) */
    int rc = prepare(j, cfg->seed ^ UINT64_C(0x5741524d), 0);
    if (rc)
      return finish(j, "infra_error", "preparing inputs: %s", cuerr(j, rc));
    double warm_ms = 0;
    json_t *done = NULL;
    if (call(j, false, &warm_ms, "in its warm-up call", &done))
      return done;
    json_object_set_new(j->out, "warm_up_ms", json_real(warm_ms));
  }
  double tw = sg_clock_now_s();
  char r = 'R';
  if (write(cfg->go_fd, &r, 1) != 1)
    return finish(j, "infra_error", "go: the evaluator closed the channel");
  if (sg_cuda_go_read(cfg->go_fd, &cfg->seed, path, cap, msg, sizeof msg))
    return finish(j, "infra_error", "%s", msg);
  r = 'G';
  if (write(cfg->go_fd, &r, 1) != 1)
    return finish(j, "infra_error", "go: the evaluator closed the channel");
  *t_go = sg_clock_now_s();
  cfg->cand_so = path;
  json_object_set_new(j->out, "ahead_s", json_real(tw - t0));
  json_object_set_new(j->out, "go_wait_s", json_real(*t_go - tw));
  return NULL;
}

json_t *sg_cuda_validate_run(const sg_cuda_harness_cfg *given) {
  sg_cuda_harness_cfg c = *given, *cfg = &c;
  char go_path[SG_CUDA_SERVER_PATH_MAX + 1];
  judge jj, *j = &jj;
  memset(j, 0, sizeof *j);
  j->cfg = cfg;
  j->t = cfg->task;
  j->out = json_object();
  j->first_bad = -1;
  j->cand.pid = j->ref.pid = 0;
  j->cand.fd = j->ref.fd = -1;
  j->atol = cfg->task->atol;
  j->rtol = cfg->task->rtol;
  if (cfg->strict) {
    j->atol /= 10;
    j->rtol /= 10;
  }
  j->cand_limit_s = call_limit_s(cfg->task);
  j->ref_limit_s = j->cand_limit_s * 6 > 60 ? j->cand_limit_s * 6 : 60;
  /* A server that dies must not take the judge with it. */
  signal(SIGPIPE, SIG_IGN);
  const char *rfd = getenv("SG_RESULT_FD");
  int keep = rfd && *rfd ? atoi(rfd) : -1;
  char msg[1536];
  double t0 = sg_clock_now_s(), t_go = t0;
  if (!cfg->ref_so)
    return finish(j, "infra_error", "validation needs the reference");
  /* Servers first: fork before this process touches CUDA. */
  if (sg_cuda_server_start(&j->ref, "reference", cfg->device, keep, msg, sizeof msg) ||
      sg_cuda_server_start(&j->cand, "candidate", cfg->device, keep, msg, sizeof msg))
    return finish(j, "infra_error", "starting a server: %s", msg);
  sg_err err;
  sg_err_clear(&err);
  if (sg_cuda_api_load(&j->api, &err))
    return finish(j, "infra_error", "%s", err.msg);
  int rc, count = 0;
  if ((rc = j->api.cuInit(0)) || (rc = j->api.cuDeviceGetCount(&count)))
    return finish(j, "infra_error", "no CUDA device: cuInit: %s", cuerr(j, rc));
  if (cfg->device < 0 || cfg->device >= count)
    return finish(j, "infra_error", "no CUDA device %d (%d present)", cfg->device, count);
  if ((rc = j->api.cuDeviceGet(&j->dev, cfg->device)) ||
      (rc = j->api.cuDevicePrimaryCtxRetain(&j->ctx, j->dev)) ||
      (rc = j->api.cuCtxSetCurrent(j->ctx)))
    return finish(j, "infra_error", "creating a CUDA context: %s", cuerr(j, rc));
  char name[256] = "";
  j->api.cuDeviceGetName(name, sizeof name, j->dev);
  json_object_set_new(j->out, "device_name", json_string(name));
  json_object_set_new(j->out, "context_s", json_real(sg_clock_now_s() - t0));
  if (load_kernels(j, msg, sizeof msg) || setup(j, msg, sizeof msg))
    return finish(j, "infra_error", "%s", msg);
  /* Phase one: both servers have mapped their buffers. */
  if ((rc = sg_cuda_server_ready(&j->ref, 120, msg, sizeof msg)) ||
      (rc = sg_cuda_server_ready(&j->cand, 120, msg, sizeof msg)))
    return finish(j, "infra_error", "a server could not map the judge's buffers: %s", msg);
  /* From here the candidate's code runs (its library's constructors first):
   * no process of the same user may read or write the judge's memory. */
  prctl(PR_SET_DUMPABLE, 0);
  if (sg_cuda_server_load(&j->ref, cfg->ref_so, msg, sizeof msg))
    return finish(j, "infra_error", "%s", msg);
  if ((rc = sg_cuda_server_ready(&j->ref, 120, msg, sizeof msg)))
    return finish(j, "infra_error", "the reference's process: %s", msg);
  if (cfg->go_fd >= 0) {
    json_t *failed = take_go(j, cfg, go_path, sizeof go_path, t0, &t_go);
    if (failed)
      return failed;
  }
  if (!cfg->cand_so)
    return finish(j, "infra_error", "no candidate library given");
  if (sg_cuda_server_load(&j->cand, cfg->cand_so, msg, sizeof msg))
    return finish(j, "infra_error", "%s", msg);
  if ((rc = sg_cuda_server_ready(&j->cand, 120, msg, sizeof msg))) {
    bool vendor = strstr(msg, "cublas") || strstr(msg, "cudnn");
    const char *st = rc == -2   ? (vendor ? "rejected" : "runtime_error")
                     : rc == -3 ? "runtime_error"
                     : rc == -4 ? "timeout"
                                : "infra_error";
    return finish(j, st, "loading the candidate: %s", msg);
  }
  j->t_go = t_go;
  json_object_set_new(j->out, "ready_s", json_real(sg_clock_now_s() - t_go));
  double tc = sg_clock_now_s();
  json_t *done = correctness(j);
  json_object_set_new(j->out, "correctness_s", json_real(sg_clock_now_s() - tc));
  return done ? done : timing(j);
}
