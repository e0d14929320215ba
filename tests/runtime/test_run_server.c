/* test_run_server.c: a run without an endpoint gets its model server from
 * the caller (sg_run.h, sg_run_server), never starts one itself: no server
 * given is bad input found before anything starts; a server that fails to
 * start fails the run with its own error and is not stopped; one that
 * started is stopped as the run is torn down, even when a later step
 * fails; and with an endpoint the server given is never started.
 */
#include "sg_test.h"

#include "common/sg_alloc.h"
#include "run/sg_run.h"

#include <stdbool.h>
#include <string.h>

typedef struct fake {
  int starts, stops;
  const sg_run_config *cfg; /* what start was given */
  bool fail;
} fake;

static int fake_start(void *data, const sg_run_config *cfg, char **base_url,
                      const char **model, const char **profile, sg_err *err) {
  fake *f = data;
  f->starts++;
  f->cfg = cfg;
  if (f->fail)
    return sg_err_set(err, SG_EIO, "the fake server would not start");
  /* nothing listens here: the run fails after the model, at its store */
  *base_url = sg_strdup("http://127.0.0.1:9");
  *model = "fake-model";
  *profile = "generic";
  return 0;
}

static void fake_stop(void *data) { ((fake *)data)->stops++; }

/* A configuration that loads (a built-in task, one cpu device) and whose
 * run directory cannot be made (below a file): the run stops at its store,
 * after the model started. */
static void config(sg_run_config *c, const char *llm) {
  sg_err err;
  sg_err_clear(&err);
  sg_run_config_init(c);
  const char *kv[][2] = {{"task", "hinge_loss"}, {"devices", "cpu:0"},
                         {"out", "/dev/null/run"}, {"quiet", "true"}};
  for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
    SG_CHECK_OK(sg_run_config_set(c, kv[i][0], kv[i][1], NULL, &err), err);
  if (llm) {
    SG_CHECK_OK(sg_run_config_set(c, "llm", llm, NULL, &err), err);
    SG_CHECK_OK(sg_run_config_set(c, "model", "m", NULL, &err), err);
  }
}

static void on_event(void *data, const json_t *event) {
  (void)data;
  (void)event;
}

static int run(const sg_run_config *c, fake *f, sg_err *err) {
  sg_run_server s = {f, fake_start, fake_stop};
  sg_run_observer obs = {NULL, on_event, NULL};
  sg_run_outcome out;
  sg_err_clear(err);
  int rc = sg_run_execute(c, SG_TEST_SPECGEN, f ? &s : NULL, &obs, &out, err);
  sg_run_outcome_free(&out);
  return rc;
}

static void test_no_server_no_endpoint_is_bad_input(void) {
  sg_run_config c;
  config(&c, NULL);
  sg_err err;
  SG_CHECK_EQ_INT(run(&c, NULL, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "llm: unset, and no model server to start");
  sg_run_config_free(&c);
}

static void test_failed_start_fails_the_run_and_is_not_stopped(void) {
  sg_run_config c;
  config(&c, NULL);
  fake f = {.fail = true};
  sg_err err;
  SG_CHECK_EQ_INT(run(&c, &f, &err), SG_EIO);
  SG_CHECK_STR_EQ(err.msg, "the fake server would not start");
  SG_CHECK_EQ_INT(f.starts, 1);
  SG_CHECK(f.cfg == &c);
  SG_CHECK_EQ_INT(f.stops, 0);
  sg_run_config_free(&c);
}

static void test_started_server_is_stopped_when_a_later_step_fails(void) {
  sg_run_config c;
  config(&c, NULL);
  fake f = {0};
  sg_err err;
  SG_CHECK(run(&c, &f, &err) < 0);
  SG_CHECK_CONTAINS(err.msg, "/dev/null/run");
  SG_CHECK_EQ_INT(f.starts, 1);
  SG_CHECK_EQ_INT(f.stops, 1);
  sg_run_config_free(&c);
}

static void test_endpoint_never_starts_the_server(void) {
  sg_run_config c;
  config(&c, "http://127.0.0.1:9");
  fake f = {0};
  sg_err err;
  SG_CHECK(run(&c, &f, &err) < 0); /* nothing answers there */
  SG_CHECK_EQ_INT(f.starts, 0);
  SG_CHECK_EQ_INT(f.stops, 0);
  sg_run_config_free(&c);
}

SG_TEST_MAIN(SG_TEST(test_no_server_no_endpoint_is_bad_input),
             SG_TEST(test_failed_start_fails_the_run_and_is_not_stopped),
             SG_TEST(test_started_server_is_stopped_when_a_later_step_fails),
             SG_TEST(test_endpoint_never_starts_the_server))
