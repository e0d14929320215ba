/* sg_search_evolve_opts.c: the `evolve` search's options (the header has
 * them): names of its dimensions and modes, defaults, the checks of each
 * option, and the parser of its "key=value,..." argument.
 */
#include "core/sg_search_evolve.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *sg_evolve_dim_name(sg_evolve_dim d) {
  static const char *const names[SG_EVOLVE_DIM__COUNT] = {"speedup", "length",
                                                          "hash", "verdict"};
  return (unsigned)d < SG_EVOLVE_DIM__COUNT ? names[d] : "unknown";
}

const char *sg_evolve_mode_name(sg_evolve_mode m) {
  static const char *const names[SG_EVOLVE_MODE__COUNT] = {
      "scratch", "explore", "exploit", "random"};
  return (unsigned)m < SG_EVOLVE_MODE__COUNT ? names[m] : "unknown";
}

/* ---- options ----------------------------------------------------------- */

void sg_evolve_opts_default(sg_evolve_opts *o) {
  memset(o, 0, sizeof *o);
  o->islands = 4;
  o->bins = 4;
  o->dims[0] = SG_EVOLVE_DIM_LENGTH;
  o->dims[1] = SG_EVOLVE_DIM_VERDICT;
  o->dims[2] = SG_EVOLVE_DIM_HASH;
  o->n_dims = 3;
  o->explore = 0.2;
  o->exploit = 0.7;
  o->top = 3;
  o->inspirations = 3;
  o->migrate = 10;
  o->migrants = 2;
  o->cap = 1000;
  o->mains = 1;
  o->failures = 3;
}

uint32_t sg_evolve_dim_bins(const sg_evolve_opts *o, sg_evolve_dim d) {
  return d == SG_EVOLVE_DIM_VERDICT ? SG_EVOLVE_VERDICT_BINS : o->bins;
}

uint64_t sg_evolve_opts_cells(const sg_evolve_opts *o) {
  uint64_t cells = 1;
  for (size_t i = 0; i < o->n_dims; i++)
    cells *= sg_evolve_dim_bins(o, o->dims[i]);
  return cells;
}

int sg_evolve_opts_check(const sg_evolve_opts *o, sg_err *err) {
  struct {
    const char *key;
    uint32_t v, lo, hi;
  } ranges[] = {
      {"islands", o->islands, 1, SG_EVOLVE_MAX_ISLANDS},
      {"bins", o->bins, 2, SG_EVOLVE_MAX_BINS},
      {"top", o->top, 1, 64},
      {"inspirations", o->inspirations, 0, SG_EVOLVE_MAX_INSPIRATIONS},
      {"migrate", o->migrate, 0, 1000000},
      {"migrants", o->migrants, 1, 64},
      {"cap", o->cap, 1, SG_EVOLVE_MAX_CAP},
      {"mains", o->mains, 1, SG_SEARCH_MAX_MAINS},
      {"failures", o->failures, 0, SG_EVOLVE_MAX_FAILURES},
  };
  for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
    if (ranges[i].v < ranges[i].lo || ranges[i].v > ranges[i].hi)
      return sg_err_set(err, SG_EINVAL,
                        "evolve: %s must be from %u to %u, got %u",
                        ranges[i].key, ranges[i].lo, ranges[i].hi,
                        ranges[i].v);
  if (!(o->explore >= 0 && o->explore <= 1))
    return sg_err_set(err, SG_EINVAL, "evolve: explore must be in [0, 1]");
  if (!(o->exploit >= 0 && o->exploit <= 1))
    return sg_err_set(err, SG_EINVAL, "evolve: exploit must be in [0, 1]");
  if (o->explore + o->exploit > 1 + 1e-9)
    return sg_err_set(err, SG_EINVAL,
                      "evolve: explore + exploit must be at most 1 (the rest "
                      "is random), got %g + %g",
                      o->explore, o->exploit);
  if (o->n_dims < 1 || o->n_dims > SG_EVOLVE_DIM__COUNT)
    return sg_err_set(err, SG_EINVAL, "evolve: features needs 1 to %d names",
                      SG_EVOLVE_DIM__COUNT);
  for (size_t i = 0; i < o->n_dims; i++) {
    if ((unsigned)o->dims[i] >= SG_EVOLVE_DIM__COUNT)
      return sg_err_set(err, SG_EINVAL, "evolve: features: bad dimension");
    for (size_t j = 0; j < i; j++)
      if (o->dims[j] == o->dims[i])
        return sg_err_set(err, SG_EINVAL, "evolve: features: \"%s\" twice",
                          sg_evolve_dim_name(o->dims[i]));
  }
  if (sg_evolve_opts_cells(o) > SG_EVOLVE_MAX_CELLS)
    return sg_err_set(err, SG_EINVAL,
                      "evolve: features and bins make %llu cells per island "
                      "(at most %d)",
                      (unsigned long long)sg_evolve_opts_cells(o), SG_EVOLVE_MAX_CELLS);
  return 0;
}

static int parse_u32(const char *key, const char *v, uint32_t *out,
                     sg_err *err) {
  char *end = NULL;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (*v < '0' || *v > '9' || errno != 0 || *end != '\0' || x > UINT32_MAX)
    return sg_err_set(err, SG_EINVAL,
                      "evolve: %s needs a whole number, got \"%s\"", key, v);
  *out = (uint32_t)x;
  return 0;
}

static int parse_ratio(const char *key, const char *v, double *out,
                       sg_err *err) {
  char *end = NULL;
  errno = 0;
  double x = strtod(v, &end);
  if (end == v || errno != 0 || *end != '\0' || !(x >= 0 && x <= 1))
    return sg_err_set(err, SG_EINVAL,
                      "evolve: %s needs a number in [0, 1], got \"%s\"", key,
                      v);
  *out = x;
  return 0;
}

static int parse_features(sg_evolve_opts *o, char *v, sg_err *err) {
  o->n_dims = 0;
  for (char *save = NULL, *tok = strtok_r(v, "+", &save); tok != NULL;
       tok = strtok_r(NULL, "+", &save)) {
    sg_evolve_dim d = SG_EVOLVE_DIM__COUNT;
    for (int i = 0; i < SG_EVOLVE_DIM__COUNT; i++)
      if (strcmp(tok, sg_evolve_dim_name((sg_evolve_dim)i)) == 0)
        d = (sg_evolve_dim)i;
    if (d == SG_EVOLVE_DIM__COUNT)
      return sg_err_set(err, SG_EINVAL,
                        "evolve: features: unknown \"%s\" (known: speedup, "
                        "length, hash, verdict)",
                        tok);
    if (o->n_dims == SG_EVOLVE_DIM__COUNT)
      return sg_err_set(err, SG_EINVAL, "evolve: features: too many");
    o->dims[o->n_dims++] = d;
  }
  return 0;
}

int sg_evolve_opts_parse(sg_evolve_opts *o, const char *arg, sg_err *err) {
  if (arg == NULL || *arg == '\0')
    return sg_evolve_opts_check(o, err);
  if (strlen(arg) > 1024)
    return sg_err_set(err, SG_EINVAL, "evolve: options too long");
  char buf[1025];
  snprintf(buf, sizeof buf, "%s", arg);
  int rc = 0;
  for (char *save = NULL, *kv = strtok_r(buf, ",", &save);
       kv != NULL && rc == 0; kv = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(kv, '=');
    if (eq == NULL || eq == kv || eq[1] == '\0')
      return sg_err_set(err, SG_EINVAL,
                        "evolve: option \"%s\" is not key=value", kv);
    *eq = '\0';
    const char *k = kv, *v = eq + 1;
    struct {
      const char *key;
      uint32_t *dst;
    } ints[] = {{"islands", &o->islands},
                {"bins", &o->bins},
                {"top", &o->top},
                {"inspirations", &o->inspirations},
                {"migrate", &o->migrate},
                {"migrants", &o->migrants},
                {"cap", &o->cap},
                {"mains", &o->mains},
                {"failures", &o->failures}};
    bool known = false;
    for (size_t i = 0; i < sizeof ints / sizeof ints[0] && !known; i++)
      if (strcmp(k, ints[i].key) == 0) {
        known = true;
        rc = parse_u32(k, v, ints[i].dst, err);
      }
    if (known)
      continue;
    if (strcmp(k, "explore") == 0)
      rc = parse_ratio(k, v, &o->explore, err);
    else if (strcmp(k, "exploit") == 0)
      rc = parse_ratio(k, v, &o->exploit, err);
    else if (strcmp(k, "features") == 0)
      rc = parse_features(o, eq + 1, err);
    else
      return sg_err_set(err, SG_EINVAL,
                        "evolve: unknown option \"%s\" (known: islands, bins, "
                        "features, explore, exploit, top, inspirations, "
                        "migrate, migrants, cap, mains, failures)",
                        k);
  }
  if (rc < 0)
    return rc;
  return sg_evolve_opts_check(o, err);
}

