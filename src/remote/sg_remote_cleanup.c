/* sg_remote_cleanup.c: what a remote run leaves in Redis when it ends
 * (docs/remote.md, "Keys"). Each side removes its own keys over one
 * blocking connection once its loop has ended:
 *
 * - the controller, after its slot proxies exited: its slots' reply
 *   streams, the request stream of its device kind (one controller serves
 *   a run at a time: every entry in it is this run's, and dead), and the `workers` entries of worker hosts whose heartbeat has
 *   expired (killed hosts, which could not remove their own);
 * - a worker host, when it stops: its `workers` entry, its heartbeat and
 *   its control list.
 *
 * A worker host still serving keeps its heartbeat and its `workers` entry
 * (so `--resume` finds it); it no longer re-creates a deleted request
 * stream (sg_remote_worker.c), so nothing else comes back. */
#include "remote/sg_remote.h"
#include "remote/sg_redis.h"

#include "common/sg_alloc.h"

#include <stdlib.h>
#include <string.h>

#define CLEANUP_LIMIT_S 5.0

/* One command; its reply (caller frees) or NULL with err set. */
static redisReply *cmd(redisContext *c, sg_err *err, int argc, const char **argv) {
  redisReply *r = redisCommandArgv(c, argc, argv, NULL);
  if (!r)
    sg_err_set(err, SG_ECONN, "Redis: %s failed (%s)", argv[0],
               c->errstr[0] ? c->errstr : "no reply");
  else if (r->type == REDIS_REPLY_ERROR) {
    sg_err_set(err, SG_EPROTO, "Redis: %s refused: %.200s", argv[0], r->str);
    freeReplyObject(r);
    r = NULL;
  }
  return r;
}

static int del(redisContext *c, const char *key, sg_err *err) {
  const char *argv[] = {"DEL", key};
  redisReply *r = cmd(c, err, 2, argv);
  int rc = r ? 0 : err->code;
  freeReplyObject(r);
  return rc;
}

static redisContext *open_url(const char *url, sg_err *err) {
  sg_redis_url u;
  if (sg_redis_url_parse(url, &u, err) < 0)
    return NULL;
  redisContext *c = sg_redis_connect_sync(&u, CLEANUP_LIMIT_S, err);
  sg_redis_url_free(&u);
  return c;
}

/* The workers hash's entries whose heartbeat expired. */
static int drop_dead_workers(redisContext *c, const char *run, sg_err *err) {
  char *key = sg_remote_key_workers(run);
  const char *argv[] = {"HKEYS", key};
  redisReply *names = cmd(c, err, 2, argv);
  int rc = names ? 0 : err->code;
  for (size_t i = 0; names && rc == 0 && i < names->elements; i++) {
    const char *consumer = names->element[i]->str;
    char *hb = sg_remote_key_heartbeat(run, consumer);
    const char *ex[] = {"EXISTS", hb};
    redisReply *alive = cmd(c, err, 2, ex);
    if (!alive) {
      rc = err->code;
    } else if (alive->integer == 0) {
      const char *hdel[] = {"HDEL", key, consumer};
      redisReply *d = cmd(c, err, 3, hdel);
      rc = d ? 0 : err->code;
      freeReplyObject(d);
    }
    freeReplyObject(alive);
    free(hb);
  }
  freeReplyObject(names);
  free(key);
  return rc;
}

int sg_remote_run_cleanup(const char *url, const char *run, const char *kind,
                          const char *const *slots, size_t n_slots, sg_err *err) {
  redisContext *c = open_url(url, err);
  if (!c)
    return err->code;
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < n_slots; i++) {
    char *res = sg_remote_key_replies(run, slots[i]);
    rc = del(c, res, err);
    free(res);
  }
  if (rc == 0) {
    /* every entry left is this run's and nobody waits for it any more:
     * one a proxy killed as hung (or a killed controller) never closed
     * would be taken by a host that joins later, evaluated for nothing */
    char *req = sg_remote_key_requests(run, kind);
    rc = del(c, req, err);
    free(req);
  }
  if (rc == 0)
    rc = drop_dead_workers(c, run, err);
  redisFree(c);
  return rc;
}

int sg_remote_worker_unregister(const char *url, const char *run, const char *consumer,
                                sg_err *err) {
  redisContext *c = open_url(url, err);
  if (!c)
    return err->code;
  char *workers = sg_remote_key_workers(run);
  char *hb = sg_remote_key_heartbeat(run, consumer);
  char *ctl = sg_remote_key_control(run, consumer);
  const char *hdel[] = {"HDEL", workers, consumer};
  redisReply *r = cmd(c, err, 3, hdel);
  int rc = r ? 0 : err->code;
  freeReplyObject(r);
  if (rc == 0)
    rc = del(c, hb, err);
  if (rc == 0)
    rc = del(c, ctl, err);
  free(workers);
  free(hb);
  free(ctl);
  redisFree(c);
  return rc;
}
