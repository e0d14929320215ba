/* test_cuda_judge.c: the pure rules of the cuda evaluator's judge
 * (sg_cuda_judge.h): how each trial draws its inputs, specgen's tolerance
 * scaled to the reference's magnitude, the shortcut rules, and the go line
 * of a runner started ahead. Needs no GPU;
 * the kernels themselves run in the gpu suite. */
#include "eval/sg_cuda_harness.h"
#include "eval/sg_cuda_judge.h"
#include "eval/sg_cuda_server.h"
#include "common/sg_clock.h"
#include "sg_test.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

static sg_task_arg input(sg_dtype dt, const char *dist, double p0, double p1) {
  sg_task_arg a;
  memset(&a, 0, sizeof a);
  a.name = "x";
  a.kind = SG_ARG_INPUT;
  a.dtype = dt;
  a.ndims = 2;
  a.shape[0] = a.shape[1] = 8;
  a.numel = 64;
  snprintf(a.init.dist, sizeof a.init.dist, "%s", dist);
  a.init.p[0] = p0;
  a.init.p[1] = p1;
  return a;
}

static void test_fill_spec_task_distribution(void) {
  sg_judge_fill f;
  sg_task_arg a = input(SG_DTYPE_F32, "uniform", 0, 1);
  sg_judge_fill_spec(&a, 0, &f);
  SG_CHECK(f.dist == 1 && f.p0 == 0 && f.p1 == 1 && f.numel == 64 && f.dtype == SG_DTYPE_F32);
  sg_task_arg n = input(SG_DTYPE_F64, "normal", 0.5, 1.5);
  snprintf(n.init.structure, sizeof n.init.structure, "upper");
  sg_judge_fill_spec(&n, 0, &f);
  SG_CHECK(f.dist == 0 && f.p0 == 0.5 && f.p1 == 1.5 && f.structure == 2 && f.side == 8);
  /* no init at all: U[0, 1), like torch.rand */
  sg_task_arg z = input(SG_DTYPE_F32, "", 0, 0);
  sg_judge_fill_spec(&z, 0, &f);
  SG_CHECK(f.dist == 1 && f.p0 == 0 && f.p1 == 1);
}

/* Domain trials: signed normals at 1, 1e-3 and 1e3 of the magnitude. */
static void test_fill_spec_domain(void) {
  sg_judge_fill f;
  sg_task_arg a = input(SG_DTYPE_F32, "uniform", 0, 1);
  for (int v = 1; v <= SG_JUDGE_DOMAIN_TRIALS; v++) {
    sg_judge_fill_spec(&a, v, &f);
    SG_CHECK(f.dist == 0 && f.p0 == 0);
    SG_CHECK_NEAR(f.p1, SG_JUDGE_DOMAIN_SCALES[v - 1], 1e-12);
  }
  SG_CHECK(SG_JUDGE_DOMAIN_SCALES[0] == 1 && SG_JUDGE_DOMAIN_SCALES[1] < 1 &&
           SG_JUDGE_DOMAIN_SCALES[2] > 1);
  sg_task_arg n = input(SG_DTYPE_F32, "normal", 0.5, 1.5);
  sg_judge_fill_spec(&n, 3, &f);
  SG_CHECK_NEAR(f.p1, 2.0 * 1e3, 1e-9);
  /* labels, indices and signs keep the task's distribution */
  sg_task_arg c = input(SG_DTYPE_F32, "choice", 0, 0);
  double vals[2] = {-1, 1};
  c.init.values = vals;
  c.init.nvalues = 2;
  sg_judge_fill_spec(&c, 2, &f);
  SG_CHECK(f.dist == 2 && f.nvalues == 2 && f.values[0] == -1 && f.values[1] == 1);
  sg_task_arg i = input(SG_DTYPE_I32, "uniform", 0, 100);
  sg_judge_fill_spec(&i, 1, &f);
  SG_CHECK(f.dist == 1 && f.p1 == 100);
  /* a variant out of range is the task's own */
  sg_judge_fill_spec(&a, 99, &f);
  SG_CHECK(f.dist == 1);
}

static void test_atol_scales_with_magnitude(void) {
  /* the cap is 1% of the reference's magnitude, whatever rtol is: an atol
   * of 0.1 for outputs of 1e3 stands */
  SG_CHECK_NEAR(sg_judge_atol(0.1, 1e3, 1e3), 0.1, 1e-15);
  /* outputs near 1: the task's atol */
  SG_CHECK_NEAR(sg_judge_atol(1e-2, 5.0, 5.0), 1e-2, 1e-15);
  /* the softmax of 393216 columns: outputs about 2.5e-6 are checked at
   * their scale, not at 1e-2 */
  double a = sg_judge_atol(1e-2, 3e-6, 3e-6);
  SG_CHECK_NEAR(a, 3e-8, 1e-20);
  /* a warp-level-only sum gives outputs 32x too large: caught */
  SG_CHECK(32 * 2.5e-6 - 2.5e-6 > a + 1e-2 * 2.5e-6);
  /* KernelBench's own atol lets it through */
  SG_CHECK(32 * 2.5e-6 - 2.5e-6 < 1e-2 + 1e-2 * 2.5e-6);
  /* domain trials at 1e3 the scale: atol grows with the reference */
  SG_CHECK_NEAR(sg_judge_atol(1e-3, 2e8, 2e3), 1e2, 1e-6);
  /* and shrinks at 1e-3 */
  SG_CHECK_NEAR(sg_judge_atol(1e-3, 2.0, 2e3), 1e-6, 1e-18);
  /* unknown m0: as at the same scale */
  SG_CHECK_NEAR(sg_judge_atol(1e-3, 20, 0), 1e-3, 1e-15);
  /* an all-zero reference: nothing may differ */
  SG_CHECK(sg_judge_atol(1e-3, 0, 0) == 0);
}

static void test_shortcuts(void) {
  sg_judge_stats s;
  memset(&s, 0, sizeof s);
  char why[256];
  s.n = 100;
  s.ref_varies = 99;
  s.cand_varies = 0;
  SG_CHECK(sg_judge_shortcut(&s, -1, NULL, "y", why, sizeof why));
  SG_CHECK(strstr(why, "constant") != NULL);
  /* both constant: a constant reference is matched by a constant */
  s.ref_varies = 0;
  SG_CHECK(!sg_judge_shortcut(&s, -1, NULL, "y", why, sizeof why));
  /* a one-element output is always "constant" */
  s.n = 1;
  s.ref_varies = 0;
  SG_CHECK(!sg_judge_shortcut(&s, -1, NULL, "y", why, sizeof why));
  s.n = 100;
  s.ref_varies = s.cand_varies = 50;
  SG_CHECK(!sg_judge_shortcut(&s, -1, NULL, "y", why, sizeof why));
  SG_CHECK(sg_judge_shortcut(&s, 0, "x", "y", why, sizeof why));
  SG_CHECK(strstr(why, "returned its input") != NULL && strstr(why, "x") != NULL);
}

/* The kernels' source declares the structures this header declares. */
/* Timing stops early only when both medians are pinned down to 1% of the
 * work they measure: tight calls settle, spread ones do not, a few outliers
 * do not stop tight ones from settling, and calls that are mostly the
 * round trip of an empty call never settle on the round trip's precision. */
static void test_timing_settles(void) {
  double v[64];
  for (int i = 0; i < 10; i++) /* 1.000-1.009 ms */
    v[i] = 1.0 + 0.001 * (i % 10);
  SG_CHECK(sg_judge_timing_settled(v, 10, 0.03));
  SG_CHECK(!sg_judge_timing_settled(v, 1, 0.03));
  SG_CHECK(!sg_judge_timing_settled(v, 0, 0.03));
  for (int i = 0; i < 10; i++) /* 1.0-1.45 ms: +-20% */
    v[i] = 1.0 + 0.05 * i;
  SG_CHECK(!sg_judge_timing_settled(v, 10, 0.03));
  for (int i = 0; i < 40; i++) /* tight, with 4 calls five times as long */
    v[i] = i % 10 == 3 ? 5.0 : 2.0 + 0.002 * (i % 7);
  SG_CHECK(sg_judge_timing_settled(v, 40, 0.03));
  for (int i = 0; i < 40; i++) /* 0.050 +- 0.001 ms, of which 0.045 is round trip */
    v[i] = 0.05 + 0.001 * ((i % 3) - 1);
  SG_CHECK(!sg_judge_timing_settled(v, 40, 0.045));
  SG_CHECK(sg_judge_timing_settled(v, 40, 0.0) == false); /* 2% of 0.05: too wide */
  for (int i = 0; i < 40; i++)
    v[i] = 0.05;
  SG_CHECK(sg_judge_timing_settled(v, 40, 0.0));
  SG_CHECK(!sg_judge_timing_settled(v, 40, 0.05)); /* nothing left after it */
  SG_CHECK(!sg_judge_timing_settled(v, 40, 0.06));
  /* the input is not reordered */
  double w[3] = {3, 1, 2};
  (void)sg_judge_timing_settled(w, 3, 0);
  SG_CHECK(w[0] == 3 && w[1] == 1 && w[2] == 2);
}

static void test_source_matches_header(void) {
  SG_CHECK(strstr(sg_cuda_judge_src, "sg_judge_fill(") != NULL);
  SG_CHECK(strstr(sg_cuda_judge_src, "sg_judge_compare(") != NULL);
  SG_CHECK(strstr(sg_cuda_judge_src, "sg_judge_count_ne(") != NULL);
  SG_CHECK(sizeof(sg_judge_fill) == 8 * 8 + 8 * SG_JUDGE_MAX_CHOICE);
  SG_CHECK(sizeof(sg_judge_stats) == 13 * 8);
  SG_CHECK(strstr(sg_cuda_judge_src, "#define SGJ_MAX_CHOICE 16") != NULL);
}

/* The go line a runner started ahead reads: "SEED PATH". */
static void test_go_line(void) {
  uint64_t seed = 0;
  char path[64], msg[256];
  const char *ok = "12345 /tmp/x y/cand.so";
  SG_CHECK(sg_cuda_go_parse(ok, strlen(ok), &seed, path, sizeof path, msg, sizeof msg) == 0);
  SG_CHECK(seed == 12345 && strcmp(path, "/tmp/x y/cand.so") == 0);
  const char *max = "18446744073709551615 /a";
  SG_CHECK(sg_cuda_go_parse(max, strlen(max), &seed, path, sizeof path, msg, sizeof msg) == 0);
  SG_CHECK(seed == UINT64_MAX && strcmp(path, "/a") == 0);
  const char *bad[] = {"",
                       " /a",                        /* no seed */
                       "12 ",                        /* no path */
                       "12",                         /* no space */
                       "12 rel/a.so",                /* not absolute */
                       "-1 /a",                      /* not a number */
                       "1x /a",                      /* trailing junk */
                       "18446744073709551616 /a",    /* over 2^64 - 1 */
                       "1 /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    msg[0] = 0;
    SG_CHECK(sg_cuda_go_parse(bad[i], strlen(bad[i]), &seed, path, sizeof path, msg,
                              sizeof msg) == -1);
    SG_CHECK(strncmp(msg, "go: ", 4) == 0);
  }
  /* a NUL inside the path is refused, not cut short */
  const char nul[] = "7 /a\0b";
  SG_CHECK(sg_cuda_go_parse(nul, sizeof nul - 1, &seed, path, sizeof path, msg,
                            sizeof msg) == -1);
}

/* A stand-in server: quits a quarter of a second after its 'q' (a context's
 * teardown, long), or never (killed). */
static sg_cuda_server fake_server(bool quits) {
  int sv[2];
  SG_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  pid_t pid = fork();
  SG_CHECK(pid >= 0);
  if (pid == 0) {
    close(sv[0]);
    char c;
    if (read(sv[1], &c, 1) == 1 && c == 'q' && quits) {
      usleep(250000);
      _exit(0);
    }
    for (;;)
      pause();
  }
  close(sv[1]);
  return (sg_cuda_server){pid, sv[0], "test"};
}

/* The servers are all asked before any is waited for, so their exits
 * overlap; one that does not leave is killed; every one is reaped. */
static void test_server_stop(void) {
  sg_cuda_server a = fake_server(true), b = fake_server(true), gone = {0, -1, "gone"};
  sg_cuda_server *const both[] = {&a, &gone, &b};
  double t0 = sg_clock_now_s();
  sg_cuda_server_stop(both, 3);
  double both_s = sg_clock_now_s() - t0;
  SG_CHECK(a.pid == 0 && b.pid == 0 && a.fd == -1 && b.fd == -1);
  SG_CHECK(waitpid(-1, NULL, WNOHANG) == -1); /* nothing left to reap */
  /* two exits of 0.25 s each, side by side: under the 0.5 s of two in a row */
  SG_CHECK(both_s >= 0.25);
  sg_cuda_server stuck = fake_server(false);
  sg_cuda_server *const one[] = {&stuck};
  t0 = sg_clock_now_s();
  sg_cuda_server_stop(one, 1);
  SG_CHECK(stuck.pid == 0 && sg_clock_now_s() - t0 >= 0.5);
  SG_CHECK(waitpid(-1, NULL, WNOHANG) == -1);
  /* the side-by-side wait, against one server's alone measured just now */
  sg_cuda_server c = fake_server(true);
  sg_cuda_server *const lone[] = {&c};
  t0 = sg_clock_now_s();
  sg_cuda_server_stop(lone, 1);
  double one_s = sg_clock_now_s() - t0;
  SG_CHECK(both_s < 1.6 * one_s);
}

SG_TEST_MAIN({"fill_spec_task_distribution", test_fill_spec_task_distribution},
             {"timing_settles", test_timing_settles},
             {"go_line", test_go_line},
             {"fill_spec_domain", test_fill_spec_domain},
             {"atol_scales_with_magnitude", test_atol_scales_with_magnitude},
             {"shortcuts", test_shortcuts},
             {"source_matches_header", test_source_matches_header},
             {"server_stop", test_server_stop})
