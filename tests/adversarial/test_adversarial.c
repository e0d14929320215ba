/* test_adversarial.c: the adversarial suite (docs/eval.md, threat model).
 * Every file in tests/adversarial/cases is a hostile or cheating candidate
 * for the vector_add test task; expected.tsv says which statuses it may end
 * in (and, for those that may be ok, the highest speedup an honest
 * measurement allows). Each is evaluated through the library with
 * prelude.h in front (raw system calls, the honest computation), and then:
 *   - its status is one of the allowed ones (ok: at most the max speedup);
 *   - the message is printable, capped, and holds neither this process's
 *     secret environment variable nor a line of /etc/shadow;
 *   - nothing was written outside the scratch directory (the marker files
 *     the cheats try to create do not exist);
 *   - no process of the evaluation is left;
 *   - the system clock was not changed; and this process (the judge) is
 *     alive, which reaching the next line proves.
 * One TAP line per case. x86_64 only (the cases make raw system calls). */
#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_file.h"
#include "eval/sg_eval.h"
#include "eval/sg_task.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DIR_ SG_SOURCE_ROOT "/tests/adversarial"
#define MARKER "/tmp/sg-adversarial-pwned"

static char secret[64];
static char shadow_line[256];
static char work_root[256];

static double clock_offset(void) {
  struct timespec rt, mono;
  clock_gettime(CLOCK_REALTIME, &rt);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  return (double)(rt.tv_sec - mono.tv_sec) + (rt.tv_nsec - mono.tv_nsec) / 1e9;
}

/* Processes of an evaluation still alive (not zombies): workers. */
static int leftover_workers(void) {
  DIR *d = opendir("/proc");
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    char path[300], buf[256];
    snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
    FILE *f = fopen(path, "re");
    if (!f)
      continue;
    size_t r = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[r] = '\0';
    if (strcmp(buf, "specgen-eval-worker") != 0)
      continue;
    /* ours: working in a scratch directory under our work root (other
     * tests' evaluations may run at the same time) */
    char cwd[512];
    snprintf(path, sizeof path, "/proc/%s/cwd", e->d_name);
    ssize_t cl = readlink(path, cwd, sizeof cwd - 1);
    if (cl <= 0)
      continue;
    cwd[cl] = '\0';
    if (strncmp(cwd, work_root, strlen(work_root)) != 0)
      continue;
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    f = fopen(path, "re");
    char state = 'Z';
    if (f) {
      if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
        state = 'Z';
      fclose(f);
    }
    if (state != 'Z' && state != 'X')
      n++;
  }
  if (d)
    closedir(d);
  return n;
}

static bool printable(const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c != '\n' && c != '\t' && (c < 0x20 || c > 0x7e))
      return false;
  }
  return true;
}

static bool allowed(const char *list, const char *status) {
  size_t n = strlen(status);
  for (const char *p = list; *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == n && strncmp(p, status, n) == 0)
      return true;
    if (!comma)
      break;
    p = comma + 1;
  }
  return false;
}

static int n_done, n_failed;

static void fail(const char *name, const char *why, const sg_eval_result *r) {
  printf("not ok %d - %s: %s\n", ++n_done, name, why);
  if (r && r->message) {
    size_t len = strlen(r->message);
    char *m = sg_strndup(r->message, len < 600 ? len : 600);
    for (char *c = m; *c; c++)
      if (*c == '\n')
        *c = ' ';
    printf("# %s: %s\n", sg_eval_status_name(r->status), m);
    free(m);
  }
  n_failed++;
}

static void run_case(const sg_task *t, const char *prelude, const char *name,
                     const char *statuses, double max_speedup) {
  char *path = sg_asprintf(DIR_ "/cases/%s.c", name);
  char *body = NULL;
  sg_err err;
  if (sg_file_read(path, 1 << 20, &body, NULL, &err) != 0) {
    fail(name, err.msg, NULL);
    free(path);
    return;
  }
  char *src = sg_asprintf("%s\n#line 1 \"%s.c\"\n%s", prelude, name, body);
  sg_eval_opts o;
  sg_eval_opts_default(&o);
  o.warmup_runs = 2;
  o.timed_runs = 5;
  o.eval_timeout = 3;
  o.work_dir = work_root;
  unlink(MARKER);
  double off0 = clock_offset();
  sg_eval_result r;
  sg_eval_result_init(&r);
  int rc = sg_eval_validate(t, src, strlen(src), &o, &r, &err);
  const char *st = sg_eval_status_name(r.status);
  char *escape = sg_asprintf("%s/sg-adversarial-pwned", work_root);
  int left = 0;
  for (int i = 0; i < 40 && (left = leftover_workers()) > 0; i++)
    usleep(50000);
  if (rc != 0)
    fail(name, err.msg, NULL);
  else if (!allowed(statuses, st))
    fail(name, "status not allowed", &r);
  else if (r.status == SG_EVAL_OK && !isnan(max_speedup) && !(r.speedup <= max_speedup))
    fail(name, "ok at a speedup above what honest work gives", &r);
  else if (!r.message || strlen(r.message) > 16384)
    fail(name, "message missing or not capped", &r);
  else if (!printable(r.message))
    fail(name, "message holds bytes that are not printable text", &r);
  else if (strstr(r.message, secret))
    fail(name, "the evaluator's environment leaked into the message", &r);
  else if (shadow_line[0] && strstr(r.message, shadow_line))
    fail(name, "/etc/shadow leaked into the message", &r);
  else if (access(MARKER, F_OK) == 0 || access(escape, F_OK) == 0)
    fail(name, "a file was written outside the scratch directory", &r);
  else if (left > 0)
    fail(name, "a process of the evaluation was left running", &r);
  else if (fabs(clock_offset() - off0) > 5)
    fail(name, "the system clock was changed", &r);
  else {
    printf("ok %d - %s: %s", ++n_done, name, st);
    if (r.status == SG_EVAL_OK)
      printf(" (speedup %.3gx)", r.speedup);
    printf("\n");
  }
  fflush(stdout);
  unlink(MARKER);
  unlink(escape);
  free(escape);
  sg_eval_result_free(&r);
  free(src);
  free(body);
  free(path);
}

int main(void) {
  printf("TAP version 13\n");
#if !defined(__x86_64__)
  printf("1..1\nok 1 - adversarial suite # SKIP its cases make x86_64 system calls\n");
  return 0;
#else
  /* what must never come back: a secret in our environment, shadow's first line */
  snprintf(secret, sizeof secret, "sk-adversarial-%ld-%ld", (long)getpid(), (long)time(NULL));
  setenv("SG_ADV_SECRET", secret, 1);
  FILE *sh = fopen("/etc/shadow", "re");
  if (sh) {
    if (fgets(shadow_line, sizeof shadow_line, sh))
      shadow_line[strcspn(shadow_line, "\n")] = '\0';
    fclose(sh);
  }
  snprintf(work_root, sizeof work_root, "/tmp/sg-adversarial-XXXXXX");
  if (!mkdtemp(work_root)) {
    printf("1..1\nnot ok 1 - mkdtemp\n");
    return 1;
  }
  setenv("SPECGEN_TASKS_DIR", SG_SOURCE_ROOT "/tests/eval/data/tasks", 1);
  sg_err err;
  sg_task *t = NULL;
  char *prelude = NULL, *table = NULL;
  if (sg_task_load(SG_SOURCE_ROOT "/tests/eval/data/tasks/cpu/vector_add", &t, &err) ||
      sg_file_read(DIR_ "/prelude.h", 1 << 20, &prelude, NULL, &err) ||
      sg_file_read(DIR_ "/expected.tsv", 1 << 20, &table, NULL, &err)) {
    printf("1..1\nnot ok 1 - setup: %s\n", err.msg);
    return 1;
  }
  int planned = 0;
  for (char *p = table; *p; p++)
    if (*p == '\n' && p[1] && p[1] != '#')
      planned++;
  if (table[0] != '#')
    planned++;
  printf("1..%d\n", planned);
  char *save = NULL;
  for (char *line = strtok_r(table, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    if (line[0] == '#' || !line[0])
      continue;
    char *f[4] = {0};
    char *s2 = NULL;
    int k = 0;
    for (char *x = strtok_r(line, "\t", &s2); x && k < 4; x = strtok_r(NULL, "\t", &s2))
      f[k++] = x;
    if (k < 3) {
      fail(line, "expected.tsv: a row needs case, statuses and max speedup", NULL);
      continue;
    }
    double max_speedup = strcmp(f[2], "-") == 0 ? NAN : atof(f[2]);
    run_case(t, prelude, f[0], f[1], max_speedup);
  }
  sg_rm_rf(work_root, &err);
  free(prelude);
  free(table);
  sg_task_free(t);
  return n_failed ? 1 : 0;
#endif
}
