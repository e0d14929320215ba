/* fuzz_redis_url.c: the Redis URL parser (remote/sg_redis.h) and the
 * credential hiding of an argument on any bytes, as a user could type them.
 * Whatever parses has a host and a port in range; no error message ever
 * holds the password part of the input; hiding keeps the length and leaves
 * the copy equal to the input. */
#include "remote/sg_redis.h"
#include "remote/sg_remote.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  memcpy(s, data, size);
  s[size] = '\0';
  sg_redis_url u;
  sg_err err;
  sg_err_clear(&err);
  if (sg_redis_url_parse(s, &u, &err) == 0) {
    assert(u.host && *u.host);
    assert(u.port >= 1 && u.port <= 65535);
    assert(u.db >= 0);
    sg_redis_url_free(&u);
  } else {
    /* "redis://:PASSWORD@...": no message quotes PASSWORD */
    const char *at = strrchr(s, '@');
    if (strncmp(s, "redis://:", 9) == 0 && at && at - (s + 9) >= 6) {
      char *pw = strndup(s + 9, (size_t)(at - (s + 9)));
      assert(strstr(err.msg, pw) == NULL);
      free(pw);
    }
  }
  char *orig = strdup(s);
  char *copy = sg_remote_url_hide(s);
  assert(strcmp(copy, orig) == 0);
  assert(strlen(s) == strlen(orig));
  free(copy);
  free(orig);
  free(s);
  return 0;
}
