/* test_report.c: the report's data, page and dashboard on real stores in
 * temporary directories, the dashboard over real HTTP on loopback, and
 * `specgen report` / `specgen sim --out` as processes. What the page draws
 * is checked in a real browser by test_browser.py. */
#include "sg_test.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_file.h"
#include "report/sg_dashboard.h"
#include "report/sg_report.h"
#include "store/sg_store.h"

#include <curl/curl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define S1 1000000LL
/* Text from a model is hostile: it must never become markup or script. */
#define HOSTILE "</script><script>alert(1)</script><!--<img src=x onerror=alert(2)>"

static char *tmp_dir(void) {
  char tmpl[] = "/tmp/sg_report_XXXXXX";
  SG_CHECK(mkdtemp(tmpl) != NULL);
  return sg_strdup(tmpl);
}

static void rm_dir(char *dir) {
  sg_err err;
  SG_CHECK_OK(sg_rm_rf(dir, &err), err);
  free(dir);
}

static void finish(sg_store *s, int64_t eval, sg_eval_status st, double speedup,
                   const char *msg, int64_t at) {
  sg_err err;
  sg_eval_result r;
  sg_eval_result_init(&r);
  r.status = st;
  r.speedup = speedup;
  r.ref_ms = 2.0;
  r.cand_ms = st == SG_EVAL_OK ? 2.0 / speedup : NAN;
  r.message = msg ? sg_strdup(msg) : NULL;
  if (st == SG_EVAL_OK)
    r.metrics = json_pack("{s:s, s:f}", "note", HOSTILE, "dram_pct", 41.5);
  SG_CHECK_OK(sg_store_eval_finish(s, eval, &r, at, &err), err);
  sg_eval_result_free(&r);
}

/* A run at t0 = 100 s on 2 devices: task_a with two iterations (the second
 * ended early by a fork), a main and a spec generation, two candidates (one
 * with a hostile source), evaluations ok and failed, device intervals and a
 * re-split. Left open (no run end) unless end is set. */
typedef struct fixture {
  int64_t wf, it1, it2, gen1, gen2, c1, c2, e_val, e_prof, e_bad;
} fixture;

static fixture make_run(const char *dir, bool end) {
  sg_err err;
  sg_err_clear(&err);
  sg_store *s = NULL;
  SG_CHECK_OK(sg_store_open(dir, &s, &err), err);
  fixture f;
  int64_t run;
  json_t *cfg = json_pack("{s:s, s:s, s:i}", "llm", "http://alice:s3cret@example.test:8000/v1",
                          "search", "refine", "iterations", 2);
  SG_CHECK_OK(sg_store_run_begin(s, cfg, 2, 100 * S1, &run, &err), err);
  json_decref(cfg);
  sg_store_workflow wf = {.task = "task_a", .budget_iterations = 2, .started_us = 100 * S1};
  SG_CHECK_OK(sg_store_workflow_add(s, &wf, &f.wf, &err), err);
  SG_CHECK_OK(sg_store_iteration_begin(s, f.wf, 1, 100 * S1, &f.it1, &err), err);
  sg_store_generation g = {.iteration_id = f.it1, .kind = SG_STORE_GEN_MAIN,
                           .prompt = "p", .started_us = 100 * S1};
  SG_CHECK_OK(sg_store_generation_begin(s, &g, &f.gen1, &err), err);
  SG_CHECK_OK(sg_store_generation_end(s, f.gen1, 1000, 500, 200, "stop",
                                      SG_STORE_GEN_COMPLETED, 104 * S1, &err), err);
  SG_CHECK_OK(sg_store_candidate_add(s, f.gen1, "int k(void){return 1;}", 104 * S1, &f.c1,
                                     NULL, &err), err);
  SG_CHECK_OK(sg_store_eval_queue(s, f.c1, SG_STORE_VALIDATE, 104 * S1, &f.e_val, &err), err);
  SG_CHECK_OK(sg_store_eval_start(s, f.e_val, "cpu:0", 105 * S1, &err), err);
  finish(s, f.e_val, SG_EVAL_OK, 1.5, NULL, 106 * S1);
  SG_CHECK_OK(sg_store_device_interval_add(s, "cpu:0", SG_STORE_VALIDATE, f.e_val, 105 * S1,
                                           106 * S1, NULL, &err), err);
  SG_CHECK_OK(sg_store_eval_queue(s, f.c1, SG_STORE_PROFILE, 106 * S1, &f.e_prof, &err), err);
  SG_CHECK_OK(sg_store_eval_start(s, f.e_prof, "cpu:1", 106 * S1, &err), err);
  finish(s, f.e_prof, SG_EVAL_OK, 2.0, NULL, 108 * S1);
  SG_CHECK_OK(sg_store_device_interval_add(s, "cpu:1", SG_STORE_PROFILE, f.e_prof, 106 * S1,
                                           108 * S1, NULL, &err), err);
  SG_CHECK_OK(sg_store_iteration_end(s, f.it1, "accepted", 108 * S1, &err), err);
  json_t *split = json_pack("{s:i, s:i}", "validate_devices", 1, "profile_devices", 1);
  SG_CHECK_OK(sg_store_decision_add(s, f.wf, f.it1, "reallocate", split, 108 * S1, NULL, &err),
              err);
  json_decref(split);

  SG_CHECK_OK(sg_store_iteration_begin(s, f.wf, 2, 108 * S1, &f.it2, &err), err);
  g.iteration_id = f.it2;
  g.kind = SG_STORE_GEN_SPEC;
  g.parent_id = 0;
  g.started_us = 109 * S1;
  SG_CHECK_OK(sg_store_generation_begin(s, &g, &f.gen2, &err), err);
  SG_CHECK_OK(sg_store_generation_end(s, f.gen2, 800, 300, 700, "stop",
                                      SG_STORE_GEN_COMPLETED, 110 * S1, &err), err);
  SG_CHECK_OK(sg_store_candidate_add(s, f.gen2, HOSTILE, 110 * S1, &f.c2, NULL, &err), err);
  SG_CHECK_OK(sg_store_eval_queue(s, f.c2, SG_STORE_VALIDATE, 110 * S1, &f.e_bad, &err), err);
  SG_CHECK_OK(sg_store_eval_start(s, f.e_bad, "cpu:0", 110 * S1, &err), err);
  finish(s, f.e_bad, SG_EVAL_COMPILE_ERROR, NAN, "error: " HOSTILE, 111 * S1);
  SG_CHECK_OK(sg_store_device_interval_add(s, "cpu:0", SG_STORE_VALIDATE, f.e_bad, 110 * S1,
                                           111 * S1, NULL, &err), err);
  SG_CHECK_OK(sg_store_iteration_end(s, f.it2, "early", 112 * S1, &err), err);
  if (end) {
    SG_CHECK_OK(sg_store_workflow_set_state(s, f.wf, SG_STORE_WF_DONE, 112 * S1, &err), err);
    SG_CHECK_OK(sg_store_run_end(s, 112 * S1, &err), err);
  }
  sg_store_close(s);
  return f;
}

static json_t *data_of(const char *dir, bool details) {
  sg_err err;
  sg_err_clear(&err);
  sg_report_src *src = NULL;
  SG_CHECK_OK(sg_report_open(dir, &src, &err), err);
  SG_CHECK(!sg_report_is_sim(src));
  json_t *d = NULL;
  SG_CHECK_OK(sg_report_data_json(src, details, &d, &err), err);
  sg_report_close(src);
  return d;
}

static size_t count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
    n++;
  return n;
}

/* ---- data --------------------------------------------------------------------- */

static void data_holds_every_table_on_the_run_clock(void) {
  char *dir = tmp_dir();
  fixture f = make_run(dir, true);
  json_t *d = data_of(dir, false);
  json_t *run = json_object_get(d, "run");
  SG_CHECK_STR_EQ(json_string_value(json_object_get(d, "kind")), "run");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(run, "devices")), 2);
  SG_CHECK_NEAR(json_number_value(json_object_get(run, "e2e_s")), 12.0, 1e-9);
  SG_CHECK(json_is_true(json_object_get(run, "ended")));
  static const struct { const char *table; size_t n; } want[] = {
      {"workflows", 1}, {"iterations", 2}, {"generations", 2}, {"candidates", 2},
      {"evaluations", 3}, {"device_intervals", 3}, {"decisions", 1}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    SG_CHECK_MSG(json_array_size(json_object_get(d, want[i].table)) == want[i].n,
                 "%s: %zu rows", want[i].table,
                 json_array_size(json_object_get(d, want[i].table)));
  /* Iteration 2: [id, workflow, number, start_s, end_s, reason]. */
  json_t *it2 = json_array_get(json_object_get(d, "iterations"), 1);
  SG_CHECK_EQ_INT(json_integer_value(json_array_get(it2, 0)), f.it2);
  SG_CHECK_NEAR(json_number_value(json_array_get(it2, 3)), 8.0, 1e-9);
  SG_CHECK_NEAR(json_number_value(json_array_get(it2, 4)), 12.0, 1e-9);
  SG_CHECK_STR_EQ(json_string_value(json_array_get(it2, 5)), "early");
  /* Evaluations: [id, cand, phase, queued, started, ended, status, speedup, device, msg]. */
  json_t *prof = json_array_get(json_object_get(d, "evaluations"), 1);
  SG_CHECK_STR_EQ(json_string_value(json_array_get(prof, 2)), "profile");
  SG_CHECK_NEAR(json_number_value(json_array_get(prof, 7)), 2.0, 1e-9);
  SG_CHECK_STR_EQ(json_string_value(json_array_get(prof, 8)), "cpu:1");
  json_t *bad = json_array_get(json_object_get(d, "evaluations"), 2);
  SG_CHECK(json_is_null(json_array_get(bad, 7)));
  SG_CHECK_STR_EQ(json_string_value(json_array_get(bad, 6)), "compile_error");
  /* Tokens: [.., prompt, completion, cached, outcome]. */
  json_t *g2 = json_array_get(json_object_get(d, "generations"), 1);
  SG_CHECK_STR_EQ(json_string_value(json_array_get(g2, 2)), "spec");
  SG_CHECK_EQ_INT(json_integer_value(json_array_get(g2, 8)), 700);
  json_t *dec = json_array_get(json_object_get(d, "decisions"), 0);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(json_array_get(dec, 4),
                                                     "profile_devices")), 1);
  SG_CHECK(json_object_get(d, "details") == NULL);
  json_decref(d);
  rm_dir(dir);
}

/* An answer at the length cap (a spec generation of the store, not a fork)
 * reads as kind "answer_at_cap" in the report's data, and the summary counts
 * it apart from the forks, its tokens with it. */
static void answers_at_cap_are_not_forks(void) {
  char *dir = tmp_dir();
  fixture f = make_run(dir, true);
  sg_err err;
  sg_err_clear(&err);
  sg_store *s = NULL;
  SG_CHECK_OK(sg_store_open(dir, &s, &err), err);
  sg_store_generation g = {.iteration_id = f.it2, .kind = SG_STORE_GEN_SPEC,
                           .parent_id = f.gen2, .prefix_bytes = 10, .prompt = "p",
                           .started_us = 111 * S1, .answer_at_cap = true};
  int64_t id;
  SG_CHECK_OK(sg_store_generation_begin(s, &g, &id, &err), err);
  SG_CHECK_OK(sg_store_generation_end(s, id, 50, 40, 0, "stop", SG_STORE_GEN_COMPLETED,
                                      112 * S1, &err), err);
  json_t *sum = NULL;
  SG_CHECK_OK(sg_store_summary_json(s, &sum, &err), err);
  json_t *w = json_array_get(json_object_get(sum, "workflows"), 0);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(w, "generations_spec")), 1);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(w, "answers_at_cap")), 1);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(w, "answers_at_cap_tokens")), 90);
  json_decref(sum);
  sg_store_close(s);
  json_t *d = data_of(dir, false);
  json_t *gens = json_object_get(d, "generations");
  SG_CHECK_STR_EQ(json_string_value(json_array_get(json_array_get(gens, 1), 2)), "spec");
  SG_CHECK_STR_EQ(json_string_value(json_array_get(json_array_get(gens, 2), 2)),
                  "answer_at_cap");
  json_decref(d);
  rm_dir(dir);
}

static void an_open_run_ends_at_its_latest_record(void) {
  char *dir = tmp_dir();
  make_run(dir, false);
  json_t *d = data_of(dir, false);
  json_t *run = json_object_get(d, "run");
  SG_CHECK(json_is_false(json_object_get(run, "ended")));
  SG_CHECK_NEAR(json_number_value(json_object_get(run, "e2e_s")), 12.0, 1e-9);
  json_decref(d);
  rm_dir(dir);
}

static void details_hold_sources_messages_and_profiles(void) {
  char *dir = tmp_dir();
  fixture f = make_run(dir, true);
  json_t *d = data_of(dir, true);
  char key[32];
  snprintf(key, sizeof key, "%lld", (long long)f.c2);
  json_t *c2 = json_object_get(json_object_get(d, "details"), key);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(c2, "source")), HOSTILE);
  json_t *e = json_array_get(json_object_get(c2, "evaluations"), 0);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(e, "message")), "error: " HOSTILE);
  snprintf(key, sizeof key, "%lld", (long long)f.c1);
  json_t *c1 = json_object_get(json_object_get(d, "details"), key);
  SG_CHECK_EQ_INT(json_array_size(json_object_get(c1, "evaluations")), 2);
  json_t *m = json_object_get(json_array_get(json_object_get(c1, "evaluations"), 1), "metrics");
  SG_CHECK_NEAR(json_number_value(json_object_get(m, "dram_pct")), 41.5, 1e-9);
  json_decref(d);

  sg_err err;
  sg_report_src *src = NULL;
  SG_CHECK_OK(sg_report_open(dir, &src, &err), err);
  json_t *one = NULL;
  SG_CHECK_OK(sg_report_candidate_json(src, f.c2, &one, &err), err);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(one, "source")), HOSTILE);
  json_decref(one);
  SG_CHECK_EQ_INT(sg_report_candidate_json(src, 9999, &one, &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "no candidate 9999");
  sg_report_close(src);
  rm_dir(dir);
}

/* ---- the page ----------------------------------------------------------------- */

static void page_escapes_hostile_text_and_holds_no_credentials(void) {
  char *dir = tmp_dir();
  make_run(dir, true);
  sg_err err;
  sg_err_clear(&err);
  char *path = NULL;
  SG_CHECK_OK(sg_report_write(dir, NULL, &path, &err), err);
  char *html = NULL;
  size_t len = 0;
  SG_CHECK_OK(sg_file_read(path, 64 << 20, &html, &len, &err), err);
  SG_CHECK(strstr(path, "/report.html") != NULL);
  SG_CHECK(strstr(html, HOSTILE) == NULL);
  SG_CHECK(strstr(html, "<script>alert") == NULL);
  SG_CHECK(strstr(html, "<img src=x") == NULL);
  /* Exactly the page's own four blocks end: data, details, Chart.js, ours. */
  SG_CHECK_EQ_INT(count(html, "</script>"), 4);
  SG_CHECK_EQ_INT(count(html, "<script"), 4);
  SG_CHECK(strstr(html, "\\u003c/script>\\u003cscript>alert(1)") != NULL);
  SG_CHECK(strstr(html, "s3cret") == NULL);
  SG_CHECK(strstr(html, "http://example.test:8000/v1") != NULL);
  SG_CHECK(strstr(html, "Content-Security-Policy") != NULL);
  free(html);
  free(path);
  rm_dir(dir);
}

static void json_for_script_escapes_every_angle_bracket(void) {
  json_t *v = json_pack("{s:s, s:[s]}", "a", "<b>", "c", "x</script>y<!--");
  char *t = sg_report_json_for_script(v);
  SG_CHECK(strchr(t, '<') == NULL);
  json_t *back = json_loads(t, 0, NULL);
  SG_CHECK(json_equal(v, back));
  json_decref(back);
  json_decref(v);
  free(t);
}

static void urls_lose_their_userinfo(void) {
  static const char *cases[][2] = {
      {"http://u:p@h:1/v1", "http://h:1/v1"},
      {"https://tok@h/x?y=1@2", "https://h/x?y=1@2"},
      {"http://h/a@b", "http://h/a@b"},
      {"no url", "no url"},
      {"http://a@b@h/", "http://h/"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *r = sg_report_redact_url(cases[i][0]);
    SG_CHECK_STR_EQ(r, cases[i][1]);
    free(r);
  }
}

static void missing_chartjs_is_a_clear_error(void) {
  setenv("SPECGEN_CHARTJS", "/nonexistent/chart.js", 1);
  sg_err err;
  sg_err_clear(&err);
  char *path = NULL;
  SG_CHECK_EQ_INT(sg_report_chartjs_path(&path, &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "/nonexistent/chart.js");
  char *html = NULL;
  size_t len;
  SG_CHECK_EQ_INT(sg_report_page(NULL, &html, &len, &err), SG_ENOENT);
  /* A file that would end or bend the script block is refused. */
  char dir[] = "/tmp/sg_report_js_XXXXXX";
  SG_CHECK(mkdtemp(dir) != NULL);
  char *js = sg_asprintf("%s/chart.js", dir);
  SG_CHECK_OK(sg_file_write(js, "var a = '</script>';", 20, &err), err);
  setenv("SPECGEN_CHARTJS", js, 1);
  SG_CHECK_EQ_INT(sg_report_page(NULL, &html, &len, &err), SG_EPARSE);
  SG_CHECK_CONTAINS(err.msg, js);
  SG_CHECK_OK(sg_file_write(js, "var a = 1; // <!--", 18, &err), err);
  SG_CHECK_EQ_INT(sg_report_page(NULL, &html, &len, &err), SG_EPARSE);
  SG_CHECK_OK(sg_file_write(js, "var Chart = 1;", 14, &err), err);
  SG_CHECK_OK(sg_report_page(NULL, &html, &len, &err), err);
  SG_CHECK(strstr(html, "var Chart = 1;") != NULL);
  free(html);
  free(js);
  SG_CHECK_OK(sg_rm_rf(dir, &err), err);
  unsetenv("SPECGEN_CHARTJS");
  if (sg_report_chartjs_path(&path, &err) < 0)
    SG_CHECK_CONTAINS(err.msg, "libjs-chart.js");
  free(path);
}

static void a_directory_without_a_run_is_refused_by_name(void) {
  char *dir = tmp_dir();
  sg_err err;
  sg_err_clear(&err);
  sg_report_src *src = NULL;
  SG_CHECK_EQ_INT(sg_report_open(dir, &src, &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, dir);
  SG_CHECK_CONTAINS(err.msg, "campaign");
  char *p = sg_asprintf("%s/run.db", dir);
  SG_CHECK_OK(sg_file_write(p, "not sqlite at all, not at all, no", 33, &err), err);
  int rc = sg_report_open(dir, &src, &err);
  SG_CHECK(rc == SG_EPARSE);
  SG_CHECK_CONTAINS(err.msg, p);
  free(p);
  rm_dir(dir);
}

/* ---- campaigns ---------------------------------------------------------------- */

static void campaigns_are_saved_by_criterion_and_read_back(void) {
  char *dir = tmp_dir();
  char *sub = sg_asprintf("%s/sim", dir);
  sg_err err;
  sg_err_clear(&err);
  char *path = NULL;
  const char *c = "{\"preset\":\"paper-glm\",\"seed\":1,\"params\":{\"termination\":\"hist-best:3\"},"
                  "\"configs\":[{\"name\":\"baseline\",\"e2e_s\":10}]}";
  SG_CHECK_OK(sg_report_campaign_save(sub, c, &path, &err), err);
  SG_CHECK(strstr(path, "/campaign-paper-glm-hist-best_3.json") != NULL);
  SG_CHECK_EQ_INT(sg_report_campaign_save(sub, "{\"configs\":[]}", NULL, &err), SG_EPARSE);
  sg_report_src *src = NULL;
  SG_CHECK_OK(sg_report_open(sub, &src, &err), err);
  SG_CHECK(sg_report_is_sim(src));
  json_t *d = NULL;
  SG_CHECK_OK(sg_report_data_json(src, true, &d, &err), err);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(d, "kind")), "sim");
  SG_CHECK_EQ_INT(json_array_size(json_object_get(d, "campaigns")), 1);
  json_t *paper = json_object_get(d, "paper");
  SG_CHECK_NEAR(json_number_value(json_object_get(json_object_get(json_object_get(
                    json_object_get(paper, "ablation"), "paper-glm"), "e2e_speedup"), "full")),
                1.77, 1e-9);
  json_decref(d);
  sg_report_close(src);
  /* A damaged campaign file is named. */
  char *bad = sg_asprintf("%s/campaign-x.json", sub);
  SG_CHECK_OK(sg_file_write(bad, "{\"configs\": [", 13, &err), err);
  SG_CHECK_EQ_INT(sg_report_open(sub, &src, &err), SG_EPARSE);
  SG_CHECK_CONTAINS(err.msg, "campaign-x.json");
  free(bad);
  free(path);
  free(sub);
  rm_dir(dir);
}

/* ---- the dashboard ------------------------------------------------------------ */

static size_t on_body(char *p, size_t size, size_t n, void *data) {
  sg_buf_append(data, p, size * n);
  return size * n;
}

/* GET (or another method) url; the body in *body (caller frees). */
static long http(const char *method, const char *url, char **body) {
  CURL *c = curl_easy_init();
  sg_buf b;
  sg_buf_init(&b, 0);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
  long status = 0;
  SG_CHECK(curl_easy_perform(c) == CURLE_OK);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  *body = sg_buf_steal(&b);
  return status;
}

static void dashboard_serves_page_data_and_candidates_read_only(void) {
  char *dir = tmp_dir();
  sg_err err;
  sg_err_clear(&err);
  sg_dashboard *d = NULL;
  SG_CHECK_OK(sg_dashboard_start(dir, "127.0.0.1:0", &d, &err), err);
  const char *base = sg_dashboard_url(d);
  SG_CHECK(strncmp(base, "http://127.0.0.1:", 17) == 0);
  char *url = sg_asprintf("%sdata.json", base), *body = NULL;
  /* No store yet: the page waits. */
  SG_CHECK_EQ_INT(http("GET", url, &body), 503);
  free(body);
  fixture f = make_run(dir, false);
  SG_CHECK_EQ_INT(http("GET", url, &body), 200);
  json_t *j = json_loads(body, 0, NULL);
  SG_CHECK(j != NULL);
  SG_CHECK_EQ_INT(json_array_size(json_object_get(j, "iterations")), 2);
  SG_CHECK(json_object_get(j, "details") == NULL);
  SG_CHECK(strchr(body, '<') == NULL);
  json_int_t v1 = json_integer_value(json_object_get(j, "version"));
  json_decref(j);
  free(body);

  /* A record committed by another connection shows at the next poll. */
  sg_store *s = NULL;
  SG_CHECK_OK(sg_store_open(dir, &s, &err), err);
  int64_t it3;
  SG_CHECK_OK(sg_store_iteration_begin(s, f.wf, 3, 113 * S1, &it3, &err), err);
  sg_store_close(s);
  SG_CHECK_EQ_INT(http("GET", url, &body), 200);
  j = json_loads(body, 0, NULL);
  SG_CHECK_EQ_INT(json_array_size(json_object_get(j, "iterations")), 3);
  SG_CHECK(json_integer_value(json_object_get(j, "version")) != v1);
  json_decref(j);
  free(body);
  free(url);

  SG_CHECK_EQ_INT(http("GET", base, &body), 200);
  SG_CHECK_CONTAINS(body, "data-mode=\"live\"");
  SG_CHECK(strstr(body, "id=\"sg-data\"") == NULL);
  free(body);
  SG_CHECK_EQ_INT(http("POST", base, &body), 405);
  free(body);
  SG_CHECK_EQ_INT(http("DELETE", base, &body), 405);
  free(body);
  url = sg_asprintf("%scandidate/%lld.json", base, (long long)f.c2);
  SG_CHECK_EQ_INT(http("GET", url, &body), 200);
  j = json_loads(body, 0, NULL);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(j, "source")), HOSTILE);
  json_decref(j);
  free(body);
  free(url);
  static const char *missing[] = {"candidate/9999.json", "candidate/abc.json",
                                  "candidate/1", "run.db", "../run.db"};
  for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
    url = sg_asprintf("%s%s", base, missing[i]);
    SG_CHECK_MSG(http("GET", url, &body) == 404, "%s: not 404", missing[i]);
    free(body);
    free(url);
  }
  sg_dashboard_stop(d);
  rm_dir(dir);
}

static void dashboard_addresses_parse_or_are_refused(void) {
  static const struct { const char *in, *host; int port; } ok[] = {
      {"127.0.0.1:8750", "127.0.0.1", 8750}, {":0", "127.0.0.1", 0},
      {"9000", "127.0.0.1", 9000}, {"[::1]:80", "::1", 80}, {"0.0.0.0:1", "0.0.0.0", 1}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    char host[64];
    int port = -1;
    sg_err err;
    SG_CHECK_OK(sg_dashboard_parse_addr(ok[i].in, host, sizeof host, &port, &err), err);
    SG_CHECK_STR_EQ(host, ok[i].host);
    SG_CHECK_EQ_INT(port, ok[i].port);
  }
  static const char *bad[] = {"", "localhost:80", "1.2.3.4:", "1.2.3.4:65536", "x",
                              "1.2.3.4:-1", "runs/x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char host[64];
    int port;
    sg_err err;
    sg_err_clear(&err);
    SG_CHECK_MSG(sg_dashboard_parse_addr(bad[i], host, sizeof host, &port, &err) == SG_EINVAL,
                 "\"%s\" accepted", bad[i]);
    SG_CHECK_CONTAINS(err.msg, "dashboard address");
  }
  sg_err err;
  sg_dashboard *d = NULL;
  SG_CHECK_EQ_INT(sg_dashboard_start("/tmp", "999.1.1.1:1", &d, &err), SG_EINVAL);
}

/* ---- the commands ------------------------------------------------------------- */

static int sh(const char *fmt, const char *a, const char *b) {
  char *cmd = sg_asprintf(fmt, SG_TEST_SPECGEN, a, b);
  int st = system(cmd);
  free(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void report_and_sim_out_commands_write_pages(void) {
  char *dir = tmp_dir();
  make_run(dir, true);
  char *out = sg_asprintf("%s/r.html", dir);
  SG_CHECK_EQ_INT(sh("%s report %s --out %s >/dev/null", dir, out), 0);
  struct stat st;
  SG_CHECK(stat(out, &st) == 0 && st.st_size > 1000);
  SG_CHECK_EQ_INT(sh("%s report %s/nothing%s 2>/dev/null", dir, ""), 2);
  SG_CHECK_EQ_INT(sh("%s report %s --bogus%s 2>/dev/null", dir, ""), 2);
  char *sim = sg_asprintf("%s/sim", dir);
  SG_CHECK_EQ_INT(sh("%s sim --workflows 2 --devices 2 --iterations 3 --configs baseline,full "
                     "--termination first-valid --out %s%s >/dev/null 2>&1", sim, ""), 0);
  char *file = sg_asprintf("%s/campaign-paper-glm-first-valid.json", sim);
  SG_CHECK(stat(file, &st) == 0);
  SG_CHECK_EQ_INT(sh("%s report %s%s >/dev/null", sim, ""), 0);
  free(file);
  file = sg_asprintf("%s/report.html", sim);
  SG_CHECK(stat(file, &st) == 0);
  free(file);
  free(sim);
  free(out);
  rm_dir(dir);
}

SG_TEST_MAIN(SG_TEST(data_holds_every_table_on_the_run_clock),
             SG_TEST(answers_at_cap_are_not_forks),
             SG_TEST(an_open_run_ends_at_its_latest_record),
             SG_TEST(details_hold_sources_messages_and_profiles),
             SG_TEST(page_escapes_hostile_text_and_holds_no_credentials),
             SG_TEST(json_for_script_escapes_every_angle_bracket),
             SG_TEST(urls_lose_their_userinfo),
             SG_TEST(missing_chartjs_is_a_clear_error),
             SG_TEST(a_directory_without_a_run_is_refused_by_name),
             SG_TEST(campaigns_are_saved_by_criterion_and_read_back),
             SG_TEST(dashboard_serves_page_data_and_candidates_read_only),
             SG_TEST(dashboard_addresses_parse_or_are_refused),
             SG_TEST(report_and_sim_out_commands_write_pages))
