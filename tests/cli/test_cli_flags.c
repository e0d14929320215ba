/* test_cli_flags.c: the numbers every subcommand's flags are read with
 * (src/cli/cli_flags.c): the whole text, in range, no sign where none is
 * allowed, nothing strtod only rounds to; and the message of a word that
 * getopt_long refused. */
#include "cli/cli_flags.h"
#include "sg_test.h"

#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void test_integers_whole_and_in_range(void) {
  long long v = -7;
  SG_CHECK(sg_cli_parse_ll("3", 3, 1000, &v) && v == 3);
  SG_CHECK(sg_cli_parse_ll("1000", 3, 1000, &v) && v == 1000);
  SG_CHECK(sg_cli_parse_ll("-5", -10, 10, &v) && v == -5);
  v = -7;
  static const char *const bad[] = {"2", "1001", "", "x", "3x", "3 ", "1e2", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    SG_CHECK_MSG(!sg_cli_parse_ll(bad[i], 3, 1000, &v), "\"%s\" taken", bad[i]);
  SG_CHECK_EQ_INT(v, -7); /* untouched on refusal */
}

static void test_unsigned_refuses_a_sign(void) {
  unsigned long long u = 9;
  SG_CHECK(sg_cli_parse_ull("65535", 65535, &u) && u == 65535);
  SG_CHECK(sg_cli_parse_ull("18446744073709551615", UINT64_MAX, &u) && u == UINT64_MAX);
  /* strtoull takes "-1" as its largest value */
  SG_CHECK(!sg_cli_parse_ull("-1", UINT64_MAX, &u));
  SG_CHECK(!sg_cli_parse_ull("65536", 65535, &u));
  SG_CHECK(!sg_cli_parse_ull("18446744073709551616", UINT64_MAX, &u));
  SG_CHECK(!sg_cli_parse_ull("", UINT64_MAX, &u));
  SG_CHECK(!sg_cli_parse_ull("12k", UINT64_MAX, &u));
  SG_CHECK(u == UINT64_MAX);
}

static void test_reals_in_range_and_representable(void) {
  double d = -1;
  SG_CHECK(sg_cli_parse_double("0.3", 0.3, 3600, &d) && d == 0.3);
  SG_CHECK(sg_cli_parse_double("3600", 0.3, 3600, &d) && d == 3600);
  SG_CHECK(sg_cli_parse_double("inf", 0, INFINITY, &d) && isinf(d));
  d = -1;
  SG_CHECK(!sg_cli_parse_double("0.2", 0.3, 3600, &d));
  SG_CHECK(!sg_cli_parse_double("3601", 0.3, 3600, &d));
  SG_CHECK(!sg_cli_parse_double("inf", 0.3, 3600, &d));
  /* out of range of a double (ERANGE: 1e400 overflows, 1e-320 is
   * subnormal), not a number, not all of it a number */
  static const char *const bad[] = {"1e400", "1e-320", "nan", "", "1s", "-1", "0x"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    SG_CHECK_MSG(!sg_cli_parse_double(bad[i], 0, INFINITY, &d), "\"%s\" taken", bad[i]);
  SG_CHECK(d == -1);
}

static void test_refused_word_message(void) {
  char *argv[] = {"llm chat", "--timeout", NULL};
  optind = 2; /* where getopt_long leaves it after a value is missing */
  char *m = sg_cli_flag_refused_msg(':', argv);
  SG_CHECK_STR_EQ(m, "--timeout needs a value");
  free(m);
  m = sg_cli_flag_refused_msg('?', argv);
  SG_CHECK_STR_EQ(m, "unknown option '--timeout', or it lacks its value");
  free(m);
}

SG_TEST_MAIN(SG_TEST(test_integers_whole_and_in_range),
             SG_TEST(test_unsigned_refuses_a_sign),
             SG_TEST(test_reals_in_range_and_representable),
             SG_TEST(test_refused_word_message))
