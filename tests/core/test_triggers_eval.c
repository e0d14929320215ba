/* test_triggers_eval.c: annotations, scoring, and `specgen triggers --eval`
 * on the corpus (corpus/triggers).
 */
#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "core/sg_triggers_eval.h"
#include "sg_test.h"
#include "trig_harness.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CORPUS SG_SOURCE_ROOT "/corpus/triggers"

static void test_annotations_parse(void) {
  const char *txt = "# family: deepseek-r1\n# source: x\n\n"
                    "120\tfence\n 7 \n";  /* the last line is bad */
  sg_trig_anns a;
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_EQ_INT(sg_trig_anns_parse(txt, strlen(txt), "t.ann", &a, &err), SG_EPARSE);
  SG_CHECK_CONTAINS(err.msg, "t.ann:5:");
  SG_CHECK(a.v == NULL && a.n == 0);
  const char *ok = "# family:  qwen3 \r\n120\tfence\r\n30 phrase\tLet me write it:\n"
                   "40\tdesign\n";
  SG_CHECK_OK(sg_trig_anns_parse(ok, strlen(ok), "t.ann", &a, &err), err);
  SG_CHECK_STR_EQ(a.family, "qwen3");
  SG_CHECK_EQ_INT(a.n, 3);
  SG_CHECK_EQ_INT(a.v[0].offset, 120);
  SG_CHECK_EQ_INT(a.v[0].cls, SG_TRIGGER_FENCE);
  SG_CHECK_EQ_INT(a.v[1].cls, SG_TRIGGER_PHRASE);
  sg_trig_anns_free(&a);
  static const char *const bad[] = {"x\tfence\n", "12\tfences\n", "12\n",
                                    "99999999999999999999999\tfence\n",
                                    "# family:\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    SG_CHECK_EQ_INT(sg_trig_anns_parse(bad[i], strlen(bad[i]), "b.ann", &a, &err),
                    SG_EPARSE);
    SG_CHECK_CONTAINS(err.msg, "b.ann:1:");
  }
}

static sg_trigger trig(sg_trigger_class c, uint64_t off) {
  sg_trigger t;
  memset(&t, 0, sizeof t);
  t.cls = c;
  t.offset = off;
  return t;
}

/* One-to-one, nearest first, same class only, within the window. */
static void test_scoring_matches_nearest_once(void) {
  sg_trig_anns a;
  memset(&a, 0, sizeof a);
  sg_trig_ann w[] = {{100, SG_TRIGGER_FENCE}, {110, SG_TRIGGER_FENCE},
                     {500, SG_TRIGGER_PHRASE}, {900, SG_TRIGGER_DESIGN}};
  a.v = w;
  a.n = 4;
  sg_trigger g[] = {trig(SG_TRIGGER_FENCE, 109), trig(SG_TRIGGER_DESIGN, 505),
                    trig(SG_TRIGGER_PHRASE, 503), trig(SG_TRIGGER_DESIGN, 1000)};
  sg_trig_score s[SG_TRIGGER__COUNT];
  memset(s, 0, sizeof s);
  sg_trig_eval_add(&a, g, 4, 80, s);
  /* fence: the one report takes the nearer annotation (110), 100 is missed */
  SG_CHECK_EQ_INT(s[SG_TRIGGER_FENCE].expected, 2);
  SG_CHECK_EQ_INT(s[SG_TRIGGER_FENCE].matched, 1);
  SG_CHECK_EQ_INT(s[SG_TRIGGER_FENCE].err_max_bytes, 1);
  SG_CHECK_EQ_INT(s[SG_TRIGGER_FENCE].exact, 0);
  /* phrase at 503 matches 500 with error 3; design at 505 is another class */
  SG_CHECK_EQ_INT(s[SG_TRIGGER_PHRASE].matched, 1);
  SG_CHECK_EQ_INT(s[SG_TRIGGER_PHRASE].err_sum_bytes, 3);
  /* design: 505 and 1000 are both over 80 bytes from 900 */
  SG_CHECK_EQ_INT(s[SG_TRIGGER_DESIGN].reported, 2);
  SG_CHECK_EQ_INT(s[SG_TRIGGER_DESIGN].matched, 0);
  SG_CHECK(sg_trig_score_precision(&s[SG_TRIGGER_FENCE]) == 1.0);
  SG_CHECK(sg_trig_score_recall(&s[SG_TRIGGER_FENCE]) == 0.5);
  SG_CHECK(sg_trig_score_precision(&s[SG_TRIGGER_DESIGN]) == 0.0);
  SG_CHECK(sg_trig_score_recall(&s[SG_TRIGGER_KERNEL]) == 1.0);  /* none */
  /* the window is inclusive, and a wider one matches */
  memset(s, 0, sizeof s);
  sg_trig_eval_add(&a, g, 4, 100, s);
  SG_CHECK_EQ_INT(s[SG_TRIGGER_DESIGN].matched, 1);
}

/* The held-out sets meet the goals: recall >= 95% for fences and kernels,
 * >= 90% for design and phrase, precision >= 90% everywhere, fences exact. */
static void check_goals(const char *dir) {
  char *out = NULL;
  char *cmd = sg_asprintf(SG_TEST_SPECGEN " triggers --eval %s --json", dir);
  int rc = trig_sh(cmd, &out);
  free(cmd);
  SG_CHECK_MSG(rc == 0, "eval failed: %s", out);
  json_error_t je;
  json_t *top = json_loads(out, 0, &je);
  SG_CHECK_MSG(top != NULL, "not JSON: %s", out);
  SG_CHECK(json_integer_value(json_object_get(top, "traces")) >= 10);
  size_t i;
  json_t *row;
  int seen = 0;
  json_array_foreach(json_object_get(top, "rows"), i, row) {
    if (strcmp(json_string_value(json_object_get(row, "family")), "all") != 0)
      continue;
    const char *cls = json_string_value(json_object_get(row, "class"));
    double p = json_real_value(json_object_get(row, "precision"));
    double r = json_real_value(json_object_get(row, "recall"));
    bool code = strcmp(cls, "fence") == 0 || strcmp(cls, "kernel") == 0;
    SG_CHECK(json_integer_value(json_object_get(row, "expected")) > 10);
    SG_CHECK_MSG(r >= (code ? 0.95 : 0.90), "%s: %s recall %.3f", dir, cls, r);
    SG_CHECK_MSG(p >= 0.90, "%s: %s precision %.3f", dir, cls, p);
    if (strcmp(cls, "fence") == 0)
      SG_CHECK_EQ_INT(json_integer_value(json_object_get(row, "offset_err_max_bytes")), 0);
    seen++;
  }
  SG_CHECK_EQ_INT(seen, 4);
  json_decref(top);
  free(out);
}

static void test_synthetic_heldout_meets_goals(void) {
  check_goals(CORPUS "/synthetic-heldout");
  check_goals(CORPUS "/synthetic-tuning");
}

/* --propose writes an annotation file that --eval reads back: the scanner
 * scored against its own proposal is perfect. */
static void test_propose_round_trips_through_eval(void) {
  char dir[] = "/tmp/sg_trig_proposeXXXXXX";
  SG_CHECK(mkdtemp(dir) != NULL);
  char *cmd = sg_asprintf("cp " CORPUS "/synthetic-heldout/r1-000.txt %s/t.txt && "
                          SG_TEST_SPECGEN " triggers --propose %s/t.txt > %s/t.ann",
                          dir, dir, dir);
  char *out = NULL;
  SG_CHECK_EQ_INT(trig_sh(cmd, &out), 0);
  free(out);
  free(cmd);
  cmd = sg_asprintf(SG_TEST_SPECGEN " triggers --eval %s", dir);
  SG_CHECK_EQ_INT(trig_sh(cmd, &out), 0);
  SG_CHECK_CONTAINS(out, "unknown");
  SG_CHECK(strstr(out, "%") != NULL);
  for (const char *p = strstr(out, "\nall"); p; p = strstr(p + 1, "\nall"))
    SG_CHECK(strstr(p, "100.0%  100.0%") != NULL);
  free(out);
  free(cmd);
  cmd = sg_asprintf("rm -r %s", dir);
  SG_CHECK_EQ_INT(trig_sh(cmd, &out), 0);
  free(out);
  free(cmd);
}

/* The corpus traces (Triton bodies, revisions, every fence kind) give the
 * same triggers at every split, like the short cases. */
static void test_corpus_traces_at_every_split(void) {
  static const char *const names[] = {"synthetic-heldout/r1-000", "synthetic-heldout/glm-002",
                                      "synthetic-tuning/qwen3-001"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char *path = sg_asprintf(CORPUS "/%s.txt", names[i]);
    char *text = NULL;
    size_t len = 0;
    sg_err err;
    SG_CHECK_OK(sg_file_read(path, 1 << 20, &text, &len, &err), err);
    sg_scanner_opts o = trig_gap0();
    result *r = sg_malloc(sizeof *r);
    trig_scan_all_splits(text, &o, r);
    SG_CHECK_MSG(r->n >= 4, "%s: %zu triggers", path, r->n);
    free(r);
    free(text);
    free(path);
  }
}

static void test_eval_cli_errors_name_the_file(void) {
  char dir[] = "/tmp/sg_trig_evalXXXXXX";
  SG_CHECK(mkdtemp(dir) != NULL);
  char *p = sg_asprintf("%s/a.txt", dir), *q = sg_asprintf("%s/a.ann", dir);
  sg_err err;
  SG_CHECK_OK(sg_file_write(p, "Let me write it.\n", 17, &err), err);
  char *out = NULL;
  char *cmd = sg_asprintf(SG_TEST_SPECGEN " triggers --eval %s", dir);
  SG_CHECK_EQ_INT(trig_sh(cmd, &out), 2);  /* no a.ann */
  SG_CHECK_CONTAINS(out, "a.ann");
  free(out);
  SG_CHECK_OK(sg_file_write(q, "17\tphrase\n17\tphrasal\n", 22, &err), err);
  SG_CHECK_EQ_INT(trig_sh(cmd, &out), 2);
  SG_CHECK_CONTAINS(out, "a.ann:2: class");
  free(out);
  SG_CHECK_OK(sg_file_write(q, "# family: f1\n17\tphrase\n", 23, &err), err);
  SG_CHECK_EQ_INT(trig_sh(cmd, &out), 0);
  SG_CHECK_CONTAINS(out, "f1");
  SG_CHECK_CONTAINS(out, "100.0%");
  free(out);
  free(cmd);
  cmd = sg_asprintf(SG_TEST_SPECGEN " triggers --eval %s x.txt", dir);
  SG_CHECK_EQ_INT(trig_sh(cmd, &out), 2);
  free(out);
  free(cmd);
  SG_CHECK_EQ_INT(trig_sh(SG_TEST_SPECGEN " triggers --eval /no/such/dir", &out), 2);
  SG_CHECK_CONTAINS(out, "/no/such/dir");
  free(out);
  SG_CHECK_EQ_INT(trig_sh(SG_TEST_SPECGEN " triggers --window 5 x", &out), 2);
  free(out);
  SG_CHECK_EQ_INT(trig_sh(SG_TEST_SPECGEN " triggers --propose --json x", &out), 2);
  SG_CHECK_CONTAINS(out, "--propose");
  free(out);
  unlink(p);
  unlink(q);
  rmdir(dir);
  free(p);
  free(q);
}

SG_TEST_MAIN(SG_TEST(test_annotations_parse),
             SG_TEST(test_scoring_matches_nearest_once),
             SG_TEST(test_synthetic_heldout_meets_goals),
             SG_TEST(test_corpus_traces_at_every_split),
             SG_TEST(test_propose_round_trips_through_eval),
             SG_TEST(test_eval_cli_errors_name_the_file))
