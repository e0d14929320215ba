/* sg_yaml.c: the YAML walker (sg_yaml.h): a state machine over libyaml's
 * events. A stack holds, per open mapping, the dotted prefix of its keys and
 * whether a key or a value comes next; a list is open at most at one place
 * (its items must be scalars). */
#include "config/sg_yaml.h"

#include <stdio.h>
#include <string.h>
#include <yaml.h>

#define DEPTH_MAX 8
#define KEY_MAX 256

typedef struct walk {
  const char *name;
  const sg_yaml_opts *o;
  int (*on_value)(void *, const sg_yaml_value *, sg_err *);
  void *data;
  char prefix[DEPTH_MAX][KEY_MAX];
  bool expect_key[DEPTH_MAX];
  int depth;            /* -1: before the top mapping */
  bool after;           /* the top mapping ended */
  bool in_list;
  size_t docs;
  char key[KEY_MAX];    /* the key whose value comes next (dotted) */
  size_t key_line;
} walk;

/* A plain (unquoted) null: "", "~", "null". */
static bool is_null(const yaml_event_t *ev) {
  if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
    return false;
  const char *s = (const char *)ev->data.scalar.value;
  return s[0] == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
         strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

static int emit(walk *w, sg_yaml_kind kind, const char *value, bool null, size_t line,
                const char *origin, sg_err *err) {
  sg_yaml_value v = {kind, w->key, value, null, line, w->key_line, origin};
  return w->on_value(w->data, &v, err);
}

static int on_mapping_start(walk *w, const char *origin, sg_err *err) {
  if (w->in_list)
    return sg_err_set(err, SG_EPARSE, "%s: key \"%s\": nested mappings are not supported",
                      origin, w->key);
  if (w->depth < 0) {
    w->depth = 0;
    w->prefix[0][0] = '\0';
    w->expect_key[0] = true;
    return 0;
  }
  if (w->expect_key[w->depth])
    return sg_err_set(err, SG_EPARSE, "%s: a key must be a plain name", origin);
  if (!w->o->nested)
    return sg_err_set(err, SG_EPARSE, "%s: key \"%s\": nested mappings are not supported",
                      origin, w->key);
  if (w->depth + 1 >= DEPTH_MAX)
    return sg_err_set(err, SG_EPARSE, "%s: nested too deep", origin);
  w->expect_key[w->depth] = true; /* the parent's value is this mapping */
  w->depth++;
  snprintf(w->prefix[w->depth], KEY_MAX, "%s", w->key);
  w->expect_key[w->depth] = true;
  return 0;
}

static int on_sequence_start(walk *w, size_t line, const char *origin, sg_err *err) {
  if (w->depth < 0)
    return sg_err_set(err, SG_EPARSE, "%s: expected a mapping of keys (lists are not "
                      "supported at the top)", origin);
  if (w->in_list)
    return sg_err_set(err, SG_EPARSE, "%s: key \"%s\": nested lists are not supported",
                      origin, w->key);
  if (w->expect_key[w->depth])
    return sg_err_set(err, SG_EPARSE, "%s: a key must be a plain name", origin);
  if (!w->o->lists)
    return sg_err_set(err, SG_EPARSE, "%s: key \"%s\": lists are not supported", origin,
                      w->key);
  w->in_list = true;
  return emit(w, SG_YAML_LIST_START, NULL, false, line, origin, err);
}

static int on_scalar(walk *w, const yaml_event_t *ev, size_t line, const char *origin,
                     sg_err *err) {
  const char *s = (const char *)ev->data.scalar.value;
  if (strlen(s) != ev->data.scalar.length)
    return sg_err_set(err, SG_EPARSE, "%s: a NUL byte in a scalar", origin);
  if (w->depth < 0) /* an empty document has no keys */
    return is_null(ev) ? 0
                       : sg_err_set(err, SG_EPARSE, "%s: expected a mapping of keys",
                                    origin);
  if (w->after)
    return sg_err_set(err, SG_EPARSE, "%s: text after the mapping", origin);
  if (w->in_list)
    return emit(w, SG_YAML_LIST_ITEM, s, is_null(ev), line, origin, err);
  if (w->expect_key[w->depth]) {
    const char *pre = w->prefix[w->depth];
    int n = pre[0] ? snprintf(w->key, KEY_MAX, "%s.%s", pre, s)
                   : snprintf(w->key, KEY_MAX, "%s", s);
    if (n < 0 || n >= KEY_MAX)
      return sg_err_set(err, SG_EPARSE, "%s: key too long", origin);
    w->key_line = line;
    w->expect_key[w->depth] = false;
    return 0;
  }
  w->expect_key[w->depth] = true;
  return emit(w, SG_YAML_SCALAR, s, is_null(ev), line, origin, err);
}

/* One event; done set at the end of the stream. */
static int on_event(walk *w, const yaml_event_t *ev, bool *done, sg_err *err) {
  size_t line = ev->start_mark.line + 1;
  char origin[SG_ERR_MSG_MAX / 4];
  snprintf(origin, sizeof origin, "%s:%zu", w->name, line);
  switch (ev->type) {
  case YAML_STREAM_END_EVENT:
    *done = true;
    return 0;
  case YAML_DOCUMENT_START_EVENT:
    if (++w->docs > 1)
      return sg_err_set(err, SG_EPARSE, "%s: a second document (a configuration is one)",
                        origin);
    return 0;
  case YAML_ALIAS_EVENT:
    return sg_err_set(err, SG_EPARSE, "%s: aliases are not supported", origin);
  case YAML_MAPPING_START_EVENT:
    return on_mapping_start(w, origin, err);
  case YAML_MAPPING_END_EVENT:
    if (--w->depth < 0)
      w->after = true;
    return 0;
  case YAML_SEQUENCE_START_EVENT:
    return on_sequence_start(w, line, origin, err);
  case YAML_SEQUENCE_END_EVENT:
    w->in_list = false;
    w->expect_key[w->depth] = true;
    return 0;
  case YAML_SCALAR_EVENT:
    return on_scalar(w, ev, line, origin, err);
  default:
    return 0;
  }
}

int sg_yaml_walk(const char *text, size_t len, const char *name,
                 const sg_yaml_opts *opts,
                 int (*on_value)(void *data, const sg_yaml_value *v, sg_err *err),
                 void *data, sg_err *err) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser))
    return sg_err_set(err, SG_EIO, "%s: cannot start the YAML parser", name);
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  walk w;
  memset(&w, 0, sizeof w);
  w.name = name;
  w.o = opts;
  w.on_value = on_value;
  w.data = data;
  w.depth = -1;
  int rc = 0;
  bool done = false;
  while (!done && rc == 0) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&parser, &ev)) {
      rc = sg_err_set(err, SG_EPARSE, "%s:%zu: %s%s%s", name,
                      parser.problem_mark.line + 1,
                      parser.problem ? parser.problem : "malformed YAML",
                      parser.context ? " " : "", parser.context ? parser.context : "");
      break;
    }
    rc = on_event(&w, &ev, &done, err);
    yaml_event_delete(&ev);
  }
  yaml_parser_delete(&parser);
  return rc;
}
