/* sg_test.h: specgen's test harness (header only).
 *
 * Each test runs in its own child process (as libuv's runner does), so a crash,
 * an abort or a leaked resource in one test cannot hide or fake another's
 * result. Output is TAP, which `meson test` reads. A test passes when it
 * returns, fails on the first failed check, and skips with SG_SKIP(reason)
 * (a GPU test on a machine without a GPU, say). Set SG_TEST_NOFORK=1 to run
 * in-process under a debugger; pass test names as arguments to run only those.
 */
#ifndef SG_TEST_H
#define SG_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct sg_test_case {
  const char *name;
  void (*fn)(void);
} sg_test_case;

#define SG_TEST_SKIP_CODE 77
/* Seconds a single test may take before it is killed and failed. A
 * sanitized build runs every process several times slower, and on a busy
 * machine a whole run under it once took longer than 240 s. */
#ifndef SG_TEST_TIMEOUT_S
#if defined(__SANITIZE_ADDRESS__)
#define SG_TEST_TIMEOUT_S 480
#else
#define SG_TEST_TIMEOUT_S 240
#endif
#endif

/* The reason goes to stdout as a TAP comment and to stderr too: a test
 * runner that shows only a failed test's stderr (meson's error logs, so
 * CI's) would otherwise print that it failed and not why. */
#define SG_FAIL(...)                                            \
  do {                                                          \
    char *sg_why_ = NULL;                                       \
    if (asprintf(&sg_why_, __VA_ARGS__) < 0)                    \
      sg_why_ = NULL;                                           \
    const char *sg_w_ = sg_why_ ? sg_why_ : "(out of memory)";  \
    fprintf(stdout, "# %s:%d: %s\n", __FILE__, __LINE__, sg_w_); \
    fflush(stdout);                                             \
    fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, sg_w_);  \
    free(sg_why_);                                              \
    exit(1);                                                    \
  } while (0)

#define SG_SKIP(...)                                            \
  do {                                                          \
    fprintf(stdout, "# SKIP ");                                 \
    fprintf(stdout, __VA_ARGS__);                               \
    fprintf(stdout, "\n");                                      \
    fflush(stdout);                                             \
    exit(SG_TEST_SKIP_CODE);                                    \
  } while (0)

#define SG_CHECK(cond)                                          \
  do {                                                          \
    if (!(cond))                                                \
      SG_FAIL("check failed: %s", #cond);                       \
  } while (0)

#define SG_CHECK_MSG(cond, ...)                                 \
  do {                                                          \
    if (!(cond))                                                \
      SG_FAIL(__VA_ARGS__);                                     \
  } while (0)

#define SG_CHECK_EQ_INT(a, b)                                   \
  do {                                                          \
    long long sg_a_ = (long long)(a), sg_b_ = (long long)(b);   \
    if (sg_a_ != sg_b_)                                         \
      SG_FAIL("%s == %s failed: %lld != %lld", #a, #b, sg_a_,   \
              sg_b_);                                           \
  } while (0)

#define SG_CHECK_STR_EQ(a, b)                                   \
  do {                                                          \
    const char *sg_a_ = (a), *sg_b_ = (b);                      \
    if (sg_a_ == NULL || sg_b_ == NULL || strcmp(sg_a_, sg_b_)) \
      SG_FAIL("%s == %s failed: \"%s\" != \"%s\"", #a, #b,      \
              sg_a_ ? sg_a_ : "(null)", sg_b_ ? sg_b_ : "(null)"); \
  } while (0)

#define SG_CHECK_CONTAINS(hay, needle)                          \
  do {                                                          \
    const char *sg_h_ = (hay), *sg_n_ = (needle);               \
    if (sg_h_ == NULL || strstr(sg_h_, sg_n_) == NULL)          \
      SG_FAIL("\"%s\" does not contain \"%s\"",                 \
              sg_h_ ? sg_h_ : "(null)", sg_n_);                 \
  } while (0)

#define SG_CHECK_NEAR(a, b, eps)                                \
  do {                                                          \
    double sg_a_ = (a), sg_b_ = (b);                            \
    if (!(fabs(sg_a_ - sg_b_) <= (eps)))                        \
      SG_FAIL("%s ~= %s failed: %.9g vs %.9g (eps %g)", #a, #b, \
              sg_a_, sg_b_, (double)(eps));                     \
  } while (0)

/* rc is an SG_E* code; err an sg_err whose message explains a failure. */
#define SG_CHECK_OK(rc, err)                                    \
  do {                                                          \
    int sg_rc_ = (rc);                                          \
    if (sg_rc_ != 0)                                            \
      SG_FAIL("%s returned %d: %s", #rc, sg_rc_, (err).msg);    \
  } while (0)

static inline int sg_test_selected(const char *name, int argc, char **argv) {
  if (argc < 2)
    return 1;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], name) == 0)
      return 1;
  return 0;
}

static inline int sg_test_run(const sg_test_case *tests, size_t n, int argc,
                              char **argv) {
  int nofork = getenv("SG_TEST_NOFORK") != NULL;
  size_t planned = 0;
  for (size_t i = 0; i < n; i++)
    planned += (size_t)sg_test_selected(tests[i].name, argc, argv);
  printf("TAP version 13\n1..%zu\n", planned);
  fflush(stdout);
  int failed = 0;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (!sg_test_selected(tests[i].name, argc, argv))
      continue;
    k++;
    int code;
    if (nofork) {
      tests[i].fn();
      code = 0;
    } else {
      pid_t pid = fork();
      if (pid < 0) {
        perror("fork");
        return 1;
      }
      if (pid == 0) {
        alarm(SG_TEST_TIMEOUT_S);
        tests[i].fn();
        fflush(stdout);
        _exit(0);
      }
      int st;
      while (waitpid(pid, &st, 0) < 0)
        ;
      if (WIFEXITED(st))
        code = WEXITSTATUS(st);
      else {
        printf("# killed by signal %d%s\n", WTERMSIG(st),
               WTERMSIG(st) == SIGALRM ? " (test timed out)" : "");
        code = 1;
      }
    }
    if (code == SG_TEST_SKIP_CODE)
      printf("ok %zu - %s # SKIP\n", k, tests[i].name);
    else if (code == 0)
      printf("ok %zu - %s\n", k, tests[i].name);
    else {
      printf("not ok %zu - %s\n", k, tests[i].name);
      failed++;
    }
    fflush(stdout);
  }
  return failed ? 1 : 0;
}

/* Runs a shell command line; returns its exit code (128 + the signal when
 * one killed it) and in *out what it wrote to stdout, NUL-terminated and cut
 * at 4 MiB (the caller frees it). */
static inline int sg_test_sh(const char *cmd, char **out) {
  enum { CAP = 4 << 20 };
  FILE *p = popen(cmd, "r");
  SG_CHECK_MSG(p != NULL, "popen: %s", cmd);
  size_t len = 0, size = 4096;
  char *b = malloc(size);
  SG_CHECK(b != NULL);
  size_t k;
  while ((k = fread(b + len, 1, size - len - 1, p)) > 0) {
    len += k;
    if (size - len - 1 == 0 && size < CAP) {
      size *= 2;
      b = realloc(b, size);
      SG_CHECK(b != NULL);
    } else if (size - len - 1 == 0) {
      break;
    }
  }
  b[len] = '\0';
  int st = pclose(p);
  *out = b;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#define SG_TEST(fn) {#fn, fn}
#define SG_TEST_MAIN(...)                                               \
  int main(int argc, char **argv) {                                     \
    static const sg_test_case sg_tests_[] = {__VA_ARGS__};              \
    return sg_test_run(sg_tests_, sizeof sg_tests_ / sizeof sg_tests_[0], \
                       argc, argv);                                     \
  }

#endif
