/* test_common.c: the shared helpers: errors, buffers, files, scratch
 * directories. */
#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_error.h"
#include "common/sg_file.h"
#include "common/sg_hash.h"
#include "common/sg_rng.h"
#include "common/sg_stats.h"
#include "sg_test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void test_strerror_names_every_code(void) {
  SG_CHECK_STR_EQ(sg_strerror(0), "success");
  SG_CHECK_STR_EQ(sg_strerror(SG_EINVAL), "invalid argument or input");
  SG_CHECK_STR_EQ(sg_strerror(SG_EAGAIN), "try again");
  SG_CHECK_STR_EQ(sg_strerror(12345), "unknown error");
}

static void test_err_set_and_prefix(void) {
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_EQ_INT(err.code, 0);
  SG_CHECK_EQ_INT(sg_err_set(&err, SG_EPARSE, "line %d: bad", 7), SG_EPARSE);
  SG_CHECK_EQ_INT(sg_err_prefix(&err, "task.json"), SG_EPARSE);
  SG_CHECK_STR_EQ(err.msg, "task.json: line 7: bad");
  SG_CHECK_EQ_INT(sg_err_set(NULL, SG_EIO, "ignored"), SG_EIO);
}

static void test_buf_appends_and_caps(void) {
  sg_buf b;
  sg_buf_init(&b, 10);
  SG_CHECK_STR_EQ(sg_buf_str(&b), "");
  sg_buf_puts(&b, "hello ");
  sg_buf_printf(&b, "%d", 12345);
  SG_CHECK_STR_EQ(sg_buf_str(&b), "hello 1234");
  SG_CHECK(b.truncated);
  sg_buf_consume(&b, 6);
  SG_CHECK_STR_EQ(sg_buf_str(&b), "1234");
  char *s = sg_buf_steal(&b);
  SG_CHECK_STR_EQ(s, "1234");
  SG_CHECK_EQ_INT(b.len, 0);
  free(s);
  sg_buf_free(&b);
}

static void test_buf_grows_unbounded(void) {
  sg_buf b;
  sg_buf_init(&b, 0);
  for (int i = 0; i < 10000; i++)
    sg_buf_append(&b, "x", 1);
  SG_CHECK_EQ_INT(b.len, 10000);
  SG_CHECK(!b.truncated);
  sg_buf_free(&b);
}

static void test_file_roundtrip_and_errors(void) {
  char dir[] = "/tmp/sg_test_common_XXXXXX";
  SG_CHECK(mkdtemp(dir) != NULL);
  char *sub = sg_asprintf("%s/a/b", dir);
  sg_err err;
  SG_CHECK_OK(sg_mkdir_p(sub, &err), err);
  char *path = sg_asprintf("%s/f.txt", sub);
  SG_CHECK_OK(sg_file_write(path, "abc", 3, &err), err);
  char *text;
  size_t len;
  SG_CHECK_OK(sg_file_read(path, 100, &text, &len, &err), err);
  SG_CHECK_STR_EQ(text, "abc");
  SG_CHECK_EQ_INT(len, 3);
  free(text);
  SG_CHECK_EQ_INT(sg_file_read(path, 2, &text, &len, &err), SG_ERANGE);
  SG_CHECK_CONTAINS(err.msg, "f.txt");
  SG_CHECK_OK(sg_rm_rf(dir, &err), err);
  SG_CHECK_EQ_INT(sg_file_read(path, 100, &text, &len, &err), SG_ENOENT);
  SG_CHECK_CONTAINS(err.msg, path);
  free(path);
  free(sub);
}

/* A scratch directory: fresh each time, under the root given (created when
 * missing), else under $TMPDIR; a root that cannot exist is an error naming
 * it. */
static void test_scratch_dir(void) {
  char dir[] = "/tmp/sg_test_scratch_XXXXXX";
  SG_CHECK(mkdtemp(dir) != NULL);
  char *root = sg_asprintf("%s/not/yet", dir);
  sg_err err;
  char *a = NULL, *b = NULL;
  SG_CHECK_OK(sg_scratch_dir(root, "sg-x", &a, &err), err);
  SG_CHECK_OK(sg_scratch_dir(root, "sg-x", &b, &err), err);
  SG_CHECK(strcmp(a, b) != 0);
  SG_CHECK(strncmp(a, root, strlen(root)) == 0 && strstr(a, "/sg-x-") != NULL);
  struct stat st;
  SG_CHECK(stat(a, &st) == 0 && S_ISDIR(st.st_mode));
  free(a);
  free(b);
  const char *old = getenv("TMPDIR");
  char *saved = old ? sg_strdup(old) : NULL;
  setenv("TMPDIR", dir, 1);
  SG_CHECK_OK(sg_scratch_dir(NULL, "sg-y", &a, &err), err);
  SG_CHECK(strncmp(a, dir, strlen(dir)) == 0);
  free(a);
  if (saved)
    setenv("TMPDIR", saved, 1);
  else
    unsetenv("TMPDIR");
  free(saved);
  char *file = sg_asprintf("%s/plain", dir);
  SG_CHECK_OK(sg_file_write(file, "x", 1, &err), err);
  SG_CHECK(sg_scratch_dir(file, "sg-z", &a, &err) != 0 && a == NULL);
  SG_CHECK_CONTAINS(err.msg, "plain");
  free(file);
  free(root);
  SG_CHECK_OK(sg_rm_rf(dir, &err), err);
}

static void test_splitmix64_matches_its_published_stream(void) {
  /* The first output of splitmix64 from state 0, as published with the
   * algorithm: an independent check of the constants. */
  uint64_t state = 0;
  SG_CHECK(sg_splitmix64(&state) == 0xe220a8397b1dcdafULL);
}

static void test_rng_stream_is_pinned_for_a_seed(void) {
  /* Seeds must replay inputs, the test model and the simulator bit for bit
   * across versions: these values pin the stream (changing them is a
   * deliberate, documented break). */
  sg_rng r;
  sg_rng_seed(&r, 42);
  SG_CHECK(sg_rng_next(&r) == 0x15780b2e0c2ec716ULL);
  SG_CHECK(sg_rng_next(&r) == 0x6104d9866d113a7eULL);
  SG_CHECK(sg_rng_next(&r) == 0xae17533239e499a1ULL);
  double lo = 1, hi = 0, sum = 0;
  for (int i = 0; i < 100000; i++) {
    double u = sg_rng_uniform(&r);
    SG_CHECK(u >= 0 && u < 1);
    lo = u < lo ? u : lo;
    hi = u > hi ? u : hi;
    sum += u;
  }
  SG_CHECK(lo < 0.001 && hi > 0.999);
  SG_CHECK_NEAR(sum / 100000, 0.5, 0.01);
}

static void test_stats_median_and_mean_leave_input_alone(void) {
  const double v[] = {5, 1, 4, 2, 3};
  SG_CHECK_NEAR(sg_stats_median(v, 5), 3, 0);
  SG_CHECK_NEAR(sg_stats_median(v, 4), 3, 0); /* {5,1,4,2}: (2+4)/2 */
  SG_CHECK_NEAR(sg_stats_mean(v, 5), 3, 0);
  SG_CHECK(v[0] == 5 && v[1] == 1 && v[4] == 3); /* not reordered */
  SG_CHECK(isnan(sg_stats_median(v, 0)) && isnan(sg_stats_mean(v, 0)));
}

/* FNV-1a 64: the published test vectors, and update() continuing a hash. */
static void test_fnv1a64_known_vectors(void) {
  SG_CHECK(sg_fnv1a64("", 0) == 0xcbf29ce484222325ULL);
  SG_CHECK(sg_fnv1a64("a", 1) == 0xaf63dc4c8601ec8cULL);
  SG_CHECK(sg_fnv1a64("foobar", 6) == 0x85944171f73967e8ULL);
  SG_CHECK(sg_fnv1a64_update(sg_fnv1a64("foo", 3), "bar", 3) == sg_fnv1a64("foobar", 6));
}

/* The run's "same kernel": line ends, trailing blanks and outer blank lines
 * do not count; anything else (indentation, interior blank lines,
 * comments) does. The key is the hash of the normalized text. */
static void test_source_key_ignores_only_line_end_blanks(void) {
  static const char *const same[] = {
      "int f(void) {\n  return 1;\n}\n",
      "int f(void) {\n  return 1;\n}",
      "\n\n  \t\nint f(void) {  \n  return 1;\t\n}\n\n\n",
      "int f(void) {\r\n  return 1;\r\n}\r\n",
  };
  static const char *const other[] = {
      "int f(void) {\n    return 1;\n}\n",       /* indentation */
      "int f(void) {\n\n  return 1;\n}\n",       /* an interior blank line */
      "int f(void) { /* c */\n  return 1;\n}\n",  /* a comment */
      "int f(void) {\n  return 1;\n}\n}",         /* more text */
      "  int f(void) {\n  return 1;\n}\n",        /* leading blanks of a line */
  };
  char norm[64];
  uint64_t k0 = sg_source_key(same[0], strlen(same[0]));
  SG_CHECK_EQ_INT(sg_source_normalize(same[0], strlen(same[0]), norm), 27);
  SG_CHECK(memcmp(norm, "int f(void) {\n  return 1;\n}", 27) == 0);
  SG_CHECK(k0 == sg_fnv1a64(norm, 27));
  for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
    size_t n = sg_source_normalize(same[i], strlen(same[i]), norm);
    SG_CHECK_MSG(n == 27 && memcmp(norm, "int f(void) {\n  return 1;\n}", 27) == 0,
                 "same[%zu] normalized to %.*s", i, (int)n, norm);
    SG_CHECK_MSG(sg_source_key(same[i], strlen(same[i])) == k0, "same[%zu]", i);
  }
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
    SG_CHECK_MSG(sg_source_key(other[i], strlen(other[i])) != k0, "other[%zu]", i);
  /* In place, and the empty or all-blank text. */
  char buf[] = "\n a \n\n\t\n b\t\n\n";
  size_t n = sg_source_normalize(buf, strlen(buf), buf);
  SG_CHECK(n == 7 && memcmp(buf, " a\n\n\n b", 7) == 0);
  SG_CHECK_EQ_INT(sg_source_normalize(" \n\t\r\n", 5, norm), 0);
  SG_CHECK(sg_source_key("", 0) == sg_source_key(" \n\n", 3));
}

static void test_calloc_aligned_is_aligned_and_zeroed(void) {
  size_t sizes[] = {0, 1, 63, 64, 65, 1880, 8192};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    unsigned char *p = sg_calloc_aligned(64, sizes[i]);
    SG_CHECK_EQ_INT((uintptr_t)p % 64, 0);
    size_t n = (sizes[i] + 63) / 64 * 64;
    for (size_t k = 0; k < n; k++)
      SG_CHECK_MSG(p[k] == 0, "byte %zu of %zu not zero", k, sizes[i]);
    free(p);
  }
  unsigned char *q = sg_calloc_aligned(4096, 100);
  SG_CHECK_EQ_INT((uintptr_t)q % 4096, 0);
  free(q);
}

SG_TEST_MAIN(SG_TEST(test_fnv1a64_known_vectors),
             SG_TEST(test_source_key_ignores_only_line_end_blanks),
             SG_TEST(test_stats_median_and_mean_leave_input_alone),
             SG_TEST(test_splitmix64_matches_its_published_stream),
             SG_TEST(test_rng_stream_is_pinned_for_a_seed),
             SG_TEST(test_strerror_names_every_code),
             SG_TEST(test_err_set_and_prefix),
             SG_TEST(test_buf_appends_and_caps),
             SG_TEST(test_buf_grows_unbounded),
             SG_TEST(test_file_roundtrip_and_errors),
             SG_TEST(test_scratch_dir),
             SG_TEST(test_calloc_aligned_is_aligned_and_zeroed))
