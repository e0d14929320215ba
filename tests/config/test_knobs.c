/* test_knobs.c: the knob table (config/sg_knobs.h): its defaults agree with
 * the core's own, every row lands in the field it names, the run key table
 * carries every knob with the row's range, every knob's `specgen sim`
 * parameter is read through its row, and docs/configuration.md holds the
 * generated table. */
#include "sg_test.h"

#include "common/sg_file.h"
#include "config/sg_knobs.h"
#include "eval/sg_eval.h"
#include "run/sg_run_config.h"
#include "sim/sg_sim_params.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The knobs at their defaults land as the core's defaults: one default per
 * knob, whichever side builds the options. */
static void test_defaults_are_the_cores(void) {
  sg_knobs k;
  sg_knobs_default(&k);
  sg_ctl_opts want, got;
  sg_ctl_opts_default(&want);
  sg_ctl_opts_default(&got);
  sg_knobs_land(&k, &got, NULL);
  /* every field a row lands in, a new knob's included */
  SG_CHECK_MSG(memcmp(&got, &want, sizeof want) == 0,
               "a knob's default differs from sg_ctl_opts_default's");
  SG_CHECK(got.speculate == want.speculate && got.fork_on_idle == want.fork_on_idle);
  SG_CHECK_EQ_INT(got.max_forks_per_iteration, want.max_forks_per_iteration);
  SG_CHECK_EQ_INT(got.max_live_forks, want.max_live_forks);
  SG_CHECK_EQ_INT(got.max_iterations, want.max_iterations);
  SG_CHECK(got.max_wall_us == want.max_wall_us && got.max_tokens == want.max_tokens);
  SG_CHECK(got.fork_gate == want.fork_gate && got.cutoff == want.cutoff);
  SG_CHECK(got.decide_at_validation == want.decide_at_validation);
  SG_CHECK(!got.cutoff_detach && !got.decide_with_siblings && !got.next_ahead);
  sg_sched_opts sw, sg;
  sg_sched_opts_default(&sw);
  sg_sched_opts_default(&sg);
  sg_knobs_land(&k, NULL, &sg);
  SG_CHECK_MSG(memcmp(&sg, &sw, sizeof sw) == 0,
               "a knob's default differs from sg_sched_opts_default's");
  SG_CHECK(sg.elastic == sw.elastic && sg.work_conserving == sw.work_conserving &&
           sg.split_capacity == sw.split_capacity);
  /* and the run configuration starts from the same */
  sg_run_config c;
  sg_run_config_init(&c);
  SG_CHECK(memcmp(&c.knobs, &k, sizeof k) == 0);
  sg_run_config_free(&c);
}

/* Each row, set apart from its default, changes what it lands in and
 * nothing else of the options. */
static void test_every_row_lands(void) {
  size_t n;
  const sg_knob *t = sg_knobs_table(&n);
  for (size_t i = 0; i < n; i++) {
    if (t[i].land == SG_LAND_NONE) {
      SG_CHECK_MSG(t[i].land_note && *t[i].land_note, "%s: says who applies it", t[i].name);
      continue;
    }
    sg_knobs k;
    sg_knobs_default(&k);
    /* on/off flipped, a number at its maximum (token-budget: any) */
    double v = t[i].type == SG_KNOB_BOOL ? !sg_knobs_get(&k, &t[i])
               : t[i].type == SG_KNOB_U64 ? 12345
                                          : t[i].max;
    sg_knobs_put(&k, &t[i], v);
    sg_ctl_opts o0, o1;
    sg_sched_opts s0, s1;
    sg_knobs d;
    sg_knobs_default(&d);
    sg_ctl_opts_default(&o0);
    sg_sched_opts_default(&s0);
    sg_knobs_land(&d, &o0, &s0);
    memcpy(&o1, &o0, sizeof o0);
    memcpy(&s1, &s0, sizeof s0);
    sg_knobs_land(&k, &o1, &s1);
    bool ctl_moved = memcmp(&o0, &o1, sizeof o0) != 0;
    bool sched_moved = memcmp(&s0, &s1, sizeof s0) != 0;
    SG_CHECK_MSG(t[i].land == SG_LAND_SCHED ? sched_moved && !ctl_moved
                                            : ctl_moved && !sched_moved,
                 "%s: does not land where its row says", t[i].name);
  }
}

/* The conversions of the FN rows. */
static void test_budgets_convert(void) {
  sg_knobs k;
  sg_knobs_default(&k);
  k.iterations = 100000;
  k.time_budget = 14400.5;
  sg_ctl_opts o;
  sg_ctl_opts_default(&o);
  sg_knobs_land(&k, &o, NULL);
  SG_CHECK_EQ_INT(o.max_iterations, 100000);
  SG_CHECK(o.max_wall_us == 14400500000LL);
  /* rounded, not cut: 2.7 us is 3 */
  k.time_budget = 2.7e-6;
  sg_knobs_land(&k, &o, NULL);
  SG_CHECK(o.max_wall_us == 3);
  /* a budget under a microsecond is one, not none (0) */
  k.time_budget = 1e-7;
  sg_knobs_land(&k, &o, NULL);
  SG_CHECK(o.max_wall_us == 1);
  k.time_budget = 0;
  sg_knobs_land(&k, &o, NULL);
  SG_CHECK(o.max_wall_us == 0);
}

/* The run configuration has every knob as a key with the row's type and
 * range, at the row's field. */
static void test_run_keys_are_the_rows(void) {
  size_t n;
  const sg_knob *t = sg_knobs_table(&n);
  for (size_t i = 0; i < n; i++) {
    const sg_run_key *k = sg_run_key_find(t[i].name);
    SG_CHECK_MSG(k != NULL, "knob %s is not a run key", t[i].name);
    SG_CHECK_MSG(k->offset == offsetof(sg_run_config, knobs) + t[i].offset,
                 "knob %s: the run key is another field", t[i].name);
    SG_CHECK(k->min == t[i].min && k->max == t[i].max && k->flags == t[i].flags);
  }
}

/* The value the row's range ends at, as text: what both commands accept. */
static void top_value(const sg_knob *r, char *buf, size_t n) {
  if (r->type == SG_KNOB_BOOL)
    snprintf(buf, n, "on");
  else if (r->type == SG_KNOB_U64)
    snprintf(buf, n, "18446744073709551615");
  else
    snprintf(buf, n, "%.17g", r->max);
}

/* A row whose sim column says "--set KEY" is the sim's parameter KEY: listed
 * once, set into the row's field through the row's parser, and refused out
 * of the row's range with the words `specgen run` uses for its flag. Any
 * other row says which configurations switch it, "on", or "none: why". */
static void test_sim_parameters_are_the_rows(void) {
  size_t n;
  const sg_knob *t = sg_knobs_table(&n);
  size_t keyed = 0;
  for (size_t i = 0; i < n; i++) {
    char key[64], top[64];
    if (!sg_knob_sim_key(&t[i], key, sizeof key)) {
      SG_CHECK_MSG(strncmp(t[i].sim, "configurations", 14) == 0 ||
                       strncmp(t[i].sim, "every", 5) == 0 || strcmp(t[i].sim, "on") == 0 ||
                       strncmp(t[i].sim, "none: ", 6) == 0,
                   "knob %s: sim column \"%s\" is neither \"--set KEY\" nor a "
                   "configuration",
                   t[i].name, t[i].sim);
      continue;
    }
    keyed++;
    size_t found = 0;
    for (size_t j = 0; j < sg_sim_param_count(); j++)
      found += strcmp(sg_sim_param_get(j)->key, key) == 0;
    SG_CHECK_MSG(found == 1, "knob %s: sim parameter \"%s\" listed %zu times", t[i].name,
                 key, found);
    sg_sim_params p;
    sg_err err;
    sg_err_clear(&err);
    SG_CHECK_OK(sg_sim_params_preset(&p, "paper-glm", &err), err);
    top_value(&t[i], top, sizeof top);
    SG_CHECK_OK(sg_sim_params_set(&p, key, top, &err), err);
    double want = t[i].type == SG_KNOB_BOOL  ? 1
                  : t[i].type == SG_KNOB_U64 ? (double)UINT64_MAX
                                             : t[i].max;
    SG_CHECK_MSG(sg_knobs_get(&p.knobs, &t[i]) == want,
                 "knob %s: --set %s=%s does not land in its field", t[i].name, key, top);
    /* out of range: the run's words after the key */
    const char *bad = t[i].type == SG_KNOB_BOOL ? "maybe" : "-2";
    SG_CHECK_EQ_INT(sg_sim_params_set(&p, key, bad, &err), SG_EINVAL);
    char sim_msg[SG_ERR_MSG_MAX];
    snprintf(sim_msg, sizeof sim_msg, "%s", err.msg);
    sg_run_config c;
    sg_run_config_init(&c);
    SG_CHECK_EQ_INT(sg_run_config_set(&c, t[i].name, bad, NULL, &err), SG_EINVAL);
    sg_run_config_free(&c);
    const char *tail = strstr(err.msg, "expected");
    SG_CHECK_MSG(tail && strstr(sim_msg, tail) != NULL, "knob %s: sim says \"%s\", run \"%s\"",
                 t[i].name, sim_msg, err.msg);
  }
  SG_CHECK(keyed > 0);
}

/* The evaluation timeout has one default, the row's: the run's, the
 * evaluators' and what a 0 stands for on the way. */
static void test_one_evaluation_timeout(void) {
  sg_knobs k;
  sg_knobs_default(&k);
  SG_CHECK(k.eval_timeout == SG_EVAL_TIMEOUT_S);
  sg_eval_opts eo;
  sg_eval_opts_default(&eo);
  SG_CHECK(eo.eval_timeout == SG_EVAL_TIMEOUT_S);
  eo.eval_timeout = 0;
  SG_CHECK(sg_eval_timeout(&eo) == SG_EVAL_TIMEOUT_S);
  const sg_run_key *rk = sg_run_key_find("eval-timeout");
  SG_CHECK(rk != NULL && rk->offset == offsetof(sg_run_config, knobs) +
                                           offsetof(sg_knobs, eval_timeout));
}

#define BEGIN "<!-- knobs: generated from src/config/sg_knobs.h -->\n"
#define END "<!-- /knobs -->\n"

/* docs/configuration.md holds sg_knobs_doc's table between its markers. */
static void test_docs_hold_the_table(void) {
  char *doc = NULL, *want = NULL;
  size_t wlen = 0;
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_file_read(SG_SOURCE_ROOT "/docs/configuration.md", 1 << 20, &doc, NULL,
                           &err),
              err);
  FILE *f = open_memstream(&want, &wlen);
  SG_CHECK(f != NULL);
  sg_knobs_doc(f);
  fclose(f);
  const char *a = strstr(doc, BEGIN), *b = strstr(doc, END);
  SG_CHECK_MSG(a && b && b > a, "docs/configuration.md: no knobs markers");
  a += strlen(BEGIN);
  SG_CHECK_MSG((size_t)(b - a) == wlen && memcmp(a, want, wlen) == 0,
               "docs/configuration.md: the knobs table differs from the rows; it "
               "should read:\n%s",
               want);
  free(want);
  free(doc);
}

SG_TEST_MAIN(SG_TEST(test_defaults_are_the_cores), SG_TEST(test_every_row_lands),
             SG_TEST(test_budgets_convert), SG_TEST(test_run_keys_are_the_rows),
             SG_TEST(test_sim_parameters_are_the_rows), SG_TEST(test_one_evaluation_timeout),
             SG_TEST(test_docs_hold_the_table))
