/* sg_run_show.c: reading a stored run without running it (sg_run.h):
 * its configuration, for --resume, and its summary, for `specgen show`.
 */
#include "run/sg_run.h"

#include "common/sg_alloc.h"
#include "store/sg_store.h"

#include <stdbool.h>
#include <unistd.h>

/* Opens the store of an existing run (sg_store_open would create one). */
static int open_run(const char *dir, sg_store **s, sg_err *err) {
  char *db = sg_asprintf("%s/%s", dir, SG_STORE_FILE);
  bool there = access(db, R_OK) == 0;
  free(db);
  if (!there)
    return sg_err_set(err, SG_ENOENT, "%s: no run here (no %s)", dir, SG_STORE_FILE);
  return sg_store_open(dir, s, err);
}

int sg_run_load_config(const char *dir, sg_run_config *c, sg_err *err) {
  sg_store *s = NULL;
  int rc = open_run(dir, &s, err);
  if (rc < 0)
    return rc;
  json_t *res = NULL;
  rc = sg_store_resume_json(s, &res, err);
  if (rc == 0) {
    const json_t *cfg = json_object_get(json_object_get(res, "run"), "config");
    if (!json_is_object(cfg))
      rc = sg_err_set(err, SG_ESTATE, "%s: the store holds no run configuration", dir);
    else
      rc = sg_run_config_from_json(c, cfg, err);
  }
  json_decref(res);
  sg_store_close(s);
  return rc;
}

int sg_run_show(const char *dir, json_t **out, sg_err *err) {
  *out = NULL;
  sg_store *s = NULL;
  int rc = open_run(dir, &s, err);
  if (rc < 0)
    return rc;
  json_t *sum = NULL, *res = NULL;
  rc = sg_store_summary_json(s, &sum, err);
  if (rc == 0)
    rc = sg_store_resume_json(s, &res, err);
  if (rc == 0) {
    const json_t *run = json_object_get(res, "run");
    bool ended = !json_is_null(json_object_get(run, "ended_us"));
    json_object_set_new(sum, "dir", json_string(dir));
    json_object_set_new(sum, "state", json_string(ended ? "done" : "unfinished"));
    const json_t *cfg = json_object_get(run, "config");
    const char *from = json_string_value(json_object_get(cfg, "replay"));
    if (from)
      json_object_set_new(
          sum, "replay",
          sg_run_replay_json(from, json_number_value(json_object_get(cfg, "replay-speed")),
                             json_is_true(json_object_get(cfg, "replay-evals"))));
    json_t *wfs = json_object_get(sum, "workflows");
    const json_t *sws = json_object_get(res, "workflows");
    for (size_t i = 0; i < json_array_size(wfs); i++) {
      json_t *w = json_array_get(wfs, i);
      const json_t *sw = json_array_get(sws, i);
      json_object_set(w, "state", json_object_get(sw, "state"));
      const char *task = json_string_value(json_object_get(w, "task"));
      json_t *best = json_null();
      static const char *const exts[] = {"c", "cu", "py"};
      for (size_t k = 0; task && k < 3; k++) {
        char *p = sg_asprintf("%s/best/%s.%s", dir, task, exts[k]);
        if (access(p, R_OK) == 0) {
          json_decref(best);
          best = json_string(p);
        }
        free(p);
      }
      json_object_set_new(w, "best_file", best);
    }
    *out = sum;
    sum = NULL;
  }
  json_decref(sum);
  json_decref(res);
  sg_store_close(s);
  return rc;
}
