/* sg_replay.c: the record of a run's model sessions (sg_replay.h): writing
 * it one gzip member per generation, loading it, and the rule that picks the
 * recorded generation answering a request. The rule never makes text up: a
 * request no recorded generation answers is refused, and the run counts that
 * generation as failed.
 */
#include "store/sg_replay.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ---- writing ------------------------------------------------------------ */

struct sg_replay_log {
  int fd;
  char *path;
  uint64_t bytes;
};

int sg_replay_log_open(const char *dir, sg_replay_log **out, sg_err *err) {
  char *path = sg_asprintf("%s/%s", dir, SG_REPLAY_FILE);
  /* Append: a resumed run's generations follow the first process's ones
   * (concatenated gzip members read back as one stream). */
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    int rc = sg_err_set(err, SG_EIO, "%s: %s", path, strerror(errno));
    free(path);
    return rc;
  }
  sg_replay_log *l = sg_calloc(1, sizeof *l);
  l->fd = fd;
  l->path = path;
  *out = l;
  return 0;
}

/* line (n bytes) as one whole gzip member into *out (owned). */
static int gzip_member(const char *line, size_t n, unsigned char **out, size_t *len) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return -1;
  size_t cap = deflateBound(&z, (uLong)n) + 16;
  unsigned char *buf = sg_malloc(cap);
  z.next_in = (Bytef *)line;
  z.avail_in = (uInt)n;
  z.next_out = buf;
  z.avail_out = (uInt)cap;
  int zr = deflate(&z, Z_FINISH);
  *len = cap - z.avail_out;
  deflateEnd(&z);
  if (zr != Z_STREAM_END) {
    free(buf);
    return -1;
  }
  *out = buf;
  return 0;
}

int sg_replay_log_write(sg_replay_log *l, const json_t *gen, sg_err *err) {
  char *dump = json_dumps(gen, JSON_COMPACT);
  char *line = sg_asprintf("%s\n", dump);
  free(dump);
  unsigned char *member = NULL;
  size_t len = 0, done = 0;
  /* One whole member per line: a process killed between two lines leaves
   * every line it wrote readable, and a resumed run's lines after them. */
  int ok = gzip_member(line, strlen(line), &member, &len) == 0;
  free(line);
  while (ok && done < len) {
    ssize_t w = write(l->fd, member + done, len - done);
    if (w < 0 && errno == EINTR)
      continue;
    ok = w > 0;
    done += ok ? (size_t)w : 0;
  }
  free(member);
  if (!ok)
    return sg_err_set(err, SG_EIO, "%s: %s", l->path, errno ? strerror(errno) : "deflate failed");
  l->bytes += len;
  return 0;
}

uint64_t sg_replay_log_bytes(const sg_replay_log *l) { return l ? l->bytes : 0; }

void sg_replay_log_close(sg_replay_log *l) {
  if (!l)
    return;
  close(l->fd);
  free(l->path);
  free(l);
}

/* ---- loading -------------------------------------------------------------- */

struct sg_replay {
  sg_replay_gen *gens;
  size_t n, cap;
};

static void gen_free(sg_replay_gen *g) {
  free(g->task);
  free(g->system);
  free(g->user);
  free(g->text);
  free(g->chunks);
  free(g->finish);
  free(g->outcome);
  free(g->error);
}

void sg_replay_free(sg_replay *rp) {
  if (!rp)
    return;
  for (size_t i = 0; i < rp->n; i++)
    gen_free(&rp->gens[i]);
  free(rp->gens);
  free(rp);
}

size_t sg_replay_count(const sg_replay *rp) { return rp->n; }
const sg_replay_gen *sg_replay_get(const sg_replay *rp, size_t i) {
  return i < rp->n ? &rp->gens[i] : NULL;
}

static char *dup_or_null(json_t *j) {
  return json_is_string(j) ? sg_strdup(json_string_value(j)) : NULL;
}

/* One line into g; on error, err names the field. */
static int gen_parse(json_t *j, sg_replay_gen *g, sg_err *err) {
  memset(g, 0, sizeof *g);
  json_t *chunks = json_object_get(j, "chunks");
  const char *kind = json_string_value(json_object_get(j, "kind"));
  if (!json_is_object(j) || !json_is_string(json_object_get(j, "task")) || kind == NULL ||
      !json_is_array(chunks) || json_array_size(chunks) > SG_REPLAY_MAX_CHUNKS)
    return sg_err_set(err, SG_EPARSE, "not a recorded generation (task, kind, chunks)");
  g->task = sg_strdup(json_string_value(json_object_get(j, "task")));
  g->iteration = (int)json_integer_value(json_object_get(j, "iteration"));
  g->gen = (uint64_t)json_integer_value(json_object_get(j, "gen"));
  g->fork = strcmp(kind, "spec") == 0;
  g->answer_at_cap = g->fork && json_is_true(json_object_get(j, "answer_at_cap"));
  g->parent_gen = (uint64_t)json_integer_value(json_object_get(j, "parent_gen"));
  g->prefix_bytes = (size_t)json_integer_value(json_object_get(j, "prefix_bytes"));
  g->system = sg_strdup(json_is_string(json_object_get(j, "system"))
                            ? json_string_value(json_object_get(j, "system"))
                            : "");
  g->user = sg_strdup(json_is_string(json_object_get(j, "user"))
                          ? json_string_value(json_object_get(j, "user"))
                          : "");
  g->finish = dup_or_null(json_object_get(j, "finish"));
  g->outcome = dup_or_null(json_object_get(j, "outcome"));
  g->error = dup_or_null(json_object_get(j, "error"));
  json_t *t0 = json_object_get(j, "started_us"), *t1 = json_object_get(j, "ended_us");
  g->started_us = json_is_integer(t0) ? json_integer_value(t0) : -1;
  g->ended_us = json_is_integer(t1) ? json_integer_value(t1) : -1;
  g->token_ids = json_integer_value(json_object_get(j, "token_ids"));
  if (g->outcome == NULL)
    return sg_err_set(err, SG_EPARSE, "outcome: missing");
  json_t *u = json_object_get(j, "usage");
  if (json_is_object(u)) {
    g->has_usage = true;
    g->prompt_tokens = json_integer_value(json_object_get(u, "prompt_tokens"));
    g->completion_tokens = json_integer_value(json_object_get(u, "completion_tokens"));
    g->cached_tokens = json_integer_value(json_object_get(u, "cached_tokens"));
  }
  g->nchunks = json_array_size(chunks);
  g->chunks = sg_calloc(g->nchunks ? g->nchunks : 1, sizeof *g->chunks);
  sg_buf text;
  sg_buf_init(&text, 0);
  bool content_seen = false;
  for (size_t i = 0; i < g->nchunks; i++) {
    json_t *c = json_array_get(chunks, i);
    const char *k = json_string_value(json_array_get(c, 1));
    json_t *t = json_array_get(c, 2);
    if (!json_is_integer(json_array_get(c, 0)) || k == NULL || !json_is_string(t)) {
      sg_buf_free(&text);
      return sg_err_set(err, SG_EPARSE, "chunks[%zu]: not [at_us, \"r\"|\"c\", text]", i);
    }
    sg_replay_chunk *ch = &g->chunks[i];
    ch->at_us = json_integer_value(json_array_get(c, 0));
    ch->reasoning = k[0] == 'r';
    ch->off = (uint32_t)text.len;
    ch->len = (uint32_t)json_string_length(t);
    sg_buf_append(&text, json_string_value(t), ch->len);
    if (ch->reasoning && !content_seen)
      g->reasoning_bytes += ch->len;
    content_seen |= !ch->reasoning;
  }
  g->text = text.data ? sg_buf_steal(&text) : sg_strdup("");
  return 0;
}

typedef int (*line_fn)(void *ctx, const char *path, size_t lineno, const char *line,
                       size_t len, sg_err *err);

static int add_line(void *ctx, const char *path, size_t lineno, const char *line, size_t len,
                    sg_err *err) {
  sg_replay *rp = ctx;
  if (len == 0)
    return 0;
  if (rp->n == SG_REPLAY_MAX_GENS)
    return sg_err_set(err, SG_EFULL, "%s: more than %u generations", path, SG_REPLAY_MAX_GENS);
  json_error_t je;
  json_t *j = json_loadb(line, len, 0, &je);
  if (j == NULL)
    return sg_err_set(err, SG_EPARSE, "%s:%zu: %s", path, lineno, je.text);
  if (rp->n == rp->cap) {
    rp->cap = rp->cap ? rp->cap * 2 : 64;
    rp->gens = sg_realloc(rp->gens, rp->cap * sizeof *rp->gens);
  }
  int rc = gen_parse(j, &rp->gens[rp->n], err);
  json_decref(j);
  if (rc < 0) {
    gen_free(&rp->gens[rp->n]);
    return sg_err_prefix(err, "%s:%zu", path, lineno);
  }
  rp->n++;
  return 0;
}

/* Calls fn for every line of the (gzip or plain) file at path. */
static int read_lines(const char *file, line_fn fn, void *ctx, sg_err *err) {
  gzFile gz = gzopen(file, "rb");
  if (gz == NULL)
    return sg_err_set(err, SG_ENOENT, "%s: %s", file, strerror(errno ? errno : ENOENT));
  sg_buf line;
  sg_buf_init(&line, SG_REPLAY_MAX_LINE_BYTES);
  char buf[65536];
  size_t lineno = 0;
  int rc = 0, n;
  while (rc == 0 && (n = gzread(gz, buf, sizeof buf)) > 0) {
    for (int i = 0; i < n && rc == 0; i++) {
      if (buf[i] != '\n') {
        sg_buf_append(&line, &buf[i], 1);
        continue;
      }
      if (line.truncated)
        rc = sg_err_set(err, SG_EFULL, "%s:%zu: a line over %u bytes", file, lineno + 1,
                        SG_REPLAY_MAX_LINE_BYTES);
      else
        rc = fn(ctx, file, ++lineno, line.data, line.len, err);
      sg_buf_reset(&line);
    }
  }
  if (rc == 0 && n < 0) {
    int zerr = 0;
    rc = sg_err_set(err, SG_EIO, "%s: %s", file, gzerror(gz, &zerr));
  }
  /* A last line without its newline was cut while being written: dropped. */
  sg_buf_free(&line);
  gzclose(gz);
  return rc;
}

int sg_replay_load(const char *path, sg_replay **out, sg_err *err) {
  struct stat st;
  char *file = stat(path, &st) == 0 && S_ISDIR(st.st_mode)
                   ? sg_asprintf("%s/%s", path, SG_REPLAY_FILE)
                   : sg_strdup(path);
  sg_replay *rp = sg_calloc(1, sizeof *rp);
  int rc = read_lines(file, add_line, rp, err);
  if (rc == SG_ENOENT)
    sg_err_prefix(err, "no recorded model session");
  free(file);
  if (rc < 0) {
    sg_replay_free(rp);
    return rc;
  }
  *out = rp;
  return 0;
}

/* ---- traces ---------------------------------------------------------------- */

typedef struct traces {
  char **v;
  size_t n, cap;
} traces;

static int add_trace(void *ctx, const char *path, size_t lineno, const char *line, size_t len,
                     sg_err *err) {
  traces *t = ctx;
  if (len == 0)
    return 0;
  json_error_t je;
  json_t *j = json_loadb(line, len, 0, &je);
  if (j == NULL)
    return sg_err_set(err, SG_EPARSE, "%s:%zu: %s", path, lineno, je.text);
  const char *r = json_string_value(json_object_get(j, "reasoning"));
  if (r && *r && t->n < SG_REPLAY_MAX_GENS) {
    if (t->n == t->cap) {
      t->cap = t->cap ? t->cap * 2 : 64;
      t->v = sg_realloc(t->v, t->cap * sizeof *t->v);
    }
    t->v[t->n++] = sg_strdup(r);
  }
  json_decref(j);
  return 0;
}

void sg_replay_traces_free(char **v, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

int sg_replay_traces_load(const char *path, char ***out, size_t *n, sg_err *err) {
  traces t = {0};
  int rc = read_lines(path, add_trace, &t, err);
  if (rc == 0 && t.n == 0)
    rc = sg_err_set(err, SG_ENOENT, "%s: no line with a \"reasoning\" string", path);
  if (rc < 0) {
    sg_replay_traces_free(t.v, t.n);
    return rc;
  }
  *out = t.v;
  *n = t.n;
  return 0;
}

/* ---- matching ------------------------------------------------------------- */

static size_t common_prefix(const char *a, const char *b) {
  size_t i = 0;
  while (a[i] && a[i] == b[i])
    i++;
  return i;
}

/* A main request: the first unserved recorded main with the same messages;
 * else, among the mains with the same system message, the unserved ones
 * first, the one whose user message shares the longest prefix with the
 * request's (the same task and the most similar history), the earliest on a
 * tie; once all are served, the same over all of them. */
static sg_replay_gen *match_main(sg_replay *rp, const sg_replay_query *q) {
  for (size_t i = 0; i < rp->n; i++) {
    sg_replay_gen *g = &rp->gens[i];
    if (!g->fork && g->served == 0 && strcmp(g->system, q->system) == 0 &&
        strcmp(g->user, q->user) == 0)
      return g;
  }
  for (int pass = 0; pass < 2; pass++) {
    sg_replay_gen *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < rp->n; i++) {
      sg_replay_gen *g = &rp->gens[i];
      if (g->fork || strcmp(g->system, q->system) != 0 || (pass == 0 && g->served))
        continue;
      size_t l = common_prefix(g->user, q->user);
      if (best == NULL || l > best_len) {
        best = g;
        best_len = l;
      }
    }
    if (best)
      return best;
  }
  return NULL;
}

/* The recorded main whose reasoning the fork continues: one whose reasoning
 * begins with the prefix, with the request's messages if one has them. */
static const sg_replay_gen *fork_parent(const sg_replay *rp, const sg_replay_query *q) {
  const sg_replay_gen *any = NULL;
  for (size_t i = 0; i < rp->n; i++) {
    const sg_replay_gen *g = &rp->gens[i];
    if (g->fork || g->reasoning_bytes < q->prefix_len ||
        memcmp(g->text, q->prefix, q->prefix_len) != 0)
      continue;
    if (strcmp(g->user, q->user) == 0 && strcmp(g->system, q->system) == 0)
      return g;
    if (any == NULL)
      any = g;
  }
  return any;
}

int sg_replay_match(sg_replay *rp, const sg_replay_query *q, const sg_replay_gen **out,
                    sg_err *err) {
  if (!q->fork) {
    sg_replay_gen *g = match_main(rp, q);
    if (g == NULL)
      return sg_err_set(err, SG_ENOENT,
                        "replay: no recorded main generation has this system message");
    g->served++;
    *out = g;
    return 0;
  }
  const sg_replay_gen *m = fork_parent(rp, q);
  if (m == NULL)
    return sg_err_set(err, SG_ENOENT,
                      "replay: no recorded main generation wrote this reasoning prefix "
                      "(%zu bytes)",
                      q->prefix_len);
  return sg_replay_match_fork(rp, m, q->prefix_len, out, err);
}

/* Whether fork g belongs to main m's try: it began at or after m's start
 * and before any later try of the same main began (one the server cut and
 * sent again, or one a stop cut and the resumed run sent again: the same
 * task, iteration and id). Not "before m's end": an answer at the length
 * cap begins just after its main ended. Unknown times (older records)
 * match. */
static bool of_try(const sg_replay *rp, const sg_replay_gen *g, const sg_replay_gen *m) {
  if (g->started_us < 0 || m->started_us < 0)
    return true;
  if (g->started_us < m->started_us)
    return false;
  for (size_t i = 0; i < rp->n; i++) {
    const sg_replay_gen *t = &rp->gens[i];
    if (!t->fork && t->gen == m->gen && t->iteration == m->iteration &&
        strcmp(t->task, m->task) == 0 && t->started_us > m->started_us &&
        t->started_us <= g->started_us)
      return false;
  }
  return true;
}

int sg_replay_match_fork(const sg_replay *rp, const sg_replay_gen *m, size_t prefix_len,
                         const sg_replay_gen **out, sg_err *err) {
  sg_replay_query qq = {.prefix_len = prefix_len};
  const sg_replay_query *q = &qq;
  /* The recorded fork of that main at this prefix; else the one at the
   * longest prefix short of it: the nearest fork that knew no more. */
  const sg_replay_gen *best = NULL, *past = NULL;
  for (size_t i = 0; i < rp->n; i++) {
    const sg_replay_gen *g = &rp->gens[i];
    if (!g->fork || g->parent_gen != m->gen || strcmp(g->task, m->task) != 0 ||
        g->iteration != m->iteration || !of_try(rp, g, m))
      continue;
    if (g->prefix_bytes <= q->prefix_len) {
      if (best == NULL || g->prefix_bytes > best->prefix_bytes)
        best = g;
    } else if (g->prefix_bytes - q->prefix_len <= SG_REPLAY_FORK_SLACK_BYTES &&
               (past == NULL || g->prefix_bytes < past->prefix_bytes)) {
      past = g;
    }
  }
  /* Before every recorded fork of that main: the first one, if it started
   * within the slack (a fork starts a few tokens earlier or later as the
   * stream's timing varies). */
  if (best == NULL)
    best = past;
  if (best == NULL)
    return sg_err_set(err, SG_ENOENT,
                      "replay: no recorded fork of task %s iteration %d at or before "
                      "prefix %zu bytes, nor within %u bytes after it",
                      m->task, m->iteration, q->prefix_len, SG_REPLAY_FORK_SLACK_BYTES);
  *out = best;
  return 0;
}

/* ---- stops and resumes ------------------------------------------------------ */

/* Whether main m was sent by a new process of the run (`specgen run
 * --resume`): a resumed run's controllers number their generations from 1
 * again, so m's id is not above one its task already had in this process
 * (those started from from_us). A main sent again after the server cut it
 * (sg_ctl_restart.c) keeps its id too: the earlier try of the same
 * iteration with that id failed. */
static bool new_process(const sg_replay *rp, const sg_replay_gen *m, int64_t from_us) {
  bool higher = false;
  for (size_t i = 0; i < rp->n; i++) {
    const sg_replay_gen *g = &rp->gens[i];
    if (g == m || g->started_us < from_us || g->started_us >= m->started_us ||
        g->gen < m->gen || strcmp(g->task, m->task) != 0)
      continue;
    if (!g->fork && g->gen == m->gen && g->iteration == m->iteration &&
        strcmp(g->outcome, "failed") == 0)
      return false; /* a restart (the cut try's forks have higher ids) */
    higher = true;
  }
  return higher;
}

size_t sg_replay_resumes(const sg_replay *rp, sg_replay_resume **out) {
  sg_replay_resume *v = NULL;
  size_t n = 0;
  int64_t from = 0;
  for (;;) {
    const sg_replay_gen *first = NULL;
    for (size_t i = 0; i < rp->n; i++) {
      const sg_replay_gen *m = &rp->gens[i];
      if (!m->fork && m->started_us > from &&
          (first == NULL || m->started_us < first->started_us) && new_process(rp, m, from))
        first = m;
    }
    if (first == NULL)
      break;
    int64_t stop = from;
    for (size_t i = 0; i < rp->n; i++) {
      const sg_replay_gen *g = &rp->gens[i];
      int64_t end = g->started_us + (g->ended_us > 0 ? g->ended_us : 0);
      if (g->started_us >= from && g->started_us < first->started_us && end + 1 > stop)
        stop = end + 1;
    }
    v = sg_realloc(v, (n + 1) * sizeof *v);
    v[n++] = (sg_replay_resume){stop < first->started_us ? stop : first->started_us,
                                first->started_us};
    from = first->started_us;
  }
  *out = v;
  return n;
}
