/* test_kv_proto.c: LMCache's remote protocol headers and keys
 * (kvstore/sg_kv_proto.h): the exact bytes of LMCache's struct formats,
 * every field check its server makes, and the key spellings its
 * CacheEngineKey parsing treats as one key. */
#include "kvstore/sg_kv_proto.h"
#include "sg_test.h"

#include "common/sg_rng.h"

#include <stdlib.h>
#include <string.h>

static void pack_key(uint8_t *buf, int32_t cmd, const char *key) {
  sg_kv_req r = {.command = cmd, .fmt = 1, .dtype = 2};
  r.key_len = strlen(key);
  memcpy(r.key, key, r.key_len);
  sg_kv_req_pack(&r, buf);
}

static void test_request_bytes_match_lmcache_struct(void) {
  /* struct.pack("iiiiiiiii150s", 1, 4096, 1, 3, 0, 2, 32, 16, 0,
   * b"m@1@0@ab@bfloat16".ljust(150)) */
  sg_kv_req r = {.command = 1, .length = 4096, .fmt = 1, .dtype = 3,
                 .shape = {2, 32, 16, 0}};
  strcpy(r.key, "m@1@0@ab@bfloat16");
  r.key_len = strlen(r.key);
  uint8_t buf[SG_KV_REQ_BYTES];
  sg_kv_req_pack(&r, buf);
  SG_CHECK_EQ_INT(SG_KV_REQ_BYTES, 186);
  static const uint8_t head[36] = {1, 0, 0, 0, 0, 0x10, 0, 0, 1, 0, 0, 0,
                                   3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0,
                                   32, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0};
  SG_CHECK(memcmp(buf, head, 36) == 0);
  SG_CHECK(memcmp(buf + 36, "m@1@0@ab@bfloat16", 17) == 0);
  for (int i = 36 + 17; i < SG_KV_REQ_BYTES; i++)
    SG_CHECK_EQ_INT(buf[i], ' ');
  sg_kv_req back;
  sg_err err;
  SG_CHECK_OK(sg_kv_req_parse(buf, &back, &err), err);
  SG_CHECK_EQ_INT(back.command, 1);
  SG_CHECK_EQ_INT(back.length, 4096);
  SG_CHECK_EQ_INT(back.dtype, 3);
  SG_CHECK_EQ_INT(back.shape[1], 32);
  SG_CHECK_STR_EQ(back.key, "m@1@0@ab@bfloat16");
}

static void test_reply_bytes_match_lmcache_struct(void) {
  /* ServerMetaMessage.serialize: code, length, fmt, dtype, shape, location */
  sg_kv_reply r = {.code = 200, .length = 7, .fmt = 4, .dtype = 6,
                   .shape = {7, 0, 0, 0}, .location = 0};
  uint8_t buf[SG_KV_REPLY_BYTES];
  sg_kv_reply_pack(&r, buf);
  static const uint8_t want[36] = {200, 0, 0, 0, 7, 0, 0, 0, 4, 0, 0, 0,
                                   6, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0,
                                   0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  SG_CHECK(memcmp(buf, want, 36) == 0);
  sg_kv_reply back;
  sg_kv_reply_unpack(buf, &back);
  SG_CHECK(memcmp(&back, &r, sizeof r) == 0);
  sg_kv_reply_plain(&r, 400);
  SG_CHECK_EQ_INT(r.fmt, 1);
  SG_CHECK_EQ_INT(r.dtype, 2);
  SG_CHECK_EQ_INT(r.length, 0);
}

static void test_dtype_echo(void) {
  SG_CHECK_EQ_INT(sg_kv_dtype_echo(1), 2);
  for (int d = 0; d <= SG_KV_DTYPE_MAX; d++)
    if (d != 1)
      SG_CHECK_EQ_INT(sg_kv_dtype_echo(d), d);
}

/* Packs r's fields with a valid key and parses the bytes back. */
static int parse_with_key(sg_kv_req *r, sg_err *err) {
  strcpy(r->key, "m@1@0@1@half");
  r->key_len = strlen(r->key);
  uint8_t buf[SG_KV_REQ_BYTES];
  sg_kv_req_pack(r, buf);
  sg_kv_req out;
  return sg_kv_req_parse(buf, &out, err);
}

static void test_fields_checked_like_lmcache(void) {
  static const struct {
    int32_t f[9]; /* command, length, fmt, dtype, location, shape */
    const char *why;
  } bad[] = {
      {{0, 0, 1, 2, 0, 0, 0, 0, 0}, "command 0"},
      {{6, 0, 1, 2, 0, 0, 0, 0, 0}, "command 6"},
      {{2, 0, -1, 2, 0, 0, 0, 0, 0}, "memory format -1"},
      {{2, 0, 9, 2, 0, 0, 0, 0, 0}, "memory format 9"},
      {{2, 0, 1, 9, 0, 0, 0, 0, 0}, "dtype 9"},
      {{2, 0, 1, 2, 3, 0, 0, 0, 0}, "location 3"},
      {{1, -1, 1, 2, 0, 0, 0, 0, 0}, "negative"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    sg_kv_req r = {0};
    memcpy(&r.command, bad[i].f, 5 * sizeof(int32_t));
    memcpy(r.shape, bad[i].f + 5, 4 * sizeof(int32_t));
    sg_err err;
    SG_CHECK_EQ_INT(parse_with_key(&r, &err), SG_EPROTO);
    SG_CHECK_CONTAINS(err.msg, bad[i].why);
  }
  /* Every valid value parses; a non-PUT may carry any length. */
  for (int c = 1; c <= 5; c++)
    for (int f = 0; f <= SG_KV_FMT_MAX; f++)
      for (int d = 0; d <= SG_KV_DTYPE_MAX; d++)
        for (int l = 0; l <= SG_KV_LOCATION_MAX; l++) {
          sg_kv_req r = {.command = c, .length = c == 1 ? 5 : -3, .fmt = f,
                         .dtype = d, .location = l};
          sg_err err;
          SG_CHECK_OK(parse_with_key(&r, &err), err);
        }
}

static void canon_is(const char *in, const char *want) {
  char out[SG_KV_KEY_MAX + 1];
  size_t n;
  sg_err err;
  uint8_t field[SG_KV_KEY_MAX];
  size_t len = strlen(in);
  memcpy(field, in, len);
  memset(field + len, ' ', SG_KV_KEY_MAX - len);
  int rc = sg_kv_key_canon((const char *)field, SG_KV_KEY_MAX, out, &n, &err);
  if (!want) {
    if (rc != SG_EPROTO)
      SG_FAIL("key \"%s\" accepted as \"%s\"", in, out);
    return;
  }
  if (rc != 0)
    SG_FAIL("key \"%s\" refused: %s", in, err.msg);
  SG_CHECK_STR_EQ(out, want);
  SG_CHECK_EQ_INT(n, strlen(want));
}

static void test_key_spellings(void) {
  canon_is("m@1@0@ab@half", "m@1@0@ab@half");
  canon_is("  m@1@0@ab@half\t", "m@1@0@ab@half");
  canon_is("m@+1@-0@0xAB@half", "m@1@0@ab@half");
  canon_is("m@01@00@00ab@half", "m@1@0@ab@half");
  canon_is("m@1_0@0@a_b@half", "m@10@0@ab@half");
  canon_is("m@1@0@0x_ab@half", "m@1@0@ab@half");
  canon_is("m@1@-2@-ab@half", "m@1@-2@-ab@half");
  canon_is("m@ 1 @0@ab@half", "m@1@0@ab@half");
  canon_is("@1@0@ab@half", "@1@0@ab@half"); /* an empty model name */
  canon_is("Qwen/Qwen3-8B@8@3@deadbeef@bfloat16",
           "Qwen/Qwen3-8B@8@3@deadbeef@bfloat16");
  /* a layer key: a sixth part of digits */
  canon_is("m@1@0@ab@half@007", "m@1@0@ab@half@7");
  /* tags: a repeated name keeps its first place and its last value */
  canon_is("m@1@0@ab@half@a%1@b%2@a%3", "m@1@0@ab@half@a%3@b%2");
  canon_is("m@1@0@ab@half@4@a%x%y", "m@1@0@ab@half@4@a%x%y");
  canon_is("m@1@0@ab@fp8_e4m3fn", "m@1@0@ab@fp8_e4m3fn");
  canon_is("m@1@0@ab@half@", NULL);      /* an empty tag has no % */
  canon_is("m@1@0@ab", NULL);            /* four parts */
  canon_is("m@1@0@ab@float16", NULL);    /* not one of LMCache's names */
  canon_is("m@x@0@ab@half", NULL);
  canon_is("m@1@0@ag@half", NULL);
  canon_is("m@1@0@0x@half", NULL);
  canon_is("m@1@0@a__b@half", NULL);
  canon_is("m@1@0@ab_@half", NULL);
  canon_is("m@1@0@_ab@half", NULL);
  canon_is("m@@0@ab@half", NULL);
  canon_is("m@1@0@ab@half@tag", NULL);
  canon_is("", NULL);
}

static void test_key_bytes_checked(void) {
  char out[SG_KV_KEY_MAX + 1];
  size_t n;
  sg_err err;
  uint8_t field[SG_KV_KEY_MAX];
  /* NUL padding is not stripped by Python: the dtype is then "half\0..." */
  memset(field, 0, sizeof field);
  memcpy(field, "m@1@0@ab@half", 13);
  SG_CHECK_EQ_INT(sg_kv_key_canon((char *)field, sizeof field, out, &n, &err),
                  SG_EPROTO);
  static const char *const not_utf8[] = {"\xff", "\xc0\xaf", "\xed\xa0\x80",
                                         "\xf4\x90\x80\x80", "\xe2\x82"};
  for (size_t i = 0; i < sizeof not_utf8 / sizeof not_utf8[0]; i++) {
    memset(field, ' ', sizeof field);
    memcpy(field, "m\xc3\xa9@1@0@ab@half@t%", 18);
    memcpy(field + 18, not_utf8[i], strlen(not_utf8[i]));
    SG_CHECK_EQ_INT(sg_kv_key_canon((char *)field, sizeof field, out, &n, &err),
                    SG_EPROTO);
    SG_CHECK_CONTAINS(err.msg, "UTF-8");
  }
  memset(field, ' ', sizeof field);
  memcpy(field, "m\xc3\xa9@1@0@ab@half@t%\xe2\x82\xac", 21);
  SG_CHECK_OK(sg_kv_key_canon((char *)field, sizeof field, out, &n, &err), err);
  /* a key filling all 150 bytes */
  memset(field, 'm', sizeof field);
  memcpy(field + sizeof field - 11, "@1@0@1@half", 11);
  SG_CHECK_OK(sg_kv_key_canon((char *)field, sizeof field, out, &n, &err), err);
  SG_CHECK_EQ_INT(n, 150);
}

/* Any header bytes: the parser never reads past 186 bytes and either
 * refuses them or returns a canonical key that parses to itself. */
static void test_random_headers(void) {
  sg_rng g;
  sg_rng_seed(&g, 88172645463325252ull);
  uint64_t x = 0;
  uint8_t *buf = malloc(SG_KV_REQ_BYTES); /* exact size: ASan sees over-reads */
  for (int it = 0; it < 20000; it++) {
    for (int i = 0; i < SG_KV_REQ_BYTES; i++) {
      x = sg_rng_next(&g);
      buf[i] = (uint8_t)x;
    }
    if (it % 2) { /* mostly-valid headers, with noise in the key */
      pack_key(buf, 1 + it % 5, "m@1@0@ab@half@t%v");
      buf[36 + (x % 20)] = (uint8_t)(x >> 8);
    }
    sg_kv_req r;
    sg_err err;
    if (sg_kv_req_parse(buf, &r, &err) == 0) {
      char again[SG_KV_KEY_MAX + 1];
      size_t n;
      SG_CHECK_OK(sg_kv_key_canon(r.key, r.key_len, again, &n, &err), err);
      SG_CHECK(n == r.key_len && memcmp(again, r.key, n) == 0);
    }
  }
  free(buf);
}

SG_TEST_MAIN(SG_TEST(test_request_bytes_match_lmcache_struct),
             SG_TEST(test_reply_bytes_match_lmcache_struct),
             SG_TEST(test_dtype_echo), SG_TEST(test_fields_checked_like_lmcache),
             SG_TEST(test_key_spellings), SG_TEST(test_key_bytes_checked),
             SG_TEST(test_random_headers))
