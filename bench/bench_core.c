/* bench_core.c: what the decision core costs per event, so a runtime or a
 * simulated campaign of thousands of iterations knows whether the core is
 * ever its bottleneck.
 *
 * Measures (median of RUNS runs each, thread CPU time):
 *   - scheduler: one request's whole life (submit, compile, device, done),
 *     with 1 and with 64 workflows sharing the pool (round-robin's cost),
 *     and an iteration boundary that aborts a workflow's 32 queued requests;
 *   - controller: one reasoning chunk of 64 bytes (trigger scanning and
 *     forks included), speculation on and off, and one whole iteration.
 * Usage: bench_core [runs]   (default 7)
 */
#include "common/sg_stats.h"
#include "core/sg_controller.h"
#include "core/sg_scheduler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int runs = 7;

/* CPU time of this thread, in seconds: the machine is shared, and the core
 * does no I/O, so CPU time is what it costs; wall time would add whatever
 * else runs. */
static double cpu_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const sg_err *err) {
  fprintf(stderr, "bench_core: %s: %s\n", what, err->msg);
  exit(1);
}

/* ---- scheduler ---------------------------------------------------------- */

/* ns per request life with nwf workflows, G=8, 4 compile slots. */
static double sched_life_ns(int nwf, int requests) {
  sg_sched_opts o;
  sg_sched_opts_default(&o);
  o.devices = 8;
  o.compile_slots = 4;
  o.max_queued = (size_t)requests + 16;
  sg_scheduler *s;
  sg_err err;
  sg_err_clear(&err);
  if (sg_scheduler_new(&o, &s, &err) < 0)
    die("scheduler", &err);
  sg_sched_actions a;
  sg_sched_actions_init(&a);
  int64_t now = 0;
  double t0 = cpu_now_s();
  /* keep 32 requests live: submit, then finish what started, FIFO-ish */
  sg_req_id *compiling = malloc(sizeof *compiling * (size_t)requests);
  sg_req_id *running = malloc(sizeof *running * (size_t)requests);
  size_t nc = 0, nr = 0, done = 0, submitted = 0;
  while (done < (size_t)requests) {
    if (submitted < (size_t)requests && submitted - done < 32) {
      sg_sched_request r = {(uint32_t)(submitted % (size_t)nwf), 0,
                            submitted % 3 ? SG_PHASE_VALIDATE
                                          : SG_PHASE_PROFILE,
                            submitted, true};
      sg_req_id id;
      sg_sched_actions_clear(&a);
      if (sg_scheduler_submit(s, &r, ++now, &id, &a, &err) < 0)
        die("submit", &err);
      submitted++;
    } else if (nc > 0) {
      sg_req_id id = compiling[--nc];
      sg_sched_actions_clear(&a);
      if (sg_scheduler_compiled(s, id, true, ++now, &a, &err) < 0)
        die("compiled", &err);
    } else if (nr > 0) {
      sg_req_id id = running[--nr];
      sg_sched_actions_clear(&a);
      if (sg_scheduler_device_done(s, id, false, ++now, &a, &err) < 0)
        die("device_done", &err);
      done++;
    } else {
      fprintf(stderr, "bench_core: scheduler stalled\n");
      exit(1);
    }
    for (size_t i = 0; i < a.n; i++) {
      if (a.v[i].type == SG_SACT_START_COMPILE)
        compiling[nc++] = a.v[i].req;
      else if (a.v[i].type == SG_SACT_START_DEVICE)
        running[nr++] = a.v[i].req;
    }
  }
  double ns = (cpu_now_s() - t0) * 1e9 / requests;
  free(compiling);
  free(running);
  sg_sched_actions_free(&a);
  sg_scheduler_free(s);
  return ns;
}

/* ns per boundary that aborts 32 queued requests (G=8, all busy). */
static double sched_boundary_ns(int boundaries) {
  sg_sched_opts o;
  sg_sched_opts_default(&o);
  o.devices = 8;
  sg_scheduler *s;
  sg_err err;
  sg_err_clear(&err);
  if (sg_scheduler_new(&o, &s, &err) < 0)
    die("scheduler", &err);
  sg_sched_actions a;
  sg_sched_actions_init(&a);
  int64_t now = 0;
  double total = 0;
  for (int b = 0; b < boundaries; b++) {
    for (int i = 0; i < 32; i++) {
      sg_sched_request r = {0, (uint32_t)b, (sg_phase)(i % 2), 0, false};
      sg_req_id id;
      sg_sched_actions_clear(&a);
      if (sg_scheduler_submit(s, &r, ++now, &id, &a, &err) < 0)
        die("submit", &err);
    }
    sg_sched_actions_clear(&a);
    double t0 = cpu_now_s();
    if (sg_scheduler_iteration_boundary(s, 0, (uint32_t)b + 1, ++now, &a,
                                        &err) < 0)
      die("boundary", &err);
    total += cpu_now_s() - t0;
  }
  sg_sched_actions_free(&a);
  sg_scheduler_free(s);
  return total * 1e9 / boundaries;
}

/* ---- controller ----------------------------------------------------------- */

static const char *const reasoning[] = {
    "First, the operation is a hinge loss over a batch of predictions. ",
    "Let me implement a kernel where each thread handles one row. ",
    "I will use a block size of 256 threads and a tile of 32 elements. ",
    "Wait, the reduction needs a second pass; use warp shuffles. ",
    "```cuda\n__global__ void k(float *x) { x[threadIdx.x] = 0.0f; }\n```\n",
    "Hmm, the memory access is coalesced if rows are contiguous. ",
};

typedef struct ctl_fx {
  sg_termination_registry treg;
  sg_search_registry sreg;
  sg_termination *t;
  sg_search *search;
  sg_controller *c;
  sg_ctl_actions a;
} ctl_fx;

static void ctl_open(ctl_fx *f, bool speculate) {
  sg_err err;
  sg_err_clear(&err);
  sg_termination_registry_init(&f->treg);
  sg_search_registry_init(&f->sreg);
  if (sg_termination_new(&f->treg, "none", &f->t, &err) < 0 ||
      sg_search_new(&f->sreg, "refine", 1, &f->search, &err) < 0)
    die("setup", &err);
  sg_ctl_opts o;
  sg_ctl_opts_default(&o);
  o.search = f->search;
  o.termination = f->t;
  o.language = "c";
  o.entry = "hinge";
  o.speculate = speculate;
  o.max_iterations = 0;
  /* fork caps stay at their defaults (64 per iteration, 16 live) */
  o.max_text_bytes = 64u << 20;
  if (sg_controller_new(&o, &f->c, &err) < 0)
    die("controller", &err);
  sg_ctl_actions_init(&f->a);
  if (sg_controller_start(f->c, 0, &f->a, &err) < 0)
    die("start", &err);
  sg_sched_capacity cap = {0};
  cap.free_validate = cap.free_profile = 2;
  sg_controller_set_capacity(f->c, &cap);
}

static void ctl_close(ctl_fx *f) {
  sg_controller_free(f->c);
  sg_termination_free(f->t);
  sg_search_free(f->search);
  sg_ctl_actions_free(&f->a);
}

/* ns per 64-byte reasoning chunk; *forks gets the forks made. */
static double ctl_chunk_ns(bool speculate, int chunks, uint64_t *forks) {
  ctl_fx f;
  ctl_open(&f, speculate);
  uint64_t gen = f.a.v[0].u.start.gen;
  /* a long trace built from the sentences, fed in 64-byte pieces */
  size_t cap = (size_t)chunks * 64 + 256, len = 0;
  char *trace = malloc(cap);
  for (int i = 0; len + 128 < cap; i++) {
    const char *s = reasoning[i % 6];
    size_t n = strlen(s);
    memcpy(trace + len, s, n);
    len += n;
    len += (size_t)snprintf(trace + len, cap - len, "(%d) ", i);
  }
  sg_err err;
  sg_err_clear(&err);
  double t0 = cpu_now_s();
  for (int i = 0; i < chunks; i++) {
    sg_ctl_event e = {.type = SG_CEV_GEN_CHUNK, .now_us = i + 1};
    e.u.chunk.gen = gen;
    e.u.chunk.reasoning = trace + (size_t)i * 64;
    e.u.chunk.reasoning_len = 64;
    e.u.chunk.tokens = 16;
    sg_ctl_actions_clear(&f.a);
    if (sg_controller_event(f.c, &e, &f.a, &err) < 0)
      die("chunk", &err);
  }
  double ns = (cpu_now_s() - t0) * 1e9 / chunks;
  sg_ctl_stats st;
  sg_controller_stats(f.c, &st);
  *forks = st.forks;
  free(trace);
  ctl_close(&f);
  return ns;
}

/* us per iteration: 100 chunks, 2 forks finishing with code, validate and
 * profile each, main finishes with code, fallback. */
static double ctl_iteration_us(int iterations) {
  ctl_fx f;
  ctl_open(&f, true);
  sg_err err;
  sg_err_clear(&err);
  const char *code = "```c\nvoid hinge(float *x) { x[0] = 1; }\n```\n";
  int64_t now = 0;
  uint64_t main_gen = f.a.v[0].u.start.gen;
  sg_ctl_actions pending;
  sg_ctl_actions_init(&pending);
  double t0 = cpu_now_s();
  for (int it = 0; it < iterations; it++) {
    uint64_t specs[64];
    int nspecs = 0;
    for (int i = 0; i < 100; i++) {
      sg_ctl_event e = {.type = SG_CEV_GEN_CHUNK, .now_us = ++now};
      e.u.chunk.gen = main_gen;
      e.u.chunk.reasoning = reasoning[i % 6];
      e.u.chunk.reasoning_len = strlen(reasoning[i % 6]);
      e.u.chunk.tokens = 16;
      sg_ctl_actions_clear(&f.a);
      if (sg_controller_event(f.c, &e, &f.a, &err) < 0)
        die("chunk", &err);
      for (size_t k = 0; k < f.a.n && nspecs < 64; k++)
        if (f.a.v[k].type == SG_CACT_START_GEN)
          specs[nspecs++] = f.a.v[k].u.start.gen;
    }
    /* every generation finishes with code; every candidate is valid */
    uint64_t gens[65];
    int ng = 0;
    for (int i = 0; i < nspecs; i++)
      gens[ng++] = specs[i];
    gens[ng++] = main_gen;
    for (int i = 0; i < ng; i++) {
      sg_ctl_event e = {.type = SG_CEV_GEN_FINISHED, .now_us = ++now};
      e.u.finished.gen = gens[i];
      e.u.finished.text = code;
      e.u.finished.len = strlen(code);
      sg_ctl_actions_clear(&f.a);
      if (sg_controller_event(f.c, &e, &f.a, &err) < 0)
        die("finished", &err);
      /* answer each submit at once (validate, then profile) */
      for (size_t k = 0; k < f.a.n; k++) {
        if (f.a.v[k].type != SG_CACT_SUBMIT_EVAL)
          continue;
        uint64_t cand = f.a.v[k].u.submit.candidate;
        for (int ph = 0; ph < 2; ph++) {
          sg_ctl_event v = {.type = SG_CEV_EVAL_DONE, .now_us = ++now};
          v.u.eval.candidate = cand;
          v.u.eval.phase = (sg_phase)ph;
          v.u.eval.status = SG_EVAL_OK;
          v.u.eval.speedup = 1.0;
          sg_ctl_actions_clear(&pending);
          if (sg_controller_event(f.c, &v, &pending, &err) < 0)
            die("eval", &err);
          for (size_t j = 0; j < pending.n; j++)
            if (pending.v[j].type == SG_CACT_START_GEN &&
                pending.v[j].u.start.kind == SG_GEN_MAIN)
              main_gen = pending.v[j].u.start.gen;
        }
      }
    }
  }
  double us = (cpu_now_s() - t0) * 1e6 / iterations;
  if (sg_controller_iteration(f.c) != (uint32_t)iterations) {
    fprintf(stderr, "bench_core: %u iterations ended, expected %d\n",
            sg_controller_iteration(f.c), iterations);
    exit(1);
  }
  sg_ctl_actions_free(&pending);
  ctl_close(&f);
  return us;
}

int main(int argc, char **argv) {
  if (argc > 1)
    runs = atoi(argv[1]);
  if (runs < 1 || runs > 101) {
    fprintf(stderr, "usage: bench_core [runs 1..101]\n");
    return 2;
  }
  /* the measures interleave run by run, so a burst of load on the shared
   * machine hits all of them, and ratios compare like with like */
  enum { LIFE1, LIFE64, BOUND, CHUNK_ON, CHUNK_OFF, ITER, NM };
  double *v[NM];
  for (int m = 0; m < NM; m++)
    v[m] = malloc(sizeof *v[m] * (size_t)runs);
  uint64_t forks = 0, forks_off = 0;
  for (int r = 0; r < runs; r++) {
    v[LIFE1][r] = sched_life_ns(1, 200000);
    v[LIFE64][r] = sched_life_ns(64, 200000);
    v[BOUND][r] = sched_boundary_ns(2000);
    v[CHUNK_ON][r] = ctl_chunk_ns(true, 20000, &forks);
    v[CHUNK_OFF][r] = ctl_chunk_ns(false, 20000, &forks_off);
    v[ITER][r] = ctl_iteration_us(500);
  }
  double life1 = sg_stats_median(v[LIFE1], (size_t)runs), life64 = sg_stats_median(v[LIFE64], (size_t)runs);
  double bound = sg_stats_median(v[BOUND], (size_t)runs);
  double chunk_on = sg_stats_median(v[CHUNK_ON], (size_t)runs);
  double chunk_off = sg_stats_median(v[CHUNK_OFF], (size_t)runs);
  double iter = sg_stats_median(v[ITER], (size_t)runs);
  printf("decision core, median of %d runs\n\n", runs);
  printf("| what | median |\n|---|---|\n");
  printf("| scheduler: one request's life, 1 workflow (G=8) | %.0f ns |\n",
         life1);
  printf("| scheduler: one request's life, 64 workflows (G=8) | %.0f ns |\n",
         life64);
  printf("| ratio 64 workflows / 1 | %.2f |\n", life64 / life1);
  printf("| scheduler: boundary aborting 32 queued requests | %.0f ns |\n",
         bound);
  printf("| controller: 64-byte reasoning chunk, speculation on "
         "(%llu forks in 20000 chunks) | %.0f ns |\n",
         (unsigned long long)forks, chunk_on);
  printf("| controller: 64-byte reasoning chunk, speculation off | %.0f ns "
         "|\n",
         chunk_off);
  printf("| ratio on / off | %.2f |\n", chunk_on / chunk_off);
  printf("| controller: one iteration (100 chunks, its forks, all evaluated)"
         " | %.1f us |\n",
         iter);
  for (int m = 0; m < NM; m++)
    free(v[m]);
  return 0;
}
