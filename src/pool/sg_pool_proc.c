/* sg_pool_proc.c: the pool's worker processes (sg_pool_priv.h): spawning
 * one (its pipes, its environment, in a session of its own) and reading its
 * replies line by line, matching each to the request in flight by its id
 * "<ticket>.<generation>" (sg_pool.c says why). */
#include "pool/sg_pool_priv.h"

#include "common/sg_alloc.h"
#include "common/sg_clock.h"
#include "pool/sg_jsonl.h"
#include "pool/sg_worker_proto.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_exit_cb(uv_process_t *h, int64_t status, int sig) {
  proc *pr = h->data;
  pr->exited = true;
  pr->exit_status = status;
  pr->term_signal = sig;
  if (!pr->w || pr->p->closing) {
    sg_pool_proc_close_process(pr);
    return;
  }
  if (!pr->eof && !pr->write_failed)
    pr->t_noticed = sg_clock_now_s();
  sg_pool_worker_arm(pr->w);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  proc *pr = h->data;
  *buf = uv_buf_init(pr->rd, sizeof pr->rd);
}

/* The in-flight request a reply is for, or NULL. */
static preq *match(worker *w, const sg_worker_reply *r) {
  preq *q = w->inflight;
  if (!q || !r->id || strcmp(q->wire_id, r->id) != 0)
    return NULL;
  return q;
}

/* One reply from the current proc. Returns false when the proc stopped
 * being the worker's (or the pool closes): stop reading its lines. */
static bool handle_reply(worker *w, proc *pr, const sg_worker_reply *r) {
  sg_pool *p = w->p;
  if (w->state == W_STARTING) {
    if (r->type == SG_WREP_ERROR) {
      char *why = sg_asprintf("could not start: %s", r->message ? r->message : "");
      sg_pool_worker_fail(w, "died", why);
      free(why);
      return false;
    }
    if (r->type != SG_WREP_HELLO || r->protocol != SG_WORKER_PROTOCOL) {
      char *why = r->type != SG_WREP_HELLO
                      ? sg_asprintf("began with a %s reply instead of hello",
                                    sg_worker_reply_type_name(r->type))
                      : sg_asprintf("speaks protocol %d, not %d", r->protocol,
                                    SG_WORKER_PROTOCOL);
      sg_pool_worker_fail(w, "died", why);
      free(why);
      return false;
    }
    w->state = W_READY;
    char *msg = sg_asprintf("%s (pid %ld) ready", w->name, pr->pid);
    sg_pool_worker_event(w, "started", msg);
    free(msg);
    if (p->closing || w->pr != pr)
      return false;
    sg_pool_worker_pump(w);
    sg_pool_worker_arm(w);
    return true;
  }
  preq *q = match(w, r);
  switch (r->type) {
  case SG_WREP_STARTED:
  case SG_WREP_COMPILED:
    if (!q)
      return true;
    q->ph = r->type == SG_WREP_STARTED ? PH_STARTED : PH_COMPILED;
    q->t_phase = sg_clock_now_s();
    sg_pool_worker_arm(w);
    if (r->type == SG_WREP_STARTED && !q->aborted && p->cb.on_started)
      p->cb.on_started(p, p->cb.data, q->ticket);
    break;
  case SG_WREP_RESULT:
  case SG_WREP_ERROR: {
    if (!q) /* an abort that crossed its result, or a stale id: no-op */
      return true;
    w->inflight = NULL;
    sg_pool_device_told(w, false);
    bool refused = r->type == SG_WREP_ERROR;
    if (!refused)
      w->fails = 0; /* a completed request: the worker works */
    sg_pool_worker_pump(w);
    sg_pool_worker_arm(w);
    if (q->aborted) {
      sg_pool_preq_free(q);
      break;
    }
    /* a slot proxy acknowledges the request in Redis once the result is
     * stored: the callbacks below store it before they return */
    char *wire = w->device && sg_pool_device_remote(w->device) ? sg_strdup(q->wire_id)
                                                              : NULL;
    if (refused) {
      char *msg = sg_asprintf("%s (pid %ld) refused the request: %s", w->name,
                              pr->pid, r->message ? r->message : "");
      sg_pool_deliver(p, q, NULL, msg);
      free(msg);
    } else if (r->result.status == SG_EVAL_ABORTED) {
      /* not ours: the worker was stopped from outside */
      char *msg = sg_asprintf("%s (pid %ld) ended the request: %s", w->name,
                              pr->pid, r->result.message ? r->result.message : "");
      sg_pool_deliver(p, q, NULL, msg);
      free(msg);
    } else {
      sg_pool_deliver(p, q, &r->result, NULL);
    }
    /* pr, not w->pr: a close from inside the callback detached it, and
     * its shutdown line is written already; the proxy reads on to its
     * end of input, so this line still counts */
    if (wire)
      sg_pool_remote_stored(pr, wire);
    free(wire);
    break;
  }
  default: /* hello again, pong, bye: nothing to do */
    break;
  }
  return !p->closing && w->pr == pr;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  proc *pr = s->data;
  sg_pool *p = pr->p;
  (void)buf;
  if (nread == 0)
    return;
  worker *w = pr->w;
  if (nread < 0) {
    sg_pool_proc_close_out(pr);
    pr->eof = true;
    if (w && !p->closing) {
      if (!pr->exited && !pr->write_failed)
        pr->t_noticed = sg_clock_now_s();
      sg_pool_worker_arm(w);
    }
    return;
  }
  if (!w || p->closing)
    return; /* draining a retired or closing process */
  size_t off = 0, n = (size_t)nread;
  while (off < n) {
    const char *nl = memchr(pr->rd + off, '\n', n - off);
    size_t take = nl ? (size_t)(nl - (pr->rd + off)) : n - off;
    if (pr->line.len + take > SG_WORKER_LINE_MAX) {
      char *why = sg_asprintf("wrote a line longer than %u bytes",
                              (unsigned)SG_WORKER_LINE_MAX);
      sg_pool_worker_fail(w, "died", why);
      free(why);
      return;
    }
    sg_buf_append(&pr->line, pr->rd + off, take);
    off += take;
    if (!nl)
      break;
    off++; /* the newline */
    size_t len = pr->line.len;
    if (len > 0 && pr->line.data[len - 1] == '\r')
      len--;
    if (len == 0) {
      sg_buf_reset(&pr->line);
      continue;
    }
    sg_worker_reply r;
    sg_err err;
    sg_err_clear(&err);
    int rc = sg_worker_reply_parse(pr->line.data, len, &r, &err);
    if (rc != 0) {
      size_t k = len < REASON_LINE_MAX ? len : REASON_LINE_MAX;
      char *why = sg_asprintf("wrote a line that is not protocol (%s): %.*s%s",
                              err.msg, (int)k, pr->line.data,
                              len > k ? "..." : "");
      /* printable ASCII only: the message travels on as JSON text, and
       * the parser's message may quote the line's bytes too */
      for (char *c = why; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
          *c = '?';
      sg_worker_reply_free(&r);
      sg_pool_worker_fail(w, "died", why);
      free(why);
      return;
    }
    sg_buf_reset(&pr->line);
    bool go_on = handle_reply(w, pr, &r);
    sg_worker_reply_free(&r);
    if (!go_on)
      return;
  }
}

/* ---- spawning ---- */

/* Spawns w's next process. In sg_pool_new (initial) a failure is returned;
 * later it counts as a failure of the worker. */
int sg_pool_worker_spawn_proc(worker *w, sg_err *err) {
  sg_pool *p = w->p;
  proc *pr = sg_calloc(1, sizeof *pr);
  pr->p = p;
  sg_buf_init(&pr->line, 0);
  pr->gen = ++p->gen;
  pr->next = p->procs;
  if (pr->next)
    pr->next->prev = pr;
  p->procs = pr;
  uv_pipe_init(p->loop, &pr->in, 0);
  uv_pipe_init(p->loop, &pr->out, 0);
  pr->in.data = pr->out.data = pr->process.data = pr;
  pr->open_handles = 3;
  p->open_handles += 3;

  const char *argv[12];
  int n = 0;
  argv[n++] = p->program;
  argv[n++] = "worker";
  if (w->device && sg_pool_device_remote(w->device)) {
    /* a slot proxy carrying requests through Redis (docs/remote.md) */
    argv[n++] = "--remote-slot";
    argv[n++] = w->device;
  } else if (w->device) {
    argv[n++] = "--device";
    argv[n++] = w->device;
  } else {
    argv[n++] = "--compile-only";
  }
  argv[n++] = "--build-cache";
  argv[n++] = p->build_cache;
  if (p->work_dir) {
    argv[n++] = "--work-dir";
    argv[n++] = p->work_dir;
  }
  argv[n++] = "--json-errors";
  argv[n] = NULL;

  uv_stdio_container_t stdio[3];
  stdio[0].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
  stdio[0].data.stream = (uv_stream_t *)&pr->in;
  stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
  stdio[1].data.stream = (uv_stream_t *)&pr->out;
  stdio[2].flags = UV_INHERIT_FD;
  stdio[2].data.fd = p->log_fd >= 0 ? p->log_fd : 2;
  uv_process_options_t o;
  memset(&o, 0, sizeof o);
  o.exit_cb = on_exit_cb;
  o.file = p->program;
  o.args = (char **)argv;
  o.env = w->device && sg_pool_device_remote(w->device) && p->env_remote ? p->env_remote
                                                                         : p->env;
  o.flags = UV_PROCESS_DETACHED;
  o.stdio_count = 3;
  o.stdio = stdio;
  w->t_spawn = sg_clock_now_s();
  int rc = uv_spawn(p->loop, &pr->process, &o);
  if (rc < 0) {
    /* libuv: a process handle that failed to spawn must still be closed */
    pr->exited = true;
    sg_pool_proc_retire(pr);
    return sg_err_set(err, SG_EIO, "could not be started (%s: %s)",
                      p->program, uv_strerror(rc));
  }
  pr->pid = pr->process.pid;
  pr->w = w;
  w->pr = pr;
  w->state = W_STARTING;
  rc = uv_read_start((uv_stream_t *)&pr->out, on_alloc, on_read);
  if (rc < 0) {
    sg_pool_proc_retire(pr);
    return sg_err_set(err, SG_EIO, "could not be read from (%s)",
                      uv_strerror(rc));
  }
  return 0;
}

void sg_pool_worker_spawn(worker *w) {
  sg_pool *p = w->p;
  sg_err err;
  sg_err_clear(&err);
  p->st.restarts++;
  if (sg_pool_worker_spawn_proc(w, &err) != 0) {
    sg_pool_worker_fail(w, "died", err.msg);
    return;
  }
  char *msg = sg_asprintf("%s restarted (pid %ld; %d failure%s in a row)",
                          w->name, w->pr->pid, w->fails, w->fails == 1 ? "" : "s");
  sg_pool_worker_arm(w);
  sg_pool_worker_event(w, "restarted", msg);
  free(msg);
}
