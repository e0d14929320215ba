/* sg_ncu.c: parsing ncu's raw CSV page and the roofline verdict (see the
 * header). The CSV reader follows RFC 4180 (quoted fields, doubled quotes,
 * commas and newlines inside quotes); numbers may carry thousands
 * separators, which are dropped. Nothing here does I/O. */
#include "eval/sg_ncu.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *sg_ncu_bound_name(sg_ncu_bound b) {
  switch (b) {
  case SG_NCU_MEMORY_BOUND: return "memory-bound";
  case SG_NCU_COMPUTE_BOUND: return "compute-bound";
  default: return "latency-bound";
  }
}

sg_ncu_bound sg_ncu_verdict(double compute_pct, double memory_pct) {
  double c = isnan(compute_pct) ? 0 : compute_pct;
  double m = isnan(memory_pct) ? 0 : memory_pct;
  if (c < SG_NCU_SOL_THRESHOLD_PCT && m < SG_NCU_SOL_THRESHOLD_PCT)
    return SG_NCU_LATENCY_BOUND;
  return m >= c ? SG_NCU_MEMORY_BOUND : SG_NCU_COMPUTE_BOUND;
}

const char *const *sg_ncu_sections(void) {
  static const char *const s[] = {
      "SpeedOfLight",       "SpeedOfLight_RooflineChart", "ComputeWorkloadAnalysis",
      "MemoryWorkloadAnalysis", "Occupancy", "LaunchStats", "SchedulerStats",
      "WarpStateStats",     NULL};
  return s;
}

/* Plain names, and "regex:" patterns for the two families (a stall reason
 * or a pipe each) whose members differ between architectures. Every entry
 * must name at least one metric: ncu refuses the whole list otherwise
 * (the caller then asks for the sections). So the names are those of the
 * ncu seen on the H100 and H200 (2025.3), not the older alternatives that
 * summarize() also reads from section output. Kept in step with
 * summarize() by a test that filters recorded section output through this
 * list and expects the same report. */
const char *sg_ncu_metrics(void) {
  return "gpu__time_duration.sum,"
         "sm__throughput.avg.pct_of_peak_sustained_elapsed,"
         "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,"
         "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed,"
         "dram__throughput.avg.pct_of_peak_sustained_elapsed,"
         "l1tex__t_sector_hit_rate.pct,"
         "lts__t_sector_hit_rate.pct,"
         "l1tex__throughput.avg.pct_of_peak_sustained_active,"
         "lts__throughput.avg.pct_of_peak_sustained_elapsed,"
         "sm__warps_active.avg.pct_of_peak_sustained_active,"
         "sm__maximum_warps_per_active_cycle_pct,"
         "launch__registers_per_thread,"
         "launch__block_size,"
         "launch__grid_size,"
         "smsp__warps_active.avg.per_cycle_active,"
         "launch__occupancy_limit_registers,"
         "launch__occupancy_limit_shared_mem,"
         "launch__occupancy_limit_blocks,"
         "launch__occupancy_limit_warps,"
         "launch__shared_mem_per_block_static,"
         "launch__shared_mem_per_block_dynamic,"
         "sm__inst_issued.avg.pct_of_peak_sustained_active,"
         "dram__bytes_read.sum,"
         "dram__bytes_write.sum,"
         "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,"
         "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,"
         "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum,"
         "regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio$,"
         "regex:^sm__inst_executed_pipe_.*\\.avg\\.pct_of_peak_sustained_active$";
}

/* ---- CSV ------------------------------------------------------------------ */

typedef struct row {
  char **f;
  size_t n, cap;
} row;

static void row_free(row *r) {
  for (size_t i = 0; i < r->n; i++)
    free(r->f[i]);
  free(r->f);
  memset(r, 0, sizeof *r);
}

static void row_push(row *r, sg_buf *b) {
  if (r->n == r->cap) {
    r->cap = r->cap ? r->cap * 2 : 16;
    r->f = sg_realloc(r->f, r->cap * sizeof *r->f);
  }
  r->f[r->n++] = sg_buf_steal(b);
}

/* Reads one record starting at *pos; returns false at the end of input. A
 * line of ncu's own (starting with "==") comes back with *skip set. */
static bool read_record(const char *t, size_t len, size_t *pos, row *r,
                        bool *skip) {
  size_t i = *pos;
  *skip = false;
  if (i >= len)
    return false;
  if (len - i >= 2 && t[i] == '=' && t[i + 1] == '=') {
    while (i < len && t[i] != '\n')
      i++;
    *pos = i < len ? i + 1 : i;
    *skip = true;
    return true;
  }
  sg_buf b;
  sg_buf_init(&b, 0);
  bool quoted = false, any = false;
  for (;;) {
    if (i >= len) {
      row_push(r, &b);
      break;
    }
    char c = t[i];
    if (quoted) {
      if (c == '"' && i + 1 < len && t[i + 1] == '"') {
        sg_buf_append(&b, "\"", 1);
        i += 2;
      } else if (c == '"') {
        quoted = false;
        i++;
      } else {
        sg_buf_append(&b, &c, 1);
        i++;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      any = true;
      i++;
    } else if (c == ',') {
      row_push(r, &b);
      i++;
    } else if (c == '\n' || c == '\r') {
      row_push(r, &b);
      if (c == '\r' && i + 1 < len && t[i + 1] == '\n')
        i++;
      i++;
      break;
    } else {
      sg_buf_append(&b, &c, 1);
      any = true;
      i++;
    }
  }
  sg_buf_free(&b);
  *pos = i;
  /* A blank line is no record. */
  if (!any && r->n == 1 && r->f[0][0] == 0)
    *skip = true;
  return true;
}

/* "1,234.5" -> 1234.5; false when s is not a number. */
static bool parse_number(const char *s, double *out) {
  char buf[128];
  size_t k = 0;
  for (const char *p = s; *p && k + 1 < sizeof buf; p++)
    if (*p != ',' && !isspace((unsigned char)*p))
      buf[k++] = *p;
  buf[k] = 0;
  if (k == 0)
    return false;
  char *end = NULL;
  double v = strtod(buf, &end);
  if (*end)
    return false;
  *out = v;
  return true;
}

int sg_ncu_parse(const char *text, size_t len, sg_ncu_report *rep, sg_err *err) {
  memset(rep, 0, sizeof *rep);
  size_t pos = 0, line = 0, cap = 0;
  row header = {0};
  int kname = -1;
  bool have_units = false;
  int rc = 0;
  for (;;) {
    row r = {0};
    bool skip;
    if (!read_record(text, len, &pos, &r, &skip)) {
      row_free(&r);
      break;
    }
    line++;
    if (skip) {
      row_free(&r);
      continue;
    }
    if (!header.n) {
      if (r.n > 1 && strcmp(r.f[0], "ID") == 0) {
        header = r;
        for (size_t i = 0; i < header.n; i++)
          if (strcmp(header.f[i], "Kernel Name") == 0)
            kname = (int)i;
        rep->units = json_object();
      } else {
        row_free(&r); /* the application's own output before the table */
      }
      continue;
    }
    if (r.n != header.n) {
      rc = sg_err_set(err, SG_EPARSE,
                      "ncu output, record %zu: %zu fields where the header has %zu",
                      line, r.n, header.n);
      row_free(&r);
      break;
    }
    if (!have_units && r.f[0][0] == 0) {
      for (size_t i = 0; i < r.n; i++)
        if (r.f[i][0])
          json_object_set_new(rep->units, header.f[i], json_string(r.f[i]));
      have_units = true;
      row_free(&r);
      continue;
    }
    if (rep->nkernels == cap) {
      cap = cap ? cap * 2 : 4;
      rep->kernels = sg_realloc(rep->kernels, cap * sizeof *rep->kernels);
    }
    sg_ncu_kernel *k = &rep->kernels[rep->nkernels++];
    k->name = sg_strdup(kname >= 0 ? r.f[kname] : "");
    k->values = json_object();
    for (size_t i = 0; i < r.n; i++) {
      double v;
      if ((int)i == kname)
        continue;
      if (parse_number(r.f[i], &v))
        json_object_set_new(k->values, header.f[i], json_real(v));
      else
        json_object_set_new(k->values, header.f[i], json_string(r.f[i]));
    }
    row_free(&r);
  }
  if (!rc && !header.n)
    rc = sg_err_set(err, SG_EPARSE,
                    "ncu output holds no CSV table (no header row starting "
                    "with \"ID\")");
  row_free(&header);
  if (rc)
    sg_ncu_report_free(rep);
  return rc;
}

void sg_ncu_report_free(sg_ncu_report *rep) {
  for (size_t i = 0; i < rep->nkernels; i++) {
    free(rep->kernels[i].name);
    json_decref(rep->kernels[i].values);
  }
  free(rep->kernels);
  json_decref(rep->units);
  memset(rep, 0, sizeof *rep);
}

double sg_ncu_value(const sg_ncu_report *rep, size_t k, const char *metric) {
  if (k >= rep->nkernels)
    return NAN;
  const json_t *v = json_object_get(rep->kernels[k].values, metric);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The first of several names ncu versions use for one quantity. */
static double first_of(const sg_ncu_report *rep, size_t k,
                       const char *const *names) {
  for (; *names; names++) {
    double v = sg_ncu_value(rep, k, *names);
    if (!isnan(v))
      return v;
  }
  return NAN;
}

#define NAMES(...) ((const char *const[]){__VA_ARGS__, NULL})

typedef struct named {
  char name[96];
  double v;
} named;

static int cmp_named_desc(const void *a, const void *b) {
  double x = ((const named *)a)->v, y = ((const named *)b)->v;
  return (x < y) - (x > y);
}

/* The metrics of kernel k whose names start with prefix and end with
 * suffix, the middle as the name, largest first; at most max. */
static size_t top_matching(const sg_ncu_report *rep, size_t k, const char *prefix,
                           const char *suffix, named *out, size_t max) {
  size_t n = 0, cap = 64;
  named *all = sg_calloc(cap, sizeof *all);
  const char *key;
  json_t *v;
  size_t pl = strlen(prefix), sl = strlen(suffix);
  json_object_foreach(rep->kernels[k].values, key, v) {
    size_t kl = strlen(key);
    if (!json_is_number(v) || kl <= pl + sl || strncmp(key, prefix, pl) != 0 ||
        strcmp(key + kl - sl, suffix) != 0)
      continue;
    if (n == cap) {
      cap *= 2;
      all = sg_realloc(all, cap * sizeof *all);
    }
    snprintf(all[n].name, sizeof all[n].name, "%.*s", (int)(kl - pl - sl),
             key + pl);
    all[n].v = json_number_value(v);
    n++;
  }
  qsort(all, n, sizeof *all, cmp_named_desc);
  size_t m = 0;
  for (size_t i = 0; i < n && m < max; i++)
    if (all[i].v > 0)
      out[m++] = all[i];
  free(all);
  return m;
}

typedef struct ksum {
  double duration_ns, compute, memory, dram, l1_hit, l2_hit, l1_pct, l2_pct;
  double achieved, theoretical, regs, block, grid, warps_per_sched;
  double lim_regs, lim_smem, lim_blocks, lim_warps, smem_static, smem_dynamic;
  double dram_bytes, flops, issue_pct;
  named stalls[3], pipes[3];
  size_t nstalls, npipes;
} ksum;

static void summarize(const sg_ncu_report *rep, size_t k, ksum *s) {
  memset(s, 0, sizeof *s);
  s->duration_ns = first_of(rep, k, NAMES("gpu__time_duration.sum"));
  s->compute = first_of(rep, k, NAMES("sm__throughput.avg.pct_of_peak_sustained_elapsed"));
  s->memory = first_of(rep, k, NAMES("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"));
  s->dram = first_of(rep, k, NAMES("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                                   "dram__throughput.avg.pct_of_peak_sustained_elapsed"));
  s->l1_hit = first_of(rep, k, NAMES("l1tex__t_sector_hit_rate.pct"));
  s->l2_hit = first_of(rep, k, NAMES("lts__t_sector_hit_rate.pct"));
  s->l1_pct = first_of(rep, k, NAMES("l1tex__throughput.avg.pct_of_peak_sustained_active"));
  s->l2_pct = first_of(rep, k, NAMES("lts__throughput.avg.pct_of_peak_sustained_elapsed"));
  s->achieved = first_of(rep, k, NAMES("sm__warps_active.avg.pct_of_peak_sustained_active"));
  s->theoretical = first_of(rep, k, NAMES("sm__maximum_warps_per_active_cycle_pct"));
  s->regs = first_of(rep, k, NAMES("launch__registers_per_thread"));
  s->block = first_of(rep, k, NAMES("launch__block_size"));
  s->grid = first_of(rep, k, NAMES("launch__grid_size"));
  s->warps_per_sched = first_of(rep, k, NAMES("smsp__warps_active.avg.per_cycle_active"));
  s->lim_regs = first_of(rep, k, NAMES("launch__occupancy_limit_registers"));
  s->lim_smem = first_of(rep, k, NAMES("launch__occupancy_limit_shared_mem"));
  s->lim_blocks = first_of(rep, k, NAMES("launch__occupancy_limit_blocks"));
  s->lim_warps = first_of(rep, k, NAMES("launch__occupancy_limit_warps"));
  s->smem_static = first_of(rep, k, NAMES("launch__shared_mem_per_block_static"));
  s->smem_dynamic = first_of(rep, k, NAMES("launch__shared_mem_per_block_dynamic"));
  s->issue_pct = first_of(rep, k, NAMES("sm__inst_issued.avg.pct_of_peak_sustained_active"));
  double rd = first_of(rep, k, NAMES("dram__bytes_read.sum"));
  double wr = first_of(rep, k, NAMES("dram__bytes_write.sum"));
  s->dram_bytes = (isnan(rd) ? 0 : rd) + (isnan(wr) ? 0 : wr);
  double ffma = first_of(rep, k, NAMES("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
                                       "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"));
  double fadd = first_of(rep, k, NAMES("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
                                       "sm__sass_thread_inst_executed_op_fadd_pred_on.sum"));
  double fmul = first_of(rep, k, NAMES("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
                                       "sm__sass_thread_inst_executed_op_fmul_pred_on.sum"));
  s->flops = isnan(ffma) ? NAN : 2 * ffma + (isnan(fadd) ? 0 : fadd) +
                                     (isnan(fmul) ? 0 : fmul);
  s->nstalls = top_matching(rep, k, "smsp__average_warp_latency_issue_stalled_",
                            ".ratio", s->stalls, 3);
  if (!s->nstalls)
    s->nstalls = top_matching(rep, k, "smsp__average_warps_issue_stalled_",
                              "_per_issue_active.ratio", s->stalls, 3);
  s->npipes = top_matching(rep, k, "sm__inst_executed_pipe_",
                           ".avg.pct_of_peak_sustained_active", s->pipes, 3);
  if (!s->npipes)
    s->npipes = top_matching(rep, k, "sm__pipe_", "_cycles_active.avg.pct_of_peak_sustained_active",
                             s->pipes, 3);
}

/* Memory-bound with DRAM under half of the memory speed of light: the
 * limit is L1/shared memory or L2, which asks for other fixes than DRAM
 * traffic does. */
static bool on_chip(const ksum *s) {
  return !isnan(s->dram) && !isnan(s->memory) && s->dram < 0.5 * s->memory;
}

static void set_num(json_t *o, const char *k, double v) {
  json_object_set_new(o, k, isnan(v) ? json_null() : json_real(v));
}

static size_t dominant(const sg_ncu_report *rep) {
  size_t best = 0;
  double bd = -1;
  for (size_t k = 0; k < rep->nkernels; k++) {
    double d = sg_ncu_value(rep, k, "gpu__time_duration.sum");
    if (!isnan(d) && d > bd) {
      bd = d;
      best = k;
    }
  }
  return best;
}

json_t *sg_ncu_report_json(const sg_ncu_report *rep) {
  json_t *o = json_object(), *arr = json_array();
  double total = 0;
  for (size_t k = 0; k < rep->nkernels; k++) {
    ksum s;
    summarize(rep, k, &s);
    json_t *j = json_object();
    json_object_set_new(j, "name", json_string(rep->kernels[k].name));
    set_num(j, "duration_ns", s.duration_ns);
    set_num(j, "compute_sol_pct", s.compute);
    set_num(j, "memory_sol_pct", s.memory);
    set_num(j, "dram_pct", s.dram);
    set_num(j, "l1_pct", s.l1_pct);
    set_num(j, "l2_pct", s.l2_pct);
    set_num(j, "l1_hit_pct", s.l1_hit);
    set_num(j, "l2_hit_pct", s.l2_hit);
    set_num(j, "achieved_occupancy_pct", s.achieved);
    set_num(j, "theoretical_occupancy_pct", s.theoretical);
    set_num(j, "occupancy_limit_registers", s.lim_regs);
    set_num(j, "occupancy_limit_shared_mem", s.lim_smem);
    set_num(j, "occupancy_limit_blocks", s.lim_blocks);
    set_num(j, "occupancy_limit_warps", s.lim_warps);
    set_num(j, "registers_per_thread", s.regs);
    set_num(j, "shared_mem_static_bytes", s.smem_static);
    set_num(j, "shared_mem_dynamic_bytes", s.smem_dynamic);
    set_num(j, "block_size", s.block);
    set_num(j, "grid_size", s.grid);
    set_num(j, "warps_active_per_scheduler", s.warps_per_sched);
    set_num(j, "issue_slots_busy_pct", s.issue_pct);
    set_num(j, "dram_bytes", s.dram_bytes > 0 ? s.dram_bytes : NAN);
    set_num(j, "fp32_flops", s.flops);
    set_num(j, "arithmetic_intensity_flop_per_byte",
            s.dram_bytes > 0 && !isnan(s.flops) ? s.flops / s.dram_bytes : NAN);
    json_t *st = json_array(), *pp = json_array();
    for (size_t i = 0; i < s.nstalls; i++)
      json_array_append_new(st, json_pack("{s:s, s:f}", "reason", s.stalls[i].name,
                                          "cycles_per_instruction", s.stalls[i].v));
    for (size_t i = 0; i < s.npipes; i++)
      json_array_append_new(pp, json_pack("{s:s, s:f}", "pipe", s.pipes[i].name,
                                          "pct", s.pipes[i].v));
    json_object_set_new(j, "top_stalls", st);
    json_object_set_new(j, "top_pipes", pp);
    sg_ncu_bound v = sg_ncu_verdict(s.compute, s.memory);
    json_object_set_new(j, "verdict", json_string(sg_ncu_bound_name(v)));
    if (v == SG_NCU_MEMORY_BOUND)
      json_object_set_new(j, "memory_level", json_string(on_chip(&s) ? "on-chip" : "dram"));
    json_array_append_new(arr, j);
    if (!isnan(s.duration_ns))
      total += s.duration_ns;
  }
  json_object_set_new(o, "kernels", arr);
  json_object_set_new(o, "total_duration_ns", json_real(total));
  if (rep->nkernels) {
    size_t d = dominant(rep);
    json_object_set_new(o, "dominant_kernel", json_integer((json_int_t)d));
    json_object_set_new(o, "verdict",
                        json_incref(json_object_get(json_array_get(arr, d), "verdict")));
  }
  return o;
}

static void pct(sg_buf *b, const char *label, double v) {
  if (!isnan(v))
    sg_buf_printf(b, "%s %.0f%%", label, v);
  else
    sg_buf_printf(b, "%s n/a", label);
}

char *sg_ncu_report_text(const sg_ncu_report *rep) {
  sg_buf b;
  sg_buf_init(&b, 4096);
  if (!rep->nkernels) {
    sg_buf_puts(&b, "no kernel was profiled");
    return sg_buf_steal(&b);
  }
  /* The longest kernels first. */
  size_t order[64], n = rep->nkernels < 64 ? rep->nkernels : 64;
  for (size_t i = 0; i < n; i++)
    order[i] = i;
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0; j--) {
      double a = sg_ncu_value(rep, order[j], "gpu__time_duration.sum");
      double c = sg_ncu_value(rep, order[j - 1], "gpu__time_duration.sum");
      if (!(a > c))
        break;
      size_t t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  sg_buf_printf(&b, "%zu kernel launch%s profiled.\n", rep->nkernels,
                rep->nkernels == 1 ? "" : "es");
  for (size_t i = 0; i < n && i < 4; i++) {
    ksum s;
    summarize(rep, order[i], &s);
    sg_ncu_bound v = sg_ncu_verdict(s.compute, s.memory);
    char name[72];
    snprintf(name, sizeof name, "%s", rep->kernels[order[i]].name);
    char *paren = strchr(name, '(');
    if (paren)
      *paren = 0;
    sg_buf_printf(&b, "%s: %.1f us, %s (", name, s.duration_ns / 1000.0,
                  sg_ncu_bound_name(v));
    pct(&b, "compute SOL", s.compute);
    pct(&b, ", memory SOL", s.memory);
    pct(&b, ", DRAM", s.dram);
    sg_buf_puts(&b, "). ");
    pct(&b, "Occupancy achieved", s.achieved);
    pct(&b, " of theoretical", s.theoretical);
    if (!isnan(s.regs))
      sg_buf_printf(&b, ", %.0f registers/thread", s.regs);
    if (!isnan(s.block))
      sg_buf_printf(&b, ", block %.0f, grid %.0f", s.block, s.grid);
    sg_buf_puts(&b, ". ");
    pct(&b, "L1 hit", s.l1_hit);
    pct(&b, ", L2 hit", s.l2_hit);
    sg_buf_puts(&b, ".");
    if (s.dram_bytes > 0 && !isnan(s.flops))
      sg_buf_printf(&b, " Arithmetic intensity %.2f FLOP/byte.",
                    s.flops / s.dram_bytes);
    if (s.nstalls) {
      sg_buf_puts(&b, " Top stalls:");
      for (size_t k = 0; k < s.nstalls; k++)
        sg_buf_printf(&b, "%s %s (%.1f)", k ? "," : "", s.stalls[k].name,
                      s.stalls[k].v);
      sg_buf_puts(&b, ".");
    }
    if (s.npipes) {
      sg_buf_puts(&b, " Busiest pipes:");
      for (size_t k = 0; k < s.npipes; k++)
        sg_buf_printf(&b, "%s %s %.0f%%", k ? "," : "", s.pipes[k].name,
                      s.pipes[k].v);
      sg_buf_puts(&b, ".");
    }
    switch (v) {
    case SG_NCU_MEMORY_BOUND:
      if (on_chip(&s))
        sg_buf_puts(&b, " The memory pressure is on-chip (L1/shared memory), "
                        "not DRAM. Hint: more outputs per thread from registers "
                        "(register tiling), wider shared-memory loads, no bank "
                        "conflicts.");
      else
        sg_buf_puts(&b, " Hint: cut bytes moved (reuse through shared memory, "
                        "wider coalesced loads, fusion).");
      break;
    case SG_NCU_COMPUTE_BOUND:
      sg_buf_puts(&b, " Hint: cut instructions per result (tensor cores, "
                      "fewer index computations, FMA).");
      break;
    default:
      sg_buf_puts(&b, " Hint: more independent work in flight (occupancy, "
                      "ILP, larger tiles per thread) or fewer launches.");
      break;
    }
    sg_buf_puts(&b, "\n");
  }
  return sg_buf_steal(&b);
}
