/* test_sim_cli.c: `specgen sim` end to end: --json parses and carries the
 * documented fields, the same seed prints the same bytes, bad input exits 2
 * with a message naming the flag, file, line or key. */
#include "sg_test.h"
#include "sim/sg_sim.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Runs specgen with args (a shell word list), capturing stdout and stderr. */
static int run(const char *args, char **out, char **errtext) {
  char errpath[] = "/tmp/sg_sim_cli_err_XXXXXX";
  int fd = mkstemp(errpath);
  SG_CHECK(fd >= 0);
  close(fd);
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "%s sim %s 2>%s", SG_TEST_SPECGEN, args, errpath);
  FILE *p = popen(cmd, "r");
  SG_CHECK(p != NULL);
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  size_t r;
  while ((r = fread(buf + len, 1, cap - len - 1, p)) > 0) {
    len += r;
    if (len + 1 == cap)
      buf = realloc(buf, cap *= 2);
  }
  buf[len] = '\0';
  int st = pclose(p);
  FILE *e = fopen(errpath, "r");
  char *eb = calloc(1, 8192);
  if (e) {
    size_t n = fread(eb, 1, 8191, e);
    eb[n] = '\0';
    fclose(e);
  }
  unlink(errpath);
  *out = buf;
  if (errtext)
    *errtext = eb;
  else
    free(eb);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define SMALL "--workflows 2 --iterations 6 --devices 3"

static void json_has_the_documented_fields(void) {
  char *out;
  SG_CHECK_EQ_INT(run(SMALL " --seed 9 --json", &out, NULL), 0);
  json_error_t je;
  json_t *root = json_loads(out, 0, &je);
  SG_CHECK_MSG(root != NULL, "not JSON: %s", je.text);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(root, "preset")), "paper-glm");
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(root, "seed")), 9);
  json_t *cfgs = json_object_get(root, "configs");
  SG_CHECK_EQ_INT(json_array_size(cfgs), 5);
  const char *names[] = {"baseline", "spec", "spec+realloc", "spec+realloc+priority",
                         "full"};
  for (size_t i = 0; i < 5; i++) {
    json_t *c = json_array_get(cfgs, i);
    SG_CHECK_STR_EQ(json_string_value(json_object_get(c, "name")), names[i]);
    SG_CHECK(json_real_value(json_object_get(c, "e2e_s")) > 0);
    SG_CHECK(json_is_integer(json_object_get(c, "profiling_feedback")));
    double u = json_real_value(json_object_get(c, "utilization"));
    SG_CHECK(u > 0 && u <= 1);
    SG_CHECK(json_is_number(json_object_get(c, "utilization_validation")));
    SG_CHECK(json_is_number(json_object_get(c, "utilization_profiling")));
    json_t *tok = json_object_get(c, "tokens");
    SG_CHECK(json_integer_value(json_object_get(tok, "prompt")) > 0);
    SG_CHECK(json_integer_value(json_object_get(tok, "completion")) > 0);
    SG_CHECK(json_is_integer(json_object_get(tok, "cached")));
    json_int_t pr = json_integer_value(json_object_get(tok, "prompt"));
    json_int_t ca = json_integer_value(json_object_get(tok, "cached"));
    json_int_t co = json_integer_value(json_object_get(tok, "completion"));
    SG_CHECK_EQ_INT(json_integer_value(json_object_get(tok, "uncached")), pr - ca);
    SG_CHECK_EQ_INT(json_integer_value(json_object_get(tok, "consumption")), pr - ca + co);
    SG_CHECK_EQ_INT(json_integer_value(json_object_get(tok, "total")), pr + co);
    SG_CHECK(json_is_number(json_object_get(c, "consumption_ratio_vs_baseline")));
    SG_CHECK(json_is_integer(json_object_get(c, "early_terminations")));
    /* the paper's configurations never leave a main generating */
    SG_CHECK(json_is_integer(json_object_get(c, "detached")));
    SG_CHECK_EQ_INT(json_integer_value(json_object_get(c, "detached")), 0);
    SG_CHECK_EQ_INT(json_integer_value(json_object_get(c, "detached_answers")), 0);
    SG_CHECK(json_is_integer(json_object_get(c, "sibling_waits")));
    SG_CHECK_EQ_INT(json_integer_value(json_object_get(c, "sibling_waits")), 0);
    SG_CHECK(json_is_number(json_object_get(c, "best_speedup")));
    double x = json_real_value(json_object_get(c, "e2e_speedup_vs_baseline"));
    if (i == 0)
      SG_CHECK_NEAR(x, 1.0, 1e-9);
    else
      SG_CHECK(x > 0);
  }
  json_decref(root);
  free(out);
}

static void same_seed_same_output(void) {
  char *a, *b, *c;
  SG_CHECK_EQ_INT(run(SMALL " --seed 3 --json", &a, NULL), 0);
  SG_CHECK_EQ_INT(run(SMALL " --seed 3 --json", &b, NULL), 0);
  SG_CHECK_EQ_INT(run(SMALL " --seed 4 --json", &c, NULL), 0);
  SG_CHECK_STR_EQ(a, b);
  SG_CHECK(strcmp(a, c) != 0);
  free(a);
  free(b);
  free(c);
}

/* --reproduce: every table's cells, each with the paper's value, the
 * simulator's and their ratio; usage errors exit 2. */
static void reproduce_prints_every_table(void) {
  char *out;
  SG_CHECK_EQ_INT(run(SMALL " --reproduce --json", &out, NULL), 0);
  json_error_t je;
  json_t *j = json_loads(out, 0, &je);
  SG_CHECK_MSG(j != NULL, "not JSON: %s", je.text);
  const char *tables[] = {"Table 4", "Table 5", "Table 7", "Table 8", "Table 9"};
  for (size_t t = 0; t < 5; t++) {
    size_t i, n = 0;
    json_t *c;
    json_array_foreach(json_object_get(j, "cells"), i, c) {
      if (strcmp(json_string_value(json_object_get(c, "table")), tables[t]) != 0)
        continue;
      n++;
      double paper = json_number_value(json_object_get(c, "paper"));
      json_t *sim = json_object_get(c, "sim"), *ratio = json_object_get(c, "ratio");
      if (json_is_number(sim) && json_is_number(ratio) && paper != 0)
        SG_CHECK_NEAR(json_number_value(ratio), json_number_value(sim) / paper, 1e-3);
    }
    SG_CHECK_MSG(n >= 3, "%s: %zu cells", tables[t], n);
  }
  json_decref(j);
  free(out);
  SG_CHECK_EQ_INT(run(SMALL " --reproduce", &out, NULL), 0);
  SG_CHECK_CONTAINS(out, "Table 9");
  SG_CHECK_CONTAINS(out, "+remote prefix cache");
  free(out);
  SG_CHECK_EQ_INT(run("--reproduce --configs full", &out, NULL), 2);
  free(out);
}

static void table_and_config_subset(void) {
  char *out;
  SG_CHECK_EQ_INT(run(SMALL " --configs spec,full --preset paper-dsv4", &out, NULL), 0);
  SG_CHECK_CONTAINS(out, "paper-dsv4");
  SG_CHECK_CONTAINS(out, "full");
  SG_CHECK_CONTAINS(out, "spec ");
  SG_CHECK(strstr(out, "\nbaseline") == NULL); /* only what was asked */
  free(out);
}

static void yaml_config_applies_and_flags_override(void) {
  char path[] = "/tmp/sg_sim_cli_XXXXXX.yaml";
  int fd = mkstemps(path, 5);
  SG_CHECK(fd >= 0);
  const char *y = "workflows: 2\niterations: 4\ndevices: 2\nseed: 77\n";
  SG_CHECK(write(fd, y, strlen(y)) == (ssize_t)strlen(y));
  close(fd);
  char args[512], *out;
  snprintf(args, sizeof args, "--config %s --iterations 3 --json --configs baseline", path);
  SG_CHECK_EQ_INT(run(args, &out, NULL), 0);
  json_t *root = json_loads(out, 0, NULL);
  SG_CHECK(root != NULL);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(root, "seed")), 77);
  json_t *c = json_array_get(json_object_get(root, "configs"), 0);
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(c, "iterations")), 6);
  json_decref(root);
  free(out);
  unlink(path);
}

static void bad_input_exits_2_naming_it(void) {
  struct {
    const char *args, *want;
  } cases[] = {
      {"--frobnicate", "--frobnicate"},
      {"--preset paper-gpt", "paper-gpt"},
      {"--set gen.mean_z=3", "gen.mean_z"},
      {"--set valid.main_p=2", "valid.main_p"},
      {"--devices zero", "devices"},
      {"--configs spec,warp", "warp"},
      {"--termination hist-median " SMALL, "hist-median"},
      {"--config /nonexistent/sim.yaml", "/nonexistent/sim.yaml"},
      {"stray", "stray"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *out, *err;
    int rc = run(cases[i].args, &out, &err);
    SG_CHECK_MSG(rc == 2, "%s: exit %d", cases[i].args, rc);
    SG_CHECK_CONTAINS(err, cases[i].want);
    free(out);
    free(err);
  }
}

static void bad_yaml_names_file_line_key(void) {
  char path[] = "/tmp/sg_sim_cli_XXXXXX.yaml";
  int fd = mkstemps(path, 5);
  SG_CHECK(fd >= 0);
  const char *y = "workflows: 2\nval:\n  mean_s: fast\n";
  SG_CHECK(write(fd, y, strlen(y)) == (ssize_t)strlen(y));
  close(fd);
  char args[512], *out, *err;
  snprintf(args, sizeof args, "--config %s", path);
  SG_CHECK_EQ_INT(run(args, &out, &err), 2);
  char want[300];
  snprintf(want, sizeof want, "%s:3:", path);
  SG_CHECK_CONTAINS(err, want);
  SG_CHECK_CONTAINS(err, "val.mean_s");
  free(out);
  free(err);
  unlink(path);
}

/* Whether text has word on its own (not as the start of a longer name:
 * "full+wc" is not named by "full+wcs"). */
static bool names_word(const char *text, const char *word) {
  size_t n = strlen(word);
  for (const char *p = strstr(text, word); p; p = strstr(p + 1, word)) {
    char before = p == text ? ' ' : p[-1], after = p[n];
    if ((before == ' ' || before == ',') && (after == ',' || after == ';' || after == ' ' ||
                                             after == '\n' || after == '\0'))
      return true;
  }
  return false;
}

static void help_and_list_params(void) {
  char *out;
  SG_CHECK_EQ_INT(run("--help", &out, NULL), 0);
  SG_CHECK_CONTAINS(out, "--configs");
  for (int i = 0; i < SG_SIM_VARIANTS_ALL; i++) /* every configuration is named */
    SG_CHECK_MSG(names_word(out, sg_sim_variant_name(i)), "--help does not name %s",
                 sg_sim_variant_name(i));
  free(out);
  SG_CHECK_EQ_INT(run("--list-params --set gen.mean_s=123", &out, NULL), 0);
  SG_CHECK_CONTAINS(out, "gen.mean_s");
  SG_CHECK_CONTAINS(out, "123");
  SG_CHECK_CONTAINS(out, "fault.device_mtbf_s");
  free(out);
}

static void shipped_examples_run(void) {
  const char *files[] = {"sim/examples/faults.yaml", "sim/examples/small-pool.yaml"};
  for (size_t i = 0; i < 2; i++) {
    char args[1024], *out;
    snprintf(args, sizeof args, "--config %s/%s --iterations 3 --configs full --json",
             SG_SOURCE_ROOT, files[i]);
    SG_CHECK_MSG(run(args, &out, NULL) == 0, "%s", files[i]);
    json_t *root = json_loads(out, 0, NULL);
    SG_CHECK(root != NULL);
    json_decref(root);
    free(out);
  }
}

static void table_reports_faults(void) {
  char args[1024], *out;
  snprintf(args, sizeof args, "--config %s/sim/examples/faults.yaml --configs full",
           SG_SOURCE_ROOT);
  SG_CHECK_EQ_INT(run(args, &out, NULL), 0);
  SG_CHECK_CONTAINS(out, "full faults: ");
  SG_CHECK_CONTAINS(out, "devices died");
  free(out);
}

SG_TEST_MAIN(SG_TEST(shipped_examples_run), SG_TEST(table_reports_faults), SG_TEST(json_has_the_documented_fields), SG_TEST(same_seed_same_output),
             SG_TEST(table_and_config_subset), SG_TEST(reproduce_prints_every_table),
             SG_TEST(yaml_config_applies_and_flags_override),
             SG_TEST(bad_input_exits_2_naming_it), SG_TEST(bad_yaml_names_file_line_key),
             SG_TEST(help_and_list_params))
