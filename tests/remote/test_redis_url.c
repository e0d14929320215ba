/* test_redis_url.c: the pure parts of the remote workers (docs/remote.md):
 * Redis URLs (every part, every error, and that no message quotes the
 * password), hiding credentials in an argument, run ids, key names and
 * the stream replies (XREAD's and XRANGE's shapes, built by hand). */
#include "remote/sg_redis.h"
#include "remote/sg_remote.h"
#include "common/sg_alloc.h"
#include "sg_test.h"

#include <string.h>

static void test_url_parts(void) {
  sg_redis_url u;
  sg_err err;
  SG_CHECK_OK(sg_redis_url_parse("redis://h", &u, &err), err);
  SG_CHECK_STR_EQ(u.host, "h");
  SG_CHECK_EQ_INT(u.port, 6379);
  SG_CHECK(u.user == NULL && u.pass == NULL && u.db == 0);
  sg_redis_url_free(&u);
  SG_CHECK_OK(sg_redis_url_parse("redis://:pw@10.0.0.1:7000/3", &u, &err), err);
  SG_CHECK_STR_EQ(u.host, "10.0.0.1");
  SG_CHECK_STR_EQ(u.pass, "pw");
  SG_CHECK(u.user == NULL);
  SG_CHECK_EQ_INT(u.port, 7000);
  SG_CHECK_EQ_INT(u.db, 3);
  sg_redis_url_free(&u);
  /* a password may hold '@' and ':': the last '@' ends the credentials */
  SG_CHECK_OK(sg_redis_url_parse("redis://worker:p@ss:w@host:1", &u, &err), err);
  SG_CHECK_STR_EQ(u.user, "worker");
  SG_CHECK_STR_EQ(u.pass, "p@ss:w");
  SG_CHECK_STR_EQ(u.host, "host");
  char where[64];
  SG_CHECK_STR_EQ(sg_redis_url_where(&u, where, sizeof where), "host:1");
  sg_redis_url_free(&u);
  SG_CHECK_OK(sg_redis_url_parse("redis://[::1]:6380", &u, &err), err);
  SG_CHECK_STR_EQ(u.host, "::1");
  SG_CHECK_STR_EQ(sg_redis_url_where(&u, where, sizeof where), "[::1]:6380");
  sg_redis_url_free(&u);
}

static void test_url_errors_never_quote_the_password(void) {
  static const struct { const char *url, *says; } bad[] = {
      {"http://:secret@h", "must start with redis://"},
      {"redis://secret@h", "USER:PASSWORD"},
      {"redis://u:@h", "empty password"},
      {"redis://:secret@", "no host"},
      {"redis://:secret@h:0", "port"},
      {"redis://:secret@h:65536", "port"},
      {"redis://:secret@h:12x", "port"},
      {"redis://:secret@h:", "port"},
      {"redis://:secret@h/x", "database"},
      {"redis://:secret@[::1", "unterminated"},
      {"redis://:secret@[::1]x", "port"},
      {"", "must start"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    sg_redis_url u;
    sg_err err;
    sg_err_clear(&err);
    SG_CHECK_MSG(sg_redis_url_parse(bad[i].url, &u, &err) == SG_EINVAL, "%s", bad[i].url);
    SG_CHECK_CONTAINS(err.msg, bad[i].says);
    SG_CHECK_MSG(strstr(err.msg, "secret") == NULL, "%s: %s", bad[i].url, err.msg);
    SG_CHECK(u.host == NULL && u.pass == NULL && u.user == NULL);
  }
  sg_redis_url u;
  sg_err err;
  SG_CHECK(sg_redis_url_parse(NULL, &u, &err) == SG_EINVAL);
}

static void test_url_hide_overwrites_credentials_only(void) {
  char arg[] = "redis://user:pa@ss@host:1/2";
  char *copy = sg_remote_url_hide(arg);
  SG_CHECK_STR_EQ(copy, "redis://user:pa@ss@host:1/2");
  SG_CHECK_STR_EQ(arg, "redis://**********@host:1/2");
  free(copy);
  char plain[] = "redis://host:1";
  copy = sg_remote_url_hide(plain);
  SG_CHECK_STR_EQ(plain, "redis://host:1");
  free(copy);
}

static void test_run_ids_and_keys(void) {
  sg_err err;
  SG_CHECK_OK(sg_remote_run_id_check("run-1_a.b", &err), err);
  SG_CHECK(sg_remote_run_id_check("", &err) == SG_EINVAL);
  SG_CHECK(sg_remote_run_id_check("a:b", &err) == SG_EINVAL);
  SG_CHECK_CONTAINS(err.msg, "character 2");
  SG_CHECK(sg_remote_run_id_check("a b", &err) == SG_EINVAL);
  char id[66];
  memset(id, 'a', 65);
  id[65] = '\0';
  SG_CHECK(sg_remote_run_id_check(id, &err) == SG_EINVAL);
  id[64] = '\0';
  SG_CHECK_OK(sg_remote_run_id_check(id, &err), err);
  char *k = sg_remote_key_requests("r", "cuda");
  SG_CHECK_STR_EQ(k, "specgen:r:req:cuda");
  free(k);
  k = sg_remote_key_replies("r", "redis:cpu/2");
  SG_CHECK_STR_EQ(k, "specgen:r:res:redis:cpu/2");
  free(k);
  k = sg_remote_key_heartbeat("r", "h/cpu:0/9");
  SG_CHECK_STR_EQ(k, "specgen:r:hb:h/cpu:0/9");
  free(k);
  SG_CHECK(sg_remote_is_device("redis:cpu/0") && !sg_remote_is_device("cpu:0") &&
           !sg_remote_is_device(NULL));
}

/* ---- hand-built replies ------------------------------------------------- */

static redisReply *str(const char *s) {
  redisReply *r = sg_calloc(1, sizeof *r);
  r->type = REDIS_REPLY_STRING;
  r->str = sg_strdup(s);
  r->len = strlen(s);
  return r;
}

static redisReply *arr(size_t n, redisReply **e) {
  redisReply *r = sg_calloc(1, sizeof *r);
  r->type = REDIS_REPLY_ARRAY;
  r->elements = n;
  r->element = sg_calloc(n ? n : 1, sizeof *r->element);
  for (size_t i = 0; i < n; i++)
    r->element[i] = e[i];
  return r;
}

static redisReply *entry(const char *id, const char *f, const char *v) {
  redisReply *fv[] = {str(f), str(v)};
  redisReply *e[] = {str(id), arr(2, fv)};
  return arr(2, e);
}

static void test_stream_replies_of_both_shapes(void) {
  /* XRANGE: [[id, [f, v]], [id, [f, v]]] */
  redisReply *es[] = {entry("1-0", "id", "a"), entry("2-0", "id", "b")};
  redisReply *range = arr(2, es);
  sg_redis_entry out[4];
  SG_CHECK_EQ_INT(sg_redis_entries(range, out, 4), 2);
  SG_CHECK_STR_EQ(out[0].id, "1-0");
  size_t len;
  SG_CHECK_STR_EQ(sg_redis_field(&out[1], "id", &len), "b");
  SG_CHECK_EQ_INT((int)len, 1);
  SG_CHECK(sg_redis_field(&out[1], "body", NULL) == NULL);
  SG_CHECK_EQ_INT(sg_redis_entries(range, out, 1), 1); /* capped */
  /* XREAD: [[stream, [[id, [f, v]]]]] */
  redisReply *one[] = {entry("3-0", "body", "{}")};
  redisReply *sv[] = {str("specgen:r:res:x"), arr(1, one)};
  redisReply *streams[] = {arr(2, sv)};
  redisReply *xread = arr(1, streams);
  SG_CHECK_EQ_INT(sg_redis_entries(xread, out, 4), 1);
  SG_CHECK_STR_EQ(out[0].id, "3-0");
  SG_CHECK_STR_EQ(sg_redis_field(&out[0], "body", NULL), "{}");
  /* nil (a BLOCK that timed out) and shapes that are neither */
  redisReply nil = {.type = REDIS_REPLY_NIL};
  SG_CHECK_EQ_INT(sg_redis_entries(&nil, out, 4), 0);
  SG_CHECK_EQ_INT(sg_redis_entries(NULL, out, 4), 0);
  redisReply *junk[] = {str("x")};
  redisReply *bad = arr(1, junk);
  SG_CHECK_EQ_INT(sg_redis_entries(bad, out, 4), -1);
  freeReplyObject(range);
  freeReplyObject(xread);
  freeReplyObject(bad);
}

SG_TEST_MAIN(SG_TEST(test_url_parts), SG_TEST(test_url_errors_never_quote_the_password),
             SG_TEST(test_url_hide_overwrites_credentials_only),
             SG_TEST(test_run_ids_and_keys), SG_TEST(test_stream_replies_of_both_shapes))
