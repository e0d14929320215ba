/* test_sim_streams.c: the measured stream model (sim/streams, compiled
 * in): the profiles load and hold what the measurement wrote, bad files
 * are named with their field, and a campaign that loads one plants the
 * triggers it says, where it says, with the first kernel as the prefix
 * past which a fork can be valid. */
#include "sg_test.h"
#include "sim_test_preset.h"
#include "sim/sg_sim.h"
#include "sim/sg_sim_params.h"
#include "sim/sg_sim_streams.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static sg_sim_params glm(void) { return sim_test_preset("paper-glm"); }

static void builtins_hold_the_measurement(void) {
  sg_sim_streams st;
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_sim_streams_load("qwq32b", &st, &err), err);
  /* sim/streams/qwq32b.json: 961 traces, median 23 triggers at the
   * controller's gap, first kernel at 43% (median), 11.03% without one */
  SG_CHECK_NEAR(sg_sim_qf_at(&st.triggers, 0.5), 23, 1e-9);
  SG_CHECK_NEAR(sg_sim_qf_at(&st.first_kernel, 0.5), 0.4314, 1e-9);
  SG_CHECK_NEAR(st.share_without_kernel, 0.1103, 1e-9);
  SG_CHECK(sg_sim_qf_at(&st.trigger_pos, 0.0) >= 0);
  SG_CHECK(sg_sim_qf_at(&st.trigger_pos, 1.0) <= 1);
  SG_CHECK_OK(sg_sim_streams_load("gptoss120b", &st, &err), err);
  SG_CHECK_NEAR(st.share_without_kernel, 0.7416, 1e-9);
  SG_CHECK_NEAR(sg_sim_qf_at(&st.triggers, 0.5), 3, 1e-9);
  /* The presets load QwQ-32B's. */
  sg_sim_params p = glm();
  SG_CHECK_STR_EQ(p.stream_profile, "qwq32b");
  SG_CHECK(sg_sim_streams_none("none"));
  SG_CHECK(!sg_sim_streams_none("qwq32b"));
}

static void quantile_function_interpolates(void) {
  sg_sim_qf qf;
  for (int i = 0; i < SG_SIM_QUANTILES; i++)
    qf.q[i] = 2.0 * i;
  SG_CHECK_NEAR(sg_sim_qf_at(&qf, 0.0), 0, 1e-12);
  SG_CHECK_NEAR(sg_sim_qf_at(&qf, 0.005), 1.0, 1e-9);
  SG_CHECK_NEAR(sg_sim_qf_at(&qf, 0.5), 100, 1e-9);
  SG_CHECK_NEAR(sg_sim_qf_at(&qf, 1.0), 200, 1e-12);
  SG_CHECK_NEAR(sg_sim_qf_at(&qf, 7.0), 200, 1e-12); /* clamped */
}

/* A profile's JSON: every quantile of each distribution the same value,
 * except positions spread evenly over [0.05, 0.95]. */
static char *profile_json(double triggers, double first_kernel, double without) {
  char *buf = malloc(16384);
  size_t n = 0;
  const char *keys[] = {"triggers_per_trace_at_controller_gap",
                        "trigger_position_fraction_at_controller_gap",
                        "first_kernel_fraction"};
  n += (size_t)snprintf(buf + n, 16384 - n, "{\"share_without_kernel\": %g", without);
  for (int k = 0; k < 3; k++) {
    n += (size_t)snprintf(buf + n, 16384 - n, ", \"%s\": {\"quantiles\": [", keys[k]);
    for (int i = 0; i < SG_SIM_QUANTILES; i++) {
      double v = k == 0 ? triggers : k == 1 ? 0.05 + 0.9 * i / 100.0 : first_kernel;
      n += (size_t)snprintf(buf + n, 16384 - n, "%s%g", i ? "," : "", v);
    }
    n += (size_t)snprintf(buf + n, 16384 - n, "]}");
  }
  snprintf(buf + n, 16384 - n, "}");
  return buf;
}

static void bad_profiles_are_named(void) {
  sg_sim_streams st;
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK(sg_sim_streams_load("llama", &st, &err) == SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "llama");
  SG_CHECK_CONTAINS(err.msg, "qwq32b");
  const char *bad = "{\"share_without_kernel\": 0.1}";
  SG_CHECK(sg_sim_streams_parse(bad, strlen(bad), "p.json", &st, &err) == SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "p.json");
  SG_CHECK_CONTAINS(err.msg, "triggers_per_trace_at_controller_gap");
  SG_CHECK(sg_sim_streams_parse("{", 1, "q.json", &st, &err) == SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "q.json:1");
  char *j = profile_json(3, 0.5, 1.5);
  SG_CHECK(sg_sim_streams_parse(j, strlen(j), "r.json", &st, &err) == SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "share_without_kernel");
  free(j);
  j = profile_json(3, 1.5, 0.1); /* a fraction past 1 */
  SG_CHECK(sg_sim_streams_parse(j, strlen(j), "s.json", &st, &err) == SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "first_kernel_fraction.quantiles[0]");
  free(j);
  /* The parameter is checked when the configuration is. */
  sg_sim_params p = glm();
  SG_CHECK_OK(sg_sim_params_set(&p, "stream.profile", "nope", &err), err);
  SG_CHECK(sg_sim_params_validate(&p, &err) == SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "stream.profile");
}

/* Writes a profile to a temporary .json file; path gets its name. */
static void write_profile(char path[64], double triggers, double first_kernel,
                          double without) {
  snprintf(path, 64, "/tmp/sg_sim_streams_XXXXXX.json");
  int fd = mkstemps(path, 5);
  SG_CHECK(fd >= 0);
  char *j = profile_json(triggers, first_kernel, without);
  SG_CHECK(write(fd, j, strlen(j)) == (ssize_t)strlen(j));
  close(fd);
  free(j);
}

typedef struct counts {
  long decisions; /* fork decisions at a trigger */
} counts;

static void count_line(void *data, const char *line) {
  counts *c = data;
  if (strstr(line, "decision fork_trigger") != NULL)
    c->decisions++;
}

/* A campaign where every main runs to its end and every trigger can
 * fork: idle forks off, no criterion, no fork budget. */
static sg_sim_params open_campaign(const char *profile) {
  sg_sim_params p = glm();
  snprintf(p.stream_profile, sizeof p.stream_profile, "%s", profile);
  snprintf(p.termination, sizeof p.termination, "none");
  p.workflows = 4;
  p.devices = 8;
  p.knobs.iterations = 25;
  p.idle_min_new_tokens = 1e12;
  p.knobs.llm_streams = 0;
  return p;
}

static sg_sim_result run_counted(const sg_sim_params *p, counts *c) {
  sg_sim_variant v;
  sg_sim_result r;
  sg_err err;
  sg_err_clear(&err);
  memset(c, 0, sizeof *c);
  SG_CHECK_OK(sg_sim_variant_parse("full", &v, &err), err);
  SG_CHECK_OK(sg_sim_run_traced(p, &v, count_line, c, &r, &err), err);
  return r;
}

static void campaigns_plant_what_the_profile_says(void) {
  char path[64];
  counts c;
  /* Ten triggers per trace: the controller's scanner fires on each (the
   * measurement counted them at its gap; the compressed text must not
   * drop them), so ten fork decisions per main generation. */
  write_profile(path, 10, 0.5, 0.0);
  sg_sim_params p = open_campaign(path);
  sg_sim_result r = run_counted(&p, &c);
  SG_CHECK_EQ_INT(r.workflows_done, (uint64_t)p.workflows);
  double per_main = (double)c.decisions / (double)r.main_gens;
  printf("# ten planted: %.2f fork decisions at triggers per main\n", per_main);
  SG_CHECK_MSG(per_main > 9.5 && per_main <= 10.0, "%.2f decisions per main", per_main);
  unlink(path);
  /* The built-in QwQ-32B profile: its measured mean, 24.69 a trace. */
  p = open_campaign("qwq32b");
  r = run_counted(&p, &c);
  per_main = (double)c.decisions / (double)r.main_gens;
  printf("# qwq32b: %.2f fork decisions at triggers per main (measured 24.69)\n", per_main);
  SG_CHECK_MSG(per_main > 24.69 * 0.9 && per_main < 24.69 * 1.1, "%.2f decisions per main",
               per_main);
}

static void first_kernel_is_the_useful_prefix(void) {
  char path[64];
  counts c;
  /* Every trace holds a kernel at 0.3 of its reasoning: forks before it
   * are never valid (valid.no_prefix_p 0), after it always (spec_p 1). */
  write_profile(path, 10, 0.3, 0.0);
  sg_sim_params p = open_campaign(path);
  p.valid_spec_p = 1.0;
  p.valid_no_prefix_p = 0.0;
  sg_sim_result r = run_counted(&p, &c);
  SG_CHECK(r.spec_validated > 50);
  SG_CHECK(r.spec_valid > 0);
  SG_CHECK(r.spec_valid < r.spec_validated);
  /* About 0.3 of the planted triggers (spread over 0.05-0.95) come
   * before it, 0.7 after (the kernel's own trigger among them). */
  double share = (double)r.spec_valid / (double)r.spec_validated;
  printf("# a kernel at 0.3: %.3f of the forks valid\n", share);
  SG_CHECK_MSG(share > 0.6 && share < 0.85, "share valid %.3f", share);
  unlink(path);
  /* No trace holds a kernel: no fork is valid. */
  write_profile(path, 10, 0.3, 1.0);
  snprintf(p.stream_profile, sizeof p.stream_profile, "%s", path);
  r = run_counted(&p, &c);
  SG_CHECK(r.spec_validated > 50);
  SG_CHECK_EQ_INT(r.spec_valid, 0);
  unlink(path);
  /* The guessed model ignores the profile's fields, as before. */
  snprintf(p.stream_profile, sizeof p.stream_profile, "none");
  p.valid_threshold_min = p.valid_threshold_max = 0.0;
  p.valid_prefix_useful_p = 1.0;
  r = run_counted(&p, &c);
  SG_CHECK(r.spec_validated > 20);
  SG_CHECK_EQ_INT(r.spec_valid, r.spec_validated);
}

SG_TEST_MAIN(SG_TEST(builtins_hold_the_measurement), SG_TEST(quantile_function_interpolates),
             SG_TEST(bad_profiles_are_named), SG_TEST(campaigns_plant_what_the_profile_says),
             SG_TEST(first_kernel_is_the_useful_prefix))
