/* sg_worker_proto.c: parse and serialize the worker protocol's messages
 * (sg_worker_proto.h, docs/protocol.md).
 *
 * Every check names the field it rejects, because the peer is a program whose
 * author reads these messages while debugging it. Nothing here does I/O.
 */
#include "pool/sg_worker_proto.h"

#include "common/sg_alloc.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const req_names[SG_WREQ__COUNT] = {
    "hello", "validate", "profile", "abort", "ping", "shutdown", "compile"};

static const char *const rep_names[SG_WREP__COUNT] = {
    "hello", "started", "compiled", "result", "pong", "error", "bye"};

const char *sg_worker_req_type_name(sg_worker_req_type t) {
  return (unsigned)t < SG_WREQ__COUNT ? req_names[t] : "unknown";
}

int sg_worker_req_type_parse(const char *name) {
  for (int i = 0; name && i < SG_WREQ__COUNT; i++)
    if (strcmp(name, req_names[i]) == 0)
      return i;
  return -1;
}

const char *sg_worker_reply_type_name(sg_worker_reply_type t) {
  return (unsigned)t < SG_WREP__COUNT ? rep_names[t] : "unknown";
}

int sg_worker_reply_type_parse(const char *name) {
  for (int i = 0; name && i < SG_WREP__COUNT; i++)
    if (strcmp(name, rep_names[i]) == 0)
      return i;
  return -1;
}

/* ---- shared helpers --------------------------------------------------------- */

static int parse_object(const char *what, const char *line, size_t len,
                        json_t **out, sg_err *err) {
  json_error_t je;
  /* JSON_REJECT_DUPLICATES: {"id":"a","id":"b"} is ambiguous, say so */
  json_t *j = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL,
                         &je);
  if (!j)
    return sg_err_set(err, SG_EPARSE, "%s is not JSON: %s (column %d)", what,
                      je.text, je.column);
  if (!json_is_object(j)) {
    json_decref(j);
    return sg_err_set(err, SG_EPARSE, "%s: expected a JSON object", what);
  }
  *out = j;
  return 0;
}

/* An id: a non-empty string of at most SG_WORKER_ID_MAX bytes without
 * control characters (it is echoed into logs and keys). */
static int get_id(const json_t *j, bool required, char **out, sg_err *err) {
  const json_t *v = json_object_get(j, "id");
  if (!v) {
    if (required)
      return sg_err_set(err, SG_EINVAL, "field \"id\": missing");
    return 0;
  }
  if (!json_is_string(v))
    return sg_err_set(err, SG_EINVAL, "field \"id\": expected a string");
  const char *s = json_string_value(v);
  size_t n = json_string_length(v);
  if (n == 0)
    return sg_err_set(err, SG_EINVAL, "field \"id\": empty");
  if (n > SG_WORKER_ID_MAX)
    return sg_err_set(err, SG_EINVAL, "field \"id\": longer than %d bytes",
                      SG_WORKER_ID_MAX);
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
      return sg_err_set(err, SG_EINVAL,
                        "field \"id\": control character at byte %zu", i);
  *out = sg_strndup(s, n);
  return 0;
}

static int get_string(const json_t *j, const char *key, size_t max,
                      bool allow_empty, char **out, size_t *len, sg_err *err) {
  const json_t *v = json_object_get(j, key);
  if (!v)
    return sg_err_set(err, SG_EINVAL, "field \"%s\": missing", key);
  if (!json_is_string(v))
    return sg_err_set(err, SG_EINVAL, "field \"%s\": expected a string", key);
  size_t n = json_string_length(v);
  if (n == 0 && !allow_empty)
    return sg_err_set(err, SG_EINVAL, "field \"%s\": empty", key);
  if (n > max)
    return sg_err_set(err, SG_EINVAL, "field \"%s\": longer than %zu bytes",
                      key, max);
  const char *s = json_string_value(v);
  if (memchr(s, '\0', n))
    return sg_err_set(err, SG_EINVAL, "field \"%s\": contains a NUL character",
                      key);
  *out = sg_strndup(s, n);
  if (len)
    *len = n;
  return 0;
}

static int get_int_opt(const json_t *v, const char *key, long long lo,
                       long long hi, long long *out, sg_err *err) {
  if (!json_is_integer(v) || json_integer_value(v) < lo ||
      json_integer_value(v) > hi)
    return sg_err_set(err, SG_EINVAL,
                      "field \"opts.%s\": expected an integer from %lld to %lld",
                      key, lo, hi);
  *out = json_integer_value(v);
  return 0;
}

static int parse_opts(const json_t *opts, sg_worker_request *req, sg_err *err) {
  if (!json_is_object(opts))
    return sg_err_set(err, SG_EINVAL, "field \"opts\": expected an object");
  const char *key;
  json_t *v;
  long long x;
  int rc;
  json_object_foreach((json_t *)opts, key, v) {
    if (strcmp(key, "seed") == 0) {
      if ((rc = get_int_opt(v, key, 1, INT64_MAX, &x, err)))
        return rc;
      req->seed = (unsigned long long)x;
    } else if (strcmp(key, "trials") == 0) {
      if ((rc = get_int_opt(v, key, 3, 1000, &x, err)))
        return rc;
      req->trials = (int)x;
    } else if (strcmp(key, "runs") == 0) {
      if ((rc = get_int_opt(v, key, 1, 100000, &x, err)))
        return rc;
      req->runs = (int)x;
    } else if (strcmp(key, "warmups") == 0) {
      if ((rc = get_int_opt(v, key, 0, 100000, &x, err)))
        return rc;
      req->warmups = (int)x;
    } else if (strcmp(key, "eval_timeout") == 0) {
      double s = json_is_number(v) ? json_number_value(v) : NAN;
      if (!(s > 0) || s > 86400)
        return sg_err_set(err, SG_EINVAL, "field \"opts.eval_timeout\": expected "
                          "seconds, more than 0 and at most 86400");
      req->eval_timeout = s;
    } else {
      return sg_err_set(err, SG_EINVAL,
                        "field \"opts.%s\": unknown option (known: seed, "
                        "trials, runs, warmups, eval_timeout)", key);
    }
  }
  return 0;
}

/* "protocol", where a peer sends it, must be ours. */
static int check_protocol(const json_t *j, sg_err *err) {
  const json_t *v = json_object_get(j, "protocol");
  if (!v)
    return 0;
  if (!json_is_integer(v))
    return sg_err_set(err, SG_EINVAL, "field \"protocol\": expected an integer");
  if (json_integer_value(v) != SG_WORKER_PROTOCOL)
    return sg_err_set(err, SG_EINVAL,
                      "field \"protocol\": this side speaks protocol %d, not %lld",
                      SG_WORKER_PROTOCOL, (long long)json_integer_value(v));
  return 0;
}

static int get_type(const json_t *j, const char *const *names, int count,
                    int *out, sg_err *err) {
  const json_t *t = json_object_get(j, "type");
  if (!t)
    return sg_err_set(err, SG_EINVAL, "field \"type\": missing");
  if (!json_is_string(t))
    return sg_err_set(err, SG_EINVAL, "field \"type\": expected a string");
  for (int i = 0; i < count; i++)
    if (strcmp(json_string_value(t), names[i]) == 0) {
      *out = i;
      return 0;
    }
  char known[256] = "";
  for (int i = 0; i < count; i++) {
    strncat(known, names[i], sizeof known - strlen(known) - 1);
    if (i + 1 < count)
      strncat(known, ", ", sizeof known - strlen(known) - 1);
  }
  return sg_err_set(err, SG_EINVAL, "field \"type\": unknown message type "
                    "\"%.64s\" (known: %s)", json_string_value(t), known);
}

/* ---- requests ---------------------------------------------------------------- */

void sg_worker_request_init(sg_worker_request *req) {
  memset(req, 0, sizeof *req);
  req->type = SG_WREQ_HELLO;
  req->warmups = -1;
}

void sg_worker_request_free(sg_worker_request *req) {
  if (!req)
    return;
  free(req->id);
  free(req->task);
  json_decref(req->task_files);
  free(req->source);
  sg_worker_request_init(req);
}

bool sg_worker_task_file_name_ok(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n > 255 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
    return false;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '.' || c == '_' || c == '-'))
      return false;
  }
  return true;
}

/* "task_files": absent or null, else an object of at most
 * SG_WORKER_TASK_FILES_COUNT strings under safe flat names, together at
 * most SG_WORKER_TASK_FILES_MAX bytes, none with a NUL. */
static int get_task_files(const json_t *j, json_t **out, sg_err *err) {
  json_t *v = json_object_get(j, "task_files");
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_object(v))
    return sg_err_set(err, SG_EINVAL, "field \"task_files\": expected an object");
  if (json_object_size(v) == 0 || json_object_size(v) > SG_WORKER_TASK_FILES_COUNT)
    return sg_err_set(err, SG_EINVAL, "field \"task_files\": %zu files (1 to %d)",
                      json_object_size(v), SG_WORKER_TASK_FILES_COUNT);
  size_t total = 0;
  const char *name;
  json_t *f;
  json_object_foreach(v, name, f) {
    if (!sg_worker_task_file_name_ok(name))
      return sg_err_set(err, SG_EINVAL,
                        "field \"task_files\": \"%.64s\" is not a plain file name "
                        "(letters, digits, '.', '_', '-')", name);
    if (!json_is_string(f))
      return sg_err_set(err, SG_EINVAL, "field \"task_files.%s\": expected a string", name);
    size_t n = json_string_length(f);
    if (memchr(json_string_value(f), '\0', n))
      return sg_err_set(err, SG_EINVAL,
                        "field \"task_files.%s\": contains a NUL character", name);
    total += n;
  }
  if (total > SG_WORKER_TASK_FILES_MAX)
    return sg_err_set(err, SG_EINVAL, "field \"task_files\": %zu bytes, more than %u",
                      total, SG_WORKER_TASK_FILES_MAX);
  *out = json_incref(v);
  return 0;
}

int sg_worker_request_parse(const char *line, size_t len,
                            sg_worker_request *req, sg_err *err) {
  sg_worker_request_init(req);
  json_t *j = NULL;
  int rc = parse_object("request", line, len, &j, err);
  if (rc)
    return rc;
  int type = 0;
  /* the id first, so that any later error can name the request */
  (void)get_id(j, false, &req->id, NULL);
  if ((rc = get_type(j, req_names, SG_WREQ__COUNT, &type, err)))
    goto out;
  req->type = (sg_worker_req_type)type;
  if ((rc = check_protocol(j, err)))
    goto out;
  free(req->id);
  req->id = NULL;
  bool evaluates = req->type == SG_WREQ_VALIDATE ||
                   req->type == SG_WREQ_PROFILE || req->type == SG_WREQ_COMPILE;
  bool needs_id = evaluates || req->type == SG_WREQ_ABORT;
  if ((rc = get_id(j, needs_id, &req->id, err)))
    goto out;
  if (evaluates) {
    if ((rc = get_string(j, "task", SG_WORKER_TASK_MAX, false, &req->task,
                         NULL, err)))
      goto out;
    if ((rc = get_task_files(j, &req->task_files, err)))
      goto out;
    if ((rc = get_string(j, "source", SG_WORKER_SOURCE_MAX, false,
                         &req->source, &req->source_len, err)))
      goto out;
    const json_t *opts = json_object_get(j, "opts");
    if (opts && !json_is_null(opts) && (rc = parse_opts(opts, req, err)))
      goto out;
  }
out:
  json_decref(j);
  return rc;
}

json_t *sg_worker_request_to_json(const sg_worker_request *req) {
  json_t *j = json_object();
  json_object_set_new(j, "type", json_string(sg_worker_req_type_name(req->type)));
  if (req->id)
    json_object_set_new(j, "id", json_string(req->id));
  if (req->type == SG_WREQ_VALIDATE || req->type == SG_WREQ_PROFILE ||
      req->type == SG_WREQ_COMPILE) {
    json_object_set_new(j, "task", json_string(req->task ? req->task : ""));
    if (req->task_files)
      json_object_set(j, "task_files", req->task_files);
    json_object_set_new(j, "source",
                        json_stringn(req->source ? req->source : "",
                                     req->source ? req->source_len : 0));
    json_t *o = json_object();
    if (req->seed)
      json_object_set_new(o, "seed", json_integer((json_int_t)req->seed));
    if (req->trials)
      json_object_set_new(o, "trials", json_integer(req->trials));
    if (req->runs)
      json_object_set_new(o, "runs", json_integer(req->runs));
    if (req->warmups >= 0)
      json_object_set_new(o, "warmups", json_integer(req->warmups));
    if (req->eval_timeout > 0)
      json_object_set_new(o, "eval_timeout", json_real(req->eval_timeout));
    json_object_set_new(j, "opts", o);
  }
  return j;
}

void sg_worker_request_apply(const sg_worker_request *req, sg_eval_opts *opts) {
  if (req->seed)
    opts->seed = req->seed;
  if (req->trials)
    opts->correctness_trials = req->trials;
  if (req->runs)
    opts->timed_runs = req->runs;
  if (req->warmups >= 0)
    opts->warmup_runs = req->warmups;
  if (req->eval_timeout > 0)
    opts->eval_timeout = req->eval_timeout;
}

/* ---- replies ----------------------------------------------------------------- */

void sg_worker_reply_init(sg_worker_reply *r, sg_worker_reply_type type) {
  memset(r, 0, sizeof *r);
  r->type = type;
  r->protocol = SG_WORKER_PROTOCOL;
  r->compile_s = NAN;
  r->compile_status = SG_EVAL_OK;
  sg_eval_result_init(&r->result);
}

void sg_worker_reply_free(sg_worker_reply *r) {
  if (!r)
    return;
  free(r->id);
  free(r->version);
  free(r->device);
  for (size_t i = 0; i < r->nevaluators; i++)
    free(r->evaluators[i]);
  free(r->message);
  sg_eval_result_free(&r->result);
  sg_worker_reply_init(r, r->type);
}

json_t *sg_worker_reply_to_json(const sg_worker_reply *r) {
  json_t *j = json_object();
  json_object_set_new(j, "type", json_string(sg_worker_reply_type_name(r->type)));
  if (r->id)
    json_object_set_new(j, "id", json_string(r->id));
  switch (r->type) {
  case SG_WREP_HELLO: {
    json_object_set_new(j, "protocol", json_integer(r->protocol));
    json_object_set_new(j, "version", json_string(r->version ? r->version : ""));
    json_object_set_new(j, "device", json_string(r->device ? r->device : ""));
    json_t *ev = json_array();
    for (size_t i = 0; i < r->nevaluators; i++)
      json_array_append_new(ev, json_string(r->evaluators[i]));
    json_object_set_new(j, "evaluators", ev);
    json_object_set_new(j, "pid", json_integer(r->pid));
    break;
  }
  case SG_WREP_COMPILED:
    json_object_set_new(j, "compile_s", isfinite(r->compile_s)
                                            ? json_real(r->compile_s)
                                            : json_null());
    json_object_set_new(j, "status",
                        json_string(sg_eval_status_name(r->compile_status)));
    if (r->cached)
      json_object_set_new(j, "cached", json_true());
    break;
  case SG_WREP_RESULT:
    json_object_set_new(j, "result", sg_eval_result_to_json(&r->result));
    break;
  case SG_WREP_ERROR:
    if (r->line > 0)
      json_object_set_new(j, "line", json_integer(r->line));
    json_object_set_new(j, "message", json_string(r->message ? r->message : ""));
    if (r->fatal)
      json_object_set_new(j, "fatal", json_true());
    break;
  default:
    break;
  }
  return j;
}

/* Longer than 80 lines on purpose: one field after the other of a message,
 * each with its own message when wrong. */
int sg_worker_reply_parse(const char *line, size_t len, sg_worker_reply *rep,
                          sg_err *err) {
  sg_worker_reply_init(rep, SG_WREP_ERROR);
  json_t *j = NULL;
  int rc = parse_object("reply", line, len, &j, err);
  if (rc)
    return rc;
  int type = 0;
  if ((rc = get_type(j, rep_names, SG_WREP__COUNT, &type, err)))
    goto out;
  rep->type = (sg_worker_reply_type)type;
  bool needs_id = rep->type == SG_WREP_STARTED ||
                  rep->type == SG_WREP_COMPILED || rep->type == SG_WREP_RESULT;
  if ((rc = get_id(j, needs_id, &rep->id, err)))
    goto out;
  switch (rep->type) {
  case SG_WREP_HELLO: {
    const json_t *p = json_object_get(j, "protocol");
    if (!json_is_integer(p) || json_integer_value(p) < 1 ||
        json_integer_value(p) > 1000000) {
      rc = sg_err_set(err, SG_EINVAL, "field \"protocol\": expected a positive integer");
      goto out;
    }
    rep->protocol = (int)json_integer_value(p);
    if ((rc = get_string(j, "version", 256, true, &rep->version, NULL, err)) ||
        (rc = get_string(j, "device", 256, false, &rep->device, NULL, err)))
      goto out;
    const json_t *ev = json_object_get(j, "evaluators");
    if (!json_is_array(ev) || json_array_size(ev) > SG_WORKER_EVALUATORS_MAX) {
      rc = sg_err_set(err, SG_EINVAL, "field \"evaluators\": expected an array "
                      "of at most %d names", SG_WORKER_EVALUATORS_MAX);
      goto out;
    }
    for (size_t i = 0; i < json_array_size(ev); i++) {
      const json_t *e = json_array_get(ev, i);
      if (!json_is_string(e) || json_string_length(e) == 0) {
        rc = sg_err_set(err, SG_EINVAL, "field \"evaluators[%zu]\": expected a name", i);
        goto out;
      }
      rep->evaluators[rep->nevaluators++] = sg_strdup(json_string_value(e));
    }
    const json_t *pid = json_object_get(j, "pid");
    if (!json_is_integer(pid) || json_integer_value(pid) <= 0) {
      rc = sg_err_set(err, SG_EINVAL, "field \"pid\": expected a positive integer");
      goto out;
    }
    rep->pid = json_integer_value(pid);
    break;
  }
  case SG_WREP_COMPILED: {
    const json_t *c = json_object_get(j, "compile_s");
    if (json_is_number(c))
      rep->compile_s = json_number_value(c);
    else if (c && !json_is_null(c)) {
      rc = sg_err_set(err, SG_EINVAL, "field \"compile_s\": expected a number or null");
      goto out;
    }
    const json_t *s = json_object_get(j, "status");
    int st = json_is_string(s) ? sg_eval_status_parse(json_string_value(s)) : -1;
    if (st < 0) {
      rc = sg_err_set(err, SG_EINVAL, "field \"status\": expected an evaluation status");
      goto out;
    }
    rep->compile_status = (sg_eval_status)st;
    const json_t *cached = json_object_get(j, "cached");
    if (cached && !json_is_boolean(cached)) {
      rc = sg_err_set(err, SG_EINVAL, "field \"cached\": expected true or false");
      goto out;
    }
    rep->cached = json_is_true(cached);
    break;
  }
  case SG_WREP_RESULT: {
    const json_t *res = json_object_get(j, "result");
    if (!res) {
      rc = sg_err_set(err, SG_EINVAL, "field \"result\": missing");
      goto out;
    }
    sg_eval_result_free(&rep->result);
    if ((rc = sg_eval_result_from_json(res, &rep->result, err))) {
      sg_err_prefix(err, "field \"result\"");
      goto out;
    }
    break;
  }
  case SG_WREP_ERROR: {
    const json_t *l = json_object_get(j, "line");
    if (json_is_integer(l) && json_integer_value(l) > 0)
      rep->line = json_integer_value(l);
    else if (l) {
      rc = sg_err_set(err, SG_EINVAL, "field \"line\": expected a positive integer");
      goto out;
    }
    if ((rc = get_string(j, "message", SG_WORKER_LINE_MAX, true, &rep->message,
                         NULL, err)))
      goto out;
    rep->fatal = json_is_true(json_object_get(j, "fatal"));
    break;
  }
  default:
    break;
  }
out:
  json_decref(j);
  return rc;
}
