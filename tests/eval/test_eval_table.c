/* test_eval_table.c: evaluators describe themselves in the evaluator table
 * (device kind, GPU or not, hardware counters, how they profile), so that
 * nothing outside src/eval decides by an evaluator's name: this test also
 * scans src/ for such comparisons. */
#include "sg_test.h"

#include "eval/sg_eval.h"

#include <ftw.h>
#include <stdio.h>
#include <string.h>

static void test_every_evaluator_describes_itself(void) {
  size_t n = 0;
  for (; sg_evaluator_at(n); n++) {
    const sg_evaluator *ev = sg_evaluator_at(n);
    SG_CHECK(ev->name && ev->device_kind && ev->compile && ev->run && ev->profile);
    SG_CHECK(sg_evaluator_find(ev->name) == ev);
    /* counters and the way of profiling agree */
    SG_CHECK_EQ_INT(ev->hardware_counters, ev->profiling == SG_PROFILE_COUNTERS);
    SG_CHECK(sg_eval_device_kind(ev->device_kind) != NULL);
  }
  SG_CHECK_EQ_INT((int)n, 3);
  const sg_evaluator *cpu = sg_evaluator_find("cpu");
  SG_CHECK(cpu && !cpu->gpu && cpu->profiling == SG_PROFILE_TIMING);
  SG_CHECK_STR_EQ(cpu->device_kind, "cpu");
  const sg_evaluator *cuda = sg_evaluator_find("cuda");
  SG_CHECK(cuda && cuda->gpu && cuda->profiling == SG_PROFILE_COUNTERS);
  SG_CHECK_STR_EQ(sg_evaluator_find("kernelbench")->device_kind, "cuda");
  SG_CHECK(sg_evaluator_find("tpu") == NULL);
}

static void test_device_kinds(void) {
  SG_CHECK_STR_EQ(sg_eval_device_kind("cpu:3"), "cpu");
  SG_CHECK_STR_EQ(sg_eval_device_kind("cuda:0"), "cuda");
  SG_CHECK(sg_eval_device_kind("cud:0") == NULL);
  SG_CHECK(sg_eval_device_kind("cudaa:0") == NULL);
  SG_CHECK(sg_eval_device_kind("") == NULL);
  SG_CHECK(sg_eval_device_kind(NULL) == NULL);
}

/* A line that compares something with an evaluator's name. "cuda" is also a
 * language (task.json's language): a comparison that names the language is
 * not one. */
static bool compares_evaluator_name(const char *line) {
  if (strstr(line, "strcmp(") == NULL)
    return false;
  if (strstr(line, "\"cpu\"") || strstr(line, "\"kernelbench\""))
    return true;
  return strstr(line, "\"cuda\"") && strstr(line, "language") == NULL &&
         strstr(line, "lang,") == NULL && strstr(line, "optarg") == NULL;
}

static int g_found, g_files;

static int scan(const char *path, const struct stat *st, int flag, struct FTW *f) {
  (void)st;
  (void)f;
  size_t n = strlen(path);
  if (flag != FTW_F || n < 2 || strcmp(path + n - 2, ".c") != 0)
    return 0;
  if (strstr(path, "/src/eval/"))
    return 0;
  g_files++;
  FILE *fp = fopen(path, "r");
  if (!fp)
    return 0;
  char line[2048];
  for (int no = 1; fgets(line, sizeof line, fp); no++)
    if (compares_evaluator_name(line)) {
      printf("# %s:%d: %s", path, no, line);
      g_found++;
    }
  fclose(fp);
  return 0;
}

static void test_nothing_outside_eval_compares_evaluator_names(void) {
  SG_CHECK(compares_evaluator_name("if (strcmp(t->evaluator, \"cpu\") == 0)"));
  SG_CHECK(compares_evaluator_name("strcmp(e, \"kernelbench\")"));
  SG_CHECK(!compares_evaluator_name("strcmp(t->language, \"cuda\") == 0"));
  SG_CHECK(nftw(SG_SOURCE_ROOT "/src", scan, 16, FTW_PHYS) == 0);
  SG_CHECK(g_files > 50);
  SG_CHECK_EQ_INT(g_found, 0);
}

SG_TEST_MAIN(SG_TEST(test_every_evaluator_describes_itself), SG_TEST(test_device_kinds),
             SG_TEST(test_nothing_outside_eval_compares_evaluator_names))
