/* sg_remote_host.c: the worker host process, `specgen worker --redis URL
 * --run ID --device D` (docs/remote.md): one remote worker
 * (sg_remote_worker.c) whose evaluations go to a local pool of one
 * `specgen worker --device D` (and its compile worker), so restarts, hang
 * deadlines and the build cache of this host behave as in a local run.
 *
 * A pool that gave its device slot up (its worker failed max_restarts times
 * in a row) can evaluate nothing again: the host leaves then (exit 1, the
 * reason logged) instead of taking every request of the stream and
 * answering each with an error, so the run's other hosts get them.
 */
#include "remote/sg_remote.h"

#include "common/sg_alloc.h"
#include "common/sg_file.h"
#include "remote/sg_redis.h"
#include "pool/sg_pool.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct host {
  uv_loop_t loop;
  const sg_remote_worker_opts *o;
  sg_pool *pool;
  sg_remote_worker *w;
  uv_signal_t sigterm, sigint;
  bool stopping;
  int exit_code;
  char exit_msg[512];
} host;

static int ev_submit(void *data, const sg_pool_request *r, sg_err *err) {
  host *h = data;
  return sg_pool_submit(h->pool, r, err);
}

static void ev_abort(void *data, uint64_t ticket) {
  host *h = data;
  sg_pool_abort(h->pool, ticket);
}

static void on_closed(uv_handle_t *hd) { (void)hd; }

/* Ends the process's loop: the pool and the signal handles close (the
 * remote worker has stopped already, or is closed here). */
static void host_stop(host *h) {
  if (h->stopping)
    return;
  h->stopping = true;
  sg_pool_close(h->pool, 5);
  uv_close((uv_handle_t *)&h->sigterm, on_closed);
  uv_close((uv_handle_t *)&h->sigint, on_closed);
}

static void ev_stopped(void *data, const char *why) {
  host *h = data;
  h->w = NULL; /* it frees itself */
  h->exit_code = 1;
  snprintf(h->exit_msg, sizeof h->exit_msg, "%s", why);
  host_stop(h);
}

static void on_started(sg_pool *p, void *data, uint64_t ticket) {
  (void)p;
  host *h = data;
  if (h->w)
    sg_remote_worker_started(h->w, ticket);
}

static void on_result(sg_pool *p, void *data, uint64_t ticket, const sg_eval_result *r) {
  (void)p;
  host *h = data;
  if (h->w)
    sg_remote_worker_result(h->w, ticket, r);
}

static void on_worker(sg_pool *p, void *data, int slot, const char *what,
                      const char *message) {
  (void)p;
  host *h = data;
  fprintf(stderr, "specgen worker %s/%s: local %s: %s\n", h->o->host, h->o->device, what,
          message);
  if (h->w && strcmp(what, "given_up") == 0) {
    char *why = sg_asprintf("the local %s worker was given up (%s); leaving",
                            slot >= 0 ? "device" : "compile", message);
    sg_remote_worker_leave(h->w, why);
    free(why);
  }
}

static void on_signal(uv_signal_t *s, int signum) {
  (void)signum;
  host *h = s->data;
  sg_remote_worker_close(h->w);
  h->w = NULL;
  host_stop(h);
}

/* Before anything starts: a bad URL or run id is bad usage, and a Redis
 * that refuses the password or cannot be reached ends the worker now, with
 * the server's reason (it would otherwise retry, and log, for
 * redis_timeout_s before it gives up). */
static int check_redis(const sg_remote_worker_opts *o, sg_err *err) {
  sg_redis_url u;
  if (sg_redis_url_parse(o->url, &u, err) < 0)
    return sg_err_prefix(err, "--redis");
  int rc = sg_remote_run_id_check(o->run_id, err);
  if (rc < 0)
    sg_err_prefix(err, "--run");
  else
    rc = sg_redis_check(&u, o->redis_timeout_s > 0 ? fmin(o->redis_timeout_s, 10) : 10,
                        err);
  sg_redis_url_free(&u);
  return rc;
}

int sg_remote_worker_serve(const sg_remote_worker_opts *o, sg_err *err) {
  int crc = check_redis(o, err);
  if (crc < 0)
    return crc;
  sg_remote_worker_opts opts = *o;
  char *own_cache = NULL;
  if (!opts.build_cache) {
    const char *tmp = o->work_dir ? o->work_dir : getenv("TMPDIR");
    own_cache = sg_asprintf("%s/specgen-remote-cache-%ld", tmp && *tmp ? tmp : "/tmp",
                            (long)getpid());
    opts.build_cache = own_cache;
  }
  int rc = sg_mkdir_p(opts.build_cache, err);
  host h;
  memset(&h, 0, sizeof h);
  h.o = o;
  uv_loop_init(&h.loop);
  if (rc == 0) {
    const char *devices[] = {o->device};
    sg_pool_opts po;
    sg_pool_opts_default(&po);
    po.program = o->program;
    po.devices = devices;
    po.n_devices = 1;
    po.compile_workers = 1;
    po.build_cache = opts.build_cache;
    po.work_dir = o->work_dir;
    sg_pool_callbacks cb = {&h, on_started, on_result, on_worker, NULL};
    rc = sg_pool_new(&h.loop, &po, &cb, &h.pool, err);
  }
  sg_remote_evaluator ev = {&h, ev_submit, ev_abort, ev_stopped};
  if (rc == 0 && (rc = sg_remote_worker_new(&h.loop, &opts, &ev, &h.w, err)) < 0)
    sg_pool_close(h.pool, 0);
  if (rc == 0) {
    uv_signal_init(&h.loop, &h.sigterm);
    uv_signal_init(&h.loop, &h.sigint);
    h.sigterm.data = h.sigint.data = &h;
    uv_signal_start(&h.sigterm, on_signal, SIGTERM);
    uv_signal_start(&h.sigint, on_signal, SIGINT);
  }
  uv_run(&h.loop, UV_RUN_DEFAULT);
  uv_loop_close(&h.loop);
  if (rc == 0) { /* its keys go with it (a killed host's: the controller's end) */
    char *consumer = sg_remote_consumer(o->host, o->device);
    sg_err e;
    sg_err_clear(&e);
    if (sg_remote_worker_unregister(o->url, o->run_id, consumer, &e) < 0)
      fprintf(stderr, "specgen worker %s: its keys stay in Redis: %s\n", consumer, e.msg);
    free(consumer);
  }
  if (own_cache) {
    sg_err e;
    sg_rm_rf(own_cache, &e);
    free(own_cache);
  }
  if (rc == 0 && h.exit_code)
    rc = sg_err_set(err, SG_ESTATE, "%s", h.exit_msg);
  return rc;
}
