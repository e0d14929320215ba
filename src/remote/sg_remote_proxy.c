/* sg_remote_proxy.c: the slot proxy, `specgen worker --remote-slot
 * redis:KIND/N` (docs/remote.md). The controller's pool starts it like a
 * local worker; it speaks the worker protocol on stdin/stdout and carries
 * each request through Redis:
 *
 * - a request from the pool is XADDed to the run's stream for KIND under a
 *   request id of its own (this proxy's start and pid, a count of its
 *   requests and the pool's wire id);
 * - replies are read from this slot's reply stream; only those of the
 *   current request id reach the pool (with the pool's id back): results
 *   are applied once, by id, and a late or duplicate one is logged and
 *   dropped;
 * - while the request is out, XPENDING says which worker holds it and its
 *   heartbeat key whether it lives; an expired heartbeat ends the request
 *   as infra_error naming the worker's host, and the entry is acknowledged
 *   so nobody takes it again;
 * - the pool's ping naming a delivered request (sent once the result is
 *   stored) is when its entry is XACKed and deleted;
 * - an entry that vanished (a server restarted without its data) is added
 *   again under the same request id.
 *
 * The pool bounds everything: a proxy that cannot reach Redis holds its
 * request past the pool's hang deadline and is restarted, the request
 * reported as infra_error.
 *
 * The slot itself (sg_remote_slot) takes lines and gives lines through
 * calls, on its owner's loop; the process (sg_remote_proxy_serve, at the
 * end) connects it to stdin and stdout.
 */
#include "remote/sg_remote.h"
#include "remote/sg_redis.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_clock.h"
#include "pool/sg_jsonl.h"
#include "pool/sg_worker_proto.h"

#include <errno.h>
#include <stdint.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TICK_MS 250
#define READ_BLOCK_MS "1000"
#define FINISH_S 2.0
#define CHECK_EVERY_S 1.0

typedef struct ack {
  char *wire, *entry;
  bool done, sending;
  struct ack *next;
} ack;

struct sg_remote_slot {
  uv_loop_t *loop;
  sg_remote_proxy_opts opts; /* strings borrowed from the caller */
  const sg_remote_proxy_opts *o;
  sg_remote_slot_out_fn out;
  void *out_data;
  sg_redis_url url;
  char where[300];
  sg_redis *cmd, *blk;
  char *kind, *req_key, *res_key, *prefix;
  bool hello_sent, stopping, reading;
  /* shutdown came: stdin is read on to its end for the pool's last pings,
   * then the acknowledgements are given up to FINISH_S to go out */
  bool shut, finishing;
  double t_finish, t_check;
  /* the request out; gen tells a stale callback from a current one */
  uint64_t gen, seq;
  char *wire, *req_id, *body, *entry, *consumer;
  const char *doing;
  bool adding, checking, started_fwd;
  char last[64];
  ack *acks;
  uv_timer_t tick;
};
typedef struct sg_remote_slot px;

static void stop(px *x);

static void emit(px *x, json_t *j) {
  size_t len;
  char *line = sg_jsonl_line(j, &len);
  json_decref(j);
  x->out(x->out_data, line, len);
  free(line);
}

/* A result the proxy itself decided (the worker lost, an abort). */
static void emit_result(px *x, sg_eval_status st, const char *msg) {
  sg_worker_reply r;
  sg_worker_reply_init(&r, SG_WREP_RESULT);
  r.id = sg_strdup(x->wire);
  r.result.status = st;
  r.result.message = sg_strdup(msg);
  emit(x, sg_worker_reply_to_json(&r));
  sg_worker_reply_free(&r);
}

static void say_hello(px *x) {
  sg_worker_reply r;
  sg_worker_reply_init(&r, SG_WREP_HELLO);
  r.version = sg_strdup(x->o->version);
  r.device = sg_strdup(x->o->device);
  r.pid = (long long)getpid();
  emit(x, sg_worker_reply_to_json(&r));
  sg_worker_reply_free(&r);
}

static void cur_clear(px *x) {
  free(x->wire);
  free(x->req_id);
  free(x->body);
  free(x->entry);
  free(x->consumer);
  x->wire = x->req_id = x->body = x->entry = x->consumer = NULL;
  x->adding = x->checking = x->started_fwd = false;
  x->gen++;
}

static void flush_acks(px *x);

/* Closes an entry for good (XACK and XDEL): nobody takes or reads it again.
 * Through the acknowledgement list, so a proxy that ends waits for it. */
static void entry_close(px *x, const char *entry) {
  ack *k = sg_calloc(1, sizeof *k);
  k->entry = sg_strdup(entry);
  k->next = x->acks;
  x->acks = k;
  flush_acks(x);
}

static void on_ack(redisAsyncContext *ac, void *rv, void *priv) {
  (void)ac;
  ack *k = priv;
  k->sending = false;
  if (rv)
    k->done = true;
}

static void flush_acks(px *x) {
  for (ack **pp = &x->acks; *pp;) {
    ack *k = *pp;
    if (k->done || (!k->entry && !k->sending)) {
      *pp = k->next;
      free(k->wire);
      free(k->entry);
      free(k);
      continue;
    }
    pp = &k->next;
  }
  for (ack *k = x->acks; k; k = k->next) {
    if (!k->wire && !k->sending) { /* stored: acknowledge (XDEL's answer
                                     * marks it done) */
      const char *a[] = {"XACK", x->req_key, SG_REMOTE_GROUP, k->entry};
      const char *d[] = {"XDEL", x->req_key, k->entry};
      if (sg_redis_cmdv(x->cmd, 4, a) == 0 &&
          sg_redis_cmd(x->cmd, on_ack, k, 3, d, NULL) == 0)
        k->sending = true;
    }
  }
}

/* ---- the request out ------------------------------------------------------ */

typedef struct check { px *x; uint64_t gen; } check;

static check *check_new(px *x) {
  check *c = sg_malloc(sizeof *c);
  c->x = x;
  c->gen = x->gen;
  return c;
}

static void on_added(redisAsyncContext *ac, void *rv, void *priv) {
  (void)ac;
  check *c = priv;
  px *x = c->x;
  redisReply *r = rv;
  bool current = c->gen == x->gen;
  free(c);
  if (current)
    x->adding = false;
  if (r && r->type == REDIS_REPLY_STRING) {
    if (current) {
      free(x->entry);
      x->entry = sg_strdup(r->str);
    } else if (!x->stopping) {
      entry_close(x, r->str); /* aborted before its XADD was answered */
    }
  } else if (r && r->type == REDIS_REPLY_ERROR) {
    fprintf(stderr, "specgen proxy %s: XADD failed: %s\n", x->o->device, r->str);
  }
}

static void add_request(px *x) {
  if (!x->req_id || x->entry || x->adding)
    return;
  char proto[16];
  snprintf(proto, sizeof proto, "%d", SG_WORKER_PROTOCOL);
  const char *argv[] = {"XADD", x->req_key, "*", "id", x->req_id, "run", x->o->run_id,
                        "protocol", proto, "version", x->o->version, "reply",
                        x->res_key, "body", x->body};
  check *c = check_new(x);
  if (sg_redis_cmd(x->cmd, on_added, c, 15, argv, NULL) == 0)
    x->adding = true;
  else
    free(c);
}

static void lost(px *x) {
  char *msg = sg_asprintf("remote worker %s lost: its heartbeat expired while %s "
                          "(the request goes back to the scheduler)",
                          x->consumer, x->doing);
  fprintf(stderr, "specgen proxy %s: %s\n", x->o->device, msg);
  entry_close(x, x->entry);
  emit_result(x, SG_EVAL_INFRA_ERROR, msg);
  free(msg);
  cur_clear(x);
}

/* The proxy of a check that ended (freed), or NULL when its request is no
 * longer the current one. */
static px *check_end(check *c) {
  px *x = c->x;
  bool current = c->gen == x->gen;
  free(c);
  if (!current)
    return NULL;
  x->checking = false;
  return x;
}

static void on_hb(redisAsyncContext *ac, void *rv, void *priv) {
  (void)ac;
  redisReply *r = rv;
  px *x = check_end(priv);
  if (x && r && r->type == REDIS_REPLY_INTEGER && r->integer == 0 && x->consumer)
    lost(x);
}

static void on_range(redisAsyncContext *ac, void *rv, void *priv) {
  (void)ac;
  redisReply *r = rv;
  px *x = check_end(priv);
  if (x && r && r->type == REDIS_REPLY_ARRAY && r->elements == 0 && x->entry) {
    fprintf(stderr, "specgen proxy %s: request %s is gone from Redis (a restart "
            "without its data?): adding it again\n", x->o->device, x->req_id);
    free(x->entry);
    x->entry = NULL;
    free(x->consumer);
    x->consumer = NULL;
    add_request(x);
  }
}

static void on_pending(redisAsyncContext *ac, void *rv, void *priv) {
  (void)ac;
  check *c = priv;
  px *x = c->x;
  redisReply *r = rv;
  if (c->gen != x->gen || !r || !x->entry) {
    if (c->gen == x->gen)
      x->checking = false;
    free(c);
    return;
  }
  if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
      r->element[0]->type == REDIS_REPLY_ARRAY && r->element[0]->elements >= 2) {
    free(x->consumer);
    x->consumer = sg_strdup(r->element[0]->element[1]->str);
    char *hb = sg_remote_key_heartbeat(x->o->run_id, x->consumer);
    const char *argv[] = {"EXISTS", hb};
    if (sg_redis_cmd(x->cmd, on_hb, c, 2, argv, NULL) != 0) {
      free(c);
      x->checking = false;
    }
    free(hb);
    return;
  }
  /* not taken yet, or gone */
  const char *argv[] = {"XRANGE", x->req_key, x->entry, x->entry};
  if (sg_redis_cmd(x->cmd, on_range, c, 4, argv, NULL) != 0) {
    free(c);
    x->checking = false;
  }
}

static void check_request(px *x) {
  if (!x->req_id || !x->entry || x->checking || !sg_redis_up(x->cmd))
    return;
  check *c = check_new(x);
  const char *argv[] = {"XPENDING", x->req_key, SG_REMOTE_GROUP, x->entry, x->entry, "1"};
  if (sg_redis_cmd(x->cmd, on_pending, c, 6, argv, NULL) == 0)
    x->checking = true;
  else
    free(c);
}

/* ---- replies in ----------------------------------------------------------- */

static void reply_in(px *x, const sg_redis_entry *e) {
  const char *id = sg_redis_field(e, "id", NULL);
  const char *worker = sg_redis_field(e, "worker", NULL);
  size_t blen = 0;
  const char *body = sg_redis_field(e, "body", &blen);
  json_error_t je;
  json_t *j = body ? json_loadb(body, blen, 0, &je) : NULL;
  const char *type = j ? json_string_value(json_object_get(j, "type")) : NULL;
  bool final = type && (strcmp(type, "result") == 0 || strcmp(type, "error") == 0);
  if (!id || !type || !x->req_id || strcmp(id, x->req_id) != 0) {
    if (final)
      fprintf(stderr, "specgen proxy %s: late result for request %s from %s "
              "ignored (reassigned or already applied)\n", x->o->device,
              id ? id : "?", worker ? worker : "?");
    json_decref(j);
    return;
  }
  if (worker && !x->consumer)
    x->consumer = sg_strdup(worker);
  json_object_set_new(j, "id", json_string(x->wire));
  if (strcmp(type, "started") == 0) {
    if (x->started_fwd) {
      json_decref(j);
      return;
    }
    x->started_fwd = true;
  }
  emit(x, j);
  if (final) {
    ack *k = sg_calloc(1, sizeof *k);
    k->wire = sg_strdup(x->wire);
    k->entry = x->entry ? sg_strdup(x->entry) : NULL;
    k->next = x->acks;
    x->acks = k;
    cur_clear(x);
  }
}

static void maybe_read(px *x);

static void on_replies(redisAsyncContext *ac, void *rv, void *priv) {
  (void)ac;
  px *x = priv;
  redisReply *r = rv;
  x->reading = false;
  if (!r || x->stopping)
    return;
  sg_redis_entry e[16];
  int n = sg_redis_entries(r, e, 16);
  for (int i = 0; i < n; i++) {
    snprintf(x->last, sizeof x->last, "%s", e[i].id);
    reply_in(x, &e[i]);
    const char *d[] = {"XDEL", x->res_key, e[i].id};
    sg_redis_cmdv(x->cmd, 3, d);
  }
  maybe_read(x);
}

static void maybe_read(px *x) {
  if (x->stopping || x->reading || !sg_redis_up(x->blk))
    return;
  const char *argv[] = {"XREAD", "COUNT", "16", "BLOCK", READ_BLOCK_MS, "STREAMS",
                        x->res_key, x->last};
  if (sg_redis_cmd(x->blk, on_replies, x, 8, argv, NULL) == 0)
    x->reading = true;
}

/* ---- requests from the pool ------------------------------------------------ */

/* Nobody waits for the current request any more: its entry is closed and,
 * when a worker has it, the worker stops evaluating it (so no result of it
 * comes, nor re-creates this slot's reply stream after the run's end). */
static void drop_current(px *x) {
  if (x->consumer && x->req_id) {
    char *ctl = sg_remote_key_control(x->o->run_id, x->consumer);
    const char *push[] = {"LPUSH", ctl, x->req_id};
    const char *expire[] = {"PEXPIRE", ctl, "60000"};
    sg_redis_cmdv(x->cmd, 3, push);
    sg_redis_cmdv(x->cmd, 3, expire);
    free(ctl);
  }
  if (x->entry)
    entry_close(x, x->entry);
}

static void stored(px *x, const char *wire) {
  for (ack *k = x->acks; k; k = k->next)
    if (k->wire && strcmp(k->wire, wire) == 0) {
      free(k->wire);
      k->wire = NULL; /* acknowledged by flush_acks from now on */
    }
  flush_acks(x);
}

void sg_remote_slot_line(sg_remote_slot *x, const char *line, size_t len) {
  if (x->stopping)
    return;
  sg_worker_request req;
  sg_worker_request_init(&req);
  sg_err err;
  sg_err_clear(&err);
  if (sg_worker_request_parse(line, len, &req, &err) != 0) {
    emit(x, json_pack("{s:s, s:s?, s:s}", "type", "error", "id", req.id, "message",
                      err.msg));
  } else if (req.type == SG_WREQ_HELLO) {
    say_hello(x);
  } else if (req.type == SG_WREQ_PING) {
    if (req.id)
      stored(x, req.id);
    emit(x, json_pack("{s:s, s:s?}", "type", "pong", "id", req.id));
  } else if (req.type == SG_WREQ_SHUTDOWN) {
    emit(x, json_pack("{s:s}", "type", "bye"));
    x->shut = true;
    /* the pool dropped the request out, if any: nobody will store it */
    drop_current(x);
    cur_clear(x);
  } else if (req.type == SG_WREQ_ABORT) {
    /* an abort that crossed a result already forwarded: the pool drops
     * that result and sends no ping, so nobody will store it */
    for (ack *k = x->acks; k && req.id; k = k->next)
      if (k->wire && strcmp(k->wire, req.id) == 0) {
        free(k->wire);
        k->wire = NULL;
      }
    flush_acks(x);
    if (x->wire && strcmp(x->wire, req.id) == 0) {
      drop_current(x);
      emit_result(x, SG_EVAL_ABORTED, "aborted by the client");
      cur_clear(x);
    }
  } else if (x->wire) {
    emit(x, json_pack("{s:s, s:s, s:s}", "type", "error", "id", req.id, "message",
                      "a request is already out (one at a time)"));
  } else {
    x->wire = sg_strdup(req.id);
    /* unique per submission: the pool may send a retried request under
     * the wire id of the one lost, whose late result must not match it */
    x->req_id = sg_asprintf("%s.%llu.%s", x->prefix, (unsigned long long)++x->seq, req.id);
    x->doing = req.type == SG_WREQ_VALIDATE  ? "validating"
               : req.type == SG_WREQ_PROFILE ? "profiling"
                                             : "compiling";
    free(req.id);
    req.id = sg_strdup(x->req_id);
    json_t *j = sg_worker_request_to_json(&req);
    size_t n;
    x->body = sg_jsonl_line(j, &n);
    x->body[strcspn(x->body, "\n")] = '\0';
    json_decref(j);
    add_request(x);
  }
  sg_worker_request_free(&req);
}

/* ---- state ---------------------------------------------------------------- */

static bool acks_pending(const px *x) {
  for (const ack *k = x->acks; k; k = k->next)
    if (!k->wire && !k->done)
      return true;
  return false;
}

static void on_tick(uv_timer_t *t) {
  px *x = t->data;
  if (x->finishing && (!acks_pending(x) || sg_clock_now_s() - x->t_finish > FINISH_S)) {
    stop(x);
    return;
  }
  add_request(x);
  /* the holder's heartbeat is checked once a second, not every tick: a
   * thousand slots would otherwise send 8,000 commands a second for it
   * (bench_redis --pool), and a heartbeat lives 6 s by default */
  double now = sg_clock_now_s();
  if (now - x->t_check >= CHECK_EVERY_S) {
    x->t_check = now;
    check_request(x);
  }
  flush_acks(x);
  maybe_read(x);
}

static void on_state(sg_redis *c, void *data, bool up, const char *why) {
  px *x = data;
  const char *which = c == x->cmd ? "commands" : "replies";
  if (!up) {
    if (c == x->blk)
      x->reading = false;
    else
      x->adding = x->checking = false;
    fprintf(stderr, "specgen proxy %s: Redis %s (%s connection): %s\n", x->o->device,
            x->where, which, why ? why : "down");
    return;
  }
  if (c == x->blk) {
    /* stream ids may start over on a server that lost its data: read the
     * (small: entries are deleted once read) reply stream from its start */
    snprintf(x->last, sizeof x->last, "0");
    maybe_read(x);
    return;
  }
  const char *argv[] = {"XGROUP", "CREATE", x->req_key, SG_REMOTE_GROUP, "0", "MKSTREAM"};
  sg_redis_cmdv(c, 6, argv); /* BUSYGROUP when it exists: fine */
  if (!x->hello_sent) {
    x->hello_sent = true;
    say_hello(x);
  }
  add_request(x);
}

static void slot_free(px *x) {
  cur_clear(x);
  while (x->acks) {
    ack *k = x->acks;
    x->acks = k->next;
    free(k->wire);
    free(k->entry);
    free(k);
  }
  free(x->kind);
  free(x->req_key);
  free(x->res_key);
  free(x->prefix);
  sg_redis_url_free(&x->url);
  free(x);
}

/* The tick is the slot's last handle: the slot is freed once it is closed
 * (the connections free themselves). */
static void on_tick_closed(uv_handle_t *h) { slot_free(h->data); }

static void stop(px *x) {
  if (x->stopping)
    return;
  x->stopping = true;
  sg_redis_close(x->cmd);
  sg_redis_close(x->blk);
  x->cmd = x->blk = NULL;
  uv_close((uv_handle_t *)&x->tick, on_tick_closed);
}

int sg_remote_slot_new(uv_loop_t *loop, const sg_remote_proxy_opts *o,
                       sg_remote_slot_out_fn out, void *out_data,
                       sg_remote_slot **slot, sg_err *err) {
  *slot = NULL;
  px *x = sg_calloc(1, sizeof *x);
  x->loop = loop;
  x->opts = *o;
  x->o = &x->opts;
  x->out = out;
  x->out_data = out_data;
  if (sg_redis_url_parse(o->url, &x->url, err) < 0) {
    free(x);
    return sg_err_prefix(err, "%s", SG_REMOTE_ENV_URL);
  }
  if (sg_remote_run_id_check(o->run_id, err) < 0) {
    sg_redis_url_free(&x->url);
    free(x);
    return sg_err_prefix(err, "%s", SG_REMOTE_ENV_RUN);
  }
  const char *kind = o->device + strlen(SG_REMOTE_DEVICE_PREFIX);
  const char *slash = sg_remote_is_device(o->device) ? strchr(kind, '/') : NULL;
  if (!slash || slash == kind) {
    sg_redis_url_free(&x->url);
    free(x);
    return sg_err_set(err, SG_EINVAL, "--remote-slot %s: expected redis:KIND/N",
                      o->device);
  }
  sg_redis_url_where(&x->url, x->where, sizeof x->where);
  x->kind = sg_strndup(kind, (size_t)(slash - kind));
  x->req_key = sg_remote_key_requests(o->run_id, x->kind);
  x->res_key = sg_remote_key_replies(o->run_id, o->device);
  /* the slot's address keeps the ids of slots sharing a process apart */
  x->prefix = sg_asprintf("%lld.%ld.%llx", (long long)sg_clock_now_us(), (long)getpid(),
                          (unsigned long long)(uintptr_t)x);
  snprintf(x->last, sizeof x->last, "0");
  x->cmd = sg_redis_new(loop, &x->url, "commands", on_state, x);
  x->blk = sg_redis_new(loop, &x->url, "replies", on_state, x);
  uv_timer_init(loop, &x->tick);
  x->tick.data = x;
  uv_timer_start(&x->tick, on_tick, TICK_MS, TICK_MS);
  *slot = x;
  return 0;
}

void sg_remote_slot_finish(sg_remote_slot *x) {
  if (x->finishing || x->stopping)
    return;
  x->finishing = true;
  x->t_finish = sg_clock_now_s();
  /* the pool writes nothing more: a result it did not ping for (it was
   * closing, or dropped it) is never stored, and its entry would otherwise
   * stay pending in the group for good */
  for (ack *k = x->acks; k; k = k->next) {
    free(k->wire);
    k->wire = NULL;
  }
  drop_current(x);
  cur_clear(x);
  flush_acks(x);
}

void sg_remote_slot_close(sg_remote_slot *x) {
  if (x)
    stop(x);
}

/* ---- the process: stdin/stdout -------------------------------------------- */

typedef struct shell {
  sg_remote_slot *slot;
  uv_pipe_t in;
  sg_buf inbuf;
} shell;

static void out_stdout(void *data, const char *line, size_t len) {
  (void)data;
  size_t off = 0;
  while (off < len) {
    ssize_t n = write(STDOUT_FILENO, line + off, len - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break; /* the pool is gone: the end of stdin follows */
    off += (size_t)n;
  }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)h;
  buf->base = sg_malloc(suggested);
  buf->len = suggested;
}

static void on_stdin(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  shell *x = s->data;
  if (n < 0) {
    free(buf->base);
    uv_read_stop(s);
    uv_close((uv_handle_t *)s, NULL);
    sg_remote_slot_finish(x->slot); /* it stops once its acks went out */
    return;
  }
  sg_buf_append(&x->inbuf, buf->base, (size_t)n);
  free(buf->base);
  char *nl;
  while (x->inbuf.data && (nl = memchr(x->inbuf.data, '\n', x->inbuf.len))) {
    size_t len = (size_t)(nl - x->inbuf.data);
    char *line = sg_strndup(x->inbuf.data, len);
    sg_buf_consume(&x->inbuf, len + 1);
    sg_remote_slot_line(x->slot, line, len);
    free(line);
  }
}

int sg_remote_proxy_serve(const sg_remote_proxy_opts *o, sg_err *err) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  shell sh;
  memset(&sh, 0, sizeof sh);
  int rc = sg_remote_slot_new(&loop, o, out_stdout, NULL, &sh.slot, err);
  if (rc < 0) {
    uv_loop_close(&loop);
    return rc;
  }
  sg_buf_init(&sh.inbuf, SG_WORKER_LINE_MAX);
  uv_pipe_init(&loop, &sh.in, 0);
  sh.in.data = &sh;
  uv_pipe_open(&sh.in, STDIN_FILENO);
  uv_read_start((uv_stream_t *)&sh.in, on_alloc, on_stdin);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  sg_buf_free(&sh.inbuf);
  return 0;
}
