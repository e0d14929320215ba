/* test_ncu.c: the ncu CSV parser and the roofline verdict, from ncu output
 * recorded on an NVIDIA H200 (tests/gpu/data/ncu_*.csv: `ncu --csv --page raw
 * --print-units base` over the cuda tasks' example kernels), and from
 * hand-made edge cases. Needs no GPU. */
#include "common/sg_file.h"
#include "eval/sg_ncu.h"
#include "sg_test.h"

#include <regex.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static char *data_file(const char *name, size_t *len) {
  const char *root = getenv("SG_SOURCE_ROOT_OVERRIDE");
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/gpu/data/%s", root ? root : SG_SOURCE_ROOT,
           name);
  char *text = NULL;
  sg_err err;
  SG_CHECK_OK(sg_file_read(path, 8u << 20, &text, len, &err), err);
  return text;
}

static void parse_file(const char *name, sg_ncu_report *rep) {
  size_t len;
  char *text = data_file(name, &len);
  sg_err err;
  SG_CHECK_OK(sg_ncu_parse(text, len, rep, &err), err);
  free(text);
}

/* The recorded values, read from the files (thousands separators and all). */
static void test_recorded_single_kernel(void) {
  sg_ncu_report rep;
  parse_file("ncu_diag_matmul_fast.csv", &rep);
  SG_CHECK_EQ_INT(rep.nkernels, 1);
  SG_CHECK(strncmp(rep.kernels[0].name, "diag_rows(", 10) == 0);
  SG_CHECK_NEAR(sg_ncu_value(&rep, 0, "gpu__time_duration.sum"), 31936, 0);
  SG_CHECK_NEAR(sg_ncu_value(&rep, 0, "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
                8.55, 1e-9);
  SG_CHECK_NEAR(sg_ncu_value(&rep, 0,
                             "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
                72.43, 1e-9);
  SG_CHECK_NEAR(sg_ncu_value(&rep, 0, "launch__registers_per_thread"), 18, 0);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(rep.units, "gpu__time_duration.sum")),
                  "ns");
  SG_CHECK(isnan(sg_ncu_value(&rep, 0, "no__such_metric")));
  SG_CHECK(isnan(sg_ncu_value(&rep, 1, "gpu__time_duration.sum")));
  sg_ncu_report_free(&rep);
}

static void test_recorded_two_kernels(void) {
  sg_ncu_report rep;
  parse_file("ncu_hinge_loss_fast.csv", &rep);
  SG_CHECK_EQ_INT(rep.nkernels, 2);
  SG_CHECK(strncmp(rep.kernels[0].name, "hinge_partial4(", 15) == 0);
  SG_CHECK(strncmp(rep.kernels[1].name, "hinge_final(", 12) == 0);
  SG_CHECK_NEAR(sg_ncu_value(&rep, 0, "gpu__time_duration.sum"), 952032, 0);
  SG_CHECK_NEAR(sg_ncu_value(&rep, 1, "gpu__time_duration.sum"), 3136, 0);
  json_t *j = sg_ncu_report_json(&rep);
  /* The long kernel decides the verdict: 93.83% of memory speed of light. */
  SG_CHECK_EQ_INT(json_integer_value(json_object_get(j, "dominant_kernel")), 0);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(j, "verdict")), "memory-bound");
  SG_CHECK_NEAR(json_number_value(json_object_get(j, "total_duration_ns")), 955168, 0);
  json_t *k0 = json_array_get(json_object_get(j, "kernels"), 0);
  SG_CHECK_NEAR(json_number_value(json_object_get(k0, "memory_sol_pct")), 93.83, 1e-9);
  SG_CHECK_NEAR(json_number_value(json_object_get(k0, "registers_per_thread")), 30, 0);
  SG_CHECK(json_number_value(json_object_get(k0, "achieved_occupancy_pct")) > 0);
  SG_CHECK(json_number_value(json_object_get(k0, "theoretical_occupancy_pct")) > 0);
  SG_CHECK(json_array_size(json_object_get(k0, "top_stalls")) == 3);
  SG_CHECK(json_array_size(json_object_get(k0, "top_pipes")) >= 1);
  SG_CHECK(json_is_number(json_object_get(k0, "l2_hit_pct")));
  SG_CHECK(json_is_number(json_object_get(k0, "dram_pct")));
  json_t *k1 = json_array_get(json_object_get(j, "kernels"), 1);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(k1, "verdict")), "latency-bound");
  json_decref(j);
  char *text = sg_ncu_report_text(&rep);
  SG_CHECK_CONTAINS(text, "2 kernel launches profiled");
  SG_CHECK_CONTAINS(text, "hinge_partial4: 952.0 us, memory-bound");
  SG_CHECK_CONTAINS(text, "Top stalls:");
  /* The longest kernel is described first. */
  SG_CHECK(strstr(text, "hinge_partial4") < strstr(text, "hinge_final"));
  free(text);
  sg_ncu_report_free(&rep);
}

/* Every recorded file: the verdict each kernel gets, from its numbers. */
static void test_recorded_verdicts(void) {
  static const struct {
    const char *file, *verdict;
  } cases[] = {
      {"ncu_diag_matmul_fast.csv", "memory-bound"},        /* 8.55 / 72.43 */
      {"ncu_diag_matmul_plain.csv", "latency-bound"},      /* 46.31 / 41.60 */
      {"ncu_hinge_loss_fast.csv", "memory-bound"},         /* 40.98 / 93.83 */
      {"ncu_hinge_loss_plain.csv", "compute-bound"},       /* 64.31 / 46.88 */
      {"ncu_upper_triangular_tiled.csv", "memory-bound"},  /* 39.82 / 70.75 */
      {"ncu_upper_triangular_naive.csv", "memory-bound"},  /* 44.82 / 96.39 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sg_ncu_report rep;
    parse_file(cases[i].file, &rep);
    json_t *j = sg_ncu_report_json(&rep);
    SG_CHECK_MSG(strcmp(json_string_value(json_object_get(j, "verdict")),
                        cases[i].verdict) == 0,
                 "%s: verdict %s, expected %s", cases[i].file,
                 json_string_value(json_object_get(j, "verdict")), cases[i].verdict);
    json_decref(j);
    sg_ncu_report_free(&rep);
  }
}

/* Recorded from a load_inline kernel run by the kernelbench harness under
 * ncu: memory-bound, but on-chip (shared memory), not DRAM (9%). */
static void test_recorded_on_chip_memory_bound(void) {
  sg_ncu_report rep;
  parse_file("ncu_kb_matmul_bt_load_inline.csv", &rep);
  SG_CHECK_EQ_INT(rep.nkernels, 1);
  SG_CHECK(strncmp(rep.kernels[0].name, "matmul_bt(", 10) == 0);
  SG_CHECK_NEAR(sg_ncu_value(&rep, 0, "gpu__time_duration.sum"), 19566560, 0);
  json_t *j = sg_ncu_report_json(&rep);
  json_t *k0 = json_array_get(json_object_get(j, "kernels"), 0);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(k0, "verdict")), "memory-bound");
  SG_CHECK_STR_EQ(json_string_value(json_object_get(k0, "memory_level")), "on-chip");
  json_decref(j);
  char *text = sg_ncu_report_text(&rep);
  SG_CHECK_CONTAINS(text, "on-chip");
  SG_CHECK_CONTAINS(text, "mio_throttle");
  free(text);
  sg_ncu_report_free(&rep);
  /* The DRAM-bound hinge kernel gets the DRAM hint. */
  parse_file("ncu_hinge_loss_fast.csv", &rep);
  j = sg_ncu_report_json(&rep);
  k0 = json_array_get(json_object_get(j, "kernels"), 0);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(k0, "memory_level")), "dram");
  json_decref(j);
  sg_ncu_report_free(&rep);
}

static void test_verdict_table(void) {
  SG_CHECK_EQ_INT(sg_ncu_verdict(80, 30), SG_NCU_COMPUTE_BOUND);
  SG_CHECK_EQ_INT(sg_ncu_verdict(30, 80), SG_NCU_MEMORY_BOUND);
  SG_CHECK_EQ_INT(sg_ncu_verdict(59.9, 59.9), SG_NCU_LATENCY_BOUND);
  SG_CHECK_EQ_INT(sg_ncu_verdict(60, 60), SG_NCU_MEMORY_BOUND); /* a tie: memory */
  SG_CHECK_EQ_INT(sg_ncu_verdict(60, 10), SG_NCU_COMPUTE_BOUND);
  SG_CHECK_EQ_INT(sg_ncu_verdict(NAN, 90), SG_NCU_MEMORY_BOUND);
  SG_CHECK_EQ_INT(sg_ncu_verdict(NAN, NAN), SG_NCU_LATENCY_BOUND);
  SG_CHECK_STR_EQ(sg_ncu_bound_name(SG_NCU_LATENCY_BOUND), "latency-bound");
}

static void test_csv_quoting_and_noise(void) {
  const char *csv =
      "the application printed this\r\n"
      "==PROF== Connected to process 1 (x)\n"
      "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"note\"\r\n"
      "\"\",\"\",\"ns\",\"\"\r\n"
      "\"0\",\"k(float, \"\"q\"\")\",\"1,234.5\",\"a,b\"\r\n"
      "\n"
      "==PROF== Disconnected\n"
      "\"1\",\"k2\",\"7\",\"multi\nline\"";
  sg_ncu_report rep;
  sg_err err;
  SG_CHECK_OK(sg_ncu_parse(csv, strlen(csv), &rep, &err), err);
  SG_CHECK_EQ_INT(rep.nkernels, 2);
  SG_CHECK_STR_EQ(rep.kernels[0].name, "k(float, \"q\")");
  SG_CHECK_NEAR(sg_ncu_value(&rep, 0, "gpu__time_duration.sum"), 1234.5, 0);
  SG_CHECK_STR_EQ(json_string_value(json_object_get(rep.kernels[0].values, "note")), "a,b");
  SG_CHECK_STR_EQ(json_string_value(json_object_get(rep.kernels[1].values, "note")),
                  "multi\nline");
  SG_CHECK_NEAR(sg_ncu_value(&rep, 1, "gpu__time_duration.sum"), 7, 0);
  sg_ncu_report_free(&rep);
}

static void test_csv_errors(void) {
  sg_ncu_report rep;
  sg_err err;
  const char *none = "==ERROR== the profiler failed\nno table here\n";
  SG_CHECK_EQ_INT(sg_ncu_parse(none, strlen(none), &rep, &err), SG_EPARSE);
  SG_CHECK_CONTAINS(err.msg, "no CSV table");
  const char *ragged = "\"ID\",\"Kernel Name\",\"a\"\n\"0\",\"k\"\n";
  SG_CHECK_EQ_INT(sg_ncu_parse(ragged, strlen(ragged), &rep, &err), SG_EPARSE);
  SG_CHECK_CONTAINS(err.msg, "2 fields where the header has 3");
  SG_CHECK_EQ_INT(sg_ncu_parse("", 0, &rep, &err), SG_EPARSE);
  /* A header and no launch: parses, with no kernel. */
  const char *empty = "\"ID\",\"Kernel Name\"\n";
  SG_CHECK_OK(sg_ncu_parse(empty, strlen(empty), &rep, &err), err);
  SG_CHECK_EQ_INT(rep.nkernels, 0);
  char *t = sg_ncu_report_text(&rep);
  SG_CHECK_STR_EQ(t, "no kernel was profiled");
  free(t);
  sg_ncu_report_free(&rep);
}

/* The parser never reads past len: input placed against the end of an
 * exact-size allocation, at every cut of a recorded file's first 4 KiB. */
/* ncu's output cut anywhere (a killed profiler): every prefix either parses
 * to a report that is a prefix of the whole one (no more kernels, the same
 * names in order) or is refused as SG_EPARSE with a message; never a crash,
 * and never a result made up. The cuts land both before the header and
 * inside rows. */
static void test_every_prefix_is_safe(void) {
  size_t len;
  char *text = data_file("ncu_hinge_loss_plain.csv", &len);
  sg_ncu_report full;
  sg_err err;
  SG_CHECK_OK(sg_ncu_parse(text, len, &full, &err), err);
  SG_CHECK(full.nkernels >= 1);
  size_t max = len < 4096 ? len : 4096;
  int parsed = 0, refused = 0;
  for (size_t n = 0; n <= max; n += 7) {
    char *copy = malloc(n ? n : 1);
    memcpy(copy, text, n);
    sg_ncu_report rep;
    sg_err_clear(&err);
    int rc = sg_ncu_parse(copy, n, &rep, &err);
    if (rc == 0) {
      parsed++;
      SG_CHECK_MSG(rep.nkernels <= full.nkernels, "prefix %zu: %zu kernels of %zu", n,
                   rep.nkernels, full.nkernels);
      for (size_t k = 0; k < rep.nkernels; k++)
        SG_CHECK_STR_EQ(rep.kernels[k].name, full.kernels[k].name);
      sg_ncu_report_free(&rep);
    } else {
      refused++;
      SG_CHECK_MSG(rc == SG_EPARSE, "prefix %zu: rc %d", n, rc);
      SG_CHECK_MSG(err.msg[0] != '\0', "prefix %zu: refused without a message", n);
    }
    free(copy);
  }
  /* the empty text has no header: refused */
  SG_CHECK(refused > 0);
  SG_CHECK(parsed + refused == (int)(max / 7) + 1);
  sg_ncu_report_free(&full);
  free(text);
}

static void test_sections_listed(void) {
  const char *const *s = sg_ncu_sections();
  int n = 0;
  bool sol = false, occ = false, warp = false;
  for (; *s; s++, n++) {
    sol |= strcmp(*s, "SpeedOfLight") == 0;
    occ |= strcmp(*s, "Occupancy") == 0;
    warp |= strcmp(*s, "WarpStateStats") == 0;
  }
  SG_CHECK(sol && occ && warp);
  SG_CHECK(n >= 5);
}

/* Whether ncu would collect metric name for the --metrics list: an exact
 * entry, or a "regex:" entry that matches it (POSIX extended syntax reads
 * the list's patterns as ncu does). */
static bool listed(const char *list, const char *name) {
  char *copy = strdup(list), *save = NULL;
  bool hit = false;
  for (char *e = strtok_r(copy, ",", &save); e && !hit; e = strtok_r(NULL, ",", &save)) {
    if (strncmp(e, "regex:", 6) != 0) {
      hit = strcmp(e, name) == 0;
      continue;
    }
    regex_t re;
    SG_CHECK_MSG(regcomp(&re, e + 6, REG_EXTENDED | REG_NOSUB) == 0, "bad pattern %s", e);
    hit = regexec(&re, name, 0, NULL, 0) == 0;
    regfree(&re);
  }
  free(copy);
  return hit;
}

/* The --metrics list holds every metric the report reads: each recorded
 * sections profile, cut down to the metrics of the list, gives the same
 * report as the whole. */
static void test_metrics_list_covers_the_report(void) {
  const char *files[] = {"ncu_diag_matmul_fast.csv", "ncu_diag_matmul_plain.csv",
                         "ncu_hinge_loss_fast.csv", "ncu_hinge_loss_plain.csv",
                         "ncu_kb_matmul_bt_load_inline.csv",
                         "ncu_upper_triangular_naive.csv",
                         "ncu_upper_triangular_tiled.csv"};
  const char *list = sg_ncu_metrics();
  SG_CHECK(strstr(list, " ") == NULL);
  for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
    sg_ncu_report full, cut;
    parse_file(files[f], &full);
    parse_file(files[f], &cut);
    size_t kept = 0, dropped = 0;
    for (size_t k = 0; k < cut.nkernels; k++) {
      json_t *v = cut.kernels[k].values;
      const char *key;
      json_t *val;
      void *tmp;
      json_object_foreach_safe(v, tmp, key, val) {
        if (listed(list, key))
          kept++;
        else {
          json_object_del(v, key);
          dropped++;
        }
      }
    }
    SG_CHECK(kept > 30 && dropped > kept);
    json_t *a = sg_ncu_report_json(&full), *b = sg_ncu_report_json(&cut);
    char *ta = json_dumps(a, JSON_SORT_KEYS), *tb = json_dumps(b, JSON_SORT_KEYS);
    SG_CHECK_MSG(strcmp(ta, tb) == 0, "%s: the report differs:\n%s\n%s", files[f], ta, tb);
    free(ta);
    free(tb);
    json_decref(a);
    json_decref(b);
    sg_ncu_report_free(&full);
    sg_ncu_report_free(&cut);
  }
}

/* A profile collected with the list on an H200 (nvcc 13.0, Nsight Compute
 * 2025.3): every part of the report is there. */
static void test_recorded_metrics_profile(void) {
  sg_ncu_report rep;
  parse_file("ncu_hinge_loss_fast_metrics.csv", &rep);
  SG_CHECK(rep.nkernels >= 1);
  json_t *j = sg_ncu_report_json(&rep);
  json_t *k0 = json_array_get(json_object_get(j, "kernels"), 0);
  const char *fields[] = {"duration_ns", "compute_sol_pct", "memory_sol_pct", "dram_pct",
                          "l2_hit_pct", "achieved_occupancy_pct",
                          "theoretical_occupancy_pct", "registers_per_thread",
                          "block_size", "grid_size"};
  for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
    SG_CHECK_MSG(json_is_number(json_object_get(k0, fields[i])), "%s missing", fields[i]);
  SG_CHECK(json_array_size(json_object_get(k0, "top_stalls")) > 0);
  SG_CHECK(json_array_size(json_object_get(k0, "top_pipes")) > 0);
  json_decref(j);
  sg_ncu_report_free(&rep);
}

SG_TEST_MAIN({"recorded_single_kernel", test_recorded_single_kernel},
             {"metrics_list_covers_the_report", test_metrics_list_covers_the_report},
             {"recorded_metrics_profile", test_recorded_metrics_profile},
             {"recorded_two_kernels", test_recorded_two_kernels},
             {"recorded_verdicts", test_recorded_verdicts},
             {"recorded_on_chip_memory_bound", test_recorded_on_chip_memory_bound},
             {"verdict_table", test_verdict_table},
             {"csv_quoting_and_noise", test_csv_quoting_and_noise},
             {"csv_errors", test_csv_errors},
             {"every_prefix_is_safe", test_every_prefix_is_safe},
             {"sections_listed", test_sections_listed})
