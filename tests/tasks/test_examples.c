/* test_examples.c: every example candidate of every built-in CPU task does
 * what its file name says, judged independently of the evaluator.
 *
 * An example is named <expected-status>-<label>.c (docs/tasks.md). Here each
 * one is compiled with the system compiler and, where it builds, run in a
 * child process on the task's real shapes (output poisoned with NaN first)
 * and compared with the naive double computation of task_harness.h:
 *   ok               compiles, imports nothing forbidden, returns, matches
 *   numerical_error  compiles, returns, does not match
 *   runtime_error    compiles, dies (signal or non-zero exit) before returning
 *   timeout          compiles, still running after TIMEOUT_S seconds
 *   compile_error    the compiler refuses it
 *   rejected         compiles, but imports a forbidden symbol (process or
 *                    thread creation, sockets, dlopen, or reference*)
 * Every task must have at least one example of each status, and ok-reference
 * and ok-fast. The evaluator's own test runs the same files through
 * `specgen eval`; this one pins the files themselves.
 */
#include "task_harness.h"

#define SEED 777u
/* The references take at most tens of milliseconds; an endless loop is
 * still running after this. */
#define TIMEOUT_S 1
/* Generous: a correct or numerically wrong example returns in well under. */
#define RUN_LIMIT_S 60

static const char *const statuses[] = {"ok",      "compile_error", "runtime_error",
                                       "numerical_error", "timeout", "rejected"};
#define NSTATUS (sizeof statuses / sizeof statuses[0])

static const char *const forbidden[] = {
    "fork",   "vfork",   "clone",  "system", "popen",   "execl",  "execlp",
    "execle", "execv",   "execvp", "execvpe", "execve", "posix_spawn",
    "posix_spawnp", "pthread_create", "socket", "connect", "dlopen", "dlmopen",
};

/* The first forbidden symbol the shared object imports, in *which (the
 * caller frees it), or 0 when it imports none. */
static int imports_forbidden(const char *so, char **which) {
  char *cmd = sg_asprintf("nm -D --undefined-only '%s'", so);
  FILE *p = popen(cmd, "r");
  free(cmd);
  SG_CHECK(p != NULL);
  char line[512];
  int found = 0;
  while (fgets(line, sizeof line, p)) {
    char *sym = strrchr(line, ' ');
    sym = sym ? sym + 1 : line;
    sym[strcspn(sym, "@\n")] = '\0';
    int bad = strncmp(sym, "reference", 9) == 0;
    for (size_t i = 0; i < sizeof forbidden / sizeof forbidden[0] && !bad; i++)
      bad = strcmp(sym, forbidden[i]) == 0;
    if (bad && !found) {
      found = 1;
      *which = sg_strdup(sym);
    }
  }
  SG_CHECK_MSG(pclose(p) == 0, "nm failed on %s", so);
  return found;
}

/* Checks one example against its expected status; returns 0 when it
 * behaves as named, else prints why and returns 1. */
static int check_example(th_ctx *c, const sg_task_example *ex, int idx) {
  const char *want = ex->expected_status;
  const char *base = strrchr(ex->path, '/') + 1;
  char tag[32], so[256], *log = NULL;
  snprintf(tag, sizeof tag, "ex%d", idx);
  int rc = th_compile(c, ex->path, tag, so, sizeof so, &log);
  int bad = 0;
  if (strcmp(want, "compile_error") == 0) {
    if (rc == 0) {
      printf("# %s/%s: compiles, expected a compile error\n", c->task->name, base);
      bad = 1;
    }
    free(log);
    return bad;
  }
  if (rc != 0) {
    printf("# %s/%s: does not compile:\n%s\n", c->task->name, base, log);
    free(log);
    return 1;
  }
  free(log);
  char *sym = NULL;
  int forbid = imports_forbidden(so, &sym);
  if (strcmp(want, "rejected") == 0) {
    if (!forbid)
      printf("# %s/%s: imports nothing forbidden\n", c->task->name, base);
    free(sym);
    return !forbid; /* never run: it may fork or call out */
  }
  if (forbid) {
    printf("# %s/%s: imports forbidden %s\n", c->task->name, base, sym);
    free(sym);
    return 1;
  }
  int sig = 0;
  int is_timeout = strcmp(want, "timeout") == 0;
  th_end end = th_run(c, so, is_timeout ? TIMEOUT_S : RUN_LIMIT_S, &sig);
  if (strcmp(want, "timeout") == 0) {
    if (end != TH_TIMED_OUT) {
      printf("# %s/%s: ended (%d, %d) within %d s, expected to run on\n",
             c->task->name, base, (int)end, sig, TIMEOUT_S);
      return 1;
    }
    return 0;
  }
  if (strcmp(want, "runtime_error") == 0) {
    if (end != TH_CRASHED || sig >= 100) { /* 100, 101: could not load it */
      printf("# %s/%s: %s, expected a crash\n", c->task->name, base,
             end == TH_RETURNED ? "returned" : "timed out");
      return 1;
    }
    return 0;
  }
  if (end != TH_RETURNED) {
    printf("# %s/%s: did not return (%s, %d)\n", c->task->name, base,
           end == TH_CRASHED ? "crashed" : "timed out", sig);
    return 1;
  }
  th_cmp r = th_compare_out(c);
  if (strcmp(want, "ok") == 0 && r.bad != 0) {
    printf("# %s/%s: %zu elements outside tolerance (first %lld: %.9g vs %.9g)\n",
           c->task->name, base, r.bad, r.first_bad,
           (double)c->buf[c->out][r.first_bad], c->expect[r.first_bad]);
    return 1;
  }
  if (strcmp(want, "numerical_error") == 0 && r.bad == 0) {
    printf("# %s/%s: matches within tolerance (max abs error %g)\n",
           c->task->name, base, r.max_abs);
    return 1;
  }
  return 0;
}

static void check_examples(const char *name) {
  th_ctx c;
  th_setup(&c, name, SEED);
  sg_task_example *ex = NULL;
  size_t n = 0;
  sg_err err;
  sg_err_clear(&err);
  SG_CHECK_OK(sg_task_examples(c.task, &ex, &n, &err), err);
  size_t count[NSTATUS] = {0};
  int have_ref = 0, have_fast = 0, failed = 0;
  for (size_t i = 0; i < n; i++) {
    size_t s = 0;
    while (s < NSTATUS && strcmp(statuses[s], ex[i].expected_status) != 0)
      s++;
    SG_CHECK_MSG(s < NSTATUS, "%s: unknown status in %s", name, ex[i].path);
    count[s]++;
    const char *base = strrchr(ex[i].path, '/') + 1;
    have_ref |= strcmp(base, "ok-reference.c") == 0;
    have_fast |= strcmp(base, "ok-fast.c") == 0;
    failed += check_example(&c, &ex[i], (int)i);
  }
  for (size_t s = 0; s < NSTATUS; s++)
    SG_CHECK_MSG(count[s] > 0, "%s: no %s example", name, statuses[s]);
  SG_CHECK_MSG(have_ref && have_fast, "%s: ok-reference.c or ok-fast.c missing",
               name);
  SG_CHECK_MSG(failed == 0, "%s: %d of %zu examples do not behave as named",
               name, failed, n);
  sg_task_examples_free(ex, n);
  th_teardown(&c);
}

#define EXAMPLE_TEST(name)                                                     \
  static void test_##name##_examples_behave_as_named(void) {                   \
    check_examples(#name);                                                     \
  }

EXAMPLE_TEST(hinge_loss)
EXAMPLE_TEST(tensor3d_matmul)
EXAMPLE_TEST(tensor4d_matmul)
EXAMPLE_TEST(diag_matmul)
EXAMPLE_TEST(symmetric_matmul)
EXAMPLE_TEST(upper_triangular_matmul)
EXAMPLE_TEST(lower_triangular_matmul)
EXAMPLE_TEST(matmul_transposed_a)
EXAMPLE_TEST(matmul_transposed_b)
EXAMPLE_TEST(matmul_transposed_both)

SG_TEST_MAIN(SG_TEST(test_hinge_loss_examples_behave_as_named),
             SG_TEST(test_tensor3d_matmul_examples_behave_as_named),
             SG_TEST(test_tensor4d_matmul_examples_behave_as_named),
             SG_TEST(test_diag_matmul_examples_behave_as_named),
             SG_TEST(test_symmetric_matmul_examples_behave_as_named),
             SG_TEST(test_upper_triangular_matmul_examples_behave_as_named),
             SG_TEST(test_lower_triangular_matmul_examples_behave_as_named),
             SG_TEST(test_matmul_transposed_a_examples_behave_as_named),
             SG_TEST(test_matmul_transposed_b_examples_behave_as_named),
             SG_TEST(test_matmul_transposed_both_examples_behave_as_named))
