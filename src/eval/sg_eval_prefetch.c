/* sg_eval_prefetch.c: compile stages in child processes (see the header).
 * The child's answer is one JSON object on a pipe:
 *   {"rc", "error", "result", "work_dir", "artifact", "reference_artifact",
 *    "owns_work_dir"} */
#include "eval/sg_eval_prefetch.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static json_t *str_or_null(const char *s) { return s ? json_string(s) : json_null(); }

int sg_eval_compile_start(const sg_task *task, const char *source, size_t len,
                          const sg_eval_opts *opts, sg_eval_pending *p,
                          sg_err *err) {
  int fds[2];
  p->pid = -1;
  p->fd = -1;
  if (pipe(fds))
    return sg_err_set(err, SG_EIO, "pipe: %s", strerror(errno));
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return sg_err_set(err, SG_EIO, "fork: %s", strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    sg_eval_build b;
    sg_eval_result r;
    sg_eval_result_init(&r);
    sg_err e;
    sg_err_clear(&e);
    int rc = sg_eval_compile(task, source, len, opts, &b, &r, &e);
    json_t *j = json_object();
    json_object_set_new(j, "rc", json_integer(rc));
    json_object_set_new(j, "error", json_string(e.msg));
    json_object_set_new(j, "result", sg_eval_result_to_json(&r));
    if (!rc) {
      json_object_set_new(j, "work_dir", str_or_null(b.work_dir));
      json_object_set_new(j, "artifact", str_or_null(b.artifact));
      json_object_set_new(j, "reference_artifact", str_or_null(b.reference_artifact));
      json_object_set_new(j, "owns_work_dir", json_boolean(b.owns_work_dir));
    }
    char *text = json_dumps(j, JSON_COMPACT);
    size_t n = strlen(text), off = 0;
    while (off < n) {
      ssize_t w = write(fds[1], text + off, n - off);
      if (w <= 0)
        break;
      off += (size_t)w;
    }
    /* The scratch directory is the parent's now: no cleanup here. */
    _exit(0);
  }
  close(fds[1]);
  p->pid = pid;
  p->fd = fds[0];
  return 0;
}

static char *dup_str(const json_t *j, const char *key) {
  const char *s = json_string_value(json_object_get(j, key));
  return s ? sg_strdup(s) : NULL;
}

int sg_eval_compile_finish(sg_eval_pending *p, sg_eval_build *build,
                           sg_eval_result *r, sg_err *err) {
  memset(build, 0, sizeof *build);
  sg_eval_result_init(r);
  sg_buf b;
  sg_buf_init(&b, 0);
  char chunk[4096];
  for (;;) {
    ssize_t n = read(p->fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    sg_buf_append(&b, chunk, (size_t)n);
  }
  close(p->fd);
  int st = 0;
  while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR) {
  }
  p->pid = -1;
  p->fd = -1;
  json_error_t je;
  json_t *j = b.len ? json_loadb(b.data, b.len, 0, &je) : NULL;
  sg_buf_free(&b);
  if (!j)
    return sg_err_set(err, SG_EIO, "the compile process ended without an answer "
                      "(status %d)", st);
  int rc = (int)json_integer_value(json_object_get(j, "rc"));
  if (rc) {
    sg_err_set(err, rc, "%s", json_string_value(json_object_get(j, "error")));
  } else if ((rc = sg_eval_result_from_json(json_object_get(j, "result"), r, err)) == 0) {
    build->work_dir = dup_str(j, "work_dir");
    build->artifact = dup_str(j, "artifact");
    build->reference_artifact = dup_str(j, "reference_artifact");
    build->owns_work_dir = json_is_true(json_object_get(j, "owns_work_dir"));
  }
  json_decref(j);
  return rc;
}
