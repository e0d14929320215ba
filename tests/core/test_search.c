/* test_search.c: the workflow history and the search interface (refine,
 * best-of-n, a user-registered search, plan checking). */
#include "core/sg_search.h"

#include "sg_test.h"

#include <math.h>

static sg_search *make(const char *spec) {
  sg_search_registry reg;
  sg_search_registry_init(&reg);
  sg_search *s = NULL;
  sg_err err;
  sg_err_clear(&err);
  if (sg_search_new(&reg, spec, 1, &s, &err) != 0)
    SG_FAIL("new(%s): %s", spec, err.msg);
  return s;
}

/* Adds a candidate that ends with `status` (OK kernels get profiled with
 * `speedup`); returns its id. */
static uint64_t add(sg_history *h, uint32_t it, sg_eval_status status,
                    double speedup) {
  const char *src = "void k(void) {}";
  sg_kernel *k = sg_history_add(h, it, SG_GEN_SPEC, 1, 10, SG_EXTRACT_FOUND,
                                src, strlen(src));
  uint64_t id = k->id;
  sg_history_validated(h, id, status, speedup,
                       status == SG_EVAL_OK ? NULL : "it broke");
  if (status == SG_EVAL_OK)
    sg_history_profiled(h, id, NAN, "dram-bound");
  return id;
}

static void test_history_records_and_ranks(void) {
  sg_history h;
  sg_history_init(&h);
  SG_CHECK_EQ_INT(h.best_id, 0);
  uint64_t a = add(&h, 0, SG_EVAL_OK, 1.5);
  uint64_t b = add(&h, 0, SG_EVAL_COMPILE_ERROR, NAN);
  uint64_t c = add(&h, 1, SG_EVAL_OK, 2.5);
  uint64_t d = add(&h, 1, SG_EVAL_OK, 2.0);
  SG_CHECK_EQ_INT(a, 1);
  SG_CHECK_EQ_INT(d, 4);
  SG_CHECK_EQ_INT(h.best_id, c);
  SG_CHECK_EQ_INT(h.speedups.n, 4); /* {0, 1.5, 2.5, 2.0} */
  SG_CHECK_NEAR(h.speedups.best, 2.5, 0);
  const sg_kernel *kb = sg_history_get(&h, b);
  SG_CHECK(kb->validated && kb->validate_status == SG_EVAL_COMPILE_ERROR);
  SG_CHECK_STR_EQ(kb->validate_message, "it broke");
  SG_CHECK(!kb->profiled);
  SG_CHECK_STR_EQ(sg_history_get(&h, c)->profile_text, "dram-bound");
  SG_CHECK(sg_history_get(&h, 0) == NULL);
  SG_CHECK(sg_history_get(&h, 5) == NULL);
  /* a profile's own speedup replaces the validation's */
  uint64_t e = sg_history_add(&h, 2, SG_GEN_MAIN, 2, 0, SG_EXTRACT_FOUND,
                              "x", 1)->id;
  sg_history_validated(&h, e, SG_EVAL_OK, 1.0, NULL);
  sg_history_profiled(&h, e, 3.0, NULL);
  SG_CHECK_EQ_INT(h.best_id, e);
  SG_CHECK_NEAR(sg_history_get(&h, e)->speedup, 3.0, 0);
  sg_history_free(&h);
}

static void test_history_caps_and_copies_source(void) {
  sg_history h;
  sg_history_init(&h);
  size_t big = SG_KERNEL_SOURCE_MAX + 100;
  char *src = malloc(big);
  memset(src, 'x', big);
  sg_kernel *k = sg_history_add(&h, 0, SG_GEN_MAIN, 1, 0, SG_EXTRACT_FOUND,
                                src, big);
  SG_CHECK_EQ_INT(k->source_len, SG_KERNEL_SOURCE_MAX);
  SG_CHECK_EQ_INT(strlen(k->source), SG_KERNEL_SOURCE_MAX);
  src[0] = 'y';
  SG_CHECK(k->source[0] == 'x');
  free(src);
  k = sg_history_add(&h, 0, SG_GEN_MAIN, 1, 0, SG_EXTRACT_NONE, NULL, 0);
  SG_CHECK(k->source == NULL);
  SG_CHECK(isnan(k->speedup));
  sg_history_free(&h);
}

static void test_refine_first_prompt_is_task_alone(void) {
  sg_search *s = make("refine");
  SG_CHECK_STR_EQ(sg_search_name(s), "refine");
  sg_history h;
  sg_history_init(&h);
  sg_search_plan plan;
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_search_next(s, &h, 0, &plan, &err), err);
  SG_CHECK_EQ_INT(plan.n, 1);
  SG_CHECK_EQ_INT(plan.prompts[0].base_kernel, 0);
  SG_CHECK_EQ_INT(plan.prompts[0].n_items, 0);
  sg_history_free(&h);
  sg_search_free(s);
}

static void test_refine_shows_best_profile_and_recent_failures(void) {
  sg_search *s = make("refine");
  sg_history h;
  sg_history_init(&h);
  uint64_t f1 = add(&h, 0, SG_EVAL_RUNTIME_ERROR, NAN);
  uint64_t best = add(&h, 0, SG_EVAL_OK, 2.0);
  uint64_t f2 = add(&h, 1, SG_EVAL_NUMERICAL_ERROR, NAN);
  add(&h, 1, SG_EVAL_ABORTED, NAN); /* not the kernel's fault: not shown */
  uint64_t f3 = sg_history_add(&h, 1, SG_GEN_MAIN, 3, 0,
                               SG_EXTRACT_INCOMPLETE, NULL, 0)->id;
  uint64_t f4 = add(&h, 2, SG_EVAL_COMPILE_ERROR, NAN);
  add(&h, 2, SG_EVAL_OK, 1.0);
  sg_search_plan plan;
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_search_next(s, &h, 3, &plan, &err), err);
  SG_CHECK_EQ_INT(plan.n, 1);
  const sg_prompt *p = &plan.prompts[0];
  SG_CHECK_EQ_INT(p->base_kernel, best);
  SG_CHECK_EQ_INT(p->n_items, 2 + SG_SEARCH_RECENT_FAILURES);
  SG_CHECK(p->items[0].kind == SG_ITEM_KERNEL && p->items[0].kernel == best);
  SG_CHECK(p->items[1].kind == SG_ITEM_PROFILE && p->items[1].kernel == best);
  /* newest failures first; f1 is the fourth: cut */
  SG_CHECK(p->items[2].kind == SG_ITEM_FAILURE && p->items[2].kernel == f4);
  SG_CHECK_EQ_INT(p->items[3].kernel, f3);
  SG_CHECK_EQ_INT(p->items[4].kernel, f2);
  (void)f1;
  sg_history_free(&h);
  sg_search_free(s);
}

/* Compaction frees the texts of every kernel refine can no longer show and
 * nothing it shows: the prompt is the same before and after, and compacting
 * in steps (each call from the cursor the last returned) frees what one
 * call over the whole history frees. */
static void test_compact_keeps_what_refine_shows(void) {
  sg_search *s = make("refine");
  static const sg_eval_status seq[] = {
      SG_EVAL_OK, SG_EVAL_COMPILE_ERROR, SG_EVAL_OK, SG_EVAL_ABORTED,
      SG_EVAL_RUNTIME_ERROR, SG_EVAL_OK, SG_EVAL_NUMERICAL_ERROR, SG_EVAL_OK,
      SG_EVAL_COMPILE_ERROR, SG_EVAL_OK, SG_EVAL_OK, SG_EVAL_RUNTIME_ERROR};
  enum { N = sizeof seq / sizeof seq[0] };
  static const double speed[N] = {1.5, 0, 3.0, 0, 0, 1.0, 0, 2.5, 0, 0.5, 1.2, 0};
  sg_history whole, steps;
  sg_history_init(&whole);
  sg_history_init(&steps);
  size_t cursor = 0;
  for (int i = 0; i < N; i++) {
    add(&whole, (uint32_t)i, seq[i], seq[i] == SG_EVAL_OK ? speed[i] : NAN);
    add(&steps, (uint32_t)i, seq[i], seq[i] == SG_EVAL_OK ? speed[i] : NAN);
    if (i % 3 == 2) /* a step: what ended before this iteration */
      cursor = sg_history_compact(&steps, cursor, (size_t)i);
  }
  sg_search_plan before, after;
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_search_next(s, &whole, N, &before, &err), err);
  SG_CHECK_EQ_INT(sg_history_compact(&whole, 0, N), 6); /* the third-newest failure */
  cursor = sg_history_compact(&steps, cursor, N);
  SG_CHECK_OK(sg_search_next(s, &whole, N, &after, &err), err);
  SG_CHECK(memcmp(&before, &after, sizeof before) == 0);
  int kept = 0;
  for (size_t i = 0; i < N; i++) {
    const sg_kernel *k = &whole.v[i];
    bool shown = false;
    for (size_t j = 0; j < after.prompts[0].n_items; j++)
      shown |= after.prompts[0].items[j].kernel == k->id;
    SG_CHECK_MSG(shown == !k->compacted, "kernel %llu: shown %d, compacted %d",
                 (unsigned long long)k->id, shown, k->compacted);
    SG_CHECK(k->compacted ? k->source == NULL && k->validate_message == NULL &&
                                k->profile_text == NULL
                          : k->source != NULL);
    SG_CHECK(k->validated); /* the record stays */
    kept += !k->compacted;
    SG_CHECK_MSG(steps.v[i].compacted == k->compacted,
                 "kernel %zu differs in steps", i + 1);
  }
  SG_CHECK_EQ_INT(kept, 1 + SG_SEARCH_RECENT_FAILURES);
  SG_CHECK(!isnan(whole.v[2].speedup) && whole.best_id == 3);
  sg_history_free(&whole);
  sg_history_free(&steps);
  sg_search_free(s);
}

static void test_best_of_n_gives_n_same_prompts(void) {
  struct {
    const char *spec;
    size_t n;
  } rows[] = {{"best-of-n", 4}, {"best-of-n:1", 1}, {"best-of-n:7", 7},
              {"best-of-n:16", 16}};
  sg_history h;
  sg_history_init(&h);
  uint64_t best = add(&h, 0, SG_EVAL_OK, 1.2);
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    sg_search *s = make(rows[i].spec);
    sg_search_plan plan;
    sg_err err;
    sg_err_clear(&err);
    SG_CHECK_OK(sg_search_next(s, &h, 1, &plan, &err), err);
    SG_CHECK_EQ_INT(plan.n, rows[i].n);
    for (size_t j = 0; j < plan.n; j++) {
      SG_CHECK_EQ_INT(plan.prompts[j].base_kernel, best);
      SG_CHECK(memcmp(&plan.prompts[j], &plan.prompts[0],
                      sizeof plan.prompts[0]) == 0);
    }
    sg_search_free(s);
  }
  sg_history_free(&h);
}

static void test_bad_specs_are_named(void) {
  sg_search_registry reg;
  sg_search_registry_init(&reg);
  sg_search *s = NULL;
  sg_err err;
  sg_err_clear(&err);
  const char *bad[] = {"best-of-n:0", "best-of-n:17", "best-of-n:x",
                       "best-of-n:", "refine:3", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    SG_CHECK_MSG(sg_search_new(&reg, bad[i], 1, &s, &err) == SG_EINVAL,
                 "spec \"%s\" accepted", bad[i]);
    SG_CHECK(s == NULL);
  }
  SG_CHECK_EQ_INT(sg_search_new(&reg, "annealing", 1, &s, &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, "annealing");
  SG_CHECK_CONTAINS(err.msg, "best-of-n");
  SG_CHECK_CONTAINS(err.msg, "evolve");
}

/* A search added by a user (as evolve or exec: will be): it is found by
 * name, gets its ARG and seed, and a malformed plan it returns is refused. */
static uint64_t seen_seed;
static int plugin_init(void **state, const char *arg, uint64_t seed,
                       sg_err *err) {
  (void)err;
  seen_seed = seed;
  *state = (void *)arg; /* "good" or "bad" (borrowed from the spec literal) */
  return 0;
}
static int plugin_next(void *state, const sg_history *h, uint32_t iteration,
                       sg_search_plan *plan, sg_err *err) {
  (void)h;
  (void)err;
  const char *mode = state;
  if (strcmp(mode, "zero") == 0) {
    plan->n = 0;
  } else if (strcmp(mode, "ghost") == 0) {
    plan->n = 1;
    plan->prompts[0].base_kernel = 99;
  } else if (strcmp(mode, "fail") == 0) {
    return sg_err_set(err, SG_EPROTO, "external search died");
  } else {
    plan->n = 2;
    plan->prompts[1].base_kernel = iteration; /* kernel 1 exists */
  }
  return 0;
}
static const sg_search_ops plugin = {"mine", plugin_init, plugin_next, NULL};

static void test_user_search_and_plan_checks(void) {
  sg_search_registry reg;
  sg_search_registry_init(&reg);
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_search_register(&reg, &plugin, &err), err);
  SG_CHECK_EQ_INT(sg_search_register(&reg, &plugin, &err), SG_ESTATE);
  static const sg_search_ops nonext = {"x", NULL, NULL, NULL};
  SG_CHECK_EQ_INT(sg_search_register(&reg, &nonext, &err), SG_EINVAL);
  sg_history h;
  sg_history_init(&h);
  add(&h, 0, SG_EVAL_OK, 1.0);
  struct {
    const char *spec;
    int rc;
  } rows[] = {{"mine:good", 0},
              {"mine:zero", SG_ERANGE},
              {"mine:ghost", SG_ERANGE},
              {"mine:fail", SG_EPROTO}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    sg_search *s = NULL;
    SG_CHECK_OK(sg_search_new(&reg, rows[i].spec, 42, &s, &err), err);
    SG_CHECK_EQ_INT(seen_seed, 42);
    sg_search_plan plan;
    SG_CHECK_EQ_INT(sg_search_next(s, &h, 1, &plan, &err), rows[i].rc);
    if (rows[i].rc == 0)
      SG_CHECK_EQ_INT(plan.n, 2);
    sg_search_free(s);
  }
  sg_history_free(&h);
}

static void test_names(void) {
  SG_CHECK_STR_EQ(sg_gen_kind_name(SG_GEN_MAIN), "main");
  SG_CHECK_STR_EQ(sg_gen_kind_name(SG_GEN_SPEC), "spec");
  SG_CHECK_STR_EQ(sg_prompt_item_kind_name(SG_ITEM_FAILURE), "failure");
  SG_CHECK_STR_EQ(sg_prompt_item_kind_name(SG_ITEM__COUNT), "unknown");
}

SG_TEST_MAIN(SG_TEST(test_history_records_and_ranks),
             SG_TEST(test_history_caps_and_copies_source),
             SG_TEST(test_refine_first_prompt_is_task_alone),
             SG_TEST(test_refine_shows_best_profile_and_recent_failures),
             SG_TEST(test_best_of_n_gives_n_same_prompts),
             SG_TEST(test_compact_keeps_what_refine_shows),
             SG_TEST(test_bad_specs_are_named),
             SG_TEST(test_user_search_and_plan_checks),
             SG_TEST(test_names))
