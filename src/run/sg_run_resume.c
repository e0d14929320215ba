/* sg_run_resume.c: a new run's first records, or a stored, unfinished run
 * restored (sg_run_priv.h): what was in flight when it stopped is closed in
 * the store (generations cancelled, evaluations aborted), the iteration it
 * cut is redone (it stays open and does not count: `--iterations N` means N
 * completed iterations), and each unfinished workflow's candidates, results
 * and progress are fed back into its fresh controller.
 */
#include "run/sg_run_priv.h"

#include "common/sg_buf.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static char *feedback_text(const sg_eval_result *res, sg_phase phase) {
  char *msg, *prof;
  sg_run_feedback_of(res, phase, &msg, &prof);
  return msg ? msg : prof;
}

/* Feeds the workflow's stored candidates, with their results, back into
 * its fresh controller's history. */
static int restore_candidates(run *r, wf *f, sg_err *err) {
  const json_t *v;
  size_t i;
  json_t *cands = NULL;
  int rc = sg_store_workflow_candidates_json(r->store, f->store_id, &cands, err);
  if (rc < 0)
    return rc;
  json_array_foreach(cands, i, v) {
    int64_t cid = json_integer_value(json_object_get(v, "candidate_id"));
    const char *src = json_string_value(json_object_get(v, "source"));
    sg_ctl_restored k;
    memset(&k, 0, sizeof k);
    k.iteration = (uint32_t)(json_integer_value(json_object_get(v, "iteration")) - 1);
    k.origin = strcmp(json_string_value(json_object_get(v, "kind")), "spec") == 0
                   ? SG_GEN_SPEC
                   : SG_GEN_MAIN;
    k.answer = json_integer_value(json_object_get(v, "answer_at_cap")) != 0;
    k.prefix_len = (uint64_t)json_integer_value(json_object_get(v, "prefix_bytes"));
    k.source = src;
    k.source_len = src ? strlen(src) : 0;
    k.validate_speedup = k.profile_speedup = NAN;
    sg_eval_result vres, pres;
    sg_eval_result_init(&vres);
    sg_eval_result_init(&pres);
    bool vfound = false, pfound = false;
    char *vtext = NULL, *ptext = NULL;
    rc = sg_store_eval_lookup(r->store, cid, SG_STORE_VALIDATE, &vres, NULL, &vfound, err);
    if (rc == 0)
      rc = sg_store_eval_lookup(r->store, cid, SG_STORE_PROFILE, &pres, NULL, &pfound, err);
    if (rc == 0 && vfound) {
      k.validated = true;
      vtext = feedback_text(&vres, SG_PHASE_VALIDATE);
      k.validate_status = vres.status;
      k.validate_speedup = vres.speedup;
      k.validate_message = vtext;
    }
    bool psubmitted = false;
    if (rc == 0 && vfound && vres.status == SG_EVAL_OK)
      rc = sg_store_eval_submitted(r->store, cid, SG_STORE_PROFILE, &psubmitted, err);
    k.accepted_at_validation = vfound && vres.status == SG_EVAL_OK && !psubmitted;
    if (rc == 0 && pfound && pres.status == SG_EVAL_OK) {
      k.profiled = true;
      ptext = feedback_text(&pres, SG_PHASE_PROFILE);
      k.profile_speedup = pres.speedup;
      k.profile_text = ptext;
    }
    if (rc == 0 && k.source_len > 0)
      rc = sg_controller_restore_kernel(f->ctl, &k, err);
    if (rc == 0)
      idmap_set(&f->cand_store, sg_controller_history(f->ctl)->n, cid);
    free(vtext);
    free(ptext);
    sg_eval_result_free(&vres);
    sg_eval_result_free(&pres);
    if (rc < 0) {
      json_decref(cands);
      return rc;
    }
  }
  json_decref(cands);
  return 0;
}

/* Restores one stored, unfinished workflow into its fresh controller. */
static int resume_workflow(run *r, wf *f, const json_t *sw, sg_err *err) {
  int64_t now = now_us();
  const json_t *v;
  size_t i;
  json_array_foreach(json_object_get(sw, "open_generations"), i, v) {
    int rc = sg_store_generation_end(r->store, json_integer_value(v), 0, 0, 0,
                                     "interrupted", SG_STORE_GEN_CANCELLED, now, err);
    if (rc < 0)
      return rc;
  }
  json_array_foreach(json_object_get(sw, "pending_evaluations"), i, v) {
    sg_eval_result res;
    sg_eval_result_init(&res);
    res.status = SG_EVAL_ABORTED;
    res.message = sg_strdup("interrupted: the run stopped before this evaluation "
                            "ended; the resumed run evaluates the kernel again only "
                            "if its redone iteration writes it again");
    int rc = sg_store_eval_finish(r->store, json_integer_value(json_object_get(v, "id")),
                                  &res, now, err);
    sg_eval_result_free(&res);
    if (rc < 0)
      return rc;
  }
  /* An iteration cut by the stop did not end: it is redone, in the same
   * row (its generations and candidates stay its own), and does not count
   * against the budget. The iterations ended are those below the first
   * open one. With next-ahead the next iteration may be open beside it; it
   * is kept for the resumed run to continue too. */
  int64_t ended = json_integer_value(json_object_get(sw, "next_iteration")) - 1;
  const json_t *open_ids = json_object_get(sw, "open_iterations");
  const json_t *open_nums = json_object_get(sw, "open_iteration_numbers");
  json_array_foreach(open_ids, i, v) {
    int64_t number = json_integer_value(json_array_get(open_nums, i));
    if (i == 0) {
      ended = number - 1;
      f->iter_store_id = json_integer_value(v);
      f->iter_open = (uint32_t)(number - 1);
    } else if (i == 1 && number == ended + 2) {
      f->ahead_iter_store_id = json_integer_value(v);
      f->ahead_iter = (uint32_t)(number - 1);
    } else {
      /* not a run this version left (at most the open one and the next):
       * closed, as it was before iterations were redone */
      int rc = sg_store_iteration_end(r->store, json_integer_value(v), "interrupted", now,
                                      err);
      if (rc < 0)
        return rc;
    }
  }
  if (ended < 0)
    ended = 0;

  int rc = restore_candidates(r, f, err);
  if (rc < 0)
    return rc;
  if ((rc = sg_run_write_best(r, f, false, err)) < 0)
    return rc;

  json_t *u = NULL;
  if ((rc = sg_store_workflow_usage_json(r->store, f->store_id, &u, err)) < 0)
    return rc;
  sg_usage tokens = {(uint64_t)json_integer_value(json_object_get(u, "prompt")),
                     (uint64_t)json_integer_value(json_object_get(u, "completion")),
                     (uint64_t)json_integer_value(json_object_get(u, "cached"))};
  int64_t last = json_integer_value(json_object_get(u, "last_us"));
  json_decref(u);
  int64_t started = json_integer_value(json_object_get(sw, "started_us"));
  return sg_controller_restore_progress(f->ctl, (uint32_t)ended,
                                        last > started ? last - started : 0, &tokens, err);
}

/* The stored workflows are the configuration's tasks, in order. */
static bool same_tasks(const run *r, const json_t *sws) {
  if (json_array_size(sws) != r->nwf)
    return false;
  for (size_t i = 0; i < r->nwf; i++) {
    const char *task = json_string_value(json_object_get(json_array_get(sws, i), "task"));
    if (task == NULL || strcmp(task, r->wfs[i].task->name) != 0)
      return false;
  }
  return true;
}

/* A resume given other tasks than the run's (--task adds to the stored
 * list): said as that, naming both lists. */
static int tasks_changed(const run *r, const json_t *sws, sg_err *err) {
  sg_buf had, now;
  sg_buf_init(&had, 128);
  sg_buf_init(&now, 128);
  for (size_t i = 0; i < json_array_size(sws); i++) {
    const char *task = json_string_value(json_object_get(json_array_get(sws, i), "task"));
    sg_buf_printf(&had, "%s%s", i ? ", " : "", task ? task : "?");
  }
  for (size_t i = 0; i < r->nwf; i++)
    sg_buf_printf(&now, "%s%s", i ? ", " : "", r->wfs[i].task->name);
  int rc = sg_err_set(err, SG_EINVAL,
                      "%s: the tasks cannot change on resume: the run has %s, this "
                      "command asks for %s (resume without --task; a new run takes "
                      "other tasks)",
                      r->dir, sg_buf_str(&had), sg_buf_str(&now));
  sg_buf_free(&had);
  sg_buf_free(&now);
  return rc;
}

/* Longer than 80 lines on purpose: the new-run and the resume paths share
 * their checks of the store against the configuration. */
int sg_run_begin_or_resume(run *r, sg_err *err) {
  const sg_run_config *cfg = r->cfg;
  if (cfg->resume == NULL) {
    json_t *c = sg_run_config_to_json(cfg);
    json_object_set_new(c, "out", json_string(r->dir));
    r->t0_us = now_us();
    int rc = sg_store_run_begin(r->store, c, (int)r->ndevices, r->t0_us, &r->run_id, err);
    json_decref(c);
    if (rc < 0)
      return rc;
    for (size_t i = 0; i < r->nwf; i++) {
      wf *f = &r->wfs[i];
      sg_store_workflow sw = {f->task->name, cfg->knobs.iterations, cfg->knobs.time_budget,
                              (int64_t)cfg->knobs.token_budget, r->t0_us};
      if ((rc = sg_store_workflow_add(r->store, &sw, &f->store_id, err)) < 0)
        return rc;
    }
    return 0;
  }
  json_t *res = NULL;
  int rc = sg_store_resume_json(r->store, &res, err);
  if (rc < 0)
    return rc;
  const json_t *run = json_object_get(res, "run");
  if (json_is_object(run) && !json_is_null(json_object_get(run, "ended_us"))) {
    /* A finished run given more iterations (--resume DIR --iterations N):
     * the workflows that ran fewer run again. */
    int reopened = 0;
    if ((rc = sg_store_run_extend(r->store, cfg->knobs.iterations, &reopened, err)) < 0) {
      json_decref(res);
      return rc;
    }
    if (reopened > 0) {
      json_decref(res);
      res = NULL;
      if ((rc = sg_store_resume_json(r->store, &res, err)) < 0)
        return rc;
      run = json_object_get(res, "run");
    }
  }
  const json_t *sws = json_object_get(res, "workflows");
  if (!json_is_object(run))
    rc = sg_err_set(err, SG_ESTATE, "%s: no run to resume", r->dir);
  else if (!json_is_null(json_object_get(run, "ended_us")))
    rc = sg_err_set(err, SG_ESTATE,
                    "%s: this run has finished its %d iterations; `--resume %s "
                    "--iterations N` with N above %d extends it, `specgen show %s` "
                    "prints its summary",
                    r->dir, cfg->knobs.iterations, r->dir, cfg->knobs.iterations, r->dir);
  else if (!same_tasks(r, sws))
    rc = tasks_changed(r, sws, err);
  if (rc == 0) {
    r->run_id = json_integer_value(json_object_get(run, "id"));
    r->t0_us = json_integer_value(json_object_get(run, "started_us"));
  }
  for (size_t i = 0; rc == 0 && i < r->nwf; i++) {
    wf *f = &r->wfs[i];
    const json_t *sw = json_array_get(sws, i);
    f->store_id = json_integer_value(json_object_get(sw, "id"));
    if (strcmp(json_string_value(json_object_get(sw, "state")), "running") != 0) {
      f->done = true;
      char *path = sg_asprintf("%s/best/%s.%s", r->dir, f->task->name, sg_run_source_ext(f->task));
      if (access(path, R_OK) == 0)
        f->best_file = path;
      else
        free(path);
      continue;
    }
    rc = resume_workflow(r, f, sw, err);
    if (rc < 0)
      sg_err_prefix(err, "%s: resuming task %s", r->dir, f->task->name);
  }
  json_decref(res);
  return rc;
}
