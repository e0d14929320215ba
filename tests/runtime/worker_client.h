/* worker_client.h: a client of `specgen worker` on real pipes, for the
 * worker tests of this folder (header only): start a worker, send lines,
 * read and check replies, wait for its end, and check that nothing it
 * started outlives it.
 */
#ifndef SG_TESTS_RUNTIME_WORKER_CLIENT_H
#define SG_TESTS_RUNTIME_WORKER_CLIENT_H

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "pool/sg_jsonl.h"
#include "pool/sg_worker_proto.h"
#include "sg_test.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Bounds on waiting, not assertions about speed: a loaded machine under
 * sanitizers must pass with a wide margin. */
#define RECV_LIMIT_S 150.0

typedef struct wproc {
  pid_t pid;
  int in;     /* the worker's stdin */
  int out;    /* the worker's stdout */
  int err;    /* its stderr, when captured; else -1 */
  sg_buf buf; /* bytes read, not yet a line */
  bool eof;
} wproc;

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline void w_start_args(wproc *w, char *const extra[], bool capture_err) {
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  signal(SIGPIPE, SIG_IGN);
  int in[2], out[2], er[2] = {-1, -1};
  SG_CHECK(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0);
  if (capture_err)
    SG_CHECK(pipe2(er, O_CLOEXEC) == 0);
  char *argv[16] = {SG_TEST_SPECGEN, "worker"};
  int n = 2;
  for (int i = 0; extra[i] && n < 15; i++)
    argv[n++] = extra[i];
  argv[n] = NULL;
  fflush(stdout);
  pid_t pid = fork();
  SG_CHECK(pid >= 0);
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    if (capture_err)
      dup2(er[1], 2);
    execv(argv[0], argv);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  if (capture_err)
    close(er[1]);
  memset(w, 0, sizeof *w);
  w->pid = pid;
  w->in = in[1];
  w->out = out[0];
  w->err = er[0];
  sg_buf_init(&w->buf, 0);
}

static inline void w_send(wproc *w, const char *line) {
  size_t len = strlen(line), off = 0;
  while (off < len) {
    ssize_t k = write(w->in, line + off, len - off);
    if (k < 0 && errno == EINTR)
      continue;
    SG_CHECK_MSG(k > 0, "writing to the worker: %s", strerror(errno));
    off += (size_t)k;
  }
}

static inline void w_send_json(wproc *w, json_t *j) {
  char *line = sg_jsonl_line(j, NULL);
  json_decref(j);
  w_send(w, line);
  free(line);
}

/* The next line, or NULL at the end of the worker's output. */
static inline char *w_recv_line(wproc *w) {
  double deadline = now_s() + RECV_LIMIT_S;
  for (;;) {
    char *nl = w->buf.len ? memchr(w->buf.data, '\n', w->buf.len) : NULL;
    if (nl) {
      size_t n = (size_t)(nl - w->buf.data);
      char *line = sg_strndup(w->buf.data, n);
      sg_buf_consume(&w->buf, n + 1);
      return line;
    }
    if (w->eof) {
      SG_CHECK_MSG(w->buf.len == 0, "output ended inside a line: %s", w->buf.data);
      return NULL;
    }
    double left = deadline - now_s();
    SG_CHECK_MSG(left > 0, "no reply from the worker within %.0f s", RECV_LIMIT_S);
    struct pollfd p = {.fd = w->out, .events = POLLIN};
    int rc = poll(&p, 1, (int)(left * 1000) + 1);
    if (rc < 0 && errno == EINTR)
      continue;
    SG_CHECK(rc >= 0);
    if (rc == 0)
      continue;
    char chunk[65536];
    ssize_t k = read(w->out, chunk, sizeof chunk);
    if (k < 0 && errno == EINTR)
      continue;
    SG_CHECK(k >= 0);
    if (k == 0)
      w->eof = true;
    else
      sg_buf_append(&w->buf, chunk, (size_t)k);
  }
}

/* The next reply, checked against the protocol's own parser and returned
 * as JSON for the test to look into; NULL at the end of the output. */
static inline json_t *w_recv(wproc *w) {
  char *line = w_recv_line(w);
  if (!line)
    return NULL;
  sg_worker_reply r;
  sg_err err;
  int rc = sg_worker_reply_parse(line, strlen(line), &r, &err);
  SG_CHECK_MSG(rc == 0, "reply does not parse (%s): %s", err.msg, line);
  sg_worker_reply_free(&r);
  json_error_t je;
  json_t *j = json_loads(line, 0, &je);
  SG_CHECK(j != NULL);
  free(line);
  return j;
}

static inline const char *str(const json_t *j, const char *key) {
  return json_string_value(json_object_get(j, key));
}

/* The next reply, which must be of this type (and for this id, if given). */
static inline json_t *w_expect(wproc *w, const char *type, const char *id) {
  json_t *j = w_recv(w);
  SG_CHECK_MSG(j != NULL, "the worker's output ended; expected %s", type);
  char *s = json_dumps(j, JSON_COMPACT);
  SG_CHECK_MSG(str(j, "type") && strcmp(str(j, "type"), type) == 0,
               "expected a %s reply, got %s", type, s);
  if (id)
    SG_CHECK_MSG(str(j, "id") && strcmp(str(j, "id"), id) == 0,
                 "expected id %s, got %s", id, s);
  free(s);
  return j;
}

static inline void w_expect_free(wproc *w, const char *type, const char *id) {
  json_decref(w_expect(w, type, id));
}

/* The result's status of a final reply. */
static inline const char *result_status(const json_t *j) {
  return str(json_object_get(j, "result"), "status");
}

static inline int w_wait(wproc *w) {
  int st = 0;
  double deadline = now_s() + 60;
  for (;;) {
    pid_t p = waitpid(w->pid, &st, WNOHANG);
    if (p == w->pid)
      break;
    SG_CHECK_MSG(now_s() < deadline, "the worker did not exit");
    usleep(20000);
  }
  close(w->in);
  close(w->out);
  if (w->err >= 0)
    close(w->err);
  sg_buf_free(&w->buf);
  return st;
}

/* Every process the worker started has ended (they were handed to this
 * test, the subreaper, if they outlived their parents). */
static inline void no_descendants_left(void) {
  double deadline = now_s() + 60;
  for (;;) {
    pid_t p = waitpid(-1, NULL, WNOHANG);
    if (p < 0 && errno == ECHILD)
      return;
    SG_CHECK_MSG(now_s() < deadline, "a process the worker started still runs");
    if (p == 0)
      usleep(20000);
  }
}

/* True when dir holds nothing. */
static inline bool dir_empty(const char *dir) {
  char *cmd = sg_asprintf("test -z \"$(ls -A '%s')\"", dir);
  int rc = system(cmd);
  free(cmd);
  return rc == 0;
}

static inline void shutdown_ok(wproc *w) {
  w_send(w, "{\"type\":\"shutdown\"}\n");
  w_expect_free(w, "bye", NULL);
  int st = w_wait(w);
  SG_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

#endif
