/* test_sim_params.c: presets, --set and YAML configuration of the simulator:
 * values land in the right fields, and every error names the file, the line
 * and the key. */
#include "sg_test.h"
#include "sim_test_preset.h"
#include "sim/sg_sim_params.h"

#include <math.h>
#include <stdio.h>
#include <unistd.h>

static sg_sim_params glm(void) { return sim_test_preset("paper-glm"); }

static void presets_hold_the_papers_characterization(void) {
  sg_sim_params p = glm(), d;
  sg_err err;
  SG_CHECK_NEAR(p.gen_mean_s, 706.9, 1e-9);
  SG_CHECK_NEAR(p.val_mean_s, 22.9, 1e-9);
  SG_CHECK_NEAR(p.prof_mean_s, 26.5, 1e-9);
  SG_CHECK_NEAR(p.valid_main_p, 0.363, 1e-9);
  SG_CHECK_NEAR(p.valid_threshold_min, 0.14, 1e-9);
  SG_CHECK_NEAR(p.valid_threshold_max, 0.70, 1e-9);
  SG_CHECK_EQ_INT(p.workflows, 10);
  SG_CHECK_EQ_INT(p.devices, 10);
  SG_CHECK_EQ_INT(p.knobs.iterations, 100);
  SG_CHECK_STR_EQ(p.termination, "hist-avg");
  SG_CHECK_OK(sg_sim_params_preset(&d, "paper-dsv4", &err), err);
  SG_CHECK_NEAR(d.gen_mean_s, 522.6, 1e-9);
  SG_CHECK_NEAR(d.val_mean_s, 59.0, 1e-9);
  SG_CHECK_NEAR(d.prof_mean_s, 26.6, 1e-9);
  SG_CHECK_NEAR(d.valid_main_p, 0.407, 1e-9);
  /* Table 2: no valid kernel in 100 forks without the reasoning prefix on
   * 8 of 10 tasks (GLM), 4 of 10 (DSv4) */
  SG_CHECK_NEAR(pow(1 - p.valid_no_prefix_p, 100), 0.8, 0.02);
  SG_CHECK_NEAR(pow(1 - d.valid_no_prefix_p, 100), 0.4, 0.02);
  SG_CHECK_OK(sg_sim_params_validate(&p, &err), err);
  SG_CHECK_OK(sg_sim_params_validate(&d, &err), err);
  SG_CHECK_EQ_INT(sg_sim_params_preset(&d, "paper-gpt", &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "paper-gpt");
}

static void set_parses_and_range_checks(void) {
  sg_sim_params p = glm();
  sg_err err;
  SG_CHECK_OK(sg_sim_params_set(&p, "gen.mean_s", "600.5", &err), err);
  SG_CHECK_NEAR(p.gen_mean_s, 600.5, 1e-12);
  SG_CHECK_OK(sg_sim_params_set_kv(&p, "devices=4", &err), err);
  SG_CHECK_EQ_INT(p.devices, 4);
  SG_CHECK_OK(sg_sim_params_set_kv(&p, "termination=first-valid", &err), err);
  SG_CHECK_STR_EQ(p.termination, "first-valid");
  SG_CHECK_OK(sg_sim_params_set_kv(&p, "seed=12345678901", &err), err);
  SG_CHECK(p.seed == 12345678901ull);

  SG_CHECK_EQ_INT(sg_sim_params_set(&p, "gen.mean", "1", &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "gen.mean");
  SG_CHECK_EQ_INT(sg_sim_params_set(&p, "valid.main_p", "1.5", &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "valid.main_p");
  SG_CHECK_EQ_INT(sg_sim_params_set(&p, "devices", "4x", &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "devices");
  SG_CHECK_EQ_INT(sg_sim_params_set(&p, "devices", "0", &err), SG_EINVAL);
  SG_CHECK_EQ_INT(sg_sim_params_set(&p, "gen.cv", "nan", &err), SG_EINVAL);
  SG_CHECK_EQ_INT(sg_sim_params_set(&p, "seed", "-1", &err), SG_EINVAL);
  SG_CHECK_EQ_INT(sg_sim_params_set(&p, "seed", "9223372036854775808", &err), SG_EINVAL);
  SG_CHECK_OK(sg_sim_params_set(&p, "seed", "9223372036854775807", &err), err);
  SG_CHECK_EQ_INT(sg_sim_params_set_kv(&p, "noequals", &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "key=value");
  /* A failed set leaves the value alone. */
  SG_CHECK_EQ_INT(p.devices, 4);
}

static void preset_key_resets_but_keeps_the_seed(void) {
  sg_sim_params p = glm();
  sg_err err;
  p.seed = 99;
  p.devices = 3;
  SG_CHECK_OK(sg_sim_params_set(&p, "preset", "paper-dsv4", &err), err);
  SG_CHECK_EQ_INT(p.devices, 10);
  SG_CHECK_NEAR(p.gen_mean_s, 522.6, 1e-9);
  SG_CHECK(p.seed == 99);
}

static void validate_names_the_fields(void) {
  sg_sim_params p = glm();
  sg_err err;
  p.valid_threshold_min = 0.8;
  SG_CHECK_EQ_INT(sg_sim_params_validate(&p, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "valid.threshold_min");
  p = glm();
  p.fail_compile_w = p.fail_runtime_w = p.fail_numerical_w = 0;
  SG_CHECK_EQ_INT(sg_sim_params_validate(&p, &err), SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "fail.compile_w");
}

static void yaml_nested_and_dotted_keys(void) {
  sg_sim_params p = glm();
  sg_err err;
  const char *y = "preset: paper-dsv4\n"
                  "workflows: 3\n"
                  "gen:\n"
                  "  mean_s: 400\n"
                  "  cv: 0.1\n"
                  "valid.main_p: 0.5\n"
                  "fault:\n"
                  "  device_mtbf_s: 3600\n"
                  "termination: hist-best\n";
  SG_CHECK_OK(sg_sim_params_load_yaml_string(&p, y, strlen(y), "t.yaml", &err), err);
  SG_CHECK_STR_EQ(p.preset, "paper-dsv4");
  SG_CHECK_EQ_INT(p.workflows, 3);
  SG_CHECK_NEAR(p.gen_mean_s, 400, 1e-12);
  SG_CHECK_NEAR(p.gen_cv, 0.1, 1e-12);
  SG_CHECK_NEAR(p.valid_main_p, 0.5, 1e-12);
  SG_CHECK_NEAR(p.fault_device_mtbf_s, 3600, 1e-12);
  SG_CHECK_NEAR(p.val_mean_s, 59.0, 1e-12); /* from the preset */
  SG_CHECK_STR_EQ(p.termination, "hist-best");
}

static void yaml_errors_name_file_line_and_key(void) {
  struct {
    const char *text, *want1, *want2;
  } cases[] = {
      {"workflows: 3\ngen:\n  mean_z: 4\n", "t.yaml:3:", "gen.mean_z"},
      {"workflows: 3\n\ngen:\n  cv: lots\n", "t.yaml:4:", "gen.cv"},
      {"devices: [1, 2]\n", "t.yaml:1:", "devices"},
      {"workflows: 2\npreset: paper-glm\n", "t.yaml:2:", "preset"},
      {"workflows: 3\n  bad indent: [\n", "t.yaml:", "t.yaml"},
      {"- 1\n- 2\n", "t.yaml:1:", "lists"},
      {"just a scalar\n", "t.yaml:1:", "mapping"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sg_sim_params p = glm();
    sg_err err;
    sg_err_clear(&err);
    int rc = sg_sim_params_load_yaml_string(&p, cases[i].text, strlen(cases[i].text),
                                            "t.yaml", &err);
    SG_CHECK_MSG(rc < 0, "case %zu accepted", i);
    SG_CHECK_CONTAINS(err.msg, cases[i].want1);
    SG_CHECK_CONTAINS(err.msg, cases[i].want2);
  }
}

static void yaml_file_and_missing_file(void) {
  char path[] = "/tmp/sg_sim_params_XXXXXX.yaml";
  int fd = mkstemps(path, 5);
  SG_CHECK(fd >= 0);
  const char *y = "iterations: 7\nspec:\n  answer_tokens: 900\n";
  SG_CHECK(write(fd, y, strlen(y)) == (ssize_t)strlen(y));
  close(fd);
  sg_sim_params p = glm();
  sg_err err;
  SG_CHECK_OK(sg_sim_params_load_yaml(&p, path, &err), err);
  SG_CHECK_EQ_INT(p.knobs.iterations, 7);
  SG_CHECK_NEAR(p.spec_answer_tokens, 900, 1e-12);
  unlink(path);
  SG_CHECK(sg_sim_params_load_yaml(&p, path, &err) < 0);
  SG_CHECK_CONTAINS(err.msg, path);
}

static void every_key_round_trips(void) {
  /* Formatting a value and setting it back gives the same configuration:
   * the table covers every field with a working parser. */
  sg_sim_params p = glm(), q;
  sg_err err;
  p.gen_mean_s = 123.456789;
  p.seed = 77;
  memset(&q, 0, sizeof q);
  SG_CHECK_OK(sg_sim_params_preset(&q, "paper-dsv4", &err), err);
  for (size_t i = 0; i < sg_sim_param_count(); i++) {
    char buf[128];
    const char *key = sg_sim_param_get(i)->key;
    if (strcmp(key, "preset") == 0)
      continue;
    sg_sim_param_format(&p, i, buf, sizeof buf);
    SG_CHECK_OK(sg_sim_params_set(&q, key, buf, &err), err);
    SG_CHECK(sg_sim_param_get(i)->doc[0] != '\0');
  }
  snprintf(q.preset, sizeof q.preset, "%s", p.preset);
  SG_CHECK(memcmp(&p, &q, sizeof p) == 0);
}

SG_TEST_MAIN(SG_TEST(presets_hold_the_papers_characterization),
             SG_TEST(set_parses_and_range_checks),
             SG_TEST(preset_key_resets_but_keeps_the_seed),
             SG_TEST(validate_names_the_fields), SG_TEST(yaml_nested_and_dotted_keys),
             SG_TEST(yaml_errors_name_file_line_and_key),
             SG_TEST(yaml_file_and_missing_file), SG_TEST(every_key_round_trips))
