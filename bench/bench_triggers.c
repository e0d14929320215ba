/* bench_triggers.c: trigger-scanner throughput on one core.
 *
 * Builds a large realistic trace from the sample traces in
 * tests/core/data/triggers/ (each copy with its digits redrawn from a seeded
 * generator, so sizes, offsets and hashes vary and the de-duplication does
 * not silence the copies), then feeds it to a fresh scanner in chunks of 1,
 * 16, 256 and 4096 bytes and prints the median MB/s of several runs, the
 * ratio to the 4096-byte feed, and the trigger count (which must not depend
 * on the chunk size). Also times candidate extraction over the whole trace
 * and scanner creation.
 *
 * usage: bench_triggers [MiB (default 16)] [runs (default 5)]
 */
#include "common/sg_stats.h"
#include "common/sg_alloc.h"
#include "common/sg_clock.h"
#include "common/sg_file.h"
#include "common/sg_rng.h"
#include "core/sg_extract.h"
#include "core/sg_triggers.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const samples[] = {"matmul_cuda", "hinge_c",
                                      "softmax_kernelbench"};

static void count(void *user, const sg_trigger *t) {
  (void)t;
  (*(uint64_t *)user)++;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 16;
  int runs = argc > 2 ? atoi(argv[2]) : 5;
  if (mib == 0 || runs <= 0) {
    fprintf(stderr, "usage: bench_triggers [MiB] [runs]\n");
    return 2;
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  int pinned = sched_setaffinity(0, sizeof one, &one) == 0;

  char *text[3];
  size_t tlen[3];
  for (int i = 0; i < 3; i++) {
    char path[512];
    snprintf(path, sizeof path, SG_SOURCE_ROOT "/tests/core/data/triggers/%s.txt",
             samples[i]);
    sg_err err;
    if (sg_file_read(path, 1 << 20, &text[i], &tlen[i], &err) != 0) {
      fprintf(stderr, "bench_triggers: %s\n", err.msg);
      return 1;
    }
  }
  size_t want = mib << 20, len = 0;
  char *trace = sg_malloc(want + (1 << 20));
  sg_rng g;
  sg_rng_seed(&g, 12345);
  for (int k = 0; len < want; k++) {
    const char *t = text[k % 3];
    for (size_t i = 0; i < tlen[k % 3]; i++) {
      char c = t[i];
      if (c >= '0' && c <= '9')
        c = (char)('0' + sg_rng_next(&g) % 10);
      trace[len++] = c;
    }
  }

  printf("trigger scanner throughput: %.1f MiB trace, %d runs, median%s\n",
         (double)len / (1 << 20), runs, pinned ? ", pinned to CPU 0" : "");
  printf("%-22s %10s %10s %10s\n", "feed", "MB/s", "vs 4096", "triggers");
  static const size_t chunks[] = {4096, 256, 16, 1};
  double base = 0;
  double *v = sg_malloc((size_t)runs * sizeof *v);
  for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
    uint64_t n = 0;
    for (int r = 0; r < runs; r++) {
      sg_scanner *s = sg_scanner_new(NULL);
      uint64_t got = 0;
      double t0 = sg_clock_now_s();
      for (size_t i = 0; i < len; i += chunks[c])
        sg_scanner_feed(s, trace + i, len - i < chunks[c] ? len - i : chunks[c],
                        count, &got);
      sg_scanner_finish(s, count, &got);
      v[r] = (double)len / 1e6 / (sg_clock_now_s() - t0);
      sg_scanner_free(s);
      if (r > 0 && got != n) {
        fprintf(stderr, "bench_triggers: trigger count changed between runs\n");
        return 1;
      }
      n = got;
    }
    double m = sg_stats_median(v, (size_t)runs);
    if (c == 0)
      base = m;
    char name[32];
    snprintf(name, sizeof name, "chunk %zu B", chunks[c]);
    printf("%-22s %10.1f %9.2fx %10llu\n", name, m, m / base,
           (unsigned long long)n);
  }
  for (int r = 0; r < runs; r++) {
    sg_extracted e;
    double t0 = sg_clock_now_s();
    sg_extract_candidate(trace, len, "cuda", "matmul", &e);
    v[r] = (double)len / 1e6 / (sg_clock_now_s() - t0);
  }
  printf("%-22s %10.1f %10s %10s\n", "extract (whole text)", sg_stats_median(v, (size_t)runs), "",
         "");
  int made = 1000;
  for (int r = 0; r < runs; r++) {
    double t0 = sg_clock_now_s();
    for (int i = 0; i < made; i++)
      sg_scanner_free(sg_scanner_new(NULL));
    v[r] = (sg_clock_now_s() - t0) / made * 1e6;
  }
  printf("scanner new+free: %.2f us (median)\n", sg_stats_median(v, (size_t)runs));
  free(v);
  free(trace);
  for (int i = 0; i < 3; i++)
    free(text[i]);
  return 0;
}
