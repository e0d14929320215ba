/* trig_harness.h: feeding helpers shared by the trigger scanner's tests.
 *
 * Every input is fed whole, in every chunk size up to its length (or up to
 * 64 for long inputs) and in seeded random splits, each chunk copied against
 * the end of its own malloc'd buffer so an over-read crashes under ASan; all
 * feedings must give identical triggers.
 */
#ifndef TRIG_HARNESS_H
#define TRIG_HARNESS_H

#include "core/sg_triggers.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_TRIGGERS 256

typedef struct result {
  sg_trigger t[MAX_TRIGGERS];
  size_t n;
} result;

/* chunk 0: random splits from seed; otherwise fixed-size chunks. */
void trig_run(const char *in, size_t len, const sg_scanner_opts *o,
              size_t chunk, uint64_t seed, result *r);
bool trig_same(const result *a, const result *b);
void trig_dump(const char *what, const result *r);
/* Scans in at every split; checks they agree; the whole-feed result. */
void trig_scan_all_splits(const char *in, const sg_scanner_opts *o,
                          result *whole);
sg_scanner_opts trig_gap0(void);
/* Expected classes as letters: D design, F fence, K kernel, P phrase. */
void trig_expect_classes(const char *in, const char *want);

typedef struct tcase {
  const char *in;
  const char *want;
} tcase;

void trig_run_table(const tcase *t, size_t n);
#define RUN_TABLE(t) trig_run_table(t, sizeof t / sizeof t[0])

/* Runs cmd in a shell with stderr joined to stdout; *out gets the output
 * (free it); returns the exit status. */
int trig_sh(const char *cmd, char **out);

#endif
