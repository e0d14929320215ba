/* sg_redis.c: Redis URLs and a reconnecting hiredis connection on libuv
 * (sg_redis.h). hiredis' own libuv adapter drives the socket; this file adds
 * what a long-lived worker needs around it: AUTH and SELECT before "up", a
 * connect deadline (an unreachable host would otherwise hold a connect for
 * minutes), a liveness PING (a peer gone behind a dropped link is noticed
 * only by an unanswered command) and reconnecting with a backoff. */
#include "remote/sg_redis.h"

#include "common/sg_alloc.h"

#include <hiredis/adapters/libuv.h>
#include <limits.h>
#include <sys/time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BACKOFF_MIN_S 0.1
#define BACKOFF_MAX_S 2.0
#define CONNECT_LIMIT_S 3.0
/* A PING goes out on a connection silent this long: any reply says the
 * server is there (a pool of a thousand devices has four thousand
 * connections; a PING each per second was most of its broker's work). */
#define PING_EVERY_S 1.0
/* A PING unanswered this long means the server is unreachable. Longer than
 * the longest BLOCK the owners use (1 s), which delays replies behind it. */
#define PING_DEAD_S 5.0

/* ---- URL ------------------------------------------------------------------- */

static int parse_int(const char *s, size_t n, int lo, int hi, int *out) {
  if (n == 0 || n > 9)
    return -1;
  int v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (s[i] - '0');
  }
  if (v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

int sg_redis_url_parse(const char *s, sg_redis_url *u, sg_err *err) {
  memset(u, 0, sizeof *u);
  u->port = 6379;
  if (!s || strlen(s) > SG_REDIS_URL_MAX)
    return sg_err_set(err, SG_EINVAL, "Redis URL: missing or over %d bytes",
                      SG_REDIS_URL_MAX);
  const char *scheme = "redis://";
  if (strncmp(s, scheme, strlen(scheme)) != 0)
    return sg_err_set(err, SG_EINVAL,
                      "Redis URL: must start with redis:// "
                      "(redis://[USER:PASSWORD@]HOST[:PORT][/DB])");
  const char *p = s + strlen(scheme);
  const char *slash = strchr(p, '/');
  const char *end = slash ? slash : p + strlen(p);
  /* the last '@' before the path ends the credentials: a password may hold '@' */
  const char *at = NULL;
  for (const char *q = p; q < end; q++)
    if (*q == '@')
      at = q;
  if (at) {
    const char *colon = memchr(p, ':', (size_t)(at - p));
    if (!colon)
      return sg_err_set(err, SG_EINVAL,
                        "Redis URL: credentials must be USER:PASSWORD or :PASSWORD");
    if (colon > p)
      u->user = sg_strndup(p, (size_t)(colon - p));
    if (at - colon - 1 <= 0) {
      sg_redis_url_free(u);
      return sg_err_set(err, SG_EINVAL, "Redis URL: empty password");
    }
    u->pass = sg_strndup(colon + 1, (size_t)(at - colon - 1));
    p = at + 1;
  }
  const char *hend = end;
  if (*p == '[') { /* [IPv6]:port */
    const char *rb = memchr(p, ']', (size_t)(end - p));
    if (!rb) {
      sg_redis_url_free(u);
      return sg_err_set(err, SG_EINVAL, "Redis URL: unterminated [address]");
    }
    u->host = sg_strndup(p + 1, (size_t)(rb - p - 1));
    hend = rb + 1;
  } else {
    const char *colon = memchr(p, ':', (size_t)(end - p));
    hend = colon ? colon : end;
    u->host = sg_strndup(p, (size_t)(hend - p));
  }
  if (!*u->host) {
    sg_redis_url_free(u);
    return sg_err_set(err, SG_EINVAL, "Redis URL: no host");
  }
  if (hend < end) {
    if (*hend != ':' ||
        parse_int(hend + 1, (size_t)(end - hend - 1), 1, 65535, &u->port) < 0) {
      sg_redis_url_free(u);
      return sg_err_set(err, SG_EINVAL, "Redis URL: the port must be 1 to 65535");
    }
  }
  if (slash && slash[1] &&
      parse_int(slash + 1, strlen(slash + 1), 0, 1 << 20, &u->db) < 0) {
    sg_redis_url_free(u);
    return sg_err_set(err, SG_EINVAL, "Redis URL: the database must be a number");
  }
  return 0;
}

void sg_redis_url_free(sg_redis_url *u) {
  free(u->host);
  free(u->user);
  if (u->pass) /* scrubbed: it should not linger in freed memory */
    memset(u->pass, 0, strlen(u->pass));
  free(u->pass);
  memset(u, 0, sizeof *u);
}

const char *sg_redis_url_where(const sg_redis_url *u, char *buf, size_t n) {
  snprintf(buf, n, strchr(u->host, ':') ? "[%s]:%d" : "%s:%d", u->host, u->port);
  return buf;
}

/* ---- a check before serving -------------------------------------------------- */

/* One command on a blocking connection: false, with why, when it failed or
 * the server answered an error (its words name no password). */
static bool check_step(redisContext *c, const char *step, const char *where, int argc,
                       const char **argv, sg_err *err) {
  redisReply *r = redisCommandArgv(c, argc, argv, NULL);
  if (!r) {
    sg_err_set(err, SG_ECONN, "Redis %s: %s failed (%s)", where, step,
               c->errstr[0] ? c->errstr : "no reply");
    return false;
  }
  bool ok = r->type != REDIS_REPLY_ERROR;
  if (!ok)
    sg_err_set(err, SG_ECONN, "Redis %s: %s refused: %.200s", where, step, r->str);
  freeReplyObject(r);
  return ok;
}

redisContext *sg_redis_connect_sync(const sg_redis_url *u, double limit_s, sg_err *err) {
  char where[300];
  sg_redis_url_where(u, where, sizeof where);
  struct timeval tv = {(time_t)limit_s,
                       (suseconds_t)((limit_s - (double)(time_t)limit_s) * 1e6)};
  redisContext *c = redisConnectWithTimeout(u->host, u->port, tv);
  if (!c) {
    sg_err_set(err, SG_ECONN, "Redis %s: cannot connect (no memory)", where);
    return NULL;
  }
  if (c->err) {
    sg_err_set(err, SG_ECONN, "Redis %s: cannot connect (%s)", where, c->errstr);
    redisFree(c);
    return NULL;
  }
  redisSetTimeout(c, tv);
  char db[16];
  snprintf(db, sizeof db, "%d", u->db);
  const char *auth[] = {"AUTH", u->user ? u->user : u->pass, u->pass};
  const char *select[] = {"SELECT", db};
  const char *ping[] = {"PING"};
  bool ok = (!u->pass || check_step(c, "authentication", where, u->user ? 3 : 2, auth, err)) &&
            (!u->db || check_step(c, "SELECT", where, 2, select, err)) &&
            check_step(c, "PING", where, 1, ping, err);
  if (!ok) {
    redisFree(c);
    return NULL;
  }
  return c;
}

int sg_redis_check(const sg_redis_url *u, double limit_s, sg_err *err) {
  redisContext *c = sg_redis_connect_sync(u, limit_s, err);
  if (!c)
    return SG_ECONN;
  redisFree(c);
  return 0;
}

/* ---- connection ------------------------------------------------------------ */

struct sg_redis {
  uv_loop_t *loop;
  sg_redis_url url;
  char *name;
  char where[300];
  sg_redis_state_fn fn;
  void *data;
  redisAsyncContext *ac;
  bool up, closing, ping_out;
  double backoff, t_connect, t_ping;
  double t_heard; /* the last reply of any command */
  uv_timer_t timer;
};

static void connect_now(sg_redis *c);

static double now_s(sg_redis *c) { return (double)uv_now(c->loop) / 1000.0; }

static void set_down(sg_redis *c, const char *why) {
  bool was = c->up;
  c->up = false;
  c->ping_out = false;
  if (!c->closing && (was || why))
    c->fn(c, c->data, false, why);
}

/* Drops the connection now (hiredis calls the disconnect callback and every
 * pending callback with NULL). */
static void drop(sg_redis *c, const char *why) {
  redisAsyncContext *ac = c->ac;
  c->ac = NULL;
  if (ac) {
    ac->data = NULL;
    redisAsyncFree(ac);
  }
  set_down(c, why);
  c->t_connect = now_s(c) + c->backoff;
  c->backoff = c->backoff * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S : c->backoff * 2;
}

static void on_ping(redisAsyncContext *ac, void *r, void *priv) {
  (void)ac;
  sg_redis *c = priv;
  if (r && c->ac == ac)
    c->ping_out = false;
}

static void on_tick(uv_timer_t *t) {
  sg_redis *c = t->data;
  double now = now_s(c);
  if (!c->ac) {
    if (now >= c->t_connect)
      connect_now(c);
    return;
  }
  if (!c->up) {
    if (now - c->t_ping > CONNECT_LIMIT_S)
      drop(c, "no answer within the connect limit");
    return;
  }
  if (c->ping_out && now - c->t_ping > PING_DEAD_S) {
    drop(c, "the server stopped answering");
    return;
  }
  if (!c->ping_out && now - c->t_ping >= PING_EVERY_S && now - c->t_heard >= PING_EVERY_S) {
    c->ping_out = true;
    c->t_ping = now;
    redisAsyncCommand(c->ac, on_ping, c, "PING");
  }
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
  (void)status;
  sg_redis *c = ac->data;
  if (!c || c->ac != ac)
    return;
  c->ac = NULL; /* hiredis frees it after this call */
  char why[200];
  snprintf(why, sizeof why, "connection lost (%s)", ac->err ? ac->errstr : "closed");
  set_down(c, why);
  c->t_connect = now_s(c) + c->backoff;
}

static void became_up(sg_redis *c) {
  c->up = true;
  c->backoff = BACKOFF_MIN_S;
  c->t_ping = now_s(c);
  c->fn(c, c->data, true, NULL);
}

/* AUTH and SELECT: false (the connection dropped, why said) when the
 * server refused the step. */
static bool step_ok(sg_redis *c, const redisReply *r, const char *step) {
  if (r->type != REDIS_REPLY_ERROR)
    return true;
  char why[300]; /* the server's words name no password */
  snprintf(why, sizeof why, "%s refused: %.200s", step, r->str);
  drop(c, why);
  return false;
}

static void on_select(redisAsyncContext *ac, void *rv, void *priv) {
  sg_redis *c = priv;
  if (rv && c->ac == ac && step_ok(c, rv, "SELECT"))
    became_up(c);
}

static void after_auth(sg_redis *c) {
  if (c->url.db) {
    char db[16];
    snprintf(db, sizeof db, "%d", c->url.db);
    redisAsyncCommand(c->ac, on_select, c, "SELECT %s", db);
  } else {
    became_up(c);
  }
}

static void on_auth(redisAsyncContext *ac, void *rv, void *priv) {
  sg_redis *c = priv;
  if (rv && c->ac == ac && step_ok(c, rv, "authentication"))
    after_auth(c);
}

static void on_connect(const redisAsyncContext *ac, int status) {
  sg_redis *c = ac->data;
  if (!c || c->ac != ac)
    return;
  if (status != REDIS_OK) {
    char why[200];
    snprintf(why, sizeof why, "cannot connect (%s)", ac->errstr);
    c->ac = NULL; /* hiredis frees it after this call */
    set_down(c, why);
    c->t_connect = now_s(c) + c->backoff;
    c->backoff = c->backoff * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S : c->backoff * 2;
    return;
  }
  redisAsyncContext *m = (redisAsyncContext *)ac;
  if (c->url.pass) {
    if (c->url.user)
      redisAsyncCommand(m, on_auth, c, "AUTH %s %s", c->url.user, c->url.pass);
    else
      redisAsyncCommand(m, on_auth, c, "AUTH %s", c->url.pass);
  } else {
    after_auth(c);
  }
}

static void connect_now(sg_redis *c) {
  c->t_ping = now_s(c); /* the connect deadline runs from here */
  redisAsyncContext *ac = redisAsyncConnect(c->url.host, c->url.port);
  if (!ac || ac->err || redisLibuvAttach(ac, c->loop) != REDIS_OK) {
    char why[200];
    snprintf(why, sizeof why, "cannot connect (%s)", ac ? ac->errstr : "no memory");
    if (ac)
      redisAsyncFree(ac);
    set_down(c, why);
    c->t_connect = now_s(c) + c->backoff;
    c->backoff = c->backoff * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S : c->backoff * 2;
    return;
  }
  ac->data = c;
  c->ac = ac;
  redisAsyncSetConnectCallback(ac, on_connect);
  redisAsyncSetDisconnectCallback(ac, on_disconnect);
}

sg_redis *sg_redis_new(uv_loop_t *loop, const sg_redis_url *u, const char *name,
                       sg_redis_state_fn fn, void *data) {
  sg_redis *c = sg_calloc(1, sizeof *c);
  c->loop = loop;
  c->url.host = sg_strdup(u->host);
  c->url.port = u->port;
  c->url.user = u->user ? sg_strdup(u->user) : NULL;
  c->url.pass = u->pass ? sg_strdup(u->pass) : NULL;
  c->url.db = u->db;
  c->name = sg_strdup(name);
  sg_redis_url_where(u, c->where, sizeof c->where);
  c->fn = fn;
  c->data = data;
  c->backoff = BACKOFF_MIN_S;
  uv_timer_init(loop, &c->timer);
  c->timer.data = c;
  uv_timer_start(&c->timer, on_tick, 100, 100);
  connect_now(c);
  return c;
}

bool sg_redis_up(const sg_redis *c) { return c && c->up && c->ac; }

/* A command's callback, behind one that notes the reply's time. */
typedef struct heard {
  sg_redis *c;
  redisCallbackFn *fn;
  void *priv;
} heard;

static void on_heard(redisAsyncContext *ac, void *r, void *priv) {
  heard h = *(heard *)priv;
  free(priv);
  if (r && h.c->ac == ac)
    h.c->t_heard = now_s(h.c);
  if (h.fn)
    h.fn(ac, r, h.priv);
}

int sg_redis_cmd(sg_redis *c, redisCallbackFn *fn, void *priv, int argc,
                 const char **argv, const size_t *lens) {
  if (!sg_redis_up(c))
    return -1;
  heard *h = sg_malloc(sizeof *h);
  *h = (heard){c, fn, priv};
  if (redisAsyncCommandArgv(c->ac, on_heard, h, argc, argv, lens) != REDIS_OK) {
    free(h);
    return -1;
  }
  return 0;
}

int sg_redis_cmdv(sg_redis *c, int argc, const char **argv) {
  return sg_redis_cmd(c, NULL, NULL, argc, argv, NULL);
}

static void on_timer_closed(uv_handle_t *h) {
  sg_redis *c = h->data;
  sg_redis_url_free(&c->url);
  free(c->name);
  free(c);
}

void sg_redis_close(sg_redis *c) {
  if (!c)
    return;
  c->closing = true;
  redisAsyncContext *ac = c->ac;
  c->ac = NULL;
  if (ac) {
    ac->data = NULL;
    redisAsyncFree(ac);
  }
  uv_close((uv_handle_t *)&c->timer, on_timer_closed);
}

/* ---- stream replies -------------------------------------------------------- */

/* XREAD: [[stream, [[id, [f, v, ...]], ...]], ...]; XRANGE: [[id, [f, v...]]]. */
static int entries_of(const redisReply *list, sg_redis_entry *out, int n, int max) {
  if (list->type != REDIS_REPLY_ARRAY)
    return -1;
  for (size_t i = 0; i < list->elements; i++) {
    const redisReply *e = list->element[i];
    if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
        e->element[0]->type != REDIS_REPLY_STRING)
      return -1;
    if (e->element[1]->type != REDIS_REPLY_ARRAY)
      continue; /* an entry deleted while pending: nil fields */
    if (n < max) {
      out[n].id = e->element[0]->str;
      out[n].fields = e->element[1];
      n++;
    }
  }
  return n;
}

int sg_redis_entries(const redisReply *r, sg_redis_entry *out, int max) {
  if (!r || r->type == REDIS_REPLY_NIL)
    return 0;
  if (r->type != REDIS_REPLY_ARRAY)
    return -1;
  int n = 0;
  for (size_t i = 0; i < r->elements; i++) {
    const redisReply *s = r->element[i];
    /* XREAD's [stream, entries] has arrays in its second element; an
     * XRANGE entry [id, fields] has strings there */
    if (s->type == REDIS_REPLY_ARRAY && s->elements == 2 &&
        s->element[0]->type == REDIS_REPLY_STRING &&
        s->element[1]->type == REDIS_REPLY_ARRAY &&
        (s->element[1]->elements == 0 ||
         s->element[1]->element[0]->type == REDIS_REPLY_ARRAY)) {
      int k = entries_of(s->element[1], out, n, max);
      if (k < 0)
        return -1;
      n = k;
    } else {
      return entries_of(r, out, 0, max); /* XRANGE's shape */
    }
  }
  return n;
}

const char *sg_redis_field(const sg_redis_entry *e, const char *name, size_t *len) {
  const redisReply *f = e->fields;
  for (size_t i = 0; i + 1 < f->elements; i += 2) {
    if (f->element[i]->type == REDIS_REPLY_STRING &&
        strcmp(f->element[i]->str, name) == 0 &&
        f->element[i + 1]->type == REDIS_REPLY_STRING) {
      if (len)
        *len = f->element[i + 1]->len;
      return f->element[i + 1]->str;
    }
  }
  return NULL;
}
