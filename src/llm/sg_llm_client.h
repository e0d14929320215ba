/* sg_llm_client.h: streaming client for OpenAI-compatible servers.
 *
 * Many concurrent streamed generations in one thread: libcurl's multi
 * interface driven by a libuv loop (curl_multi_socket_action with a socket
 * callback on uv_poll handles and a timer callback on a uv_timer). Each
 * stream is one sg_llm_request (sg_llm_provider.h); its events arrive through
 * callbacks as the bytes do: reasoning and content deltas, token ids, usage,
 * and exactly one terminal call, on_finish (the server said the generation
 * ended) or on_error (it failed), after which the stream is freed.
 *
 * Policy (docs/llm.md):
 *   - Retries with exponential backoff and full jitter on connection errors,
 *     HTTP 429 (Retry-After honoured) and 5xx, never once output has started
 *     (a reasoning or content delta was delivered), never past the deadline.
 *   - An absolute deadline per request, counted from sg_llm_stream_start,
 *     retries included; an idle timeout between events. SSE comments
 *     (`: keep-alive`) reset neither: a comment proves the connection lives,
 *     not that the generation progresses.
 *   - sg_llm_stream_cancel stops a stream at any moment with no further
 *     callback: its connection is closed (vLLM aborts a request whose client
 *     went away) and, for SGLang, POST /abort_request {"rid"} is sent too.
 *   - The API key is read from an environment variable (OPENAI_API_KEY unless
 *     configured) and sent as a bearer token; it is never logged, printed or
 *     put in an error message.
 *
 * When a stream is cut before its usage chunk, completion tokens are counted
 * client-side: the number of completion token ids received if the server sent
 * them, else the number of chunks that carried reasoning or content (vLLM
 * and SGLang send one token per chunk when streaming); result.usage_estimated
 * says so.
 *
 * Threading: everything happens on the loop's thread; no call is thread-safe.
 */
#ifndef SG_LLM_CLIENT_H
#define SG_LLM_CLIENT_H

#include "common/sg_error.h"
#include "llm/sg_llm_chunk.h"
#include "llm/sg_llm_provider.h"

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

typedef struct sg_llm_client sg_llm_client;
typedef struct sg_llm_stream sg_llm_stream;

typedef struct sg_llm_client_opts {
  const char *api_key_env; /* NULL: "OPENAI_API_KEY"; "": send no key */
  uint64_t seed;           /* backoff jitter; 0: from the clock */
  size_t max_event_bytes;  /* SSE caps; 0: the defaults */
  size_t max_line_bytes;
} sg_llm_client_opts;

/* What a finished or failed stream leaves behind. */
typedef struct sg_llm_result {
  int code;                   /* 0, or the SG_E* code of the failure */
  const char *message;        /* "" on success, else what went wrong */
  long http_status;           /* of the last attempt; 0 if none answered */
  const char *finish_reason;  /* "stop", "length", "abort", ...; "" if none */
  sg_llm_usage usage;         /* from the server, or estimated (below) */
  bool usage_estimated;       /* completion_tokens counted client-side */
  int attempts;               /* HTTP requests made (1 + retries) */
  bool output_started;        /* a reasoning or content delta was delivered */
  const char *reasoning_field;/* where reasoning came ("" if none came) */
  uint64_t reasoning_chunks;  /* chunks carrying reasoning */
  uint64_t content_chunks;    /* chunks carrying content */
  uint64_t keepalive_comments;/* SSE comments received */
  double ttft_s;              /* start to the first delta; -1 if none */
  double elapsed_s;           /* start to the end */
} sg_llm_result;

typedef struct sg_llm_callbacks {
  void *data;
  void (*on_reasoning)(sg_llm_stream *s, void *data, const char *text, size_t len);
  void (*on_content)(sg_llm_stream *s, void *data, const char *text, size_t len);
  /* prompt: true for the prompt's ids (once), false for completion ids. */
  void (*on_token_ids)(sg_llm_stream *s, void *data, bool prompt,
                       const int32_t *ids, size_t n);
  void (*on_usage)(sg_llm_stream *s, void *data, const sg_llm_usage *u);
  /* Terminal: exactly one of these is called, once; s is freed after it
   * returns. The result and its strings live until then. */
  void (*on_finish)(sg_llm_stream *s, void *data, const sg_llm_result *r);
  void (*on_error)(sg_llm_stream *s, void *data, const sg_llm_result *r);
} sg_llm_callbacks;

void sg_llm_client_opts_init(sg_llm_client_opts *o);

/* A client on loop (borrowed; it must outlive the client). */
int sg_llm_client_new(uv_loop_t *loop, const sg_llm_client_opts *opts,
                      sg_llm_client **out, sg_err *err);
/* Cancels every stream (no callbacks), closes the handles; the memory is
 * released by the loop, so run the loop (uv_run) afterwards until it returns.
 * Not from inside one of the client's callbacks. NULL is fine. */
void sg_llm_client_destroy(sg_llm_client *c);
/* Streams running or waiting to retry. */
size_t sg_llm_client_active(const sg_llm_client *c);
/* Abort calls (SGLang) sent and still in flight. */
size_t sg_llm_client_aborts_in_flight(const sg_llm_client *c);

/* Starts a stream. r and everything it points to are copied: the caller may
 * free them when this returns. Errors (a request the profile cannot express,
 * a malformed request) are returned here and no callback is ever called. */
int sg_llm_stream_start(sg_llm_client *c, const sg_llm_request *r,
                        const sg_llm_callbacks *cb, sg_llm_stream **out,
                        sg_err *err);
/* Stops s now; no callback for s follows, even from inside one of its own
 * delta callbacks (not from its terminal callback, after which s is gone). */
void sg_llm_stream_cancel(sg_llm_stream *s);
/* The request id of s (the one given, or one the client made up). */
const char *sg_llm_stream_request_id(const sg_llm_stream *s);
/* Monotonic time (us) at which the socket read that produced the event being
 * delivered now became ready: for measuring the delay from a byte's arrival to
 * its consumer (bench_llm). */
int64_t sg_llm_stream_io_us(const sg_llm_stream *s);

#endif
