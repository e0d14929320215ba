/* sg_yaml.h: the one YAML walker, for every configuration file specgen reads
 * (`specgen run --config`, `specgen sim --config`). It reads a deliberately
 * small subset of YAML with libyaml's event parser: one document holding a
 * mapping of keys to scalars, optionally to nested mappings (their keys
 * joined with dots: "gen: {mean_s: 4}" is "gen.mean_s") and to flat lists
 * of scalars. Everything else (aliases, a second document, nested lists, a
 * mapping or list as a key, NUL bytes) is refused with the file and line.
 * The caller gets each value, in order, with its dotted key and its origin
 * ("file:line"), and decides what it means.
 */
#ifndef SG_YAML_H
#define SG_YAML_H

#include "common/sg_error.h"

#include <stdbool.h>
#include <stddef.h>

typedef enum sg_yaml_kind {
  SG_YAML_SCALAR,      /* key: value */
  SG_YAML_LIST_START,  /* key: [ ... ] (value NULL); its items follow */
  SG_YAML_LIST_ITEM,   /* one scalar of the list */
} sg_yaml_kind;

typedef struct sg_yaml_value {
  sg_yaml_kind kind;
  const char *key;     /* dotted */
  const char *value;   /* the scalar; NULL for LIST_START */
  bool null;           /* a plain null: empty, "~", "null" */
  size_t line;         /* 1-based, of the value */
  size_t key_line;     /* of its key */
  const char *origin;  /* "file:line", for messages */
} sg_yaml_value;

typedef struct sg_yaml_opts {
  bool nested;         /* nested mappings as dotted keys; else refused */
  bool lists;          /* lists of scalars as values; else refused */
} sg_yaml_opts;

/* Walks text (len bytes; name is the file, for messages). on_value returns
 * 0, or < 0 with err set (origin included): the walk stops there. Returns
 * 0, on_value's error, or SG_EPARSE for YAML outside the subset. */
int sg_yaml_walk(const char *text, size_t len, const char *name,
                 const sg_yaml_opts *opts,
                 int (*on_value)(void *data, const sg_yaml_value *v, sg_err *err),
                 void *data, sg_err *err);

#endif
