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
 * promises. A table is printed as it goes (compile, run and profile seconds,
 * reference and candidate medians, speedup, ncu verdict); --jsonl writes one
 * JSON object per example. Exits 1 when any example ends with another status.
 * --compile-only checks what needs no GPU: compile_error examples fail to
 * compile, rejected ones are refused (or compile, when their rule is checked
 * on the device), the rest compile. It links only libc and a static jansson,
 * so it runs on GPU machines without specgen's other libraries. */
#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "eval/sg_eval.h"
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

int main(int argc, char **argv) {
  static const struct option opts[] = {
      {"compile-only", no_argument, NULL, 'c'}, {"profile", no_argument, NULL, 'p'},
      {"task", required_argument, NULL, 't'},   {"example", required_argument, NULL, 'e'},
      {"jsonl", required_argument, NULL, 'j'},  {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  bool compile_only = false, profile = false, skip_kb = getenv("SKIP_KB") != NULL;
  char *tasks_wanted[64];
  int ntw = 0;
  const char *example_filter = NULL, *jsonl = NULL;
  int c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
    case 'c': compile_only = true; break;
    case 'p': profile = true; break;
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
  if (!skip_kb && !compile_only &&
      system("python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    printf("# kernelbench tasks skipped: python3 cannot import torch\n");
    skip_kb = true;
  }
  FILE *jf = jsonl ? fopen(jsonl, "w") : NULL;
  if (jsonl && !jf) {
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
  printf("%-24s %-34s %-15s %-15s %7s %7s %7s %9s %9s %7s %s\n", "task", "example",
         "expected", "got", "comp_s", "run_s", "prof_s", "ref_ms", "cand_ms",
         "speedup", "verdict");
  int failures = 0, checked = 0;
  for (size_t t = 0; t < ntasks; t++) {
    const sg_task *task = tasks[t];
    if ((strcmp(task->evaluator, "cuda") != 0 &&
         strcmp(task->evaluator, "kernelbench") != 0) ||
        !wanted(task->name, tasks_wanted, ntw))
      continue;
    if (strcmp(task->evaluator, "kernelbench") == 0 && (skip_kb || compile_only))
      continue;
    sg_task_example *ex = NULL;
    size_t nex = 0;
    if (sg_task_examples(task, &ex, &nex, &err)) {
      fprintf(stderr, "%s: %s\n", task->name, err.msg);
      failures++;
      continue;
    }
    for (size_t e = 0; e < nex; e++) {
      const char *base = strrchr(ex[e].path, '/') ? strrchr(ex[e].path, '/') + 1 : ex[e].path;
      if (example_filter && !strstr(base, example_filter))
        continue;
      char *src = NULL;
      size_t len = 0;
      if (sg_file_read(ex[e].path, 1 << 20, &src, &len, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        failures++;
        continue;
      }
      sg_eval_opts o;
      sg_eval_opts_default(&o);
      o.seed = 12345;
      o.compile_timeout_s = 300;
      o.run_timeout_s = 120;
      sg_eval_result r, pr;
      sg_eval_result_init(&r);
      sg_eval_result_init(&pr);
      sg_eval_build b;
      memset(&b, 0, sizeof b);
      sg_err_clear(&err);
      int rc = sg_eval_compile(task, src, len, &o, &b, &r, &err);
      double comp_s = r.compile_s;
      bool pass;
      const char *stage = "compile";
      if (!rc && r.status == SG_EVAL_OK && !compile_only) {
        stage = "run";
        rc = sg_eval_run(task, &b, &o, &r, &err);
        if (!rc && r.status == SG_EVAL_OK && profile) {
          stage = "profile";
          if (sg_eval_profile(task, &b, &o, &pr, &err)) {
            pr.status = SG_EVAL_INFRA_ERROR;
            pr.message = sg_strdup(err.msg);
          }
        }
      }
      const char *got = rc ? "infra_error" : sg_eval_status_name(r.status);
      if (compile_only) {
        if (strcmp(ex[e].expected_status, "compile_error") == 0)
          pass = !rc && r.status == SG_EVAL_COMPILE_ERROR;
        else if (strcmp(ex[e].expected_status, "rejected") == 0)
          pass = !rc && (r.status == SG_EVAL_REJECTED || r.status == SG_EVAL_OK);
        else
          pass = !rc && r.status == SG_EVAL_OK;
      } else {
        pass = strcmp(got, ex[e].expected_status) == 0;
        if (pass && profile && r.status == SG_EVAL_OK && pr.status != SG_EVAL_OK)
          pass = false;
      }
      const char *verdict = "-";
      if (pr.metrics && json_is_string(json_object_get(pr.metrics, "verdict")))
        verdict = json_string_value(json_object_get(pr.metrics, "verdict"));
      printf("%-24s %-34s %-15s %-15s %7.2f %7.2f %7.2f %9.4f %9.4f %7.2f %s%s\n",
             task->name, base, ex[e].expected_status, got, comp_s, r.run_s,
             pr.run_s, r.ref_ms, r.cand_ms, r.speedup, verdict,
             pass ? "" : "   <-- MISMATCH");
      if (!pass) {
        char *m = sg_strdup(rc ? err.msg : r.message ? r.message : "");
        oneline(m);
        printf("    %s: %.600s\n", stage, m);
        if (pr.message && pr.status != SG_EVAL_OK) {
          char *pm = sg_strdup(pr.message);
          oneline(pm);
          printf("    profile: %.600s\n", pm);
          free(pm);
        }
        free(m);
        failures++;
      }
      if (jf) {
        json_t *j = rc ? json_pack("{s:s}", "infra_error", err.msg) : sg_eval_result_to_json(&r);
        json_object_set_new(j, "task", json_string(task->name));
        json_object_set_new(j, "example", json_string(base));
        json_object_set_new(j, "expected", json_string(ex[e].expected_status));
        json_object_set_new(j, "pass", json_boolean(pass));
        json_object_set_new(j, "compile_s", json_real(comp_s));
        if (pr.metrics) {
          json_object_set(j, "profile_metrics", pr.metrics);
          json_object_set_new(j, "profile_s", json_real(pr.run_s));
          json_object_set_new(j, "profile_text", json_string(pr.profile_text ? pr.profile_text : ""));
        }
        char *line = json_dumps(j, JSON_COMPACT);
        fprintf(jf, "%s\n", line);
        fflush(jf);
        free(line);
        json_decref(j);
      }
      fflush(stdout);
      checked++;
      sg_eval_result_free(&r);
      sg_eval_result_free(&pr);
      sg_eval_build_free(&b);
      free(src);
    }
    sg_task_examples_free(ex, nex);
  }
  sg_task_list_free(tasks, ntasks);
  if (jf)
    fclose(jf);
  printf("# %d examples checked, %d with an unexpected status\n", checked, failures);
  return failures ? 1 : 0;
}
