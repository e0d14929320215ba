/* sg_search_exec.c: the `exec:CMD` search (docs/search.md).
 *
 * Two halves. The messages (hello, next, plan) are built and checked by pure
 * functions that do no I/O. The process half is small: fork /bin/sh -c CMD
 * with two pipes, write a line, read a line against a deadline with poll(),
 * and at the end a bye, a short wait and a kill of the process's group.
 *
 * What it must never do: hand sg_search_next a plan it has not checked (that
 * asserts), wait without a deadline, let the process outlive specgen (the
 * child asks for SIGKILL when its parent dies, and free kills its group), or
 * be killed by SIGPIPE when the process closes its stdin early.
 *
 * PR_SET_PDEATHSIG fires when the thread that forked exits, not only the
 * process: build the search on a thread that lives as long as the workflow
 * (the runtime's loop thread).
 */
#include "run/sg_search_exec.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"
#include "pool/sg_jsonl.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- messages (pure) ----------------------------------------------------- */

int sg_search_exec_timeout_parse(const char *value, double *timeout_s,
                                 sg_err *err) {
  *timeout_s = SG_SEARCH_EXEC_TIMEOUT_S;
  if (value == NULL || value[0] == '\0')
    return 0;
  char *end = NULL;
  errno = 0;
  double v = strtod(value, &end);
  if (errno != 0 || end == value || *end != '\0' || !(v > 0) || v > 86400)
    return sg_err_set(err, SG_EINVAL,
                      "%s: expected seconds in (0, 86400], got \"%.40s\"",
                      SG_SEARCH_EXEC_TIMEOUT_ENV, value);
  *timeout_s = v;
  return 0;
}

json_t *sg_search_exec_hello_json(uint64_t seed) {
  /* seed as a JSON integer: jansson's are signed 64-bit, so keep 63 bits */
  return json_pack("{s:s, s:i, s:I, s:i, s:i, s:i}", "type", "hello",
                   "protocol", SG_SEARCH_EXEC_PROTOCOL, "seed",
                   (json_int_t)(seed & INT64_MAX), "max_prompts",
                   SG_SEARCH_MAX_MAINS, "max_items", SG_PROMPT_MAX_ITEMS,
                   "max_inspirations", SG_PROMPT_MAX_INSPIRATIONS);
}

static json_t *str_or_null(const char *s) {
  /* jansson wants UTF-8; text from outside may not be: keep it readable */
  if (s == NULL)
    return json_null();
  json_t *j = json_string(s);
  if (j != NULL)
    return j;
  size_t n = strlen(s);
  char *copy = sg_strndup(s, n);
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)copy[i] >= 0x80)
      copy[i] = '?';
  j = json_string(copy);
  free(copy);
  return j ? j : json_null();
}

json_t *sg_search_exec_kernel_json(const sg_kernel *k) {
  json_t *j = json_object();
  json_object_set_new(j, "id", json_integer((json_int_t)k->id));
  json_object_set_new(j, "iteration", json_integer(k->iteration));
  json_object_set_new(j, "origin", json_string(sg_gen_kind_name(k->origin)));
  json_object_set_new(j, "gen", json_integer((json_int_t)k->gen));
  json_object_set_new(j, "prefix_len", json_integer((json_int_t)k->prefix_len));
  json_object_set_new(j, "answer_at_cap", json_boolean(k->answer));
  json_object_set_new(j, "extract",
                      json_string(sg_extract_outcome_name(k->extract)));
  json_object_set_new(j, "source", str_or_null(k->source));
  json_object_set_new(j, "validated", json_boolean(k->validated));
  json_object_set_new(j, "validate_status",
                      k->validated && (unsigned)k->validate_status <
                                          SG_EVAL__COUNT
                          ? json_string(sg_eval_status_name(k->validate_status))
                          : json_null());
  json_object_set_new(j, "validate_message", str_or_null(k->validate_message));
  json_object_set_new(j, "profiled", json_boolean(k->profiled));
  json_object_set_new(j, "speedup", isfinite(k->speedup) ? json_real(k->speedup)
                                                         : json_null());
  json_object_set_new(j, "profile_text", str_or_null(k->profile_text));
  json_object_set_new(j, "dropped", json_boolean(k->dropped));
  return j;
}

json_t *sg_search_exec_next_json(const sg_history *h, uint32_t iteration,
                                 size_t *sent) {
  json_t *kernels = json_array();
  /* The history is in iteration order, so the unseen kernels of earlier
   * iterations are the ones from *sent on, up to the first of this one. */
  size_t i = *sent;
  for (; i < h->n && h->v[i].iteration < iteration; i++)
    json_array_append_new(kernels, sg_search_exec_kernel_json(&h->v[i]));
  *sent = i;
  json_t *j = json_object();
  json_object_set_new(j, "type", json_string("next"));
  json_object_set_new(j, "iteration", json_integer(iteration));
  json_object_set_new(j, "kernels", kernels);
  json_object_set_new(j, "best_id", h->best_id
                                        ? json_integer((json_int_t)h->best_id)
                                        : json_null());
  return j;
}

/* Loads one line as a JSON object with a string "type". */
static int load_message(const char *line, size_t len, unsigned line_no,
                        json_t **out, const char **type, sg_err *err) {
  *out = NULL;
  json_error_t je;
  json_t *j = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
  if (j == NULL)
    return sg_err_set(err, SG_EPARSE, "line %u: not JSON (column %d: %s)",
                      line_no, je.column, je.text);
  if (!json_is_object(j)) {
    json_decref(j);
    return sg_err_set(err, SG_EPARSE, "line %u: not a JSON object", line_no);
  }
  json_t *t = json_object_get(j, "type");
  if (!json_is_string(t)) {
    json_decref(j);
    return sg_err_set(err, SG_EPARSE, "line %u: field \"type\": missing or "
                      "not a string", line_no);
  }
  *type = json_string_value(t);
  *out = j;
  return 0;
}

/* {"type":"error","message":...}: the process says it cannot go on. */
static int process_error(json_t *j, unsigned line_no, sg_err *err) {
  json_t *m = json_object_get(j, "message");
  return sg_err_set(err, SG_ECHILD, "line %u: the search reported an error: %.400s",
                    line_no, json_is_string(m) ? json_string_value(m)
                                                : "(no message)");
}

int sg_search_exec_hello_parse(const char *line, size_t len,
                               unsigned line_no, sg_err *err) {
  json_t *j;
  const char *type;
  int rc = load_message(line, len, line_no, &j, &type, err);
  if (rc < 0)
    return rc;
  if (strcmp(type, "error") == 0) {
    rc = process_error(j, line_no, err);
  } else if (strcmp(type, "hello") != 0) {
    rc = sg_err_set(err, SG_EPARSE, "line %u: expected a hello, got type "
                    "\"%.40s\"", line_no, type);
  } else {
    json_t *p = json_object_get(j, "protocol");
    if (!json_is_integer(p))
      rc = sg_err_set(err, SG_EPARSE, "line %u: field \"protocol\": missing or "
                      "not an integer", line_no);
    else if (json_integer_value(p) != SG_SEARCH_EXEC_PROTOCOL)
      rc = sg_err_set(err, SG_EPROTO, "line %u: field \"protocol\": the search "
                      "speaks protocol %lld, specgen speaks %d", line_no,
                      (long long)json_integer_value(p), SG_SEARCH_EXEC_PROTOCOL);
  }
  json_decref(j);
  return rc;
}

/* The field path being checked, for messages: "prompts[0].items[2].kernel". */
typedef struct where {
  unsigned line_no;
  char path[96];
} where;

static int bad(sg_err *err, int code, const where *w, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int bad(sg_err *err, int code, const where *w, const char *fmt, ...) {
  char detail[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  return sg_err_set(err, code, "line %u: field \"%s\": %s", w->line_no, w->path,
                    detail);
}

/* A kernel id: an integer present in h (0 allowed where zero_ok). */
static int parse_id(const json_t *v, const sg_history *h, bool zero_ok,
                    const where *w, uint64_t *out, sg_err *err) {
  if (!json_is_integer(v))
    return bad(err, SG_EPARSE, w, "expected a kernel id (an integer)");
  json_int_t id = json_integer_value(v);
  if (id == 0 && zero_ok) {
    *out = 0;
    return 0;
  }
  if (id <= 0)
    return bad(err, SG_ERANGE, w, "kernel id %lld: ids start at 1",
               (long long)id);
  if (sg_history_get(h, (uint64_t)id) == NULL)
    return bad(err, SG_ERANGE, w, "kernel %lld is not in the history",
               (long long)id);
  *out = (uint64_t)id;
  return 0;
}

/* Keys other than the ones listed are errors inside a prompt: a misspelt
 * "item" silently ignored would change what the LLM is shown. */
static int only_keys(const json_t *obj, const char *const *keys,
                     const where *w, sg_err *err) {
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)obj, k, v) {
    bool known = false;
    for (size_t i = 0; keys[i] != NULL; i++)
      known |= strcmp(k, keys[i]) == 0;
    if (!known)
      return bad(err, SG_EPARSE, w, "unknown key \"%.40s\"", k);
  }
  return 0;
}

static int parse_item(const json_t *v, const sg_history *h, where *w,
                      sg_prompt_item *it, sg_err *err) {
  if (!json_is_object(v))
    return bad(err, SG_EPARSE, w, "expected an object {\"kind\", \"kernel\"}");
  static const char *const keys[] = {"kind", "kernel", NULL};
  int rc = only_keys(v, keys, w, err);
  if (rc < 0)
    return rc;
  size_t base = strlen(w->path);
  json_t *kind = json_object_get(v, "kind");
  snprintf(w->path + base, sizeof w->path - base, ".kind");
  if (!json_is_string(kind))
    return bad(err, SG_EPARSE, w, "missing or not a string");
  int k = -1;
  for (int i = 0; i < SG_ITEM__COUNT; i++)
    if (strcmp(json_string_value(kind), sg_prompt_item_kind_name(i)) == 0)
      k = i;
  if (k < 0)
    return bad(err, SG_EPARSE, w,
               "\"%.40s\" is not a kind (kernel, profile, failure)",
               json_string_value(kind));
  it->kind = (sg_prompt_item_kind)k;
  snprintf(w->path + base, sizeof w->path - base, ".kernel");
  rc = parse_id(json_object_get(v, "kernel"), h, false, w, &it->kernel, err);
  w->path[base] = '\0';
  return rc;
}

static int parse_prompt(const json_t *v, const sg_history *h, where *w,
                        sg_prompt *p, sg_err *err) {
  if (!json_is_object(v))
    return bad(err, SG_EPARSE, w, "expected an object");
  static const char *const keys[] = {"base_kernel", "items", "inspirations",
                                     NULL};
  int rc = only_keys(v, keys, w, err);
  if (rc < 0)
    return rc;
  size_t base = strlen(w->path);

  json_t *b = json_object_get(v, "base_kernel");
  snprintf(w->path + base, sizeof w->path - base, ".base_kernel");
  if (b != NULL && !json_is_null(b) &&
      (rc = parse_id(b, h, true, w, &p->base_kernel, err)) < 0)
    return rc;

  json_t *items = json_object_get(v, "items");
  snprintf(w->path + base, sizeof w->path - base, ".items");
  if (items != NULL && !json_is_array(items))
    return bad(err, SG_EPARSE, w, "expected an array");
  if (json_array_size(items) > SG_PROMPT_MAX_ITEMS)
    return bad(err, SG_ERANGE, w, "%zu items, at most %d",
               json_array_size(items), SG_PROMPT_MAX_ITEMS);
  for (size_t i = 0; i < json_array_size(items); i++) {
    snprintf(w->path + base, sizeof w->path - base, ".items[%zu]", i);
    if ((rc = parse_item(json_array_get(items, i), h, w, &p->items[i], err)) <
        0)
      return rc;
    p->n_items++;
  }

  json_t *insp = json_object_get(v, "inspirations");
  snprintf(w->path + base, sizeof w->path - base, ".inspirations");
  if (insp != NULL && !json_is_array(insp))
    return bad(err, SG_EPARSE, w, "expected an array");
  if (json_array_size(insp) > SG_PROMPT_MAX_INSPIRATIONS)
    return bad(err, SG_ERANGE, w, "%zu inspirations, at most %d",
               json_array_size(insp), SG_PROMPT_MAX_INSPIRATIONS);
  for (size_t i = 0; i < json_array_size(insp); i++) {
    snprintf(w->path + base, sizeof w->path - base, ".inspirations[%zu]", i);
    uint64_t id;
    if ((rc = parse_id(json_array_get(insp, i), h, false, w, &id, err)) < 0)
      return rc;
    p->inspirations[p->n_inspirations++] = id;
    /* sg_prompt's rule: an inspiration is also a kernel item, so every
     * renderer shows it */
    bool shown = false;
    for (size_t j = 0; j < p->n_items; j++)
      shown |= p->items[j].kind == SG_ITEM_KERNEL && p->items[j].kernel == id;
    if (shown)
      continue;
    if (p->n_items >= SG_PROMPT_MAX_ITEMS)
      return bad(err, SG_ERANGE, w,
                 "kernel %llu would be item %d (each inspiration is also a "
                 "kernel item; at most %d items)",
                 (unsigned long long)id, SG_PROMPT_MAX_ITEMS + 1,
                 SG_PROMPT_MAX_ITEMS);
    p->items[p->n_items].kind = SG_ITEM_KERNEL;
    p->items[p->n_items].kernel = id;
    p->n_items++;
  }
  w->path[base] = '\0';
  return 0;
}

int sg_search_exec_plan_parse(const char *line, size_t len, unsigned line_no,
                              const sg_history *h, sg_search_plan *plan,
                              sg_err *err) {
  memset(plan, 0, sizeof *plan);
  json_t *j;
  const char *type;
  int rc = load_message(line, len, line_no, &j, &type, err);
  if (rc < 0)
    return rc;
  where w = {line_no, "prompts"};
  if (strcmp(type, "error") == 0) {
    rc = process_error(j, line_no, err);
  } else if (strcmp(type, "plan") != 0) {
    rc = sg_err_set(err, SG_EPARSE, "line %u: expected a plan, got type "
                    "\"%.40s\"", line_no, type);
  } else {
    json_t *prompts = json_object_get(j, "prompts");
    if (!json_is_array(prompts))
      rc = bad(err, SG_EPARSE, &w, "missing or not an array");
    else if (json_array_size(prompts) < 1 ||
             json_array_size(prompts) > SG_SEARCH_MAX_MAINS)
      rc = bad(err, SG_ERANGE, &w, "%zu prompts, expected 1 to %d",
               json_array_size(prompts), SG_SEARCH_MAX_MAINS);
    for (size_t i = 0; rc == 0 && i < json_array_size(prompts); i++) {
      snprintf(w.path, sizeof w.path, "prompts[%zu]", i);
      rc = parse_prompt(json_array_get(prompts, i), h, &w, &plan->prompts[i],
                        err);
      plan->n++;
    }
  }
  json_decref(j);
  if (rc < 0)
    memset(plan, 0, sizeof *plan);
  return rc;
}

/* ---- the process ---------------------------------------------------------- */

typedef struct exec_state {
  char *cmd;           /* owned; for messages */
  pid_t pid;           /* the shell, leader of its own group; -1 once reaped */
  int in;              /* its stdin (we write), -1 once closed */
  int out;             /* its stdout (we read) */
  sg_buf rbuf;         /* bytes read, not yet a whole line */
  unsigned line_no;    /* lines read so far */
  double timeout_s;    /* per reply */
  size_t sent;         /* history entries already sent */
  uint64_t seed;
  bool failed;         /* an earlier error left the stream out of step */
} exec_state;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int ms_left(double deadline) {
  double left = deadline - now_s();
  if (left <= 0)
    return 0;
  return left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
}

/* "search exec \"CMD\": " in front of err's message. */
static int named(const exec_state *st, sg_err *err) {
  return sg_err_prefix(err, "search exec \"%.200s\"", st->cmd);
}

/* An error about the process, with errno's text. */
static int sys_error(const exec_state *st, int code, const char *what, int e,
                     sg_err *err) {
  sg_err_set(err, code, "%s: %s", what, strerror(e));
  return named(st, err);
}

/* Whether the process has exited (without reaping it: a zombie keeps its
 * pid, so the group kill in free cannot hit a stranger), and how. */
static bool exited(const exec_state *st, char *how, size_t how_len) {
  if (st->pid < 0) {
    snprintf(how, how_len, "was already reaped");
    return true;
  }
  siginfo_t si;
  memset(&si, 0, sizeof si);
  if (waitid(P_PID, (id_t)st->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 ||
      si.si_pid == 0)
    return false;
  if (si.si_code == CLD_EXITED)
    snprintf(how, how_len, "exited with status %d", si.si_status);
  else
    snprintf(how, how_len, "was killed by signal %d (%s)", si.si_status,
             strsignal(si.si_status));
  return true;
}

/* The process closed its stdout or its stdin: say whether and how it died,
 * giving it a moment to finish exiting. */
static int gone(exec_state *st, const char *what, sg_err *err) {
  char how[128];
  double deadline = now_s() + SG_SEARCH_EXEC_BYE_WAIT_S;
  while (!exited(st, how, sizeof how)) {
    if (now_s() >= deadline) {
      snprintf(how, sizeof how, "is still running");
      break;
    }
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  sg_err_set(err, SG_ECHILD, "%s after %u line(s); the process %s", what,
             st->line_no, how);
  return named(st, err);
}

/* Writes the whole line; the fd is non-blocking, so a process that does not
 * read cannot hold us past the deadline. SIGPIPE is blocked around the
 * write (and a pending one consumed), so a process that closed its stdin is
 * an error value, not the end of specgen. */
static int write_line(exec_state *st, const char *line, size_t len,
                      sg_err *err) {
  if (st->in < 0) {
    sg_err_set(err, SG_ESTATE, "its input is closed");
    return named(st, err);
  }
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  double deadline = now_s() + st->timeout_s;
  size_t off = 0;
  int rc = 0;
  while (off < len) {
    ssize_t k = write(st->in, line + off, len - off);
    if (k > 0) {
      off += (size_t)k;
      continue;
    }
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0 && errno == EAGAIN) {
      struct pollfd pfd = {st->in, POLLOUT, 0};
      int left = ms_left(deadline);
      if (left == 0) {
        sg_err_set(err, SG_ETIMEDOUT, "it did not read its input within %g s "
                   "(%s)", st->timeout_s, SG_SEARCH_EXEC_TIMEOUT_ENV);
        rc = named(st, err);
        break;
      }
      poll(&pfd, 1, left);
      continue;
    }
    if (k < 0 && errno == EPIPE) {
      rc = gone(st, "it closed its input", err);
      break;
    }
    rc = sys_error(st, SG_EIO, "writing to it", errno, err);
    break;
  }
  if (!sigismember(&old, SIGPIPE)) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, NULL, &zero) == SIGPIPE) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

static int send_json(exec_state *st, json_t *j, sg_err *err) {
  size_t len;
  char *line = sg_jsonl_line(j, &len);
  json_decref(j);
  int rc = write_line(st, line, len, err);
  free(line);
  return rc;
}

/* Reads one line (returned without its newline, NUL-terminated, valid until
 * the next read) within the reply timeout. */
static int read_line(exec_state *st, const char **line, size_t *len,
                     sg_err *err) {
  double deadline = now_s() + st->timeout_s;
  size_t scanned = 0;
  for (;;) {
    const char *nl = st->rbuf.len > scanned
                         ? memchr(st->rbuf.data + scanned, '\n',
                                  st->rbuf.len - scanned)
                         : NULL;
    if (nl != NULL) {
      st->line_no++;
      *len = (size_t)(nl - st->rbuf.data);
      if (*len > SG_SEARCH_EXEC_LINE_MAX)
        break;
      st->rbuf.data[*len] = '\0'; /* the caller consumes len + 1 */
      *line = st->rbuf.data;
      return 0;
    }
    scanned = st->rbuf.len;
    if (st->rbuf.len > SG_SEARCH_EXEC_LINE_MAX) {
      st->line_no++;
      break;
    }
    struct pollfd pfd = {st->out, POLLIN, 0};
    int left = ms_left(deadline);
    if (left == 0) {
      sg_err_set(err, SG_ETIMEDOUT, "no reply within %g s (line %u; set %s "
                 "for a longer wait)", st->timeout_s, st->line_no + 1,
                 SG_SEARCH_EXEC_TIMEOUT_ENV);
      return named(st, err);
    }
    int pr = poll(&pfd, 1, left);
    if (pr < 0 && errno != EINTR)
      return sys_error(st, SG_EIO, "poll", errno, err);
    if (pr <= 0)
      continue;
    char tmp[65536];
    ssize_t k = read(st->out, tmp, sizeof tmp);
    if (k > 0) {
      sg_buf_append(&st->rbuf, tmp, (size_t)k);
    } else if (k == 0) {
      return gone(st, "its output ended", err);
    } else if (errno != EINTR && errno != EAGAIN) {
      return sys_error(st, SG_EIO, "reading its output", errno, err);
    }
  }
  sg_err_set(err, SG_ERANGE, "line %u: longer than %zu bytes", st->line_no,
             SG_SEARCH_EXEC_LINE_MAX);
  return named(st, err);
}

static void consume_line(exec_state *st, size_t len) {
  sg_buf_consume(&st->rbuf, len + 1);
}

/* Ends the process: bye, close its stdin, wait up to a second, then SIGKILL
 * its group (what it started too) and reap it. */
static void stop_process(exec_state *st) {
  if (st->pid < 0)
    return;
  if (st->in >= 0 && !st->failed) {
    sg_err ignored;
    json_t *bye = json_pack("{s:s}", "type", "bye");
    send_json(st, bye, &ignored);
  }
  if (st->in >= 0) {
    close(st->in);
    st->in = -1;
  }
  char how[128];
  double deadline = now_s() + SG_SEARCH_EXEC_BYE_WAIT_S;
  while (!exited(st, how, sizeof how) && now_s() < deadline) {
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  /* The leader is alive or a zombie: its pid, hence the group id, is ours
   * until we reap it. */
  kill(-st->pid, SIGKILL);
  kill(st->pid, SIGKILL);
  while (waitpid(st->pid, NULL, 0) < 0 && errno == EINTR) {
  }
  st->pid = -1;
}

static void exec_free(void *state) {
  exec_state *st = state;
  if (st == NULL)
    return;
  stop_process(st);
  if (st->out >= 0)
    close(st->out);
  sg_buf_free(&st->rbuf);
  free(st->cmd);
  free(st);
}

long sg_search_exec_pid(const void *state) {
  const exec_state *st = state;
  return st->pid < 0 ? -1 : (long)st->pid;
}

static int spawn(exec_state *st, sg_err *err) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0)
    return sys_error(st, SG_EIO, "pipe", errno, err);
  if (pipe2(out, O_CLOEXEC) != 0) {
    int e = errno;
    close(in[0]);
    close(in[1]);
    return sys_error(st, SG_EIO, "pipe", e, err);
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
    return sys_error(st, SG_ECHILD, "fork", e, err);
  }
  if (pid == 0) {
    /* only async-signal-safe calls from here to exec */
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != parent)
      _exit(127); /* specgen died before the line above */
    signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0)
      _exit(127);
    execl("/bin/sh", "sh", "-c", st->cmd, (char *)NULL);
    _exit(127);
  }
  setpgid(pid, pid); /* also here: the group exists before we may kill it */
  close(in[0]);
  close(out[1]);
  st->pid = pid;
  st->in = in[1];
  st->out = out[0];
  fcntl(st->in, F_SETFL, fcntl(st->in, F_GETFL) | O_NONBLOCK);
  fcntl(st->out, F_SETFL, fcntl(st->out, F_GETFL) | O_NONBLOCK);
  return 0;
}

static int exec_init(void **state, const char *arg, uint64_t seed,
                     sg_err *err) {
  *state = NULL;
  if (arg == NULL || arg[0] == '\0')
    return sg_err_set(err, SG_EINVAL,
                      "search exec: needs a command (--search exec:CMD)");
  double timeout_s;
  int rc = sg_search_exec_timeout_parse(getenv(SG_SEARCH_EXEC_TIMEOUT_ENV),
                                        &timeout_s, err);
  if (rc < 0)
    return sg_err_prefix(err, "search exec");
  exec_state *st = sg_calloc(1, sizeof *st);
  st->cmd = sg_strdup(arg);
  st->pid = -1;
  st->in = st->out = -1;
  st->timeout_s = timeout_s;
  st->seed = seed;
  sg_buf_init(&st->rbuf, 0);
  if ((rc = spawn(st, err)) == 0 &&
      (rc = send_json(st, sg_search_exec_hello_json(seed), err)) == 0) {
    const char *line;
    size_t len;
    if ((rc = read_line(st, &line, &len, err)) == 0) {
      rc = sg_search_exec_hello_parse(line, len, st->line_no, err);
      if (rc < 0)
        named(st, err);
      consume_line(st, len);
    }
  }
  if (rc < 0) {
    st->failed = true;
    exec_free(st);
    return rc;
  }
  *state = st;
  return 0;
}

static int exec_next(void *state, const sg_history *h, uint32_t iteration,
                     sg_search_plan *plan, sg_err *err) {
  exec_state *st = state;
  if (st->failed) {
    sg_err_set(err, SG_ESTATE, "an earlier error stopped the search");
    return named(st, err);
  }
  size_t sent = st->sent;
  int rc = send_json(st, sg_search_exec_next_json(h, iteration, &sent), err);
  if (rc == 0) {
    st->sent = sent;
    const char *line;
    size_t len;
    if ((rc = read_line(st, &line, &len, err)) == 0) {
      rc = sg_search_exec_plan_parse(line, len, st->line_no, h, plan, err);
      if (rc < 0)
        named(st, err);
      consume_line(st, len);
    }
  }
  /* After any error the two sides may be out of step (a late reply would be
   * read as the next one): stop here. */
  st->failed = rc < 0;
  return rc;
}

const sg_search_ops sg_search_exec_ops = {"exec", exec_init, exec_next,
                                          exec_free};
