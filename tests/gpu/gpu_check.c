/* gpu_check.c: specgen-gpu-check, the cuda evaluator's end-to-end check and
 * benchmark over the built-in CUDA tasks' examples.
 *
 *   specgen-gpu-check [--compile-only] [--profile] [--task NAME]...
 *                     [--example SUBSTRING] [--jsonl FILE]
 *
 * Each example candidate (tasks/cuda/<task>/examples/<status>-<label>.cu,
 * and the kernelbench tasks' Python examples, unless SKIP_KB is set or
 * python3 cannot import torch) goes
 * through compile, then run (validation and timing) and, with --profile and
 * when it is valid, profile (ncu). Its status must be the one its name
 * promises (with --profile, ncu runs on the valid ones except ok-reference
 * and the cheats); an example labelled cheat_* that ends ok must also be no faster
 * than 1.5x the reference (it is a would-be cheat whose honest speed is
 * known). Compiles run ahead in child processes (SG_GPU_CHECK_JOBS at once,
 * default 8) while the device runs the examples in order; with --profile,
 * an example whose name says ok gets its profile's runner started beside
 * its validation (SG_GPU_CHECK_PROFILE_AHEAD=0: not). A table is printed
 * as it goes (compile, run and profile seconds, reference and candidate
 * medians, speedup, KernelBench's verdict, ncu verdict); --jsonl writes one
 * JSON object per example; the end gives the medians of validation and
 * profiling and "N examples checked, M as expected". Exits 1 when any
 * example ends with another status.
 * --compile-only checks what needs no GPU: compile_error examples fail to
 * compile, rejected ones are refused (or compile, when their rule is checked
 * on the device), the rest compile. It links only libc and a static jansson,
 * so it runs on GPU machines without specgen's other libraries. */
#include "common/sg_alloc.h"
#include "common/sg_clock.h"
#include "common/sg_file.h"
#include "common/sg_stats.h"
#include "eval/sg_cuda_ahead.h"
#include "eval/sg_eval.h"
#include "eval/sg_eval_prefetch.h"
#include "eval/sg_task.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool wanted(const char *name, char **list, int n) {
  if (n == 0)
    return true;
  for (int i = 0; i < n; i++)
    if (strcmp(list[i], name) == 0)
      return true;
  return false;
}

static void oneline(char *s) {
  for (; s && *s; s++)
    if (*s == '\n' || *s == '\r' || *s == '\t')
      *s = ' ';
}

typedef struct job {
  const sg_task *task;
  char *path, *base, *expected, *label, *src;
  size_t len;
  sg_eval_pending pending;
  bool started;
  /* its compile, once finished (finish_compile) */
  bool compiled;
  int compile_rc;
  sg_eval_build build;
  sg_eval_result compile_r;
  sg_err compile_err;
} job;

static void eval_opts(sg_eval_opts *o) {
  sg_eval_opts_default(o);
  o->seed = 12345;
  o->compile_timeout_s = 300;
  o->eval_timeout = 120;
}

static void start_compile(job *jb) {
  sg_eval_opts o;
  eval_opts(&o);
  sg_err err;
  sg_err_clear(&err);
  jb->started = sg_eval_compile_start(jb->task, jb->src, jb->len, &o, &jb->pending, &err) == 0;
  if (!jb->started)
    fprintf(stderr, "%s: %s\n", jb->base, err.msg);
}

/* Finishes jb's compile (the one started ahead, or one now), once. */
static void finish_compile(job *jb) {
  if (jb->compiled)
    return;
  jb->compiled = true;
  sg_eval_opts o;
  eval_opts(&o);
  memset(&jb->build, 0, sizeof jb->build);
  sg_eval_result_init(&jb->compile_r);
  sg_err_clear(&jb->compile_err);
  jb->compile_rc =
      jb->started
          ? sg_eval_compile_finish(&jb->pending, &jb->build, &jb->compile_r, &jb->compile_err)
          : sg_eval_compile(jb->task, jb->src, jb->len, &o, &jb->build, &jb->compile_r,
                            &jb->compile_err);
}

/* The example after jb is the first of another task: its runner starts
 * ahead while jb runs (the same task's next is started ahead anyway). */
static void expect_next(job *jb, job *next) {
  if (!next || next->task == jb->task)
    return;
  finish_compile(next);
  sg_eval_opts o;
  eval_opts(&o);
  if (!next->compile_rc && next->compile_r.status == SG_EVAL_OK)
    sg_eval_expect(next->task, &next->build, &o);
}

/* ncu replays every kernel for each section: the naive ok-reference
 * kernels take 12-24 s under it and tell nothing the fast ones do not, and
 * the would-be cheats are not kernels worth profiling. */
static bool worth_profiling(const job *jb) {
  return strcmp(jb->label, "reference") != 0 && strncmp(jb->label, "cheat_", 6) != 0;
}

/* Would-be cheats that pass must pass at an honest speed: theirs is no
 * better than the reference's. */
static bool cheat_too_fast(const job *jb, const sg_eval_result *r) {
  return strncmp(jb->label, "cheat_", 6) == 0 && r->status == SG_EVAL_OK &&
         !(r->speedup <= 1.5);
}

/* What the whole check keeps: options, the JSON lines file, the counts and
 * the stage times of the valid examples. */
typedef struct check {
  bool compile_only, profile, profile_ahead;
  FILE *jf;
  int failures, checked;
  double *valid, *runs, *comps, *profs;
  double *profs_req; /* a profile's run and the wait before it (settle_s) */
  size_t nvalid, nprof, profs_ahead;
} check;

/* One example's outcome. */
typedef struct outcome {
  int rc;
  sg_err err;
  sg_eval_result r, pr;
  double comp_s;
  bool profiled;
  const char *stage;
} outcome;

/* Compile (finishing the compile started ahead), run and, when asked and
 * worth it, profile. next: the example after it, or NULL. */
static void evaluate(check *ck, job *jb, job *next, outcome *oc) {
  sg_eval_opts o;
  eval_opts(&o);
  sg_eval_result_init(&oc->pr);
  sg_err_clear(&oc->err);
  oc->profiled = false;
  oc->stage = "compile";
  finish_compile(jb);
  sg_eval_build b = jb->build;
  memset(&jb->build, 0, sizeof jb->build);
  oc->r = jb->compile_r;
  sg_eval_result_init(&jb->compile_r);
  oc->rc = jb->compile_rc;
  oc->err = jb->compile_err;
  oc->comp_s = oc->r.compile_s;
  if (!oc->rc && oc->r.status == SG_EVAL_OK && !ck->compile_only) {
    expect_next(jb, next);
    /* a profile follows when it is valid, as its name says: its runner
     * (ncu's start-up and the context under it) starts beside the
     * validation ($SG_GPU_CHECK_PROFILE_AHEAD=0: not, to compare) */
    if (ck->profile && ck->profile_ahead && worth_profiling(jb) &&
        strcmp(jb->expected, "ok") == 0)
      sg_eval_expect_profile(jb->task, &b, &o);
    oc->stage = "run";
    oc->rc = sg_eval_run(jb->task, &b, &o, &oc->r, &oc->err);
    if (!oc->rc && oc->r.status == SG_EVAL_OK) {
      ck->comps[ck->nvalid] = oc->comp_s;
      ck->runs[ck->nvalid] = oc->r.run_s;
      ck->valid[ck->nvalid++] = oc->comp_s + oc->r.run_s;
    }
    if (!oc->rc && oc->r.status == SG_EVAL_OK && ck->profile && worth_profiling(jb)) {
      oc->stage = "profile";
      oc->profiled = true;
      if (sg_eval_profile(jb->task, &b, &o, &oc->pr, &oc->err)) {
        oc->pr.status = SG_EVAL_INFRA_ERROR;
        oc->pr.message = sg_strdup(oc->err.msg);
      } else if (oc->pr.status == SG_EVAL_OK) {
        json_t *st = oc->pr.stages;
        double settle = json_number_value(json_object_get(st, "settle_s"));
        ck->profs_req[ck->nprof] = oc->pr.run_s + settle;
        ck->profs_ahead += json_is_true(json_object_get(st, "started_ahead"));
        ck->profs[ck->nprof++] = oc->pr.run_s;
      }
    }
  }
  sg_eval_build_free(&b);
}

/* Whether the outcome is the one the example's name promises. */
static bool as_expected(const check *ck, const job *jb, const outcome *oc) {
  const sg_eval_result *r = &oc->r;
  if (ck->compile_only) {
    if (strcmp(jb->expected, "compile_error") == 0)
      return !oc->rc && r->status == SG_EVAL_COMPILE_ERROR;
    if (strcmp(jb->expected, "rejected") == 0)
      return !oc->rc && (r->status == SG_EVAL_REJECTED || r->status == SG_EVAL_OK);
    return !oc->rc && r->status == SG_EVAL_OK;
  }
  const char *got = oc->rc ? "infra_error" : sg_eval_status_name(r->status);
  return strcmp(got, jb->expected) == 0 && !cheat_too_fast(jb, r) &&
         !(oc->profiled && oc->pr.status != SG_EVAL_OK);
}

/* The table's row, the reasons of a mismatch, the JSON line. */
static void record(check *ck, const job *jb, const outcome *oc, bool pass) {
  const sg_eval_result *r = &oc->r, *pr = &oc->pr;
  const char *got = oc->rc ? "infra_error" : sg_eval_status_name(r->status);
  const char *verdict = "-";
  if (pr->metrics && json_is_string(json_object_get(pr->metrics, "verdict")))
    verdict = json_string_value(json_object_get(pr->metrics, "verdict"));
  printf("%-24s %-38s %-15s %-15s %-15s %6.2f %6.2f %6.2f %9.4f %9.4f %7.2f %s%s\n",
         jb->task->name, jb->base, jb->expected, got,
         r->kernelbench_status ? r->kernelbench_status : "-", oc->comp_s, r->run_s,
         pr->run_s, r->ref_ms, r->cand_ms, r->speedup, verdict,
         pass ? "" : "   <-- MISMATCH");
  if (!pass) {
    char *m = sg_strdup(oc->rc ? oc->err.msg : r->message ? r->message : "");
    oneline(m);
    printf("    %s: %.600s\n", oc->stage, m);
    if (cheat_too_fast(jb, r))
      printf("    a would-be cheat passed at %.2fx: faster than its honest speed\n",
             r->speedup);
    if (oc->profiled && pr->message && pr->status != SG_EVAL_OK) {
      char *pm = sg_strdup(pr->message);
      oneline(pm);
      printf("    profile: %.600s\n", pm);
      free(pm);
    }
    free(m);
    ck->failures++;
  }
  if (ck->jf) {
    json_t *j = oc->rc ? json_pack("{s:s}", "infra_error", oc->err.msg)
                       : sg_eval_result_to_json(r);
    json_object_set_new(j, "task", json_string(jb->task->name));
    json_object_set_new(j, "example", json_string(jb->base));
    json_object_set_new(j, "expected", json_string(jb->expected));
    json_object_set_new(j, "pass", json_boolean(pass));
    json_object_set_new(j, "compile_s", json_real(oc->comp_s));
    if (pr->metrics) {
      json_object_set(j, "profile_metrics", pr->metrics);
      json_object_set_new(j, "profile_s", json_real(pr->run_s));
      if (pr->stages)
        json_object_set(j, "profile_stages", pr->stages);
      json_object_set_new(j, "profile_text",
                          json_string(pr->profile_text ? pr->profile_text : ""));
    }
    char *line = json_dumps(j, JSON_COMPACT);
    fprintf(ck->jf, "%s\n", line);
    fflush(ck->jf);
    free(line);
    json_decref(j);
  }
  fflush(stdout);
  ck->checked++;
}

/* Every example of the wanted tasks, read, in the tasks' order. */
static job *collect_jobs(sg_task **tasks, size_t ntasks, char **wanted_tasks, int ntw,
                         const char *example_filter, bool skip_kb, size_t *njobs,
                         int *failures) {
  job *jobs = NULL;
  size_t cap = 0;
  *njobs = 0;
  sg_err err;
  for (size_t t = 0; t < ntasks; t++) {
    const sg_task *task = tasks[t];
    if ((strcmp(task->evaluator, "cuda") != 0 &&
         strcmp(task->evaluator, "kernelbench") != 0) ||
        !wanted(task->name, wanted_tasks, ntw) ||
        (strcmp(task->evaluator, "kernelbench") == 0 && skip_kb))
      continue;
    sg_task_example *ex = NULL;
    size_t nex = 0;
    if (sg_task_examples(task, &ex, &nex, &err)) {
      fprintf(stderr, "%s: %s\n", task->name, err.msg);
      (*failures)++;
      continue;
    }
    for (size_t e = 0; e < nex; e++) {
      const char *base = strrchr(ex[e].path, '/') ? strrchr(ex[e].path, '/') + 1 : ex[e].path;
      if (example_filter && !strstr(base, example_filter))
        continue;
      job jb;
      memset(&jb, 0, sizeof jb);
      if (sg_file_read(ex[e].path, 1 << 20, &jb.src, &jb.len, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        (*failures)++;
        continue;
      }
      jb.task = task;
      jb.path = sg_strdup(ex[e].path);
      jb.base = sg_strdup(base);
      jb.expected = sg_strdup(ex[e].expected_status);
      jb.label = sg_strdup(ex[e].label);
      if (*njobs == cap) {
        cap = cap ? cap * 2 : 64;
        jobs = sg_realloc(jobs, cap * sizeof *jobs);
      }
      jobs[(*njobs)++] = jb;
    }
    sg_task_examples_free(ex, nex);
  }
  return jobs;
}

static void free_jobs(job *jobs, size_t n) {
  for (size_t k = 0; k < n; k++) {
    free(jobs[k].path);
    free(jobs[k].base);
    free(jobs[k].expected);
    free(jobs[k].label);
    free(jobs[k].src);
    sg_eval_build_free(&jobs[k].build);
    sg_eval_result_free(&jobs[k].compile_r);
  }
  free(jobs);
}

static void print_summary(const check *ck) {
  size_t nvalid = ck->nvalid, nprof = ck->nprof;
  if (nvalid)
    printf("# validation of a valid candidate (compile + run), median over %zu: %.2f s "
           "(compile %.2f s, run %.2f s)\n",
           nvalid, sg_stats_median(ck->valid, nvalid), sg_stats_median(ck->comps, nvalid),
           sg_stats_median(ck->runs, nvalid));
  if (nprof)
    printf("# profiling (ncu), median over %zu: %.2f s (with the wait before it: %.2f s; "
           "%zu by a runner started ahead)\n",
           nprof, sg_stats_median(ck->profs, nprof), sg_stats_median(ck->profs_req, nprof),
           ck->profs_ahead);
}

/* Options, then the loop over the examples: a little over 80 lines, kept
 * together because each half is a plain sequence of steps. */
int main(int argc, char **argv) {
  static const struct option opts[] = {
      {"compile-only", no_argument, NULL, 'c'}, {"profile", no_argument, NULL, 'p'},
      {"task", required_argument, NULL, 't'},   {"example", required_argument, NULL, 'e'},
      {"jsonl", required_argument, NULL, 'j'},  {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  check ck;
  memset(&ck, 0, sizeof ck);
  bool skip_kb = getenv("SKIP_KB") != NULL;
  const char *pa = getenv("SG_GPU_CHECK_PROFILE_AHEAD");
  ck.profile_ahead = !(pa && strcmp(pa, "0") == 0);
  char *tasks_wanted[64];
  int ntw = 0;
  const char *example_filter = NULL, *jsonl = NULL;
  int c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
    case 'c': ck.compile_only = true; break;
    case 'p': ck.profile = true; break;
    case 't': if (ntw < 64) tasks_wanted[ntw++] = optarg; break;
    case 'e': example_filter = optarg; break;
    case 'j': jsonl = optarg; break;
    case 'h':
      printf("usage: specgen-gpu-check [--compile-only] [--profile] [--task NAME]... "
             "[--example SUBSTRING] [--jsonl FILE]\n");
      return 0;
    default: return 2;
    }
  }
  if (!skip_kb && !ck.compile_only &&
      system("python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    printf("# kernelbench tasks skipped: python3 cannot import torch\n");
    skip_kb = true;
  }
  ck.jf = jsonl ? fopen(jsonl, "w") : NULL;
  if (jsonl && !ck.jf) {
    fprintf(stderr, "specgen-gpu-check: --jsonl %s: cannot open\n", jsonl);
    return 2;
  }
  sg_err err;
  sg_err_clear(&err);
  sg_task **tasks = NULL;
  size_t ntasks = 0;
  if (sg_task_list(&tasks, &ntasks, &err)) {
    fprintf(stderr, "specgen-gpu-check: %s\n", err.msg);
    return 2;
  }
  size_t njobs = 0;
  job *jobs = collect_jobs(tasks, ntasks, tasks_wanted, ntw, example_filter,
                           skip_kb || ck.compile_only, &njobs, &ck.failures);
  const char *je = getenv("SG_GPU_CHECK_JOBS");
  size_t ahead = je && atoi(je) > 0 ? (size_t)atoi(je) : 8;
  printf("%-24s %-38s %-15s %-15s %-15s %6s %6s %6s %9s %9s %7s %s\n", "task", "example",
         "expected", "got", "kernelbench", "comp_s", "run_s", "prof_s", "ref_ms",
         "cand_ms", "speedup", "verdict");
  ck.valid = sg_calloc(njobs + 1, sizeof *ck.valid);
  ck.runs = sg_calloc(njobs + 1, sizeof *ck.runs);
  ck.comps = sg_calloc(njobs + 1, sizeof *ck.comps);
  ck.profs = sg_calloc(njobs + 1, sizeof *ck.profs);
  ck.profs_req = sg_calloc(njobs + 1, sizeof *ck.profs_req);
  /* Python candidates build PyTorch extensions (about a minute each, on the
   * CPU): start them all now, so that they build while the device runs the
   * CUDA examples. */
  for (size_t k = 0; k < njobs && !ck.compile_only; k++)
    if (strcmp(jobs[k].task->evaluator, "kernelbench") == 0)
      start_compile(&jobs[k]);
  /* the examples come task by task: the next runner starts while one runs */
  sg_cuda_ahead_use(!ck.compile_only);
  double loop_t0 = sg_clock_now_s();
  size_t next = 0;
  for (size_t k = 0; k < njobs; k++) {
    for (; next < njobs && next < k + ahead; next++)
      if (!jobs[next].started)
        start_compile(&jobs[next]);
    outcome oc;
    evaluate(&ck, &jobs[k], k + 1 < next ? &jobs[k + 1] : NULL, &oc);
    record(&ck, &jobs[k], &oc, as_expected(&ck, &jobs[k], &oc));
    sg_eval_result_free(&oc.r);
    sg_eval_result_free(&oc.pr);
  }
  double loop_s = sg_clock_now_s() - loop_t0;
  sg_cuda_ahead_use(false);
  free_jobs(jobs, njobs);
  sg_task_list_free(tasks, ntasks);
  if (ck.jf)
    fclose(ck.jf);
  print_summary(&ck);
  /* what a sequence of candidates costs, compiles overlapped with runs */
  if (njobs)
    printf("# wall of the whole sequence: %.1f s for %zu examples, %.2f s each\n", loop_s,
           njobs, loop_s / (double)njobs);
  free(ck.valid);
  free(ck.runs);
  free(ck.comps);
  free(ck.profs);
  free(ck.profs_req);
  printf("# %d examples checked, %d as expected\n", ck.checked, ck.checked - ck.failures);
  return ck.failures ? 1 : 0;
}
