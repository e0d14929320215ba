/* sg_worker_proto.h: the messages of the worker protocol (docs/protocol.md),
 * parsed and serialized with jansson. Pure: no I/O, no clock.
 *
 * A worker (`specgen worker`) owns one device and speaks JSON lines: one
 * request object per line in, one reply object per line out. Both directions
 * are here, so the worker and its clients (the runtime, tests, later a Redis
 * bridge) share one definition. Messages carry nothing local to a host: sources
 * travel inline, and a task the client has as a path travels as its files.
 *
 * Parse errors name the field that is wrong ("field \"opts.trials\": ...").
 * Unknown top-level keys are ignored, so a newer client can add fields an
 * older worker does not need; unknown keys inside "opts" are errors, because
 * an option silently ignored would change what is measured.
 */
#ifndef SG_WORKER_PROTO_H
#define SG_WORKER_PROTO_H

#include "common/sg_error.h"
#include "eval/sg_eval.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The protocol version the hello reply carries; bumped on any change that an
 * older peer would misread. */
#define SG_WORKER_PROTOCOL 1

/* Caps on what a peer may send. */
#define SG_WORKER_ID_MAX 128                /* bytes of a request id */
#define SG_WORKER_TASK_MAX 4096             /* bytes of a task name or dir */
#define SG_WORKER_SOURCE_MAX (4u << 20)     /* bytes of a candidate source */
#define SG_WORKER_TASK_FILES_MAX (4u << 20) /* bytes of a task's files, together */
#define SG_WORKER_TASK_FILES_COUNT 64       /* files of a task */
#define SG_WORKER_LINE_MAX (16u << 20)      /* bytes of one line */

/* ---- requests (client -> worker) ---------------------------------------- */

typedef enum sg_worker_req_type {
  SG_WREQ_HELLO,
  SG_WREQ_VALIDATE,
  SG_WREQ_PROFILE,
  SG_WREQ_ABORT,
  SG_WREQ_PING,
  SG_WREQ_SHUTDOWN,
  SG_WREQ_COMPILE,   /* the CPU stage only: build into the build cache */
  SG_WREQ__COUNT
} sg_worker_req_type;

/* "validate", ...; and back (-1 for an unknown name). */
const char *sg_worker_req_type_name(sg_worker_req_type t);
int sg_worker_req_type_parse(const char *name);

typedef struct sg_worker_request {
  sg_worker_req_type type;
  char *id;            /* owned; required for validate, profile, compile,
                          abort;
                          optional (NULL) for ping and hello */
  char *task;          /* validate, profile, compile: a task name or
                          directory; owned */
  json_t *task_files;  /* validate, profile, compile: optional (NULL), the
                          task's own files, {"name": "content"} (flat names:
                          letters, digits, '.', '_', '-'), so that a task the
                          client has as a directory or file reaches a worker
                          on another host; the worker then loads the task
                          from them, not from `task`'s path; owned */
  char *source;        /* validate, profile, compile: the candidate; owned */
  size_t source_len;
  /* opts: 0 means "not given" (the evaluator's default applies) */
  unsigned long long seed;  /* 1 .. 2^63-1 */
  int trials;               /* 3 .. 1000 */
  int runs;                 /* 1 .. 100000 */
  int warmups;              /* 0 .. 100000; -1: not given */
  double eval_timeout;      /* (0, 86400] */
} sg_worker_request;

/* Whether name may name one of a task's files in "task_files": 1 to 255
 * letters, digits, '.', '_' or '-', and neither "." nor "..". */
bool sg_worker_task_file_name_ok(const char *name);

/* An empty request (type hello, nothing given). */
void sg_worker_request_init(sg_worker_request *req);
void sg_worker_request_free(sg_worker_request *req);

/* Parses one line (without its newline). Returns 0, or SG_EPARSE / SG_EINVAL
 * with a message naming the field. Even on failure req->id is filled when the
 * line had a usable id, so the error reply can name the request; the caller
 * frees req in every case. */
int sg_worker_request_parse(const char *line, size_t len,
                            sg_worker_request *req, sg_err *err);

/* The request as a JSON object (a client's side); options not given are
 * left out. */
json_t *sg_worker_request_to_json(const sg_worker_request *req);

/* Applies the options given in req over opts (which holds the defaults). */
void sg_worker_request_apply(const sg_worker_request *req, sg_eval_opts *opts);

/* ---- replies (worker -> client) ----------------------------------------- */

typedef enum sg_worker_reply_type {
  SG_WREP_HELLO,
  SG_WREP_STARTED,
  SG_WREP_COMPILED,
  SG_WREP_RESULT,
  SG_WREP_PONG,
  SG_WREP_ERROR,
  SG_WREP_BYE,
  SG_WREP__COUNT
} sg_worker_reply_type;

const char *sg_worker_reply_type_name(sg_worker_reply_type t);
int sg_worker_reply_type_parse(const char *name);

#define SG_WORKER_EVALUATORS_MAX 8

typedef struct sg_worker_reply {
  sg_worker_reply_type type;
  char *id;                 /* owned; NULL where the message has none */
  /* hello */
  int protocol;
  char *version;            /* owned */
  char *device;             /* owned */
  char *evaluators[SG_WORKER_EVALUATORS_MAX]; /* owned */
  size_t nevaluators;
  long long pid;
  /* compiled */
  double compile_s;
  sg_eval_status compile_status; /* ok, compile_error or rejected */
  bool cached;              /* the build came from the build cache: nothing
                               was compiled; compile_s is the stored build's
                               (sent only when true) */
  /* result */
  sg_eval_result result;
  /* error: line is the request line it answers (1-based; 0: none) */
  long long line;
  char *message;            /* owned */
  bool fatal;               /* the worker exits after this error */
} sg_worker_reply;

void sg_worker_reply_init(sg_worker_reply *r, sg_worker_reply_type type);
void sg_worker_reply_free(sg_worker_reply *r);

/* The reply as a JSON object. */
json_t *sg_worker_reply_to_json(const sg_worker_reply *r);

/* Parses one reply line (a client's side); errors name the field. The
 * caller frees rep in every case. */
int sg_worker_reply_parse(const char *line, size_t len, sg_worker_reply *rep,
                          sg_err *err);

/* ---- framing -------------------------------------------------------------- */

/* Lines of the protocol: sg_jsonl_line (pool/sg_jsonl.h). */

#endif
