/* sg_remote_worker.c: a remote worker, the Redis side of `specgen worker
 * --redis URL --run ID --device D` (docs/remote.md; the process around it,
 * with its local pool, is sg_remote_host.c).
 *
 * It takes one request at a time from its run's stream for its device kind
 * (XREADGROUP, only while its device is idle), hands it to its evaluator
 * (the host's local pool) and XADDs the replies to the stream the request
 * names. A reply stays in memory until its XADD was answered, across
 * reconnects: a Redis restart loses none. It never XACKs a request: the
 * controller does, once the result is stored.
 *
 * Two connections: one for the blocking XREADGROUP, one for everything else
 * (a blocked connection answers nothing else until its BLOCK ends).
 */
#include "remote/sg_remote.h"
#include "remote/sg_redis.h"

#include "common/sg_alloc.h"
#include "common/sg_clock.h"
#include "pool/sg_jsonl.h"
#include "pool/sg_pool.h"
#include "pool/sg_worker_proto.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_BLOCK_MS "1000"
#define REPLIES_MAXLEN "10000"
#define LEAVE_S 3.0

typedef struct outmsg {
  char *key, *id, *body;
  bool sending;
  struct outmsg *next;
} outmsg;

struct sg_remote_worker {
  uv_loop_t *loop;
  sg_remote_worker_opts opts; /* strings borrowed from the caller */
  const sg_remote_worker_opts *o;
  sg_remote_evaluator ev;
  sg_redis_url url;
  char where[300];
  sg_redis *cmd, *blk;
  char *consumer, *kind, *req_key, *hb_key, *workers_key, *ctl_key;
  double ttl_s, redis_limit_s;
  /* since when Redis is unreachable (a connection not up; 0: both are),
   * and the last reason a connection gave */
  double t_down;
  char down_why[200];
  bool reading, busy, stopping, group_asked;
  bool no_stream; /* the request stream does not exist: wait for a tick */
  bool on_ctl; /* the blocking command out is the control list's BLPOP */
  /* refused a request: leaves once its replies are written (or after
   * LEAVE_S), so the refusal reaches the controller */
  bool leaving;
  double t_leave;
  uint64_t ticket;
  char *job_id, *job_reply;
  uint64_t job_ticket;
  outmsg *out;
  uv_timer_t tick;
  char exit_msg[512];
};
typedef struct sg_remote_worker rw;

static void maybe_read(rw *w);
static void flush_out(rw *w);
static void stop(rw *w, bool told);

static void logf_(rw *w, const char *fmt, const char *a, const char *b) {
  fprintf(stderr, "specgen worker %s: ", w->consumer);
  fprintf(stderr, fmt, a ? a : "", b ? b : "");
  fputc('\n', stderr);
}

/* ---- replies out ----------------------------------------------------------- */

static void on_xadd(redisAsyncContext *ac, void *rv, void *priv) {
  (void)ac;
  outmsg *m = priv;
  redisReply *r = rv;
  m->sending = false;
  if (!r)
    return; /* the connection went down: sent again once it is up */
  m->key[0] = '\0'; /* written (or refused for good): swept by flush_out */
  if (r->type == REDIS_REPLY_ERROR)
    fprintf(stderr, "specgen worker: a reply could not be written: %s\n", r->str);
}

static void flush_out(rw *w) {
  outmsg **pp = &w->out;
  while (*pp) {
    outmsg *m = *pp;
    if (!m->key[0]) {
      *pp = m->next;
      free(m->key);
      free(m->id);
      free(m->body);
      free(m);
      continue;
    }
    if (!m->sending) {
      const char *argv[] = {"XADD", m->key, "MAXLEN", "~", REPLIES_MAXLEN, "*",
                            "id", m->id, "worker", w->consumer, "body", m->body};
      if (sg_redis_cmd(w->cmd, on_xadd, m, 12, argv, NULL) == 0)
        m->sending = true;
    }
    pp = &m->next;
  }
}

static void send_reply(rw *w, const char *key, const char *id, json_t *body) {
  outmsg *m = sg_calloc(1, sizeof *m);
  m->key = sg_strdup(key);
  m->id = sg_strdup(id);
  size_t len;
  m->body = sg_jsonl_line(body, &len);
  if (len && m->body[len - 1] == '\n')
    m->body[len - 1] = '\0';
  json_decref(body);
  outmsg **pp = &w->out;
  while (*pp)
    pp = &(*pp)->next;
  *pp = m;
  flush_out(w);
}

static void send_error(rw *w, const char *key, const char *id, const char *msg) {
  send_reply(w, key, id, json_pack("{s:s, s:s, s:s}", "type", "error", "id", id,
                                   "message", msg));
}

/* ---- the local pool ------------------------------------------------------- */

/* A wake-up on the control list: no request id, so it aborts nothing. */
#define WAKE ""

static void job_end(rw *w) {
  free(w->job_id);
  free(w->job_reply);
  w->job_id = w->job_reply = NULL;
  w->busy = false;
  if (w->reading && w->on_ctl) {
    /* the control list's BLPOP would hold the next XREADGROUP back for up
     * to its timeout: wake it, so the device takes its next request at
     * once (a wake that comes after the BLPOP ended is taken by the next
     * one, which then waits again: harmless) */
    const char *push[] = {"LPUSH", w->ctl_key, WAKE};
    const char *expire[] = {"PEXPIRE", w->ctl_key, "60000"};
    sg_redis_cmdv(w->cmd, 3, push);
    sg_redis_cmdv(w->cmd, 3, expire);
  }
  maybe_read(w);
}

void sg_remote_worker_started(sg_remote_worker *w, uint64_t ticket) {
  if (w->job_id && ticket == w->job_ticket && !w->stopping)
    send_reply(w, w->job_reply, w->job_id,
               json_pack("{s:s, s:s}", "type", "started", "id", w->job_id));
}

void sg_remote_worker_result(sg_remote_worker *w, uint64_t ticket,
                             const sg_eval_result *r) {
  if (!w->job_id || ticket != w->job_ticket || w->stopping)
    return;
  sg_worker_reply rep;
  sg_worker_reply_init(&rep, SG_WREP_RESULT);
  rep.id = sg_strdup(w->job_id);
  rep.result = *r; /* borrowed for the serialization */
  json_t *j = sg_worker_reply_to_json(&rep);
  sg_eval_result_init(&rep.result);
  sg_worker_reply_free(&rep);
  send_reply(w, w->job_reply, w->job_id, j);
  job_end(w);
}


/* ---- requests in ---------------------------------------------------------- */

static bool check_peer(rw *w, const sg_redis_entry *e, char *why, size_t n) {
  const char *run = sg_redis_field(e, "run", NULL);
  const char *proto = sg_redis_field(e, "protocol", NULL);
  const char *ver = sg_redis_field(e, "version", NULL);
  char mine[16];
  snprintf(mine, sizeof mine, "%d", SG_WORKER_PROTOCOL);
  if (!run || strcmp(run, w->o->run_id) != 0)
    snprintf(why, n, "request of run '%.64s', this worker serves run '%s'",
             run ? run : "?", w->o->run_id);
  else if (!proto || strcmp(proto, mine) != 0)
    snprintf(why, n, "request of protocol %.16s, this worker speaks protocol %s",
             proto ? proto : "?", mine);
  else if (!ver || strcmp(ver, w->o->version) != 0)
    snprintf(why, n, "request of specgen %.32s, this worker is specgen %s",
             ver ? ver : "?", w->o->version);
  else
    return true;
  return false;
}

static void take(rw *w, const sg_redis_entry *e) {
  const char *id = sg_redis_field(e, "id", NULL);
  const char *reply = sg_redis_field(e, "reply", NULL);
  size_t blen = 0;
  const char *body = sg_redis_field(e, "body", &blen);
  if (!id || !reply || !body || strlen(id) > SG_WORKER_ID_MAX) {
    logf_(w, "entry %s without id, reply or body: skipped%s", e->id, NULL);
    return;
  }
  char why[400];
  if (!check_peer(w, e, why, sizeof why)) {
    send_error(w, reply, id, why);
    /* a worker of the wrong run or version would take every request of
     * the stream: it leaves instead, so a matching worker gets them */
    char *msg = sg_asprintf("refused a request (%s); stopping", why);
    sg_remote_worker_leave(w, msg);
    free(msg);
    return;
  }
  sg_worker_request req;
  sg_worker_request_init(&req);
  sg_err err;
  sg_err_clear(&err);
  if (sg_worker_request_parse(body, blen, &req, &err) != 0 ||
      (req.type != SG_WREQ_VALIDATE && req.type != SG_WREQ_PROFILE &&
       req.type != SG_WREQ_COMPILE)) {
    send_error(w, reply, id, err.msg[0] ? err.msg : "not an evaluation request");
    sg_worker_request_free(&req);
    return;
  }
  sg_pool_request pr;
  memset(&pr, 0, sizeof pr);
  pr.ticket = ++w->ticket;
  pr.kind = req.type == SG_WREQ_COMPILE    ? SG_POOL_COMPILE
            : req.type == SG_WREQ_VALIDATE ? SG_POOL_VALIDATE
                                           : SG_POOL_PROFILE;
  pr.task = req.task;
  pr.task_files = req.task_files;
  pr.source = req.source;
  pr.source_len = req.source_len;
  pr.seed = req.seed;
  pr.trials = req.trials;
  pr.runs = req.runs;
  pr.warmups = req.warmups;
  pr.eval_timeout = req.eval_timeout;
  /* the job is set before the submit: an evaluator may answer from inside it */
  w->busy = true;
  w->job_ticket = pr.ticket;
  w->job_id = sg_strdup(id);
  w->job_reply = sg_strdup(reply);
  if (w->ev.submit(w->ev.data, &pr, &err) != 0) {
    send_error(w, reply, id, err.msg);
    free(w->job_id);
    free(w->job_reply);
    w->job_id = w->job_reply = NULL;
    w->busy = false;
    if (err.code == SG_ESTATE) /* the evaluator can take no request again */
      sg_remote_worker_leave(w, err.msg);
  }
  sg_worker_request_free(&req);
}

static void on_group(redisAsyncContext *ac, void *rv, void *priv) {
  (void)ac;
  rw *w = priv;
  redisReply *r = rv;
  w->group_asked = false;
  /* no stream yet (a run's end deletes it; its slot proxies create it):
   * the next tick asks again, rather than a loop of commands now */
  if (r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "BUSYGROUP", 9) != 0) {
    w->no_stream = true;
    return;
  }
  maybe_read(w);
}

static void on_read(redisAsyncContext *ac, void *rv, void *priv) {
  (void)ac;
  rw *w = priv;
  redisReply *r = rv;
  w->reading = false;
  if (!r || w->stopping)
    return;
  if (r->type == REDIS_REPLY_ERROR) {
    if (strncmp(r->str, "NOGROUP", 7) == 0 && !w->group_asked) {
      /* a new stream, or a server that restarted without its data */
      /* never MKSTREAM: a worker would re-create the stream a finished
       * run deleted, and leave it behind */
      const char *argv[] = {"XGROUP", "CREATE", w->req_key, SG_REMOTE_GROUP, "0"};
      if (sg_redis_cmd(w->blk, on_group, w, 5, argv, NULL) == 0)
        w->group_asked = true;
    } else if (strncmp(r->str, "UNBLOCKED", 9) == 0) {
      w->no_stream = true; /* deleted under the read: the run ended */
    } else if (strncmp(r->str, "NOGROUP", 7) != 0) {
      logf_(w, "XREADGROUP failed: %s%s", r->str, NULL);
    }
    return; /* the tick tries again */
  }
  sg_redis_entry e[1];
  int n = sg_redis_entries(r, e, 1);
  if (n > 0)
    take(w, &e[0]);
  maybe_read(w);
}

/* While it evaluates, the request connection waits on the control list:
 * an abort of the current request stops its evaluation (the proxy has
 * answered the pool already; no reply follows). */
static void on_control(redisAsyncContext *ac, void *rv, void *priv) {
  (void)ac;
  rw *w = priv;
  redisReply *r = rv;
  w->reading = false;
  w->on_ctl = false;
  if (!r || w->stopping)
    return;
  if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && w->busy && w->job_id &&
      r->element[1]->type == REDIS_REPLY_STRING &&
      strcmp(r->element[1]->str, w->job_id) == 0) {
    logf_(w, "request %s aborted by the controller%s", w->job_id, NULL);
    w->ev.abort(w->ev.data, w->job_ticket);
    job_end(w);
    return;
  }
  maybe_read(w);
}

static void maybe_read(rw *w) {
  if (w->stopping || w->leaving || w->reading || w->group_asked || !sg_redis_up(w->blk))
    return;
  if (w->busy) {
    /* as long as the XREADGROUP's block: job_end wakes it when the
     * evaluation ends, so the next request need not wait for its timeout */
    const char *argv[] = {"BLPOP", w->ctl_key, "1"};
    if (sg_redis_cmd(w->blk, on_control, w, 3, argv, NULL) == 0)
      w->reading = w->on_ctl = true;
    return;
  }
  if (w->no_stream)
    return;
  const char *argv[] = {"XREADGROUP", "GROUP", SG_REMOTE_GROUP, w->consumer,
                        "COUNT", "1", "BLOCK", READ_BLOCK_MS, "STREAMS",
                        w->req_key, ">"};
  if (sg_redis_cmd(w->blk, on_read, w, 11, argv, NULL) == 0)
    w->reading = true;
}

/* ---- heartbeat, state, signals ---------------------------------------------- */

static void heartbeat(rw *w) {
  char ms[32], now[32];
  snprintf(ms, sizeof ms, "%lld", (long long)(w->ttl_s * 1000));
  snprintf(now, sizeof now, "%.3f", sg_clock_wall_s());
  const char *argv[] = {"SET", w->hb_key, now, "PX", ms};
  sg_redis_cmdv(w->cmd, 5, argv);
}

/* A worker that cannot reach its Redis serves nobody: after the bound it
 * leaves (exit 1 with the reason) instead of retrying and logging forever. */
static void check_reachable(rw *w) {
  double now = sg_clock_now_s();
  if (sg_redis_up(w->cmd) && sg_redis_up(w->blk)) {
    w->t_down = 0;
    return;
  }
  if (w->t_down == 0) {
    w->t_down = now;
    return;
  }
  if (now - w->t_down >= w->redis_limit_s) {
    char *why = sg_asprintf("Redis %s unreachable for %.0f s (%s); leaving", w->where,
                            now - w->t_down, w->down_why[0] ? w->down_why : "not up");
    sg_remote_worker_leave(w, why);
    free(why);
  }
}

static void on_tick(uv_timer_t *t) {
  rw *w = t->data;
  if (w->leaving && (!w->out || sg_clock_now_s() - w->t_leave > LEAVE_S)) {
    stop(w, false);
    return;
  }
  check_reachable(w);
  w->no_stream = false;
  heartbeat(w);
  flush_out(w);
  maybe_read(w);
}

static void on_state(sg_redis *c, void *data, bool up, const char *why) {
  rw *w = data;
  const char *which = c == w->cmd ? "commands" : "requests";
  if (!up) {
    if (c == w->blk) {
      w->reading = w->on_ctl = false;
      w->group_asked = false;
    }
    snprintf(w->down_why, sizeof w->down_why, "%s", why ? why : "down");
    fprintf(stderr, "specgen worker %s: Redis %s (%s connection): %s\n", w->consumer,
            w->where, which, w->down_why);
    return;
  }
  fprintf(stderr, "specgen worker %s: Redis %s up (%s connection)\n", w->consumer,
          w->where, which);
  if (c == w->cmd) {
    json_t *info = json_pack("{s:s, s:s, s:s, s:i, s:I}", "host", w->o->host,
                             "device", w->o->device, "version", w->o->version,
                             "protocol", SG_WORKER_PROTOCOL, "pid", (json_int_t)getpid());
    char *line = sg_jsonl_line(info, NULL);
    line[strcspn(line, "\n")] = '\0';
    json_decref(info);
    const char *argv[] = {"HSET", w->workers_key, w->consumer, line};
    sg_redis_cmdv(w->cmd, 4, argv);
    free(line);
    heartbeat(w);
    flush_out(w);
  } else {
    maybe_read(w);
  }
}

static void on_tick_closed(uv_handle_t *h) {
  rw *w = h->data;
  while (w->out) {
    outmsg *m = w->out;
    w->out = m->next;
    free(m->key);
    free(m->id);
    free(m->body);
    free(m);
  }
  free(w->consumer);
  free(w->kind);
  free(w->req_key);
  free(w->hb_key);
  free(w->workers_key);
  free(w->ctl_key);
  free(w->job_id);
  free(w->job_reply);
  sg_redis_url_free(&w->url);
  free(w);
}

/* told: the owner closes it (no stopped callback). The tick is the last
 * handle: w is freed once it is closed. */
static void stop(rw *w, bool told) {
  if (w->stopping)
    return;
  w->stopping = true;
  sg_redis_close(w->cmd);
  sg_redis_close(w->blk);
  w->cmd = w->blk = NULL;
  uv_close((uv_handle_t *)&w->tick, on_tick_closed);
  if (!told && w->ev.stopped)
    w->ev.stopped(w->ev.data, w->exit_msg);
}

void sg_remote_worker_leave(sg_remote_worker *w, const char *why) {
  if (w->leaving || w->stopping)
    return;
  snprintf(w->exit_msg, sizeof w->exit_msg, "%s", why);
  logf_(w, "%s%s", w->exit_msg, NULL);
  w->leaving = true;
  w->t_leave = sg_clock_now_s();
}

void sg_remote_worker_close(sg_remote_worker *w) {
  if (w)
    stop(w, true);
}

int sg_remote_worker_new(uv_loop_t *loop, const sg_remote_worker_opts *o,
                         const sg_remote_evaluator *ev, sg_remote_worker **out,
                         sg_err *err) {
  *out = NULL;
  rw *w = sg_calloc(1, sizeof *w);
  w->loop = loop;
  w->opts = *o;
  w->o = &w->opts;
  w->ev = *ev;
  if (sg_redis_url_parse(o->url, &w->url, err) < 0) {
    free(w);
    return sg_err_prefix(err, "--redis");
  }
  if (sg_remote_run_id_check(o->run_id, err) < 0) {
    sg_redis_url_free(&w->url);
    free(w);
    return sg_err_prefix(err, "--run");
  }
  sg_redis_url_where(&w->url, w->where, sizeof w->where);
  const char *colon = strchr(o->device, ':');
  w->kind = sg_strndup(o->device, colon ? (size_t)(colon - o->device) : strlen(o->device));
  w->consumer = sg_remote_consumer(o->host, o->device);
  w->req_key = sg_remote_key_requests(o->run_id, w->kind);
  w->hb_key = sg_remote_key_heartbeat(o->run_id, w->consumer);
  w->workers_key = sg_remote_key_workers(o->run_id);
  w->ctl_key = sg_remote_key_control(o->run_id, w->consumer);
  w->ttl_s = o->heartbeat_ttl_s > 0 ? o->heartbeat_ttl_s : 6;
  w->redis_limit_s = o->redis_timeout_s > 0 ? o->redis_timeout_s : 30;
  w->cmd = sg_redis_new(loop, &w->url, "commands", on_state, w);
  w->blk = sg_redis_new(loop, &w->url, "requests", on_state, w);
  uv_timer_init(loop, &w->tick);
  w->tick.data = w;
  uint64_t every = (uint64_t)(w->ttl_s * 1000 / 3);
  uv_timer_start(&w->tick, on_tick, every ? every : 1, every ? every : 1);
  fprintf(stderr, "specgen worker %s: serving run %s through Redis %s\n", w->consumer,
          o->run_id, w->where);
  *out = w;
  return 0;
}
