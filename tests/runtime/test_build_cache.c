/* test_build_cache.c: the workers' build cache (sg_build_cache.h): the key
 * changes with each thing a build depends on and only with those; store
 * then lookup gives the artifacts back, also after the directory moved;
 * a second store and racing stores leave one entry and no leftovers; every
 * kind of damaged entry is an error naming what is wrong, never a crash. */
#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "pool/sg_build_cache.h"
#include "sg_test.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>

static sg_build_cache_key_in base_in(void) {
  sg_build_cache_key_in in = {"cpu", "/t/cpu/hinge_loss", "0.1.0", NULL,
                              "void f(void) {}\n", 16};
  return in;
}

static void test_key_changes_with_each_input(void) {
  sg_build_cache_key_in a = base_in();
  uint64_t k = sg_build_cache_key(&a);
  SG_CHECK(k == sg_build_cache_key(&a)); /* pure */
  sg_build_cache_key_in v[7];
  for (int i = 0; i < 7; i++)
    v[i] = base_in();
  v[0].evaluator = "cuda";
  v[1].task_dir = "/t/cpu/hinge_loss2";
  v[2].version = "0.1.1";
  v[3].cuda_arch = "sm_90";
  v[4].cuda_arch = ""; /* unlike unset */
  v[5].source = "void f(void) {} \n";
  v[6].source_len = 15;
  for (int i = 0; i < 7; i++)
    SG_CHECK_MSG(sg_build_cache_key(&v[i]) != k, "variant %d has the base key", i);
  SG_CHECK(sg_build_cache_key(&v[3]) != sg_build_cache_key(&v[4]));
  /* fields do not run into each other */
  sg_build_cache_key_in x = base_in(), y = base_in();
  x.evaluator = "cpu/";
  x.task_dir = "t";
  y.evaluator = "cpu";
  y.task_dir = "/t";
  SG_CHECK(sg_build_cache_key(&x) != sg_build_cache_key(&y));
}

static void test_key_hex(void) {
  char h[17];
  sg_build_cache_key_hex(1, h);
  SG_CHECK_STR_EQ(h, "0000000000000001");
  sg_build_cache_key_hex(UINT64_C(0xf000441f70dab1b8), h);
  SG_CHECK_STR_EQ(h, "f000441f70dab1b8");
}

static char *tmpdir(void) {
  const char *t = getenv("TMPDIR");
  char *d = sg_asprintf("%s/sg-test-bc-XXXXXX", t && *t ? t : "/tmp");
  SG_CHECK(mkdtemp(d) != NULL);
  return d;
}

static void put(const char *path, const char *text) {
  sg_err err;
  SG_CHECK_OK(sg_file_write(path, text, strlen(text), &err), err);
}

static char *get(const char *path) {
  char *s = NULL;
  sg_err err;
  SG_CHECK_OK(sg_file_read(path, 1 << 20, &s, NULL, &err), err);
  return s;
}

/* a build with two small artifacts in dir */
static void fake_build(const char *dir, sg_eval_build *b) {
  memset(b, 0, sizeof *b);
  b->work_dir = sg_strdup(dir);
  b->artifact = sg_asprintf("%s/candidate.so", dir);
  b->reference_artifact = sg_asprintf("%s/ref-1234.so", dir);
  put(b->artifact, "CANDIDATE");
  put(b->reference_artifact, "REFERENCE");
}

static int count_names(const char *dir, int *other) {
  DIR *d = opendir(dir);
  SG_CHECK(d != NULL);
  int n = 0;
  *other = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') {
      if (strlen(e->d_name) == 16)
        n++;
      else
        (*other)++;
    }
  closedir(d);
  return n;
}

static void test_store_then_lookup_even_after_a_move(void) {
  char *root = tmpdir();
  char *src = sg_asprintf("%s/src", root), *cache = sg_asprintf("%s/cache", root);
  sg_err err;
  SG_CHECK_OK(sg_mkdir_p(src, &err), err);
  sg_eval_build b;
  fake_build(src, &b);
  uint64_t key = UINT64_C(0x0123456789abcdef);
  bool stored = false;
  SG_CHECK_OK(sg_build_cache_store(cache, key, "cpu", "/t", &b, 0.25, &stored, &err), err);
  SG_CHECK(stored);
  /* a second store of the key is a no-op */
  SG_CHECK_OK(sg_build_cache_store(cache, key, "cpu", "/t", &b, 9, &stored, &err), err);
  SG_CHECK(!stored);
  int other = 0;
  SG_CHECK_EQ_INT(count_names(cache, &other), 1);
  SG_CHECK_EQ_INT(other, 0);
  sg_eval_build_free(&b);
  SG_CHECK_OK(sg_rm_rf(src, &err), err); /* the entry stands alone */

  /* the whole cache moves: paths are rebuilt from the entry's names */
  char *moved = sg_asprintf("%s/moved", root);
  SG_CHECK(rename(cache, moved) == 0);
  sg_eval_build got;
  double cs = 0;
  SG_CHECK_OK(sg_build_cache_lookup(moved, key, "/scratch/r1", &got, &cs, &err), err);
  SG_CHECK_NEAR(cs, 0.25, 0);
  char *want = sg_asprintf("%s/0123456789abcdef/candidate.so", moved);
  SG_CHECK_STR_EQ(got.artifact, want);
  free(want);
  want = sg_asprintf("%s/0123456789abcdef/reference.so", moved);
  SG_CHECK_STR_EQ(got.reference_artifact, want);
  free(want);
  SG_CHECK_STR_EQ(got.work_dir, "/scratch/r1");
  SG_CHECK(!got.owns_work_dir);
  char *t = get(got.artifact);
  SG_CHECK_STR_EQ(t, "CANDIDATE");
  free(t);
  t = get(got.reference_artifact);
  SG_CHECK_STR_EQ(t, "REFERENCE");
  free(t);
  sg_eval_build_free(&got);
  SG_CHECK(sg_build_cache_lookup(moved, key + 1, NULL, &got, &cs, &err) == SG_ENOENT);
  SG_CHECK(sg_build_cache_lookup(cache, key, NULL, &got, &cs, &err) == SG_ENOENT);

  free(moved);
  SG_CHECK_OK(sg_rm_rf(root, &err), err);
  free(root);
  free(src);
  free(cache);
}

static void test_damaged_entries_are_errors(void) {
  char *root = tmpdir();
  char *src = sg_asprintf("%s/src", root), *cache = sg_asprintf("%s/cache", root);
  sg_err err;
  SG_CHECK_OK(sg_mkdir_p(src, &err), err);
  sg_eval_build b;
  fake_build(src, &b);
  uint64_t key = 42;
  bool stored;
  SG_CHECK_OK(sg_build_cache_store(cache, key, "cpu", "/t", &b, 1, &stored, &err), err);
  char *entry = sg_asprintf("%s/000000000000002a", cache);
  char *meta = sg_asprintf("%s/build.json", entry);
  char *good = get(meta);
  static const struct {
    const char *json; /* NULL: remove build.json */
    const char *msg;
  } cases[] = {
      {"{\"format\":1,\"key\":\"0000", "not JSON"},
      {"[]", "expected a JSON object"},
      {"{\"format\":2,\"key\":\"000000000000002a\",\"compile_s\":1,\"artifact\":\"candidate.so\",\"reference_artifact\":\"reference.so\"}", "field \"format\""},
      {"{\"format\":1,\"key\":\"000000000000002b\",\"compile_s\":1,\"artifact\":\"candidate.so\",\"reference_artifact\":\"reference.so\"}", "field \"key\""},
      {"{\"format\":1,\"key\":\"000000000000002a\",\"compile_s\":-1,\"artifact\":\"candidate.so\",\"reference_artifact\":\"reference.so\"}", "field \"compile_s\""},
      {"{\"format\":1,\"key\":\"000000000000002a\",\"compile_s\":1,\"artifact\":\"../src/candidate.so\",\"reference_artifact\":\"reference.so\"}", "inside the entry"},
      {"{\"format\":1,\"key\":\"000000000000002a\",\"compile_s\":1,\"artifact\":\"candidate.so\",\"reference_artifact\":\"gone.so\"}", "field \"reference_artifact\""},
      {"{\"format\":1,\"key\":\"000000000000002a\",\"compile_s\":1,\"artifact\":\".\",\"reference_artifact\":\"reference.so\"}", "inside the entry"},
      {NULL, "build.json"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    if (cases[i].json)
      put(meta, cases[i].json);
    else
      SG_CHECK(unlink(meta) == 0);
    sg_eval_build got;
    double cs;
    sg_err_clear(&err);
    int rc = sg_build_cache_lookup(cache, key, NULL, &got, &cs, &err);
    SG_CHECK_MSG(rc < 0 && rc != SG_ENOENT, "case %zu: rc %d", i, rc);
    SG_CHECK_MSG(strstr(err.msg, cases[i].msg) != NULL,
                 "case %zu: \"%s\" lacks \"%s\"", i, err.msg, cases[i].msg);
    SG_CHECK(got.artifact == NULL && got.reference_artifact == NULL);
  }
  /* the good text again, but an artifact gone */
  put(meta, good);
  char *cand = sg_asprintf("%s/candidate.so", entry);
  SG_CHECK(unlink(cand) == 0);
  sg_eval_build got;
  double cs;
  SG_CHECK(sg_build_cache_lookup(cache, key, NULL, &got, &cs, &err) < 0);
  SG_CHECK_CONTAINS(err.msg, "field \"artifact\"");
  /* a build.json beyond the cap */
  char *big = sg_malloc(SG_BUILD_CACHE_META_MAX + 2);
  memset(big, ' ', SG_BUILD_CACHE_META_MAX + 1);
  big[SG_BUILD_CACHE_META_MAX + 1] = '\0';
  put(meta, big);
  free(big);
  SG_CHECK(sg_build_cache_lookup(cache, key, NULL, &got, &cs, &err) < 0);

  /* a store whose artifact is missing leaves nothing behind */
  unlink(b.reference_artifact);
  SG_CHECK(sg_build_cache_store(cache, 7, "cpu", "/t", &b, 1, &stored, &err) == SG_EIO);
  SG_CHECK(!stored);
  int other = 0;
  SG_CHECK_EQ_INT(count_names(cache, &other), 1);
  SG_CHECK_EQ_INT(other, 0);

  sg_eval_build_free(&b);
  free(cand);
  free(good);
  free(entry);
  free(meta);
  SG_CHECK_OK(sg_rm_rf(root, &err), err);
  free(root);
  free(src);
  free(cache);
}

static void test_racing_stores_leave_one_entry(void) {
  char *root = tmpdir();
  char *src = sg_asprintf("%s/src", root), *cache = sg_asprintf("%s/cache", root);
  sg_err err;
  SG_CHECK_OK(sg_mkdir_p(src, &err), err);
  sg_eval_build b;
  fake_build(src, &b);
  enum { N = 8 };
  pid_t pids[N];
  fflush(stdout);
  for (int i = 0; i < N; i++) {
    pids[i] = fork();
    SG_CHECK(pids[i] >= 0);
    if (pids[i] == 0) {
      bool stored = false;
      sg_err e;
      int rc = sg_build_cache_store(cache, 99, "cpu", "/t", &b, 1, &stored, &e);
      _exit(rc ? 2 : stored ? 1 : 0);
    }
  }
  int winners = 0;
  for (int i = 0; i < N; i++) {
    int st = 0;
    SG_CHECK(waitpid(pids[i], &st, 0) == pids[i]);
    SG_CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) < 2, "a store failed");
    winners += WEXITSTATUS(st);
  }
  SG_CHECK_EQ_INT(winners, 1);
  int other = 0;
  SG_CHECK_EQ_INT(count_names(cache, &other), 1);
  SG_CHECK_EQ_INT(other, 0);
  sg_eval_build got;
  double cs;
  SG_CHECK_OK(sg_build_cache_lookup(cache, 99, NULL, &got, &cs, &err), err);
  sg_eval_build_free(&got);
  sg_eval_build_free(&b);
  SG_CHECK_OK(sg_rm_rf(root, &err), err);
  free(root);
  free(src);
  free(cache);
}

SG_TEST_MAIN(SG_TEST(test_key_changes_with_each_input), SG_TEST(test_key_hex),
             SG_TEST(test_store_then_lookup_even_after_a_move),
             SG_TEST(test_damaged_entries_are_errors),
             SG_TEST(test_racing_stores_leave_one_entry))
