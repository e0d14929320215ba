/* test_search_evolve.c: the evolve search: options, features and cells,
 * placement and replacement, the cap, selection ratios, inspirations and
 * failures in the prompt, ring migration, round-robin islands, the
 * from-scratch plan, determinism for a seed, and a short run through the
 * controller. */
#include "common/sg_hash.h"
#include "common/sg_rng.h"
#include "core/sg_controller.h"
#include "core/sg_search_evolve.h"

#include "sg_test.h"

#include <math.h>

/* A source of exactly len bytes, distinct per tag (the hash feature). */
static char *make_source(size_t len, unsigned tag) {
  char *s = malloc(len + 1);
  char head[32];
  size_t n = (size_t)snprintf(head, sizeof head, "/*%u*/", tag);
  for (size_t i = 0; i < len; i++)
    s[i] = i < n ? head[i] : (char)('a' + (i * 7 + tag) % 26);
  s[len] = '\0';
  return s;
}

/* Adds a kernel of iteration it: OK ones are validated with speedup and
 * profiled with profile (may be NULL); others get status. Returns its id. */
static uint64_t add_kernel(sg_history *h, uint32_t it, sg_eval_status st,
                           double speedup, const char *profile, size_t len,
                           unsigned tag) {
  char *src = make_source(len, tag);
  sg_kernel *k = sg_history_add(h, it, SG_GEN_SPEC, 1, 10, SG_EXTRACT_FOUND,
                                src, len);
  free(src);
  uint64_t id = k->id;
  sg_history_validated(h, id, st, st == SG_EVAL_OK ? speedup : NAN,
                       st == SG_EVAL_OK ? NULL : "it broke");
  if (st == SG_EVAL_OK)
    sg_history_profiled(h, id, NAN, profile);
  return id;
}

static sg_evolve *make(const char *spec, uint64_t seed) {
  sg_evolve_opts o;
  sg_evolve_opts_default(&o);
  sg_err err;
  sg_err_clear(&err);
  if (sg_evolve_opts_parse(&o, spec, &err) != 0)
    SG_FAIL("parse(%s): %s", spec, err.msg);
  sg_evolve *e = NULL;
  SG_CHECK_OK(sg_evolve_new(&o, seed, &e, &err), err);
  return e;
}

/* ---- options ------------------------------------------------------------ */

static void test_options_defaults_and_keys(void) {
  sg_evolve_opts o;
  sg_evolve_opts_default(&o);
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_evolve_opts_parse(&o, NULL, &err), err);
  SG_CHECK_EQ_INT(o.islands, 4);
  SG_CHECK_EQ_INT(o.bins, 4);
  SG_CHECK_EQ_INT(o.n_dims, 3);
  SG_CHECK(o.dims[0] == SG_EVOLVE_DIM_LENGTH &&
           o.dims[1] == SG_EVOLVE_DIM_VERDICT &&
           o.dims[2] == SG_EVOLVE_DIM_HASH);
  SG_CHECK_NEAR(o.explore, 0.2, 1e-12);
  SG_CHECK_NEAR(o.exploit, 0.7, 1e-12);
  SG_CHECK_EQ_INT(o.top, 3);
  SG_CHECK_EQ_INT(o.inspirations, 3);
  SG_CHECK_EQ_INT(o.migrate, 10);
  SG_CHECK_EQ_INT(o.migrants, 2);
  SG_CHECK_EQ_INT(o.cap, 1000);
  SG_CHECK_EQ_INT(o.mains, 1);
  SG_CHECK_EQ_INT(o.failures, 3);
  SG_CHECK_OK(sg_evolve_opts_parse(
                  &o,
                  "islands=2,bins=8,features=speedup+hash,explore=0.5,"
                  "exploit=0.25,top=5,inspirations=0,migrate=0,migrants=3,"
                  "cap=7,mains=2,failures=6",
                  &err),
              err);
  SG_CHECK_EQ_INT(o.islands, 2);
  SG_CHECK_EQ_INT(o.bins, 8);
  SG_CHECK_EQ_INT(o.n_dims, 2);
  SG_CHECK(o.dims[0] == SG_EVOLVE_DIM_SPEEDUP &&
           o.dims[1] == SG_EVOLVE_DIM_HASH);
  SG_CHECK_NEAR(o.explore, 0.5, 1e-12);
  SG_CHECK_NEAR(o.exploit, 0.25, 1e-12);
  SG_CHECK_EQ_INT(o.top, 5);
  SG_CHECK_EQ_INT(o.inspirations, 0);
  SG_CHECK_EQ_INT(o.migrate, 0);
  SG_CHECK_EQ_INT(o.migrants, 3);
  SG_CHECK_EQ_INT(o.cap, 7);
  SG_CHECK_EQ_INT(o.mains, 2);
  SG_CHECK_EQ_INT(o.failures, 6);
}

static void test_bad_options_name_the_key(void) {
  struct {
    const char *spec, *named;
  } rows[] = {
      {"islands=0", "islands"},      {"islands=65", "islands"},
      {"islands=x", "islands"},      {"islands=-1", "islands"},
      {"bins=1", "bins"},            {"bins=17", "bins"},
      {"explore=1.5", "explore"},    {"exploit=nan", "exploit"},
      {"explore=0.6,exploit=0.6", "explore + exploit"},
      {"features=color", "color"},   {"features=hash+hash", "hash"},
      {"features=", "features"},     {"inspirations=9", "inspirations"},
      {"cap=0", "cap"},              {"cap=10001", "cap"},
      {"mains=17", "mains"},         {"failures=7", "failures"},
      {"migrants=0", "migrants"},    {"top=0", "top"},
      {"colour=3", "colour"},        {"islands", "islands"},
      {"bins=16,features=length+hash+speedup+verdict", "cells"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    sg_evolve_opts o;
    sg_evolve_opts_default(&o);
    sg_err err;
    sg_err_clear(&err);
    SG_CHECK_MSG(sg_evolve_opts_parse(&o, rows[i].spec, &err) == SG_EINVAL,
                 "spec \"%s\" accepted", rows[i].spec);
    SG_CHECK_CONTAINS(err.msg, rows[i].named);
  }
}

/* ---- features and cells ------------------------------------------------- */

static void test_features_place_kernels_in_cells(void) {
  sg_history h;
  sg_history_init(&h);
  struct {
    const char *spec;
    double speedup;
    const char *profile;
    size_t len;
    uint32_t cell;
  } rows[] = {
      /* verdict: none 0, memory 1, compute 2, latency 3; earliest wins */
      {"features=verdict", 1.0, NULL, 100, 0},
      {"features=verdict", 1.0, "k: 3 us, memory-bound (...)", 100, 1},
      {"features=verdict", 1.0, "compute-bound", 100, 2},
      {"features=verdict", 1.0, "latency-bound", 100, 3},
      {"features=verdict", 1.0, "a: compute-bound. b: memory-bound", 100, 2},
      /* speedup: log2 over [1/4, 4] in bins */
      {"features=speedup,bins=4", 0.2, NULL, 100, 0},
      {"features=speedup,bins=4", 0.5, NULL, 100, 1},
      {"features=speedup,bins=4", 1.0, NULL, 100, 2},
      {"features=speedup,bins=4", 3.0, NULL, 100, 3},
      {"features=speedup,bins=4", 100.0, NULL, 100, 3},
      /* length: log2 over [128 B, 32 KiB] in bins */
      {"features=length,bins=8", 1.0, NULL, 100, 0},
      {"features=length,bins=8", 1.0, NULL, 300, 1},
      {"features=length,bins=8", 1.0, NULL, 1000, 2},
      {"features=length,bins=8", 1.0, NULL, 40000, 7},
      /* two dimensions: row-major, the first dimension slowest */
      {"features=length+verdict,bins=8", 1.0, "latency-bound", 1000, 2 * 4 + 3},
      {"features=verdict+length,bins=8", 1.0, "latency-bound", 1000, 3 * 8 + 2},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    sg_evolve *e = make(rows[i].spec, 1);
    uint64_t id = add_kernel(&h, 0, SG_EVAL_OK, rows[i].speedup,
                             rows[i].profile, rows[i].len, (unsigned)i);
    SG_CHECK_MSG(sg_evolve_cell_of(e, sg_history_get(&h, id)) == rows[i].cell,
                 "row %zu: cell %u, want %u", i,
                 sg_evolve_cell_of(e, sg_history_get(&h, id)), rows[i].cell);
    sg_evolve_free(e);
  }
  sg_evolve *e = make("features=length+verdict+hash,bins=4", 1);
  SG_CHECK_EQ_INT(sg_evolve_cells(e), 4 * 4 * 4);
  sg_evolve_free(e);
  sg_history_free(&h);
}

static void test_hash_ignores_blanks_and_spreads(void) {
  sg_history h;
  sg_history_init(&h);
  sg_evolve *e = make("features=hash,bins=16", 1);
  const char *a = "void k(float *x) { x[0] = 1; }";
  const char *b = "void k(float*x){\n\tx[0]=1;\n}\n";
  sg_kernel *ka = sg_history_add(&h, 0, SG_GEN_MAIN, 1, 0, SG_EXTRACT_FOUND,
                                 a, strlen(a));
  uint64_t ia = ka->id;
  sg_kernel *kb = sg_history_add(&h, 0, SG_GEN_MAIN, 1, 0, SG_EXTRACT_FOUND,
                                 b, strlen(b));
  uint64_t ib = kb->id;
  SG_CHECK_EQ_INT(sg_evolve_cell_of(e, sg_history_get(&h, ia)),
                  sg_evolve_cell_of(e, sg_history_get(&h, ib)));
  /* 64 different sources reach more than half of the 16 buckets */
  bool seen[16] = {false};
  int distinct = 0;
  for (unsigned t = 0; t < 64; t++) {
    char src[64];
    snprintf(src, sizeof src, "void k%u(float *x) { x[%u] = %u; }", t, t % 5,
             t * 3);
    sg_kernel *k = sg_history_add(&h, 0, SG_GEN_MAIN, 1, 0, SG_EXTRACT_FOUND,
                                  src, strlen(src));
    uint32_t c = sg_evolve_cell_of(e, k);
    SG_CHECK(c < 16);
    if (!seen[c]) {
      seen[c] = true;
      distinct++;
    }
  }
  SG_CHECK_MSG(distinct > 8, "only %d buckets used", distinct);
  sg_evolve_free(e);
  sg_history_free(&h);
}

/* ---- placement, replacement, the cap ----------------------------------- */

static void test_cell_replaced_only_by_a_better_program(void) {
  sg_history h;
  sg_history_init(&h);
  sg_evolve *e = make("islands=1,features=verdict", 1);
  struct {
    sg_eval_status st;
    double speedup;
    const char *profile;
    bool elite;      /* sg_evolve_add's answer */
    uint32_t cell;   /* then the elite of this cell is ... */
    int elite_row;   /* ... the kernel added by this row (-1: empty) */
    size_t size;
  } rows[] = {
      {SG_EVAL_OK, 1.5, "memory-bound", true, 1, 0, 1},
      {SG_EVAL_OK, 1.2, "memory-bound", false, 1, 0, 2},  /* slower */
      {SG_EVAL_OK, 1.5, "memory-bound", false, 1, 0, 3},  /* a tie keeps */
      {SG_EVAL_OK, 2.0, "memory-bound", true, 1, 3, 4},   /* faster */
      {SG_EVAL_OK, 0.5, "compute-bound", true, 2, 4, 5},  /* own cell */
      {SG_EVAL_COMPILE_ERROR, NAN, NULL, false, 3, -1, 5},
      {SG_EVAL_NUMERICAL_ERROR, NAN, NULL, false, 3, -1, 5},
      {SG_EVAL_OK, 3.0, "memory-bound", true, 1, 7, 6},
  };
  uint64_t ids[8];
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    ids[i] = add_kernel(&h, 0, rows[i].st, rows[i].speedup, rows[i].profile,
                        200, (unsigned)i);
    SG_CHECK_MSG(sg_evolve_add(e, sg_history_get(&h, ids[i]), 0) ==
                     rows[i].elite,
                 "row %zu", i);
    uint64_t want = rows[i].elite_row < 0 ? 0 : ids[rows[i].elite_row];
    SG_CHECK_EQ_INT(sg_evolve_elite(e, 0, rows[i].cell), want);
    SG_CHECK_EQ_INT(sg_evolve_size(e), rows[i].size);
  }
  /* the same kernel twice on one island: ignored */
  SG_CHECK(!sg_evolve_add(e, sg_history_get(&h, ids[7]), 0));
  SG_CHECK_EQ_INT(sg_evolve_size(e), 6);
  /* a validated kernel with no speedup is not a program */
  sg_kernel *k =
      sg_history_add(&h, 0, SG_GEN_MAIN, 1, 0, SG_EXTRACT_FOUND, "x", 1);
  uint64_t nid = k->id;
  sg_history_validated(&h, nid, SG_EVAL_OK, NAN, NULL);
  SG_CHECK(!sg_evolve_add(e, sg_history_get(&h, nid), 0));
  SG_CHECK_EQ_INT(sg_evolve_size(e), 6);
  sg_evolve_free(e);
  sg_history_free(&h);
}

static void test_cap_evicts_the_slowest_non_elite(void) {
  sg_history h;
  sg_history_init(&h);
  sg_evolve *e = make("islands=1,features=verdict,cap=3", 1);
  struct {
    double speedup;
    const char *profile;
    bool elite;
    int held[4];  /* rows whose kernels are held afterwards, -1 ends */
  } rows[] = {
      {1.0, "memory-bound", true, {0, -1}},
      {0.5, "memory-bound", false, {0, 1, -1}},
      {2.0, "compute-bound", true, {0, 1, 2, -1}},
      /* full: the slowest non-elite (row 1) goes for a faster one */
      {0.8, "memory-bound", false, {0, 2, 3, -1}},
      /* full: a newcomer slower than every non-elite is not kept */
      {0.6, "memory-bound", false, {0, 2, 3, -1}},
      /* wins its cell: row 0 becomes a non-elite; row 3 is slowest, goes */
      {3.0, "memory-bound", true, {0, 2, 5, -1}},
      /* a new cell: the slowest non-elite (row 0) goes */
      {0.1, "latency-bound", true, {2, 5, 6, -1}},
      /* a new cell and only elites: the slowest elite (row 6) goes */
      {0.2, NULL, true, {2, 5, 7, -1}},
  };
  size_t n = sizeof rows / sizeof rows[0];
  uint64_t ids[8];
  for (size_t i = 0; i < n; i++) {
    ids[i] = add_kernel(&h, 0, SG_EVAL_OK, rows[i].speedup, rows[i].profile,
                        200, (unsigned)i);
    SG_CHECK_MSG(sg_evolve_add(e, sg_history_get(&h, ids[i]), 0) ==
                     rows[i].elite,
                 "row %zu", i);
    SG_CHECK(sg_evolve_size(e) <= 3);
    for (size_t j = 0; j <= i; j++) {
      bool want = false;
      for (int x = 0; x < 4 && rows[i].held[x] >= 0; x++)
        want |= (size_t)rows[i].held[x] == j;
      SG_CHECK_MSG(sg_evolve_holds(e, 0, ids[j]) == want,
                   "after row %zu: kernel of row %zu held %d, want %d", i, j,
                   !want, want);
    }
  }
  sg_evolve_free(e);
  sg_history_free(&h);
}

/* Many random programs against a small cap: never above it, and the best
 * program so far is always held and an elite. */
static void test_cap_holds_under_load(void) {
  sg_history h;
  sg_history_init(&h);
  sg_evolve *e = make("islands=3,features=verdict+hash,bins=4,cap=20", 5);
  sg_rng g;
  sg_rng_seed(&g, 12345);
  double best = 0;
  uint64_t best_id = 0;
  static const char *const prof[] = {NULL, "memory-bound", "compute-bound",
                                     "latency-bound"};
  for (unsigned i = 0; i < 600; i++) {
    uint64_t x = sg_rng_next(&g);
    double s = 0.05 + (double)(x >> 40) / (double)(1ULL << 24) * 4.0;
    uint64_t id = add_kernel(&h, i, SG_EVAL_OK, s, prof[(x >> 20) % 4], 150,
                             i);
    sg_evolve_add(e, sg_history_get(&h, id), i % 3);
    SG_CHECK(sg_evolve_size(e) <= 20);
    if (s > best) {
      best = s;
      best_id = id;
    }
    SG_CHECK(sg_evolve_holds(e, sg_history_get(&h, best_id)->iteration % 3,
                             best_id));
  }
  SG_CHECK_EQ_INT(sg_evolve_size(e), 20);
  sg_evolve_free(e);
  sg_history_free(&h);
}

/* ---- plans -------------------------------------------------------------- */

static void test_empty_history_plans_from_scratch(void) {
  sg_history h;
  sg_history_init(&h);
  sg_err err;
  sg_err_clear(&err);
  sg_evolve *e = make("mains=3", 1);
  sg_search_plan plan;
  SG_CHECK_OK(sg_evolve_next(e, &h, 0, &plan, &err), err);
  SG_CHECK_EQ_INT(plan.n, 3);
  for (size_t i = 0; i < 3; i++) {
    SG_CHECK_EQ_INT(plan.prompts[i].base_kernel, 0);
    SG_CHECK_EQ_INT(plan.prompts[i].n_items, 0);
    SG_CHECK_EQ_INT(plan.prompts[i].n_inspirations, 0);
    SG_CHECK(sg_evolve_last_mode(e, i) == SG_EVOLVE_SCRATCH);
  }
  /* only failures so far: still from scratch, with the failures shown */
  uint64_t f1 = add_kernel(&h, 0, SG_EVAL_COMPILE_ERROR, NAN, NULL, 100, 1);
  sg_history_add(&h, 0, SG_GEN_MAIN, 1, 0, SG_EXTRACT_NONE, NULL, 0);
  uint64_t f2 = h.n;
  SG_CHECK_OK(sg_evolve_next(e, &h, 4, &plan, &err), err); /* island 0 */
  SG_CHECK_EQ_INT(plan.prompts[0].base_kernel, 0);
  SG_CHECK_EQ_INT(plan.prompts[0].n_items, 2);
  SG_CHECK(plan.prompts[0].items[0].kind == SG_ITEM_FAILURE);
  SG_CHECK_EQ_INT(plan.prompts[0].items[0].kernel, f2); /* newest first */
  SG_CHECK_EQ_INT(plan.prompts[0].items[1].kernel, f1);
  SG_CHECK(sg_evolve_last_mode(e, 0) == SG_EVOLVE_SCRATCH);
  SG_CHECK(strcmp(sg_evolve_mode_name(SG_EVOLVE_SCRATCH), "scratch") == 0);
  sg_evolve_free(e);
  sg_history_free(&h);
}

static void test_islands_visited_round_robin(void) {
  sg_history h;
  sg_history_init(&h);
  sg_err err;
  sg_err_clear(&err);
  sg_evolve *e = make("islands=3,migrate=0", 1);
  sg_search_plan plan;
  uint64_t ids[9];
  for (uint32_t it = 0; it < 9; it++) {
    SG_CHECK_OK(sg_evolve_next(e, &h, it, &plan, &err), err);
    SG_CHECK_EQ_INT(sg_evolve_last_island(e), it % 3);
    ids[it] = add_kernel(&h, it, SG_EVAL_OK, 1.0 + it, NULL, 200, it);
  }
  SG_CHECK_OK(sg_evolve_next(e, &h, 9, &plan, &err), err);
  /* each iteration's kernel lives on that iteration's island only */
  for (uint32_t it = 0; it < 9; it++)
    for (uint32_t isl = 0; isl < 3; isl++)
      SG_CHECK_MSG(sg_evolve_holds(e, isl, ids[it]) == (isl == it % 3),
                   "kernel of iteration %u on island %u", it, isl);
  /* and parents come from the island visited: iteration 10 is island 1 */
  for (uint32_t it = 10; it < 40; it += 3) {
    SG_CHECK_OK(sg_evolve_next(e, &h, it, &plan, &err), err);
    const sg_kernel *p = sg_history_get(&h, plan.prompts[0].base_kernel);
    SG_CHECK(p != NULL);
    if (sg_evolve_last_mode(e, 0) != SG_EVOLVE_RANDOM)
      SG_CHECK_EQ_INT(p->iteration % 3, 1);
  }
  sg_evolve_free(e);
  sg_history_free(&h);
}

/* n programs of iteration 0 (after a first, empty plan). */
static void fill_one_island(sg_history *h, sg_evolve *e, size_t n) {
  sg_err err;
  sg_err_clear(&err);
  sg_search_plan plan;
  SG_CHECK_OK(sg_evolve_next(e, h, 0, &plan, &err), err);
  for (size_t i = 0; i < n; i++)
    add_kernel(h, 0, SG_EVAL_OK, 0.3 + 0.1 * (double)i, "memory-bound", 200,
               (unsigned)i);
}

static void test_selection_ratios_within_tolerance(void) {
  struct {
    const char *spec;
    double explore, exploit, random;
  } rows[] = {
      {"islands=1,migrate=0,features=hash,bins=16", 0.2, 0.7, 0.1},
      {"islands=1,migrate=0,features=hash,bins=16,explore=0.5,exploit=0.5",
       0.5, 0.5, 0.0},
      {"islands=1,migrate=0,features=hash,bins=16,explore=0,exploit=0.1",
       0.0, 0.1, 0.9},
  };
  const int draws = 4000;
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    sg_history h;
    sg_history_init(&h);
    sg_err err;
    sg_err_clear(&err);
    sg_evolve *e = make(rows[r].spec, 99 + r);
    fill_one_island(&h, e, 20);
    int counts[SG_EVOLVE_MODE__COUNT] = {0};
    /* the top 3 elites by speedup, for the exploit check */
    sg_search_plan plan;
    SG_CHECK_OK(sg_evolve_next(e, &h, 1, &plan, &err), err);
    size_t elites = 0;
    for (uint32_t c = 0; c < sg_evolve_cells(e); c++)
      elites += sg_evolve_elite(e, 0, c) != 0;
    SG_CHECK(elites >= 8);
    double third = 0; /* the third-best elite's speedup */
    {
      double top[3] = {0, 0, 0};
      for (uint32_t c = 0; c < sg_evolve_cells(e); c++) {
        uint64_t id = sg_evolve_elite(e, 0, c);
        if (id == 0)
          continue;
        double s = sg_history_get(&h, id)->speedup;
        for (int i = 0; i < 3; i++)
          if (s > top[i]) {
            for (int j = 2; j > i; j--)
              top[j] = top[j - 1];
            top[i] = s;
            break;
          }
      }
      third = top[2];
    }
    for (int d = 0; d < draws; d++) {
      SG_CHECK_OK(sg_evolve_next(e, &h, 2 + (uint32_t)d, &plan, &err), err);
      sg_evolve_mode m = sg_evolve_last_mode(e, 0);
      SG_CHECK(m != SG_EVOLVE_SCRATCH);
      counts[m]++;
      const sg_kernel *p = sg_history_get(&h, plan.prompts[0].base_kernel);
      SG_CHECK(p != NULL);
      uint32_t cell = sg_evolve_cell_of(e, p);
      if (m == SG_EVOLVE_EXPLOIT)
        SG_CHECK(p->speedup >= third);
      if (m != SG_EVOLVE_RANDOM)
        SG_CHECK_EQ_INT(sg_evolve_elite(e, 0, cell), p->id);
    }
    double tol = 0.03;
    SG_CHECK_NEAR((double)counts[SG_EVOLVE_EXPLORE] / draws, rows[r].explore,
                  tol);
    SG_CHECK_NEAR((double)counts[SG_EVOLVE_EXPLOIT] / draws, rows[r].exploit,
                  tol);
    SG_CHECK_NEAR((double)counts[SG_EVOLVE_RANDOM] / draws, rows[r].random,
                  tol);
    sg_evolve_free(e);
    sg_history_free(&h);
  }
}

static void test_prompt_shows_parent_inspirations_and_island_failures(void) {
  sg_history h;
  sg_history_init(&h);
  sg_err err;
  sg_err_clear(&err);
  sg_evolve *e =
      make("islands=2,migrate=0,features=length,bins=16,inspirations=3,"
           "failures=2,mains=4",
           3);
  sg_search_plan plan;
  SG_CHECK_OK(sg_evolve_next(e, &h, 0, &plan, &err), err);
  /* lengths in six different cells of the length dimension */
  static const size_t lens[6] = {200, 300, 450, 700, 1100, 1700};
  for (unsigned i = 0; i < 6; i++)
    add_kernel(&h, 0, SG_EVAL_OK, 1.0 + 0.25 * i, "compute-bound", lens[i],
               i);
  uint64_t f0a = add_kernel(&h, 0, SG_EVAL_RUNTIME_ERROR, NAN, NULL, 50, 90);
  uint64_t f0b = add_kernel(&h, 0, SG_EVAL_COMPILE_ERROR, NAN, NULL, 50, 91);
  uint64_t f0c = add_kernel(&h, 0, SG_EVAL_COMPILE_ERROR, NAN, NULL, 50, 92);
  add_kernel(&h, 0, SG_EVAL_ABORTED, NAN, NULL, 50, 93); /* not its fault */
  SG_CHECK_OK(sg_evolve_next(e, &h, 1, &plan, &err), err);
  add_kernel(&h, 1, SG_EVAL_COMPILE_ERROR, NAN, NULL, 50, 94); /* island 1 */
  SG_CHECK_OK(sg_evolve_next(e, &h, 2, &plan, &err), err);   /* island 0 */
  (void)f0a;
  uint64_t best = 6; /* speedup 2.25 */
  for (size_t i = 0; i < plan.n; i++) {
    const sg_prompt *p = &plan.prompts[i];
    SG_CHECK(p->base_kernel != 0);
    SG_CHECK(p->items[0].kind == SG_ITEM_KERNEL &&
             p->items[0].kernel == p->base_kernel);
    SG_CHECK(p->items[1].kind == SG_ITEM_PROFILE &&
             p->items[1].kernel == p->base_kernel);
    SG_CHECK_EQ_INT(p->n_inspirations, 3);
    /* the island's best comes first unless it is the parent */
    if (p->base_kernel != best)
      SG_CHECK_EQ_INT(p->inspirations[0], best);
    for (size_t j = 0; j < p->n_inspirations; j++) {
      SG_CHECK(p->inspirations[j] != p->base_kernel);
      SG_CHECK(p->inspirations[j] >= 1 && p->inspirations[j] <= 6);
      for (size_t k = 0; k < j; k++)
        SG_CHECK(p->inspirations[k] != p->inspirations[j]);
      /* also shown as kernel items, after the parent and its profile */
      SG_CHECK(p->items[2 + j].kind == SG_ITEM_KERNEL &&
               p->items[2 + j].kernel == p->inspirations[j]);
    }
    /* island 0's two newest failures, newest first; not island 1's */
    SG_CHECK_EQ_INT(p->n_items, 2 + 3 + 2);
    SG_CHECK(p->items[5].kind == SG_ITEM_FAILURE &&
             p->items[5].kernel == f0c);
    SG_CHECK(p->items[6].kind == SG_ITEM_FAILURE &&
             p->items[6].kernel == f0b);
  }
  sg_evolve_free(e);
  sg_history_free(&h);
}

/* ---- migration ---------------------------------------------------------- */

static void test_migration_moves_elites_around_the_ring(void) {
  sg_history h;
  sg_history_init(&h);
  sg_err err;
  sg_err_clear(&err);
  sg_evolve *e = make("islands=3,migrate=2,migrants=1,features=verdict", 1);
  sg_search_plan plan;
  SG_CHECK_OK(sg_evolve_next(e, &h, 0, &plan, &err), err);
  uint64_t a = add_kernel(&h, 0, SG_EVAL_OK, 2.0, "memory-bound", 200, 1);
  uint64_t a2 = add_kernel(&h, 0, SG_EVAL_OK, 1.0, "compute-bound", 200, 2);
  SG_CHECK_OK(sg_evolve_next(e, &h, 1, &plan, &err), err);
  uint64_t b = add_kernel(&h, 1, SG_EVAL_OK, 1.5, "compute-bound", 200, 3);
  /* iteration 1: not a multiple of 2, nothing moved yet */
  SG_CHECK(sg_evolve_holds(e, 0, a) && !sg_evolve_holds(e, 1, a));
  SG_CHECK_OK(sg_evolve_next(e, &h, 2, &plan, &err), err);
  /* iteration 2: island 0 sends its best (a, not a2) to 1; 1 sends b to 2;
   * 2 has nothing to send; one hop each */
  struct {
    uint64_t k;
    bool on[3];
  } after2[] = {{a, {true, true, false}},
                {a2, {true, false, false}},
                {b, {false, true, true}}};
  for (size_t i = 0; i < 3; i++)
    for (uint32_t isl = 0; isl < 3; isl++)
      SG_CHECK_MSG(sg_evolve_holds(e, isl, after2[i].k) == after2[i].on[isl],
                   "after 2: kernel %llu on island %u",
                   (unsigned long long)after2[i].k, isl);
  SG_CHECK_EQ_INT(sg_evolve_size(e), 5);
  /* asked again for iteration 2: no second migration */
  SG_CHECK_OK(sg_evolve_next(e, &h, 2, &plan, &err), err);
  SG_CHECK_EQ_INT(sg_evolve_size(e), 5);
  SG_CHECK_OK(sg_evolve_next(e, &h, 3, &plan, &err), err);
  SG_CHECK_EQ_INT(sg_evolve_size(e), 5);
  SG_CHECK_OK(sg_evolve_next(e, &h, 4, &plan, &err), err);
  /* iteration 4: island 1's best (a) goes on to 2; island 2's best (b) to 0;
   * island 0's best (a) is on 1 already */
  struct {
    uint64_t k;
    bool on[3];
  } after4[] = {{a, {true, true, true}},
                {a2, {true, false, false}},
                {b, {true, true, true}}};
  for (size_t i = 0; i < 3; i++)
    for (uint32_t isl = 0; isl < 3; isl++)
      SG_CHECK_MSG(sg_evolve_holds(e, isl, after4[i].k) == after4[i].on[isl],
                   "after 4: kernel %llu on island %u",
                   (unsigned long long)after4[i].k, isl);
  /* a migrant competes for its cell like any program: b (1.5) took island
   * 0's compute-bound cell from a2 (1.0) */
  SG_CHECK_EQ_INT(sg_evolve_elite(e, 0, 2), b);
  sg_evolve_free(e);
  sg_history_free(&h);
}

/* An island with no elite yet draws from every island's elites, a
 * migrated kernel once (it is an elite on two islands). */
static void test_empty_island_draws_from_all_once_each(void) {
  sg_history h;
  sg_history_init(&h);
  sg_err err;
  sg_err_clear(&err);
  sg_evolve *e = make("islands=4,migrate=2,migrants=2,features=verdict,"
                      "inspirations=8,mains=16,explore=0.5,exploit=0.5",
                      1);
  sg_search_plan plan;
  SG_CHECK_OK(sg_evolve_next(e, &h, 0, &plan, &err), err);
  uint64_t a = add_kernel(&h, 0, SG_EVAL_OK, 2.0, "memory-bound", 200, 1);
  uint64_t b = add_kernel(&h, 0, SG_EVAL_OK, 1.0, "compute-bound", 200, 2);
  SG_CHECK_OK(sg_evolve_next(e, &h, 1, &plan, &err), err);
  SG_CHECK_OK(sg_evolve_next(e, &h, 2, &plan, &err), err);
  SG_CHECK(sg_evolve_holds(e, 1, a) && sg_evolve_holds(e, 1, b));
  SG_CHECK_EQ_INT(sg_evolve_last_island(e), 2); /* empty */
  for (size_t i = 0; i < plan.n; i++) {
    const sg_prompt *p = &plan.prompts[i];
    SG_CHECK(p->base_kernel == a || p->base_kernel == b);
    SG_CHECK_EQ_INT(p->n_inspirations, 1);
    SG_CHECK_EQ_INT(p->inspirations[0], p->base_kernel == a ? b : a);
  }
  sg_evolve_free(e);
  sg_history_free(&h);
}

static void test_no_migration_when_off_or_one_island(void) {
  const char *specs[] = {"islands=3,migrate=0,features=verdict",
                         "islands=1,migrate=1,features=verdict"};
  for (size_t s = 0; s < 2; s++) {
    sg_history h;
    sg_history_init(&h);
    sg_err err;
    sg_err_clear(&err);
    sg_evolve *e = make(specs[s], 1);
    sg_search_plan plan;
    for (uint32_t it = 0; it < 12; it++) {
      SG_CHECK_OK(sg_evolve_next(e, &h, it, &plan, &err), err);
      add_kernel(&h, it, SG_EVAL_OK, 1.0 + it, "memory-bound", 200, it);
    }
    SG_CHECK_OK(sg_evolve_next(e, &h, 12, &plan, &err), err);
    SG_CHECK_EQ_INT(sg_evolve_size(e), 12); /* no copies */
    sg_evolve_free(e);
    sg_history_free(&h);
  }
}

/* ---- determinism, the registry, the controller -------------------------- */

/* Runs 60 iterations, growing the history from the plans; returns a digest
 * of every plan and mode. */
static uint64_t run_digest(const char *spec, uint64_t seed) {
  sg_history h;
  sg_history_init(&h);
  sg_err err;
  sg_err_clear(&err);
  sg_evolve *e = make(spec, seed);
  uint64_t d = SG_FNV1A64_INIT;
  for (uint32_t it = 0; it < 60; it++) {
    sg_search_plan plan;
    SG_CHECK_OK(sg_evolve_next(e, &h, it, &plan, &err), err);
    for (size_t i = 0; i < plan.n; i++) {
      const sg_prompt *p = &plan.prompts[i];
      uint64_t vals[3 + SG_PROMPT_MAX_ITEMS + SG_PROMPT_MAX_INSPIRATIONS];
      size_t nv = 0;
      vals[nv++] = p->base_kernel;
      vals[nv++] = (uint64_t)sg_evolve_last_mode(e, i);
      vals[nv++] = p->n_items;
      for (size_t j = 0; j < p->n_items; j++)
        vals[nv++] = p->items[j].kernel * 4 + (uint64_t)p->items[j].kind;
      for (size_t j = 0; j < p->n_inspirations; j++)
        vals[nv++] = p->inspirations[j];
      d = sg_fnv1a64_update(d, vals, nv * sizeof vals[0]);
      /* the plan's kernels come back with speedups that depend on them */
      double s = 0.5 + (double)((p->base_kernel * 37 + it) % 29) / 10.0;
      sg_eval_status st = (it + i) % 4 == 3 ? SG_EVAL_COMPILE_ERROR
                                            : SG_EVAL_OK;
      add_kernel(&h, it, st, s, (it % 3) ? "memory-bound" : "latency-bound",
                 100 + (size_t)((p->base_kernel * 53) % 3000),
                 (unsigned)(it * 16 + i));
    }
  }
  sg_evolve_free(e);
  sg_history_free(&h);
  return d;
}

static void test_same_seed_same_plans(void) {
  const char *spec = "islands=3,migrate=5,mains=2,cap=30";
  SG_CHECK(run_digest(spec, 7) == run_digest(spec, 7));
  SG_CHECK(run_digest(spec, 7) != run_digest(spec, 8));
}

static void test_registered_search_makes_checked_plans(void) {
  sg_search_registry reg;
  sg_search_registry_init(&reg); /* evolve is built in */
  sg_err err;
  sg_err_clear(&err);
  sg_search *s = NULL;
  SG_CHECK_EQ_INT(sg_search_new(&reg, "evolve:islands=0", 1, &s, &err),
                  SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "islands");
  SG_CHECK(s == NULL);
  SG_CHECK_OK(sg_search_new(&reg, "evolve", 1, &s, &err), err);
  SG_CHECK_STR_EQ(sg_search_name(s), "evolve");
  sg_search_free(s);
  SG_CHECK_OK(sg_search_new(&reg, "evolve:islands=2,mains=3,migrate=1", 1, &s,
                            &err),
              err);
  sg_history h;
  sg_history_init(&h);
  for (uint32_t it = 0; it < 20; it++) {
    sg_search_plan plan;
    /* sg_search_next checks every plan: ids exist, 1..16 prompts */
    SG_CHECK_OK(sg_search_next(s, &h, it, &plan, &err), err);
    SG_CHECK_EQ_INT(plan.n, 3);
    add_kernel(&h, it, it % 3 ? SG_EVAL_OK : SG_EVAL_RUNTIME_ERROR,
               1.0 + it * 0.1, "compute-bound", 300 + it * 40, it);
  }
  sg_history_free(&h);
  sg_search_free(s);
}

#define CODE "Here it is.\n```c\nvoid hinge(float *x) { x[0] = 1; }\n```\n"

static const sg_ctl_action *find_act(const sg_ctl_actions *a,
                                     sg_ctl_action_type t) {
  for (size_t i = 0; i < a->n; i++)
    if (a->v[i].type == t)
      return &a->v[i];
  return NULL;
}

/* Three iterations through the controller: each main generation's kernel
 * is validated and profiled; the next prompt improves one of them. */
static void test_drives_the_controller(void) {
  sg_termination_registry treg;
  sg_search_registry sreg;
  sg_err err;
  sg_err_clear(&err);
  sg_termination_registry_init(&treg);
  sg_search_registry_init(&sreg);
  sg_termination *term = NULL;
  sg_search *search = NULL;
  SG_CHECK_OK(sg_termination_new(&treg, "none", &term, &err), err);
  SG_CHECK_OK(sg_search_new(&sreg, "evolve:islands=2,migrate=1", 7, &search,
                            &err),
              err);
  sg_ctl_opts o;
  sg_ctl_opts_default(&o);
  o.search = search;
  o.termination = term;
  o.language = "c";
  o.entry = "hinge";
  o.speculate = false;
  o.max_iterations = 3;
  sg_controller *c = NULL;
  SG_CHECK_OK(sg_controller_new(&o, &c, &err), err);
  sg_ctl_actions a;
  sg_ctl_actions_init(&a);
  int64_t now = 1000;
  SG_CHECK_OK(sg_controller_start(c, now, &a, &err), err);
  uint64_t bases[3];
  for (int it = 0; it < 3; it++) {
    const sg_ctl_action *st = find_act(&a, SG_CACT_START_GEN);
    SG_CHECK(st != NULL && st->u.start.kind == SG_GEN_MAIN);
    SG_CHECK_EQ_INT(st->iteration, it);
    bases[it] = st->u.start.prompt->base_kernel;
    uint64_t gen = st->u.start.gen;
    sg_ctl_event ev = {.type = SG_CEV_GEN_FINISHED};
    ev.now_us = ++now;
    ev.u.finished.gen = gen;
    ev.u.finished.text = CODE;
    ev.u.finished.len = strlen(CODE);
    sg_ctl_actions_clear(&a);
    SG_CHECK_OK(sg_controller_event(c, &ev, &a, &err), err);
    const sg_ctl_action *sub = find_act(&a, SG_CACT_SUBMIT_EVAL);
    SG_CHECK(sub != NULL);
    uint64_t cand = sub->u.submit.candidate;
    for (int phase = 0; phase < 2; phase++) {
      sg_ctl_event ee = {.type = SG_CEV_EVAL_DONE};
      ee.now_us = ++now;
      ee.u.eval.candidate = cand;
      ee.u.eval.phase = phase ? SG_PHASE_PROFILE : SG_PHASE_VALIDATE;
      ee.u.eval.status = SG_EVAL_OK;
      ee.u.eval.speedup = 1.0 + it;
      ee.u.eval.profile_text = phase ? "memory-bound" : NULL;
      sg_ctl_actions_clear(&a);
      SG_CHECK_OK(sg_controller_event(c, &ee, &a, &err), err);
    }
    SG_CHECK(find_act(&a, SG_CACT_END_ITERATION) != NULL);
  }
  SG_CHECK(find_act(&a, SG_CACT_WORKFLOW_DONE) != NULL);
  /* iteration 0: from scratch; iteration 1 (island 1, empty until the
   * migration at 1 brings kernel 1): kernel 1; iteration 2 (island 0): its
   * only program, kernel 1, or kernel 2 brought by a random draw */
  SG_CHECK_EQ_INT(bases[0], 0);
  SG_CHECK_EQ_INT(bases[1], 1);
  SG_CHECK(bases[2] == 1 || bases[2] == 2);
  sg_ctl_actions_free(&a);
  sg_controller_free(c);
  sg_search_free(search);
  sg_termination_free(term);
}

static void test_names(void) {
  SG_CHECK_STR_EQ(sg_evolve_dim_name(SG_EVOLVE_DIM_VERDICT), "verdict");
  SG_CHECK_STR_EQ(sg_evolve_dim_name(SG_EVOLVE_DIM__COUNT), "unknown");
  SG_CHECK_STR_EQ(sg_evolve_mode_name(SG_EVOLVE_EXPLOIT), "exploit");
  SG_CHECK_STR_EQ(sg_evolve_mode_name(SG_EVOLVE_MODE__COUNT), "unknown");
}

SG_TEST_MAIN(SG_TEST(test_options_defaults_and_keys),
             SG_TEST(test_bad_options_name_the_key),
             SG_TEST(test_features_place_kernels_in_cells),
             SG_TEST(test_hash_ignores_blanks_and_spreads),
             SG_TEST(test_cell_replaced_only_by_a_better_program),
             SG_TEST(test_cap_evicts_the_slowest_non_elite),
             SG_TEST(test_cap_holds_under_load),
             SG_TEST(test_empty_history_plans_from_scratch),
             SG_TEST(test_islands_visited_round_robin),
             SG_TEST(test_selection_ratios_within_tolerance),
             SG_TEST(test_prompt_shows_parent_inspirations_and_island_failures),
             SG_TEST(test_migration_moves_elites_around_the_ring),
             SG_TEST(test_empty_island_draws_from_all_once_each),
             SG_TEST(test_no_migration_when_off_or_one_island),
             SG_TEST(test_same_seed_same_plans),
             SG_TEST(test_registered_search_makes_checked_plans),
             SG_TEST(test_drives_the_controller),
             SG_TEST(test_names))
