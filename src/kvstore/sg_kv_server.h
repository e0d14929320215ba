/* sg_kv_server.h: LMCache's remote server on a libuv loop (lm://host:port).
 *
 * Each connection is a small state machine over the protocol of
 * sg_kv_proto.h: read a 186-byte header, then for a PUT its body (straight
 * into the connection's staging buffer, pinned host memory on a GPU), then
 * store it (sg_kv_mem_put: the copy to the device); a GET copies the block
 * into the staging buffer and sends the 36-byte reply and the bytes in one
 * write, and reading pauses until that write is done, so one connection is
 * served in order, as LMCache's own server does. The read buffer offered to
 * libuv is always exactly what the current message still lacks, so no byte
 * of the next request is ever consumed early.
 *
 * What LMCache's server does, this does (docs/kvstore.md lists each case):
 * PUT has no reply; a header LMCache could not decode closes the connection;
 * a client that disconnects mid-PUT leaves nothing stored. Where LMCache has
 * no answer the store adds one only for LIST (keys joined by "\n").
 * A PUT the store cannot hold (larger than the largest block, or no room) is
 * read and dropped: the protocol has no way to say so, a later GET misses.
 *
 * Single-threaded: every call and callback on the loop's thread.
 */
#ifndef SG_KV_SERVER_H
#define SG_KV_SERVER_H

#include "common/sg_error.h"
#include "kvstore/sg_kv_mem.h"

#include <stdint.h>
#include <uv.h>

typedef struct sg_kv_server sg_kv_server;

typedef struct sg_kv_server_stats {
  uint64_t connections, connections_open;
  uint64_t protocol_errors;  /* headers refused: connection closed */
  uint64_t puts_aborted;     /* client gone mid-PUT: nothing stored */
  uint64_t puts_dropped;     /* read, not stored (too large, no room) */
  uint64_t lists, healths;
  uint64_t bytes_in, bytes_out;
  /* Time to handle a request once its bytes arrived (the store's own
   * part, copies included), summed and counted, for the mean. */
  double put_s, get_s;
  uint64_t put_n, get_n;
} sg_kv_server_stats;

typedef struct sg_kv_server_opts {
  const char *listen;      /* "HOST:PORT"; port 0 picks a free one */
  size_t max_connections;  /* 0: 1024 */
  /* Staging buffers come from this backend's host_alloc (pinned memory on a
   * GPU), or malloc when NULL. */
  const sg_kv_backend *staging;
  /* One line per event worth a log (a refused header, a client gone
   * mid-PUT, a dropped PUT, a device error). NULL: stderr. */
  void (*log)(void *data, const char *line);
  void *log_data;
} sg_kv_server_opts;

/* Binds and listens. SG_EINVAL for a bad address, SG_EIO when it cannot
 * bind (naming the address and the reason). mem is borrowed. */
int sg_kv_server_start(uv_loop_t *loop, sg_kv_mem *mem,
                       const sg_kv_server_opts *opts, sg_kv_server **out,
                       sg_err *err);

/* The port bound, and "lm://HOST:PORT" (for LMCache's remote_url). */
int sg_kv_server_port(const sg_kv_server *s);
const char *sg_kv_server_url(const sg_kv_server *s);

void sg_kv_server_stats_get(const sg_kv_server *s, sg_kv_server_stats *st);

/* Stops listening and closes every connection; the server is freed by the
 * loop (run it until it returns). NULL is fine. */
void sg_kv_server_close(sg_kv_server *s);

/* Splits "HOST:PORT" ("[::1]:80" too). SG_EINVAL naming the problem. */
int sg_kv_listen_parse(const char *spec, char *host, size_t host_size,
                       int *port, sg_err *err);

#endif
