/* test_termination.c: the termination criteria, their registry and the
 * speedup history they decide on. */
#include "core/sg_termination.h"

#include "sg_test.h"

#include <math.h>
#include <stdlib.h>

/* Builds a history from a list (the leading 0 is added by init). */
static void history_of(sg_speedup_history *h, const double *v, size_t n) {
  sg_speedup_history_init(h);
  for (size_t i = 0; i < n; i++)
    sg_speedup_history_add(h, v[i]);
}

static bool ask(const char *spec, const double *hist, size_t n,
                double speedup) {
  sg_termination_registry reg;
  sg_termination_registry_init(&reg);
  sg_termination *t = NULL;
  sg_err err;
  sg_err_clear(&err);
  if (sg_termination_new(&reg, spec, &t, &err) != 0)
    SG_FAIL("new(%s): %s", spec, err.msg);
  sg_speedup_history h;
  history_of(&h, hist, n);
  sg_termination_history view = sg_speedup_history_view(&h);
  bool r = sg_termination_decide(t, &view, speedup);
  sg_speedup_history_free(&h);
  sg_termination_free(t);
  return r;
}

static void test_history_starts_at_zero(void) {
  sg_speedup_history h;
  sg_speedup_history_init(&h);
  sg_termination_history v = sg_speedup_history_view(&h);
  SG_CHECK_EQ_INT(v.n, 1);
  SG_CHECK_NEAR(v.speedups[0], 0.0, 0);
  SG_CHECK_NEAR(v.mean, 0.0, 0);
  SG_CHECK_NEAR(v.best, 0.0, 0);
  sg_speedup_history_add(&h, 2.0);
  sg_speedup_history_add(&h, 1.0);
  v = sg_speedup_history_view(&h);
  SG_CHECK_EQ_INT(v.n, 3);
  SG_CHECK_NEAR(v.mean, 1.0, 1e-12);
  SG_CHECK_NEAR(v.best, 2.0, 0);
  for (int i = 0; i < 100; i++) /* growth keeps the sums */
    sg_speedup_history_add(&h, 3.0);
  v = sg_speedup_history_view(&h);
  SG_CHECK_EQ_INT(v.n, 103);
  SG_CHECK_NEAR(v.mean, 303.0 / 103.0, 1e-12);
  SG_CHECK_NEAR(v.best, 3.0, 0);
  sg_speedup_history_free(&h);
}

typedef struct row {
  const char *spec;
  double hist[4];
  size_t n;
  double speedup;
  bool want;
} row;

/* Every built-in at its boundary: equal to the threshold does not win. */
static void test_builtins_table(void) {
  static const row rows[] = {
      {"first-valid", {0}, 0, 0.01, true},
      {"first-valid", {5, 6}, 2, 0.5, true},
      {"hist-avg", {0}, 0, 0.01, true},       /* {0}: anything > 0 wins */
      {"hist-avg", {0}, 0, 0.0, false},
      {"hist-avg", {1, 2}, 2, 1.0, false},    /* mean {0,1,2} = 1 */
      {"hist-avg", {1, 2}, 2, 1.0001, true},
      {"hist-avg", {3, 3}, 2, 2.5, true},     /* mean 2 < 2.5 < best 3 */
      {"hist-best", {3, 3}, 2, 2.5, false},
      {"hist-best", {3, 3}, 2, 3.0, false},
      {"hist-best", {3, 3}, 2, 3.01, true},
      {"hist-best", {0}, 0, 0.5, true},
      {"none", {0}, 0, 100.0, false},
      {"none", {1}, 1, 1e9, false},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const row *r = &rows[i];
    bool got = ask(r->spec, r->hist, r->n, r->speedup);
    SG_CHECK_MSG(got == r->want, "row %zu: %s speedup %g: got %d want %d", i,
                 r->spec, r->speedup, got, r->want);
  }
}

static void test_nan_speedup_never_terminates(void) {
  SG_CHECK(!ask("first-valid", NULL, 0, NAN));
  SG_CHECK(!ask("hist-avg", NULL, 0, NAN));
}

static void test_unknown_name_lists_known(void) {
  sg_termination_registry reg;
  sg_termination_registry_init(&reg);
  sg_termination *t = NULL;
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_EQ_INT(sg_termination_new(&reg, "hist-median", &t, &err),
                  SG_ENOENT);
  SG_CHECK(t == NULL);
  SG_CHECK_CONTAINS(err.msg, "hist-median");
  SG_CHECK_CONTAINS(err.msg, "hist-avg");
  SG_CHECK_CONTAINS(err.msg, "first-valid");
  SG_CHECK_EQ_INT(sg_termination_new(&reg, "", &t, &err), SG_EINVAL);
  /* built-ins take no argument */
  SG_CHECK_EQ_INT(sg_termination_new(&reg, "hist-avg:2", &t, &err),
                  SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "hist-avg");
}

/* ---- a user plugin: "above-ratio:R" wins above R * best ---------------- */

static int ratio_frees;

static int ratio_init(void **state, const char *arg, sg_err *err) {
  if (arg == NULL)
    return sg_err_set(err, SG_EINVAL, "needs a ratio");
  char *end;
  double r = strtod(arg, &end);
  if (*end != '\0' || !(r > 0))
    return sg_err_set(err, SG_EINVAL, "bad ratio \"%s\"", arg);
  double *st = malloc(sizeof *st);
  *st = r;
  *state = st;
  return 0;
}

static bool ratio_decide(void *state, const sg_termination_history *h,
                         double speedup) {
  return speedup > h->best * *(double *)state;
}

static void ratio_free(void *state) {
  ratio_frees++;
  free(state);
}

static const sg_termination_plugin ratio_plugin = {
    "above-ratio", ratio_init, ratio_decide, ratio_free};

static void test_plugin_registers_and_decides(void) {
  sg_termination_registry reg;
  sg_termination_registry_init(&reg);
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_termination_register(&reg, &ratio_plugin, &err), err);
  SG_CHECK(sg_termination_find(&reg, "above-ratio") == &ratio_plugin);
  sg_termination *t = NULL;
  SG_CHECK_OK(sg_termination_new(&reg, "above-ratio:0.5", &t, &err), err);
  SG_CHECK_STR_EQ(sg_termination_name(t), "above-ratio");
  sg_speedup_history h;
  const double hist[] = {4.0};
  history_of(&h, hist, 1);
  sg_termination_history v = sg_speedup_history_view(&h);
  SG_CHECK(sg_termination_decide(t, &v, 2.5));  /* > 0.5 * 4 */
  SG_CHECK(!sg_termination_decide(t, &v, 2.0));
  sg_speedup_history_free(&h);
  ratio_frees = 0;
  sg_termination_free(t);
  SG_CHECK_EQ_INT(ratio_frees, 1);
  /* init's error comes back with the plugin's name in front */
  SG_CHECK_EQ_INT(sg_termination_new(&reg, "above-ratio:x", &t, &err),
                  SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "above-ratio");
  SG_CHECK_CONTAINS(err.msg, "bad ratio");
  SG_CHECK_EQ_INT(sg_termination_new(&reg, "above-ratio", &t, &err),
                  SG_EINVAL);
}

static void test_register_rejects_bad_plugins(void) {
  sg_termination_registry reg;
  sg_termination_registry_init(&reg);
  sg_err err;
  sg_err_clear(&err);
  static const sg_termination_plugin dup = {"hist-avg", NULL, ratio_decide,
                                            NULL};
  static const sg_termination_plugin nodecide = {"x", NULL, NULL, NULL};
  static const sg_termination_plugin badname = {"a b", NULL, ratio_decide,
                                                NULL};
  SG_CHECK_EQ_INT(sg_termination_register(&reg, &dup, &err), SG_ESTATE);
  SG_CHECK_EQ_INT(sg_termination_register(&reg, &nodecide, &err), SG_EINVAL);
  SG_CHECK_EQ_INT(sg_termination_register(&reg, &badname, &err), SG_EINVAL);
  static sg_termination_plugin many[SG_TERMINATION_MAX_PLUGINS];
  static char names[SG_TERMINATION_MAX_PLUGINS][24];
  size_t room = SG_TERMINATION_MAX_PLUGINS - reg.n;
  for (size_t i = 0; i < room; i++) {
    snprintf(names[i], sizeof names[i], "p%zu", i);
    many[i] = (sg_termination_plugin){names[i], NULL, ratio_decide, NULL};
    SG_CHECK_OK(sg_termination_register(&reg, &many[i], &err), err);
  }
  static const sg_termination_plugin one_more = {"one-more", NULL,
                                                 ratio_decide, NULL};
  SG_CHECK_EQ_INT(sg_termination_register(&reg, &one_more, &err), SG_EFULL);
}

/* Two registries are independent (no global state). */
static void test_registries_are_independent(void) {
  sg_termination_registry a, b;
  sg_termination_registry_init(&a);
  sg_termination_registry_init(&b);
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_termination_register(&a, &ratio_plugin, &err), err);
  SG_CHECK(sg_termination_find(&a, "above-ratio") != NULL);
  SG_CHECK(sg_termination_find(&b, "above-ratio") == NULL);
}

SG_TEST_MAIN(SG_TEST(test_history_starts_at_zero),
             SG_TEST(test_builtins_table),
             SG_TEST(test_nan_speedup_never_terminates),
             SG_TEST(test_unknown_name_lists_known),
             SG_TEST(test_plugin_registers_and_decides),
             SG_TEST(test_register_rejects_bad_plugins),
             SG_TEST(test_registries_are_independent))
