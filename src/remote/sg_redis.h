/* sg_redis.h: Redis URLs and one reconnecting hiredis connection on a libuv
 * loop, for the remote workers (docs/remote.md).
 *
 * The URL's password is kept only in memory: sg_redis_url_where() is what
 * messages may show (HOST:PORT), never the URL itself.
 *
 * A connection (sg_redis) connects, authenticates (AUTH), selects the
 * database and then says "up" through its state callback; when the server
 * goes away it says "down" and reconnects by itself after a backoff (0.1 s,
 * doubled up to 2 s), without end: its owner decides how long to wait.
 * Commands sent while it is down are refused (-1); commands in flight when
 * it goes down get their callback with a NULL reply.
 */
#ifndef SG_REDIS_H
#define SG_REDIS_H

#include "common/sg_error.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#define SG_REDIS_URL_MAX 4096

typedef struct sg_redis_url {
  char *host;   /* owned */
  int port;     /* 6379 when not given */
  char *user;   /* owned; NULL: none (AUTH with the password alone) */
  char *pass;   /* owned; NULL: no AUTH */
  int db;       /* 0 when not given */
} sg_redis_url;

/* Parses redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]. Errors name the part
 * that is wrong and never quote the password. */
int sg_redis_url_parse(const char *s, sg_redis_url *u, sg_err *err);
void sg_redis_url_free(sg_redis_url *u);
/* "HOST:PORT" for messages; buf of n bytes. */
const char *sg_redis_url_where(const sg_redis_url *u, char *buf, size_t n);

/* Connects once, authenticates, selects the database and PINGs, waiting
 * at most limit_s in all: what a process checks before it starts serving,
 * so a wrong password or a server that is not there is an error at once
 * (SG_ECONN, with the server's reason or the socket's, and HOST:PORT)
 * instead of a connection that retries without end. */
int sg_redis_check(const sg_redis_url *u, double limit_s, sg_err *err);

/* sg_redis_check's connection, kept: a blocking one (each command waits
 * at most limit_s) for a process's last words, its keys removed at its end
 * (caller frees with redisFree). NULL, with err, as sg_redis_check fails. */
redisContext *sg_redis_connect_sync(const sg_redis_url *u, double limit_s, sg_err *err);

typedef struct sg_redis sg_redis;

/* up: the connection is ready (after AUTH and SELECT); !up: it went down
 * (why says why; the password is never in it). */
typedef void (*sg_redis_state_fn)(sg_redis *c, void *data, bool up,
                                  const char *why);

/* Starts connecting; the state callback says when it is up. name is for
 * log lines ("worker", "proxy"). The URL is copied. */
sg_redis *sg_redis_new(uv_loop_t *loop, const sg_redis_url *u, const char *name,
                       sg_redis_state_fn fn, void *data);
bool sg_redis_up(const sg_redis *c);
/* Sends a command; fn gets the reply (NULL when the connection went down
 * first). Returns 0, or -1 when the connection is not up (fn not called). */
int sg_redis_cmd(sg_redis *c, redisCallbackFn *fn, void *priv, int argc,
                 const char **argv, const size_t *lens);
/* sg_redis_cmd with NUL-terminated strings and no callback. */
int sg_redis_cmdv(sg_redis *c, int argc, const char **argv);
/* Disconnects at once (commands in flight get NULL) and frees c once its
 * handles are closed; no state callback follows. NULL is fine. */
void sg_redis_close(sg_redis *c);

/* An XREAD/XREADGROUP reply's entries, flattened: for each entry its id
 * and its field/value pairs. Returns the number of entries (0 for a nil
 * reply, a timeout) or -1 for a reply of another shape. */
typedef struct sg_redis_entry {
  const char *id;
  const redisReply *fields; /* the array of field, value, field, value... */
} sg_redis_entry;
int sg_redis_entries(const redisReply *r, sg_redis_entry *out, int max);
/* The value of field name in an entry, or NULL; *len its length. */
const char *sg_redis_field(const sg_redis_entry *e, const char *name, size_t *len);

#endif
