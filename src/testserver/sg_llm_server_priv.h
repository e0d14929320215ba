/* sg_llm_server_priv.h: what the test server's files share (sg_llm_server.c:
 * requests, the generation loop, handlers, lifecycle; sg_server_events.c:
 * the JSON of streamed events and bodies). Not a public header: only
 * src/testserver/sg_*.c include it. */
#ifndef SG_LLM_SERVER_PRIV_H
#define SG_LLM_SERVER_PRIV_H

#include "testserver/sg_llm_server.h"

#include "common/sg_buf.h"
#include "testserver/sg_fakemodel.h"
#include "store/sg_replay.h"
#include "testserver/sg_server_request.h"

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define BODY_MAX_BYTES (8u << 20)
#define CACHE_PROMPTS 64
#define ATTEMPT_SLOTS 1024
#define NAP_US 5000
/* A fixed "created" time keeps answers byte-for-byte reproducible. */
#define CREATED_S 1767225600

typedef struct attempt {
  uint64_t key;
  int count;
} attempt;

typedef struct gen gen;

struct sg_llm_server {
  struct MHD_Daemon *daemon;
  int port;
  sg_fakemodel *model;
  char *model_name;
  char *reasoning_field;
  double tokens_per_s;
  double prefill_tokens_per_s;
  int concurrency;
  sg_llm_fault fault;
  sg_replay *replay;     /* replay mode: the recording served; NULL: the model */
  double replay_speed;   /* recorded pace divided by this; 0: no pacing */
  double replay_hold_s;  /* a cut recording: wait this long for a cancel */
  char **traces;         /* reasoning traces for main generations; NULL: the
                            model's own */
  size_t ntraces, next_trace; /* next_trace under mu */
  atomic_bool stopping;

  pthread_mutex_t mu; /* guards everything below */
  sg_fm_cache *cache;
  gen *active;
  attempt attempts[ATTEMPT_SLOTS];
  size_t attempts_next;

  atomic_uint_fast64_t requests_total, generations_started, generations_completed,
      generations_cancelled, generations_aborted, generations_active, abort_requests,
      faults_injected, tokens_generated, prompt_tokens, cached_tokens,
      fault_streams; /* requests a fault with `streams` was given to */
};

enum { TOK_REASONING, TOK_CONTENT };

typedef struct token {
  uint32_t off, len; /* bytes in gen->text */
  int32_t id;
  uint8_t kind;
} token;

typedef enum gen_state { GS_PREFILL, GS_TOKENS, GS_FINISH, GS_DONE } gen_state;

struct gen {
  sg_llm_server *s;
  int fd;
  bool chat, stream, include_usage, return_token_ids;
  char *id;
  char *model;
  char *rid;  /* the body's "rid" */
  char *xrid; /* the X-Request-Id header */
  char *text; /* reasoning then content (chat); the completion text */
  token *toks;
  size_t ntoks;      /* tokens to emit (after max_tokens) */
  size_t nreasoning; /* of which reasoning */
  bool hit_length;
  int64_t *due_us;        /* replay: chunk i's time from the first; NULL:
                             paced by tokens_per_s */
  char *cut_msg;          /* replay: the recording ended unfinished: the
                             error sent after its last chunk */
  int64_t rec_completion; /* replay: recorded completion tokens (0: count) */
  int32_t *prompt_ids;
  size_t nprompt, cached;
  uint64_t cache_handle; /* its prompt in the prefix cache */
  sg_llm_fault fault;
  /* progress, touched by the connection's thread only */
  gen_state state;
  size_t next;
  int chunks;
  int64_t t_first_us;
  int64_t t_last_us;      /* with concurrency: the last token's due time */
  sg_buf out;
  size_t out_off;
  bool finished, fault_closed;
  bool active; /* on the live list; touched by the connection's thread only */
  const char *finish_reason;
  atomic_bool abort_flag;
  gen *next_active;
};

typedef struct req {
  sg_buf body;
  bool too_large;
  gen *g;
} req;

json_t *sg_server_error_json(unsigned status, const char *param, const char *msg);
json_t *sg_server_ids_json(const int32_t *ids, size_t n);
void sg_server_put_body(gen *g);
void sg_server_put_error_event(gen *g, const char *msg);
/* Replay mode: fills g's text, tokens and pacing from the recorded
 * generation that answers body (sg_replay_match's rule), and the response's
 * task and example headers; SG_ENOENT with the reason when none does. */
int sg_server_replay_answer(sg_llm_server *s, json_t *body, long max_tokens, gen *g,
                            char *hdr_task, size_t task_size, char *hdr_ex, size_t ex_size,
                            sg_err *err);
void sg_server_put_finish_events(gen *g);
void sg_server_put_token_event(gen *g, size_t i);

#endif
