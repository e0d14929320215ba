/* sg_sim_reproduce.c: the paper's tables beside the simulator's (see
 * sg_sim_reproduce.h). */
#include "sim/sg_sim_reproduce.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "sim/sg_sim.h"
#include "sim/sg_sim_report.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the paper's numbers (PAPER-NUMBERS, from its tables) ---- */

enum { GLM, DSV4, NMODELS };
static const char *const model_name[NMODELS] = {"GLM", "DSv4"};

/* Table 4: utilization, CudaForge / SpecGen w/o ElasticScheduler / SpecGen. */
static const double t4[NMODELS][3] = {{4.7, 56.2, 88.2}, {11.3, 74.7, 96.1}};
/* Table 5 (GLM): E2E over CudaForge after each step. */
static const double t5[4] = {1.46, 1.61, 1.69, 1.77};
/* Table 7 (GLM): tokens (M) per task, CudaForge and SpecGen. */
static const double t7_cf[10] = {1.98, 2.42, 2.42, 2.05, 2.64, 2.38, 2.50, 2.41, 2.38, 2.47};
static const double t7_skg[10] = {0.89, 2.71, 2.51, 1.06, 3.13, 2.72, 2.51, 2.55, 2.44, 2.62};
/* Table 8 (DSv4, T11-T20): CF / SKG per task. */
static const double t8_e2e[10][2] = {{37.6, 24.5}, {32.2, 21.0}, {39.3, 21.5}, {34.4, 22.6},
                                     {40.2, 18.3}, {35.8, 17.0}, {38.3, 22.6}, {32.7, 27.7},
                                     {61.5, 49.0}, {55.1, 47.2}};
static const double t8_fb[10][2] = {{21.2, 41.3}, {1.0, 13.2},  {22.2, 63.6}, {37.4, 51.5},
                                    {29.3, 69.7}, {37.4, 73.7}, {24.2, 55.6}, {7.1, 31.3},
                                    {41.9, 69.2}, {39.4, 77.1}};
static const double t8_util[10][2] = {{13.6, 94.3}, {14.9, 81.2}, {14.5, 84.8}, {19.2, 91.2},
                                      {15.2, 86.3}, {19.2, 92.4}, {15.2, 88.5}, {8.5, 81.1},
                                      {22.3, 93.2}, {14.0, 89.2}};
static const double t8_tok[10][2] = {{1.20, 1.27}, {0.92, 1.45}, {1.40, 1.12}, {1.01, 1.22},
                                     {1.19, 1.96}, {1.27, 1.18}, {1.14, 1.55}, {1.18, 1.10},
                                     {2.94, 3.17}, {2.61, 2.92}};
/* Table 9: per model, rows CudaForge, first valid, hist-avg, hist-best, none:
 * E2E s, additional feedback, kernel speedup, token ratio %, #term. */
enum { T9_ROWS = 5 };
static const char *const t9_row[T9_ROWS] = {"CudaForge", "first-valid", "hist-avg",
                                            "hist-best", "none"};
static const double t9[NMODELS][T9_ROWS][5] = {
    {{73.9e3, 0, 5.05, 100, 0},
     {39.8e3, 70.0, 5.53, 114.3, 70.3},
     {43.8e3, 114.9, 5.78, 130.2, 63.0},
     {70.3e3, 535.9, 6.06, 229.5, 9.0},
     {73.9e3, 587.2, 6.15, 240.0, 0}},
    {{57.0e3, 0, 2.61, 100, 0},
     {29.6e3, 64.5, 2.95, 105.1, 64.5},
     {35.9e3, 101.1, 3.18, 130.2, 52.8},
     {54.6e3, 252.3, 4.79, 208.3, 8.1},
     {57.0e3, 269.1, 5.08, 218.1, 0}}};

/* ---- output ---- */

typedef struct out {
  bool json;
  sg_buf b;
  json_t *cells;
  const char *table;
} out;

static void cell(out *o, const char *model, const char *row, const char *col,
                 double paper, double sim) {
  double r = paper != 0 ? sim / paper : NAN;
  if (o->json) {
    json_t *c = json_pack("{s:s, s:s, s:s, s:s}", "table", o->table, "model", model, "row",
                          row, "column", col);
    json_object_set_new(c, "paper", json_real(paper));
    json_object_set_new(c, "sim", isfinite(sim) ? json_real(round(sim * 1e4) / 1e4)
                                                : json_null());
    json_object_set_new(c, "ratio", isfinite(r) ? json_real(round(r * 1e4) / 1e4)
                                                : json_null());
    json_array_append_new(o->cells, c);
    return;
  }
  char rs[32];
  if (isfinite(r))
    snprintf(rs, sizeof rs, "%.2f", r);
  else
    snprintf(rs, sizeof rs, "-");
  sg_buf_printf(&o->b, "  %-5s %-24s %-22s %10.4g %10.4g %7s\n", model, row, col, paper,
                sim, rs);
}

static void heading(out *o, const char *table, const char *title) {
  o->table = table;
  if (!o->json)
    sg_buf_printf(&o->b, "\n%s: %s\n  %-5s %-24s %-22s %10s %10s %7s\n", table, title,
                  "model", "row", "column", "paper", "sim", "ratio");
}

/* ---- the campaigns ---- */

typedef struct model_runs {
  sg_sim_result abl[SG_SIM_VARIANTS]; /* baseline .. full, hist-avg */
  sg_sim_result term[T9_ROWS];        /* [0] unused: the baseline */
  int workflows, iterations;
} model_runs;

static int run_model(const sg_sim_params *base, model_runs *m, sg_err *err) {
  m->workflows = base->workflows;
  m->iterations = base->knobs.iterations;
  for (int i = 0; i < SG_SIM_VARIANTS; i++) {
    sg_sim_variant v;
    sg_sim_variant_parse(sg_sim_variant_name(i), &v, err);
    int rc = sg_sim_run(base, &v, &m->abl[i], err);
    if (rc < 0)
      return sg_err_prefix(err, "%s %s", base->preset, v.name);
  }
  m->term[0] = m->abl[0];
  for (int t = 1; t < T9_ROWS; t++) {
    sg_sim_params p = *base;
    snprintf(p.termination, sizeof p.termination, "%s", t9_row[t]);
    if (strcmp(p.termination, base->termination) == 0) {
      m->term[t] = m->abl[SG_SIM_VARIANTS - 1];
      continue;
    }
    sg_sim_variant v;
    sg_sim_variant_parse("full", &v, err);
    int rc = sg_sim_run(&p, &v, &m->term[t], err);
    if (rc < 0)
      return sg_err_prefix(err, "%s full %s", base->preset, t9_row[t]);
  }
  return 0;
}

static double consumption(const sg_sim_result *r) { return (double)sg_sim_consumption(r); }

static double geomean_ratio(const double v[][2], int n, bool inverse) {
  double s = 0;
  for (int i = 0; i < n; i++)
    s += inverse ? log(v[i][0] / v[i][1]) : log(v[i][1] / v[i][0]);
  return exp(s / n);
}

static double mean_col(const double v[][2], int n, int col) {
  double s = 0;
  for (int i = 0; i < n; i++)
    s += v[i][col];
  return s / n;
}

static void render(out *o, const model_runs *m) {
  heading(o, "Table 4", "validation/profiling utilization, % of E2E busy");
  for (int k = 0; k < NMODELS; k++) {
    cell(o, model_name[k], "CudaForge (baseline)", "utilization %", t4[k][0],
         100 * m[k].abl[0].util_overall);
    cell(o, model_name[k], "SpecGen w/o ES (spec)", "utilization %", t4[k][1],
         100 * m[k].abl[1].util_overall);
    cell(o, model_name[k], "SpecGen (full)", "utilization %", t4[k][2],
         100 * m[k].abl[4].util_overall);
  }
  heading(o, "Table 5", "ablation, E2E speedup over the baseline (GLM)");
  static const char *const steps[4] = {"+speculation", "+reallocation", "+priority queue",
                                       "+remote prefix cache"};
  for (int i = 0; i < 4; i++)
    cell(o, "GLM", steps[i], "E2E speedup", t5[i],
         m[GLM].abl[0].e2e_geomean_s / m[GLM].abl[i + 1].e2e_geomean_s);
  heading(o, "Table 7", "token consumption, GLM, 100 iterations");
  double cf = 0, skg = 0;
  for (int i = 0; i < 10; i++) {
    cf += t7_cf[i];
    skg += t7_skg[i];
  }
  double per_task = 1e6 * (double)m[GLM].iterations / 100.0 * (double)m[GLM].workflows;
  cell(o, "GLM", "CudaForge (baseline)", "M tokens per task", cf / 10,
       consumption(&m[GLM].abl[0]) / per_task);
  cell(o, "GLM", "SpecGen (full)", "M tokens per task", skg / 10,
       consumption(&m[GLM].abl[4]) / per_task);
  cell(o, "GLM", "SpecGen / CudaForge", "token ratio", skg / cf,
       consumption(&m[GLM].abl[4]) / consumption(&m[GLM].abl[0]));
  heading(o, "Table 8", "DSv4 Level 2/3 (T11-T20) aggregates vs the dsv4 preset");
  const model_runs *d = &m[DSV4];
  cell(o, "DSv4", "E2E CF / SKG (geomean)", "speedup", geomean_ratio(t8_e2e, 10, true),
       d->abl[0].e2e_geomean_s / d->abl[4].e2e_geomean_s);
  cell(o, "DSv4", "feedback SKG / CF", "ratio (geomean)", geomean_ratio(t8_fb, 10, false),
       (double)d->abl[4].profiling_feedback / (double)d->abl[0].profiling_feedback);
  cell(o, "DSv4", "CudaForge (baseline)", "utilization % (mean)", mean_col(t8_util, 10, 0),
       100 * d->abl[0].util_overall);
  cell(o, "DSv4", "SpecGen (full)", "utilization % (mean)", mean_col(t8_util, 10, 1),
       100 * d->abl[4].util_overall);
  cell(o, "DSv4", "tokens SKG / CF", "ratio (geomean)", geomean_ratio(t8_tok, 10, false),
       consumption(&d->abl[4]) / consumption(&d->abl[0]));
  heading(o, "Table 9", "termination criteria (rows: full with each criterion)");
  for (int k = 0; k < NMODELS; k++) {
    const model_runs *r = &m[k];
    double per100 = 100.0 / (double)r->iterations / (double)r->workflows;
    for (int t = 0; t < T9_ROWS; t++) {
      const sg_sim_result *x = &r->term[t];
      char row[64];
      snprintf(row, sizeof row, "%s", t9_row[t]);
      cell(o, model_name[k], row, "E2E s", t9[k][t][0], x->e2e_geomean_s);
      cell(o, model_name[k], row, "E2E speedup", t9[k][0][0] / t9[k][t][0],
           r->term[0].e2e_geomean_s / x->e2e_geomean_s);
      if (t > 0) {
        cell(o, model_name[k], row, "additional feedback", t9[k][t][1],
             ((double)x->profiling_feedback - (double)r->term[0].profiling_feedback) *
                 per100);
        cell(o, model_name[k], row, "kernel speedup ratio", t9[k][t][2] / t9[k][0][2],
             x->best_speedup_geomean / r->term[0].best_speedup_geomean);
        cell(o, model_name[k], row, "token ratio %", t9[k][t][3],
             100 * consumption(x) / consumption(&r->term[0]));
        cell(o, model_name[k], row, "#term per 100 it.", t9[k][t][4],
             (double)x->early_terminations * per100);
      }
    }
  }
}

int sg_sim_reproduce(const sg_sim_params *glm, const sg_sim_params *dsv4, bool json,
                     char **res, sg_err *err) {
  *res = NULL;
  model_runs *m = sg_calloc(NMODELS, sizeof *m);
  int rc = run_model(glm, &m[GLM], err);
  if (rc == 0)
    rc = run_model(dsv4, &m[DSV4], err);
  if (rc < 0) {
    free(m);
    return rc;
  }
  out o;
  memset(&o, 0, sizeof o);
  o.json = json;
  if (json) {
    o.cells = json_array();
  } else {
    sg_buf_init(&o.b, 0);
    sg_buf_printf(&o.b,
                  "The paper's tables beside the simulator's (seed %llu; %d workflows x %d "
                  "iterations on %d devices).\nratio = sim / paper.\n",
                  (unsigned long long)glm->seed, glm->workflows, glm->knobs.iterations,
                  glm->devices);
  }
  render(&o, m);
  free(m);
  if (json) {
    json_t *root = json_pack("{s:I, s:o}", "seed", (json_int_t)glm->seed, "cells", o.cells);
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(root);
    if (s == NULL)
      abort(); /* jansson fails only on allocation failure: our OOM policy */
    *res = sg_strdup(s);
    free(s);
  } else {
    *res = sg_buf_steal(&o.b);
  }
  return 0;
}
