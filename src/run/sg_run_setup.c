/* sg_run_setup.c: setting up a run and tearing it down (sg_run_priv.h): the
 * workflows (task, search, termination, controller each), the model (an
 * endpoint, or the caller's server), and what a run leaves behind: the
 * best kernel of each task on disk and the summary.
 */
#include "run/sg_run_priv.h"

#include "llm/sg_llm_check.h"

#include "common/sg_file.h"
#include "pool/sg_task_files.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *sg_run_source_ext(const sg_task *t) {
  if (strcmp(t->language, "cuda") == 0)
    return "cu";
  if (strcmp(t->language, "python") == 0)
    return "py";
  return "c";
}

/* The workflow's best kernel is the store's (sg_store_workflow_best_json):
 * one figure per kernel, by the rule the summary uses, so best/<task>.<ext>
 * is the kernel whose speedup the summary reports, even when one source
 * came up twice and was measured twice. Writes the file when the best
 * changed; on resume (`write` false) only takes the figure and the file
 * left behind. */
int sg_run_write_best(run *r, wf *f, bool write, sg_err *err) {
  json_t *b = NULL;
  int rc = sg_store_workflow_best_json(r->store, f->store_id, &b, err);
  if (rc < 0 || b == NULL)
    return rc;
  int64_t cid = json_integer_value(json_object_get(b, "candidate_id"));
  double sp = json_number_value(json_object_get(b, "speedup"));
  const char *kind = json_string_value(json_object_get(b, "speedup_kind"));
  f->best_validated = kind && strcmp(kind, "validate") == 0;
  const char *src = json_string_value(json_object_get(b, "source"));
  char *path = sg_asprintf("%s/best/%s.%s", r->dir, f->task->name, sg_run_source_ext(f->task));
  if (!write) {
    f->best_candidate = cid;
    f->best_speedup = sp;
    if (f->best_file == NULL && access(path, R_OK) == 0)
      f->best_file = sg_strdup(path);
  } else if (src && (f->best_file == NULL || cid != f->best_candidate ||
                     sp != f->best_speedup)) {
    char *dir = sg_asprintf("%s/best", r->dir);
    if (sg_mkdir_p(dir, err) < 0 || sg_file_write(path, src, strlen(src), err) < 0) {
      rc = -1;
    } else {
      free(f->best_file);
      f->best_file = sg_strdup(path);
      f->best_candidate = cid;
      f->best_speedup = sp;
    }
    free(dir);
  }
  free(path);
  json_decref(b);
  return rc;
}

static bool is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* What workers are told: the name a user gave for a built-in task, the
 * absolute directory for a task given as a directory. */
static char *task_ref(const char *given, const sg_task *t) {
  return is_dir(given) ? sg_strdup(t->dir) : sg_strdup(given);
}

static bool task_runs_on(const sg_task *t, const char *device_kind) {
  const sg_evaluator *ev = t ? sg_evaluator_find(t->evaluator) : NULL;
  return ev && strcmp(ev->device_kind, device_kind) == 0;
}

int sg_run_load_workflows(run *r, sg_err *err) {
  const sg_run_config *cfg = r->cfg;
  r->nwf = cfg->n_task;
  r->wfs = sg_calloc(r->nwf, sizeof *r->wfs);
  if (sg_run_load_setup(r, err) < 0)
    return -1;
  for (size_t i = 0; i < r->nwf; i++) {
    wf *f = &r->wfs[i];
    f->idx = (uint32_t)i;
    f->best_speedup = NAN;
    /* A bare name means the task of that name that runs on these devices:
     * as sg_task_load resolves it when that fits, else the first evaluator's
     * of this device kind (cuda, else kernelbench), as `specgen eval
     * --device cuda:N` takes it. */
    char *name = NULL;
    int rc = sg_task_load(cfg->task[i], &f->task, err);
    bool bare = strchr(cfg->task[i], '/') == NULL && !is_dir(cfg->task[i]);
    if (bare && !task_runs_on(f->task, r->device_kind)) {
      for (size_t k = 0; name == NULL && sg_evaluator_at(k); k++) {
        const sg_evaluator *ev = sg_evaluator_at(k);
        if (strcmp(ev->device_kind, r->device_kind) != 0)
          continue;
        char *q = sg_asprintf("%s/%s", ev->name, cfg->task[i]);
        sg_task *t = NULL;
        sg_err e;
        if (sg_task_load(q, &t, &e) == 0) {
          sg_task_free(f->task);
          f->task = t;
          name = q;
          rc = 0;
        } else {
          free(q);
        }
      }
    }
    if (rc < 0)
      return sg_err_prefix(err, "--task %s", cfg->task[i]);
    f->ev = sg_evaluator_find(f->task->evaluator);
    if (f->ev == NULL)
      return sg_err_set(err, SG_EUNSUPPORTED, "--task %s: the %s evaluator is not "
                        "available in this build", cfg->task[i], f->task->evaluator);
    if (strcmp(f->ev->device_kind, r->device_kind) != 0)
      return sg_err_set(err, SG_EINVAL,
                        "--task %s: its evaluator (%s) runs on %s devices, but "
                        "--devices is %s",
                        cfg->task[i], f->task->evaluator, f->ev->device_kind,
                        cfg->devices);
    for (size_t j = 0; j < i; j++)
      if (strcmp(r->wfs[j].task->dir, f->task->dir) == 0)
        return sg_err_set(err, SG_EINVAL, "--task %s: given twice", cfg->task[i]);
    f->task_ref = name ? name : task_ref(cfg->task[i], f->task);
    /* a task the user has as a path goes to the workers as its files: a
     * worker on another host has no copy of it (docs/remote.md) */
    struct stat st;
    if (!name && stat(cfg->task[i], &st) == 0 &&
        (rc = sg_task_files_read(S_ISDIR(st.st_mode) ? f->task->dir : cfg->task[i],
                                 &f->task_files, err)) < 0)
      return sg_err_prefix(err, "--task %s", cfg->task[i]);
    if ((rc = sg_search_new(&r->sreg, cfg->search, cfg->seed + i, &f->search, err)) < 0)
      return sg_err_prefix(err, "--search %s", cfg->search);
    if ((rc = sg_termination_new(&r->treg, cfg->termination, &f->term, err)) < 0)
      return sg_err_prefix(err, "--termination %s", cfg->termination);
    sg_ctl_opts o;
    sg_ctl_opts_default(&o);
    o.search = f->search;
    o.termination = f->term;
    o.language = f->task->language;
    o.entry = f->task->entry;
    sg_knobs_land(&cfg->knobs, &o, NULL); /* the rows of config/sg_knobs.h */
    o.main_retries = (uint32_t)cfg->main_retries;
    if (r->has_budget)
      o.fork_budget = &r->fork_budget;
    if ((rc = sg_controller_new(&o, &f->ctl, err)) < 0)
      return sg_err_prefix(err, "task %s", f->task->name);
  }
  return 0;
}

int sg_run_start_model(run *r, sg_err *err) {
  const sg_run_config *cfg = r->cfg;
  if (cfg->llm) {
    r->base_url = sg_strdup(cfg->llm);
    r->model = cfg->model;
    int rc = sg_llm_provider_lookup(cfg->profile, &r->provider, err);
    if (rc < 0)
      return rc;
    r->prompted = cfg->reasoning && strcmp(cfg->reasoning, "prompted") == 0;
    /* Prompted reasoning opens the answer with "<think>" for the model to
     * continue: a server that cannot continue an assistant message would
     * start a fresh one and the thinking would not be told from the answer. */
    if (r->prompted && r->provider->prefix == SG_LLM_PREFIX_NONE)
      return sg_err_set(err, SG_EINVAL,
                        "reasoning: prompted needs a server that continues an "
                        "assistant message; profile %s cannot",
                        r->provider->name);
    return 0;
  }
  if (cfg->replay_evals) {
    int rc = sg_store_open(cfg->replay, &r->replay_store, err);
    if (rc < 0)
      return sg_err_prefix(err, "--replay-evals");
  }
  if (cfg->replay) {
    /* A record resumed after a stop: the summary says this replay ran
     * through its stops (docs/usage.md, "Replaying a recorded run"). */
    sg_replay *rec = NULL;
    sg_replay_resume *rs = NULL;
    if (sg_replay_load(cfg->replay, &rec, err) < 0)
      return sg_err_prefix(err, "--replay");
    r->replay_resumes = sg_replay_resumes(rec, &rs);
    free(rs);
    sg_replay_free(rec);
  }
  /* The caller's server (sg_run.h): the run knows it only as an endpoint. */
  const char *profile = NULL;
  int rc = r->server->start(r->server->data, cfg, &r->base_url, &r->model, &profile, err);
  if (rc < 0)
    return rc;
  r->server_up = true;
  r->provider = sg_llm_provider_get(profile);
  /* A replay of a prompted run asks as that run asked (the recording is
   * matched by its messages) and reads an unclosed thinking block as it did. */
  r->prompted = cfg->replay && cfg->reasoning && strcmp(cfg->reasoning, "prompted") == 0;
  return 0;
}

int sg_run_check_model(run *r, const sg_llm_client_opts *client, sg_err *err) {
  const sg_run_config *cfg = r->cfg;
  if (cfg->llm == NULL)
    return 0; /* the caller's server plays the model */
  sg_llm_check_opts o = {.base_url = r->base_url, .model = r->model,
                         .profile = r->provider, .client = client,
                         .timeout_s = cfg->idle_timeout, .max_tokens = 16};
  sg_llm_probe p;
  int rc = sg_llm_check_stream(&o, &p, err);
  if (rc < 0)
    return sg_err_prefix(err, "--llm %s", cfg->llm);
  if (p.status == SG_LLM_PROBE_YES)
    return 0;
  return sg_err_set(err, SG_EINVAL,
                    "--llm %s: the model server does not answer a short chat request "
                    "for model %s (%s); nothing was started (`specgen llm check --llm "
                    "%s --model %s` probes it)",
                    cfg->llm, r->model, p.detail, cfg->llm, r->model);
}

json_t *sg_run_replay_json(const char *from, double speed, bool evals) {
  return json_pack("{s:s, s:f, s:s}", "from", from, "speed", speed, "evaluations",
                   evals ? "recorded where the record has the kernel, else real" : "real");
}

json_t *sg_run_summary(run *r, sg_err *err) {
  /* An interrupted iteration's kernels count too: the files follow the
   * summary's figures. */
  for (size_t i = 0; i < r->nwf; i++)
    if (r->wfs[i].store_id && sg_run_write_best(r, &r->wfs[i], true, err) < 0)
      return NULL;
  json_t *s = NULL;
  if (sg_store_summary_json(r->store, &s, err) < 0)
    return NULL;
  json_object_set_new(s, "dir", json_string(r->dir));
  if (r->cfg->replay) {
    json_t *rp = sg_run_replay_json(r->cfg->replay, r->cfg->replay_speed, r->cfg->replay_evals);
    json_object_set_new(rp, "evaluations_from_record", json_integer((json_int_t)r->replayed_evals));
    if (r->replay_resumes > 0)
      json_object_set_new(rp, "record_resumes", json_integer((json_int_t)r->replay_resumes));
    json_object_set_new(s, "replay", rp);
  }
  json_object_set_new(s, "interrupted", json_boolean(r->interrupted));
  json_t *wfs = json_object_get(s, "workflows");
  for (size_t i = 0; i < json_array_size(wfs) && i < r->nwf; i++) {
    json_t *w = json_array_get(wfs, i);
    json_object_set_new(w, "best_file", r->wfs[i].best_file
                                            ? json_string(r->wfs[i].best_file)
                                            : json_null());
    sg_ctl_stats st;
    memset(&st, 0, sizeof st);
    if (r->wfs[i].ctl) {
      sg_controller_stats(r->wfs[i].ctl, &st);
      json_object_set_new(w, "criterion_accepts", json_integer(st.criterion_accepts));
    }
  }
  /* This process's share only (a resumed run counts from the resume). */
  double loop_s = (double)sg_run_thread_cpu_ns() / 1e9;
  sg_interp_stats is;
  memset(&is, 0, sizeof is);
  if (r->it)
    sg_interp_stats_get(r->it, &is);
  json_object_set_new(
      s, "overhead",
      json_pack("{s:f, s:I, s:I, s:f, s:f}", "controller_cpu_s",
                (double)is.controller_cpu_ns / 1e9, "controller_calls",
                (json_int_t)is.controller_calls, "generations", (json_int_t)r->generations,
                "controller_cpu_us_per_generation",
                r->generations ? (double)is.controller_cpu_ns / 1e3 / (double)r->generations
                               : 0.0,
                "loop_thread_cpu_s", loop_s));
  return s;
}

void sg_run_free(run *r) {
  for (size_t i = 0; i < r->nwf; i++) {
    wf *f = &r->wfs[i];
    while (f->gens) {
      rgen *g = f->gens;
      f->gens = g->next;
      sg_run_gen_free(g);
    }
    for (size_t k = 0; k < SG_SEARCH_MAX_MAINS; k++)
      if (f->have_prompt[k])
        sg_prompt_text_free(&f->prompts[k]);
    if (f->have_ahead_prompt)
      sg_prompt_text_free(&f->ahead_prompt);
    sg_controller_free(f->ctl);
    sg_search_free(f->search);
    sg_termination_free(f->term);
    sg_task_free(f->task);
    free(f->task_ref);
    json_decref(f->task_files);
    free(f->gen_store.v);
    free(f->cand_store.v);
    free(f->best_file);
  }
  free(r->wfs);
  sg_interp_free(r->it);
  r->it = NULL;
  for (size_t i = 0; i < r->ndevices; i++)
    free(r->devices[i]);
  free(r->devices);
  for (size_t i = 0; i < r->cap_reqs; i++) {
    free(r->reqs[i].last_infra);
    sg_run_replay_drop(&r->reqs[i].rec);
  }
  sg_run_replay_drop(&r->submit_rec);
  free(r->reqs);
  free(r->last_infra);
  sg_scheduler_free(r->sched);
  sg_prompt_templates_free(r->templates);
  sg_store_close(r->store);
  sg_replay_log_close(r->llm_log);
  sg_store_close(r->replay_store);
  if (r->server_up && r->server->stop)
    r->server->stop(r->server->data);
  free(r->base_url);
  free(r->build_cache);
  free(r->remote_env);
  if (r->remote_url_env)
    memset(r->remote_url_env, 0, strlen(r->remote_url_env));
  free(r->remote_url_env);
  free(r->end_think);
}
