/* sg_replay.h: the record of a run's model sessions and its replay.
 *
 * `specgen run` writes every generation it asked a model for, once it ends,
 * as one JSON line of RUN_DIR/llm.jsonl.gz (SG_REPLAY_FILE; gzip, one
 * member per line, so a killed or resumed run leaves a readable file): the
 * request (task, iteration, main or fork, the fork's parent and reasoning
 * prefix, system and user messages, limits), every streamed chunk with its
 * arrival time from the request's start, the usage, the finish reason, and
 * whether it completed, failed or was cancelled. Never a header or a key.
 *
 * The test server (`specgen llm serve --replay DIR`, `specgen run --replay
 * DIR`) loads such a file and answers each request with a recorded
 * generation, chosen by sg_replay_match's rule (docs/test-server.md,
 * "Replaying a recorded run"): it never writes text of its own.
 */
#ifndef SG_REPLAY_H
#define SG_REPLAY_H

#include "common/sg_error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SG_REPLAY_FILE "llm.jsonl.gz"
/* Caps on what one recorded generation keeps, and on a record loaded. */
#define SG_REPLAY_MAX_CHUNKS (1u << 20)
#define SG_REPLAY_MAX_GENS 100000
#define SG_REPLAY_MAX_LINE_BYTES (64u << 20)
/* A fork before every recorded fork of its main takes the first of them if
 * that one started at most this many reasoning bytes later. */
#define SG_REPLAY_FORK_SLACK_BYTES 256u

/* ---- writing ------------------------------------------------------------ */

typedef struct sg_replay_log sg_replay_log;

/* Opens DIR/llm.jsonl.gz for appending (a resumed run adds to it). */
int sg_replay_log_open(const char *dir, sg_replay_log **out, sg_err *err);
/* Appends one generation (an object in the format above) and flushes it. */
int sg_replay_log_write(sg_replay_log *l, const json_t *gen, sg_err *err);
/* Bytes written so far (compressed, this process's share). */
uint64_t sg_replay_log_bytes(const sg_replay_log *l);
void sg_replay_log_close(sg_replay_log *l);

/* ---- reading and matching ------------------------------------------------ */

typedef struct sg_replay_chunk {
  int64_t at_us;  /* arrival, from the request's start */
  bool reasoning; /* reasoning, else content */
  uint32_t off, len; /* bytes in the generation's text */
} sg_replay_chunk;

typedef struct sg_replay_gen {
  char *task;
  int iteration;       /* from 1 */
  uint64_t gen;        /* the controller's id, per task */
  bool fork;           /* kind spec: a fork, or an answer at the cap */
  bool answer_at_cap;  /* the answer at the length cap of its main (budget
                          forcing): matched as a fork from all its main's
                          reasoning */
  uint64_t parent_gen; /* a fork's main */
  size_t prefix_bytes; /* a fork's reasoning prefix */
  char *system, *user;
  char *text;          /* the chunks' bytes, in order */
  size_t reasoning_bytes;
  sg_replay_chunk *chunks;
  size_t nchunks;
  bool has_usage;
  int64_t prompt_tokens, completion_tokens, cached_tokens;
  char *finish;        /* "stop", "length", ...; NULL when it did not finish */
  char *outcome;       /* "completed", "failed", "cancelled" */
  char *error;         /* a failed one's message, else NULL */
  int64_t started_us;  /* its request's start, from the run's (-1: unknown) */
  int64_t ended_us;    /* its end, from its request's start (-1: unknown) */
  int64_t token_ids;   /* a token fork: the prompt token ids it sent on
                          /completions (0: a chat request) */
  unsigned served;     /* times a main was served (matching state) */
} sg_replay_gen;

typedef struct sg_replay sg_replay;

/* Loads PATH: a record file, or a run directory holding one. Errors name
 * the file and the line. */
int sg_replay_load(const char *path, sg_replay **out, sg_err *err);
void sg_replay_free(sg_replay *rp);
size_t sg_replay_count(const sg_replay *rp);
const sg_replay_gen *sg_replay_get(const sg_replay *rp, size_t i);

/* A stop the recorded run was resumed from (`specgen run --resume DIR`
 * appends the resumed process's generations to the same record), on the
 * record's clock (from the run's start). */
typedef struct sg_replay_resume {
  int64_t stop_us;   /* just past the latest end the process before recorded
                        (its cancellations at the stop) */
  int64_t resume_us; /* the start of the first main the resumed process sent */
} sg_replay_resume;

/* The record's stops and resumes, in order; *out owned (NULL: none). A
 * main begins a new process when its id is not above one its task already
 * had in the current process (a resumed run's controllers number their
 * generations from 1 again), unless the earlier try with that id, of the
 * same iteration, failed (the same main sent again after the server cut
 * it). */
size_t sg_replay_resumes(const sg_replay *rp, sg_replay_resume **out);

/* Reasoning traces from a JSON-lines file (gzip or plain): the "reasoning"
 * field of each line, in order, at most SG_REPLAY_MAX_GENS of them (lines
 * without one are skipped). *out is an array of *n owned strings; free
 * with sg_replay_traces_free. None at all is SG_ENOENT. */
int sg_replay_traces_load(const char *path, char ***out, size_t *n, sg_err *err);
void sg_replay_traces_free(char **traces, size_t n);

/* What a request asks, as the server reads it. */
typedef struct sg_replay_query {
  const char *system, *user; /* the request's messages ("" when absent) */
  bool fork;                 /* continues a reasoning prefix, thinking off */
  const char *prefix;        /* a fork's reasoning prefix */
  size_t prefix_len;
} sg_replay_query;

/* The recorded generation that answers q, by the documented rule; on no
 * match, SG_ENOENT with the reason in err. Not thread-safe (it counts the
 * mains served): the server calls it under its lock. */
int sg_replay_match(sg_replay *rp, const sg_replay_query *q, const sg_replay_gen **out,
                    sg_err *err);
/* The second half of that rule, for a fork of the recorded main m (a
 * caller that knows which recorded main its fork continues): the recorded
 * fork of m at prefix_len, else the nearest short of it, else the first
 * within SG_REPLAY_FORK_SLACK_BYTES after it; SG_ENOENT otherwise. Only
 * forks begun while m was live count: another try of the same main (sent
 * again after a cut or a resume) has its own. */
int sg_replay_match_fork(const sg_replay *rp, const sg_replay_gen *m, size_t prefix_len,
                         const sg_replay_gen **out, sg_err *err);

#endif
