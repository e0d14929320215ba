/* sg_kv_server.c: LMCache's remote protocol on libuv (see the header). */
#include "kvstore/sg_kv_server.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "common/sg_clock.h"
#include "kvstore/sg_kv_proto.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DRAIN_CHUNK (64u << 10)

typedef enum cstate { C_HEADER, C_BODY, C_DRAIN, C_WRITING, C_CLOSING } cstate;

typedef struct conn conn;
struct conn {
  uv_tcp_t tcp;
  sg_kv_server *s;
  conn *prev, *next;
  cstate state;
  uint8_t hdr[SG_KV_REQ_BYTES];
  size_t hdr_got;
  sg_kv_req req;
  uint8_t *stage; /* staging buffer: PUT bodies, GET replies' bytes */
  size_t stage_cap;
  size_t body_got, drain_left;
  double t_body; /* when the PUT's header arrived */
  uv_write_t wr;
  uint8_t reply[SG_KV_REPLY_BYTES];
  char *list; /* LIST's payload while it is written */
  char peer[64];
};

struct sg_kv_server {
  uv_loop_t *loop;
  uv_tcp_t listener;
  sg_kv_mem *mem;
  sg_kv_server_opts opts;
  conn *conns;
  size_t open_handles; /* listener + connections not yet closed */
  bool closing;
  int port;
  char url[320];
  uint8_t drain[DRAIN_CHUNK];
  sg_kv_server_stats st;
};

static void logf_(sg_kv_server *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void logf_(sg_kv_server *s, const char *fmt, ...) {
  char line[SG_ERR_MSG_MAX + 256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (s->opts.log)
    s->opts.log(s->opts.log_data, line);
  else
    fprintf(stderr, "%s\n", line);
}

static void *stage_alloc(sg_kv_server *s, size_t n) {
  const sg_kv_backend *b = s->opts.staging;
  return b && b->host_alloc ? b->host_alloc(b->ctx, n) : malloc(n ? n : 1);
}

static void stage_free(sg_kv_server *s, void *p, size_t n) {
  const sg_kv_backend *b = s->opts.staging;
  if (b && b->host_free)
    b->host_free(b->ctx, p, n);
  else
    free(p);
}

/* Room for n bytes in the staging buffer; false when it cannot be had. */
static bool stage_reserve(conn *c, size_t n) {
  if (c->stage && c->stage_cap >= n)
    return true;
  if (c->stage)
    stage_free(c->s, c->stage, c->stage_cap);
  size_t cap = n < 4096 ? 4096 : n;
  c->stage = stage_alloc(c->s, cap);
  c->stage_cap = c->stage ? cap : 0;
  return c->stage != NULL;
}

static void maybe_free_server(sg_kv_server *s) {
  if (s->closing && s->open_handles == 0)
    free(s);
}

static void conn_closed(uv_handle_t *h) {
  conn *c = h->data;
  sg_kv_server *s = c->s;
  free(c);
  s->open_handles--;
  maybe_free_server(s);
}

static void conn_close(conn *c) {
  if (c->state == C_CLOSING)
    return;
  if (c->state == C_BODY) {
    c->s->st.puts_aborted++;
    logf_(c->s, "kvstore: client %s disconnected mid-PUT (%zu of %d bytes): "
          "nothing stored", c->peer, c->body_got, (int)c->req.length);
  }
  c->state = C_CLOSING;
  sg_kv_server *s = c->s;
  /* Freed now, not in the close callback: the backend that made the
   * staging buffer may be gone by then (sg_kvstore_close). The closed
   * socket never reads a pending write's bytes again. */
  if (c->stage)
    stage_free(s, c->stage, c->stage_cap);
  c->stage = NULL;
  free(c->list);
  c->list = NULL;
  if (c->prev)
    c->prev->next = c->next;
  else
    s->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  s->st.connections_open--;
  uv_close((uv_handle_t *)&c->tcp, conn_closed);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  conn *c = h->data;
  switch (c->state) {
  case C_HEADER:
    *buf = uv_buf_init((char *)c->hdr + c->hdr_got,
                       (unsigned)(SG_KV_REQ_BYTES - c->hdr_got));
    return;
  case C_BODY:
    *buf = uv_buf_init((char *)c->stage + c->body_got,
                       (unsigned)((size_t)c->req.length - c->body_got));
    return;
  case C_DRAIN: {
    size_t n = c->drain_left < DRAIN_CHUNK ? c->drain_left : DRAIN_CHUNK;
    *buf = uv_buf_init((char *)c->s->drain, (unsigned)n);
    return;
  }
  default:
    /* Not reading: a zero buffer makes libuv report UV_ENOBUFS, which
     * on_read ignores. */
    *buf = uv_buf_init(NULL, 0);
  }
}

static void start_reading(conn *c);

static void on_written(uv_write_t *w, int status) {
  conn *c = w->data;
  free(c->list);
  c->list = NULL;
  if (c->state == C_CLOSING)
    return;
  if (status < 0) {
    conn_close(c);
    return;
  }
  c->state = C_HEADER;
  c->hdr_got = 0;
  start_reading(c);
}

/* Sends the reply in c->reply and n bytes of payload, then reads again. */
static void send_reply(conn *c, const sg_kv_reply *r, const void *payload,
                       size_t n) {
  sg_kv_reply_pack(r, c->reply);
  uv_buf_t bufs[2] = {uv_buf_init((char *)c->reply, SG_KV_REPLY_BYTES),
                      uv_buf_init((char *)payload, (unsigned)n)};
  c->state = C_WRITING;
  uv_read_stop((uv_stream_t *)&c->tcp);
  c->wr.data = c;
  c->s->st.bytes_out += SG_KV_REPLY_BYTES + n;
  int rc = uv_write(&c->wr, (uv_stream_t *)&c->tcp, bufs, n ? 2 : 1, on_written);
  if (rc < 0)
    conn_close(c);
}

static void commit_put(conn *c) {
  sg_kv_server *s = c->s;
  sg_kv_meta meta = {.length = c->req.length, .fmt = c->req.fmt,
                     .dtype = c->req.dtype};
  memcpy(meta.shape, c->req.shape, sizeof meta.shape);
  sg_err err;
  if (sg_kv_mem_put(s->mem, c->req.key, c->req.key_len, &meta, c->stage,
                    &err) < 0) {
    s->st.puts_dropped++;
    logf_(s, "kvstore: PUT %s dropped: %s", c->req.key, err.msg);
  }
  s->st.put_s += sg_clock_now_s() - c->t_body;
  s->st.put_n++;
  c->state = C_HEADER;
  c->hdr_got = 0;
}

static void do_get(conn *c) {
  sg_kv_server *s = c->s;
  double t0 = sg_clock_now_s();
  sg_kv_reply r;
  sg_kv_meta meta;
  sg_err err;
  int rc = sg_kv_mem_get(s->mem, c->req.key, c->req.key_len, &meta, NULL, 0, &err);
  if (rc == 0 && !stage_reserve(c, (size_t)meta.length))
    rc = SG_EFULL;
  if (rc == 0)
    rc = sg_kv_mem_get(s->mem, c->req.key, c->req.key_len, &meta, c->stage,
                       c->stage_cap, &err);
  if (rc < 0) {
    if (rc != SG_ENOENT)
      logf_(s, "kvstore: GET %s answered as a miss: %s", c->req.key,
            rc == SG_EFULL ? "no staging memory" : err.msg);
    sg_kv_reply_plain(&r, SG_KV_FAIL);
    send_reply(c, &r, NULL, 0);
    return;
  }
  memset(&r, 0, sizeof r);
  r.code = SG_KV_SUCCESS;
  r.length = meta.length;
  r.fmt = meta.fmt;
  r.dtype = sg_kv_dtype_echo(meta.dtype);
  memcpy(r.shape, meta.shape, sizeof r.shape);
  s->st.get_s += sg_clock_now_s() - t0;
  s->st.get_n++;
  send_reply(c, &r, c->stage, (size_t)meta.length);
}

static void list_key(void *data, const char *key, size_t n) {
  sg_buf *b = data;
  if (b->len)
    sg_buf_append(b, "\n", 1);
  sg_buf_append(b, key, n);
}

static void handle_header(conn *c) {
  sg_kv_server *s = c->s;
  sg_err err;
  if (sg_kv_req_parse(c->hdr, &c->req, &err) < 0) {
    s->st.protocol_errors++;
    logf_(s, "kvstore: client %s sent a header LMCache's server would not "
          "decode (%s): closing the connection", c->peer, err.msg);
    conn_close(c);
    return;
  }
  sg_kv_reply r;
  switch (c->req.command) {
  case SG_KV_PUT: {
    size_t len = (size_t)c->req.length;
    c->t_body = sg_clock_now_s();
    c->body_got = 0;
    if (len == 0) {
      commit_put(c);
    } else if (!stage_reserve(c, len)) {
      s->st.puts_dropped++;
      logf_(s, "kvstore: PUT %s of %zu bytes dropped: no staging memory",
            c->req.key, len);
      c->drain_left = len;
      c->state = C_DRAIN;
    } else {
      c->state = C_BODY;
    }
    return;
  }
  case SG_KV_GET:
    do_get(c);
    return;
  case SG_KV_EXIST:
    sg_kv_reply_plain(&r, sg_kv_mem_contains(s->mem, c->req.key, c->req.key_len)
                              ? SG_KV_SUCCESS : SG_KV_FAIL);
    send_reply(c, &r, NULL, 0);
    return;
  case SG_KV_HEALTH:
    s->st.healths++;
    sg_kv_reply_plain(&r, SG_KV_SUCCESS);
    send_reply(c, &r, NULL, 0);
    return;
  case SG_KV_LIST: {
    s->st.lists++;
    sg_buf b;
    sg_buf_init(&b, 0);
    sg_kv_mem_each(s->mem, list_key, &b);
    sg_kv_reply_plain(&r, SG_KV_SUCCESS);
    r.length = (int32_t)b.len;
    c->list = b.len ? sg_buf_steal(&b) : NULL;
    sg_buf_free(&b);
    send_reply(c, &r, c->list, (size_t)r.length);
    return;
  }
  }
  assert(!"command checked by the parser");
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  (void)buf;
  conn *c = st->data;
  if (nread == UV_ENOBUFS || nread == 0 || c->state == C_CLOSING)
    return;
  if (nread < 0) {
    conn_close(c);
    return;
  }
  size_t n = (size_t)nread;
  c->s->st.bytes_in += n;
  switch (c->state) {
  case C_HEADER:
    c->hdr_got += n;
    if (c->hdr_got == SG_KV_REQ_BYTES)
      handle_header(c);
    break;
  case C_BODY:
    c->body_got += n;
    if (c->body_got == (size_t)c->req.length)
      commit_put(c);
    break;
  case C_DRAIN:
    c->drain_left -= n;
    if (c->drain_left == 0) {
      c->state = C_HEADER;
      c->hdr_got = 0;
    }
    break;
  default:
    assert(!"read while not reading");
  }
}

static void start_reading(conn *c) {
  if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0)
    conn_close(c);
}

static void on_connection(uv_stream_t *l, int status) {
  sg_kv_server *s = l->data;
  if (status < 0 || s->closing)
    return;
  conn *c = sg_calloc(1, sizeof *c);
  c->s = s;
  uv_tcp_init(s->loop, &c->tcp);
  c->tcp.data = c;
  s->open_handles++;
  if (uv_accept(l, (uv_stream_t *)&c->tcp) < 0) {
    c->state = C_CLOSING;
    uv_close((uv_handle_t *)&c->tcp, conn_closed);
    return;
  }
  c->next = s->conns;
  if (s->conns)
    s->conns->prev = c;
  s->conns = c;
  s->st.connections++;
  s->st.connections_open++;
  struct sockaddr_storage ss;
  int len = sizeof ss;
  snprintf(c->peer, sizeof c->peer, "?");
  if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0) {
    char ip[48] = "?";
    int port = 0;
    if (ss.ss_family == AF_INET6) {
      uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof ip);
      port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    } else {
      uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof ip);
      port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    }
    snprintf(c->peer, sizeof c->peer, "%s:%d", ip, port);
  }
  size_t max = s->opts.max_connections ? s->opts.max_connections : 1024;
  if (s->st.connections_open > max) {
    logf_(s, "kvstore: client %s refused: %zu connections open", c->peer, max);
    conn_close(c);
    return;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  c->state = C_HEADER;
  start_reading(c);
}

int sg_kv_listen_parse(const char *spec, char *host, size_t host_size,
                       int *port, sg_err *err) {
  const char *colon = strrchr(spec, ':');
  if (!colon || colon == spec)
    return sg_err_set(err, SG_EINVAL, "listen \"%s\": expected HOST:PORT", spec);
  const char *h = spec;
  size_t hn = (size_t)(colon - spec);
  if (h[0] == '[' && hn >= 2 && h[hn - 1] == ']')
    h++, hn -= 2;
  char *end;
  long p = strtol(colon + 1, &end, 10);
  if (!colon[1] || *end || p < 0 || p > 65535)
    return sg_err_set(err, SG_EINVAL, "listen \"%s\": port is not 0..65535",
                      spec);
  if (hn == 0 || hn >= host_size)
    return sg_err_set(err, SG_EINVAL, "listen \"%s\": bad host", spec);
  memcpy(host, h, hn);
  host[hn] = 0;
  *port = (int)p;
  return 0;
}

static void listener_closed(uv_handle_t *h);

int sg_kv_server_start(uv_loop_t *loop, sg_kv_mem *mem,
                       const sg_kv_server_opts *opts, sg_kv_server **out,
                       sg_err *err) {
  char host[256];
  int port;
  int rc = sg_kv_listen_parse(opts->listen, host, sizeof host, &port, err);
  if (rc < 0)
    return rc;
  struct sockaddr_storage ss;
  if (uv_ip4_addr(host, port, (struct sockaddr_in *)&ss) != 0 &&
      uv_ip6_addr(host, port, (struct sockaddr_in6 *)&ss) != 0)
    return sg_err_set(err, SG_EINVAL, "listen \"%s\": host is not an IP "
                      "address", opts->listen);
  sg_kv_server *s = sg_calloc(1, sizeof *s);
  s->loop = loop;
  s->mem = mem;
  s->opts = *opts;
  uv_tcp_init(loop, &s->listener);
  s->listener.data = s;
  s->open_handles = 1;
  rc = uv_tcp_bind(&s->listener, (struct sockaddr *)&ss, 0);
  if (rc == 0)
    rc = uv_listen((uv_stream_t *)&s->listener, 128, on_connection);
  if (rc < 0) {
    sg_err_set(err, SG_EIO, "kvstore: cannot listen on %s: %s", opts->listen,
               uv_strerror(rc));
    /* Freed by the loop once the handle is closed (run it). */
    s->closing = true;
    uv_close((uv_handle_t *)&s->listener, listener_closed);
    return SG_EIO;
  }
  struct sockaddr_storage bound;
  int blen = sizeof bound;
  uv_tcp_getsockname(&s->listener, (struct sockaddr *)&bound, &blen);
  s->port = ntohs(bound.ss_family == AF_INET6
                      ? ((struct sockaddr_in6 *)&bound)->sin6_port
                      : ((struct sockaddr_in *)&bound)->sin_port);
  if (strchr(host, ':'))
    snprintf(s->url, sizeof s->url, "lm://[%s]:%d", host, s->port);
  else
    snprintf(s->url, sizeof s->url, "lm://%s:%d", host, s->port);
  *out = s;
  return 0;
}

int sg_kv_server_port(const sg_kv_server *s) { return s->port; }

const char *sg_kv_server_url(const sg_kv_server *s) { return s->url; }

void sg_kv_server_stats_get(const sg_kv_server *s, sg_kv_server_stats *st) {
  *st = s->st;
}

static void listener_closed(uv_handle_t *h) {
  sg_kv_server *s = h->data;
  s->open_handles--;
  maybe_free_server(s);
}

void sg_kv_server_close(sg_kv_server *s) {
  if (!s || s->closing)
    return;
  s->closing = true;
  while (s->conns)
    conn_close(s->conns);
  uv_close((uv_handle_t *)&s->listener, listener_closed);
}
