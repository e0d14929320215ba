/* sg_llm_server.h: the built-in test LLM server (`specgen llm serve`).
 *
 * An OpenAI-compatible HTTP server on loopback that plays a reasoning model
 * writing kernels (the model itself is sg_fakemodel). It serves
 *   POST /v1/chat/completions, POST /v1/completions (streaming SSE or not),
 *   GET  /v1/models, POST /abort_request (SGLang style, {"rid": ...}),
 *   GET  /health
 * on libmicrohttpd's own threads (one per connection), so a test can run it
 * in-process next to the client it tests. Faults (a disconnect, 429/500,
 * a stall, a malformed chunk, a slow first byte, an error chunk) are injected
 * for every request (opts.fault) or per request (header X-Specgen-Fault).
 * docs/test-server.md describes the protocol, the faults and the model.
 *
 * It binds 127.0.0.1 unless told otherwise, and it never reads anything but
 * its task directory.
 */
#ifndef SG_LLM_SERVER_H
#define SG_LLM_SERVER_H

#include "common/sg_error.h"
#include "llm/sg_llm_fault.h"
#include "testserver/sg_fakemodel.h"

#include <stdint.h>

typedef struct sg_llm_server sg_llm_server;

typedef struct sg_llm_server_opts {
  const char *host;            /* NULL: "127.0.0.1" */
  int port;                    /* 0: any free port */
  const char *tasks_root;      /* NULL: the built-in tasks; "" : no tasks */
  uint64_t seed;               /* the model's seed */
  double tokens_per_s;         /* decode rate; 0: as fast as possible */
  double prefill_tokens_per_s; /* uncached prompt tokens per second before the
                                  first token; 0: no prefill delay */
  int concurrency;             /* streams served at the full rates; with n
                                  > C streams live (prefilling or decoding)
                                  each goes at rate x C / n, so forks slow
                                  the other streams as on a one-core server
                                  (C = 1); 0: no contention */
  const char *reasoning_field; /* "reasoning" or "reasoning_content" (NULL:
                                  "reasoning_content") */
  const char *model_name;      /* listed by /v1/models; NULL: "specgen-test" */
  sg_llm_fault fault;          /* applied to every request (kind NONE: none) */
  int reasoning_tokens_min;    /* length range of a reasoning trace, in
                                  tokens; 0, 0: the defaults (600, 1800) */
  int reasoning_tokens_max;
  const sg_fm_params *model;   /* the model's parameters; NULL: the defaults
                                  (sg_fm_params_init), then the lengths above */
  const char *replay;          /* a recorded run (its directory or its
                                  llm.jsonl.gz): every request is answered
                                  from it (docs/test-server.md), never by the
                                  model; NULL: the model */
  double replay_speed;         /* the recorded pace times this; 0: as fast
                                  as possible */
  double replay_hold_s;        /* a recording cut while recorded: how long
                                  its end waits for the client to cancel
                                  before the error event */
  const char *trace;           /* a JSON-lines file (gzip or plain) of
                                  reasoning traces: each main generation
                                  (thinking on, not a continuation) reasons
                                  with the next one, in turn, instead of the
                                  model's own; NULL: none */
} sg_llm_server_opts;

/* Fills opts with the defaults (loopback, any port, seed 1, no pacing). */
void sg_llm_server_opts_init(sg_llm_server_opts *opts);

/* Loads the tasks, binds and starts serving on libmicrohttpd's threads.
 * On success *out is a running server to stop with sg_llm_server_stop. */
int sg_llm_server_start(const sg_llm_server_opts *opts, sg_llm_server **out,
                        sg_err *err);
/* The port it listens on (useful with opts.port = 0). */
int sg_llm_server_port(const sg_llm_server *s);
/* Stops serving: running generations end (their connections close), the
 * threads are joined and s is freed. NULL is fine. */
void sg_llm_server_stop(sg_llm_server *s);
/* Number of tasks the model knows. */
int sg_llm_server_ntasks(const sg_llm_server *s);

/* Counters a test can read while the server runs. */
typedef struct sg_llm_server_stats {
  uint64_t requests_total;        /* every HTTP request answered or begun */
  uint64_t generations_started;   /* completion requests that began generating */
  uint64_t generations_completed; /* ... that sent their whole answer (not
                                     counting aborted ones) */
  uint64_t generations_cancelled; /* ... that stopped because the client went
                                     away before the end */
  uint64_t generations_aborted;   /* ... stopped by /abort_request */
  uint64_t generations_active;    /* generating now */
  uint64_t abort_requests;        /* POST /abort_request received */
  uint64_t faults_injected;       /* requests a fault was applied to */
  uint64_t tokens_generated;      /* completion tokens sent (reasoning too) */
  uint64_t prompt_tokens;         /* prompt tokens received */
  uint64_t cached_tokens;         /* of which served from the prefix cache */
} sg_llm_server_stats;

void sg_llm_server_stats_get(const sg_llm_server *s, sg_llm_server_stats *out);

#endif
