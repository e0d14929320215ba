/* sg_termination.c: the termination criteria and their registry.
 *
 * A criterion is a plugin table plus the state its init built. The four
 * built-ins have no state. The registry is plain data the caller owns, so two
 * runtimes in one process (tests, sim) never share a criterion by accident.
 */
#include "core/sg_termination.h"

#include "common/sg_alloc.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sg_termination {
  const sg_termination_plugin *plugin;
  void *state;
};

/* first-valid: the candidate was profiled, so it is valid: take it. */
static bool first_valid_decide(void *st, const sg_termination_history *h,
                               double speedup) {
  (void)st;
  (void)h;
  (void)speedup;
  return true;
}

/* hist-avg: strictly above the mean of the history (the paper's default).
 * A NAN speedup (not measured) never wins. */
static bool hist_avg_decide(void *st, const sg_termination_history *h,
                            double speedup) {
  (void)st;
  return speedup > h->mean;
}

static bool hist_best_decide(void *st, const sg_termination_history *h,
                             double speedup) {
  (void)st;
  return speedup > h->best;
}

static bool none_decide(void *st, const sg_termination_history *h,
                        double speedup) {
  (void)st;
  (void)h;
  (void)speedup;
  return false;
}

static const sg_termination_plugin builtin_first_valid = {
    "first-valid", NULL, first_valid_decide, NULL};
static const sg_termination_plugin builtin_hist_avg = {
    "hist-avg", NULL, hist_avg_decide, NULL};
static const sg_termination_plugin builtin_hist_best = {
    "hist-best", NULL, hist_best_decide, NULL};
static const sg_termination_plugin builtin_none = {"none", NULL, none_decide,
                                                   NULL};

void sg_termination_registry_init(sg_termination_registry *reg) {
  memset(reg, 0, sizeof *reg);
  reg->plugins[reg->n++] = &builtin_first_valid;
  reg->plugins[reg->n++] = &builtin_hist_avg;
  reg->plugins[reg->n++] = &builtin_hist_best;
  reg->plugins[reg->n++] = &builtin_none;
}

static bool name_ok(const char *name) {
  if (name == NULL || name[0] == '\0' || strlen(name) > 64)
    return false;
  for (const char *p = name; *p; p++) {
    char ch = *p;
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
          (ch >= '0' && ch <= '9') || ch == '-' || ch == '_'))
      return false;
  }
  return true;
}

const sg_termination_plugin *
sg_termination_find(const sg_termination_registry *reg, const char *name) {
  for (size_t i = 0; i < reg->n; i++)
    if (strcmp(reg->plugins[i]->name, name) == 0)
      return reg->plugins[i];
  return NULL;
}

int sg_termination_register(sg_termination_registry *reg,
                            const sg_termination_plugin *plugin, sg_err *err) {
  if (plugin == NULL || !name_ok(plugin->name))
    return sg_err_set(err, SG_EINVAL,
                      "termination plugin: name must be 1-64 letters, digits, "
                      "'-' or '_'");
  if (plugin->decide == NULL)
    return sg_err_set(err, SG_EINVAL, "termination plugin %s: no decide",
                      plugin->name);
  if (sg_termination_find(reg, plugin->name) != NULL)
    return sg_err_set(err, SG_ESTATE,
                      "termination plugin %s: already registered",
                      plugin->name);
  if (reg->n >= SG_TERMINATION_MAX_PLUGINS)
    return sg_err_set(err, SG_EFULL,
                      "termination plugin %s: registry full (%d plugins)",
                      plugin->name, SG_TERMINATION_MAX_PLUGINS);
  reg->plugins[reg->n++] = plugin;
  return 0;
}

int sg_termination_new(const sg_termination_registry *reg, const char *spec,
                       sg_termination **out, sg_err *err) {
  *out = NULL;
  if (spec == NULL || spec[0] == '\0')
    return sg_err_set(err, SG_EINVAL, "termination: empty criterion");
  const char *colon = strchr(spec, ':');
  size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
  char name[72];
  if (nlen >= sizeof name)
    return sg_err_set(err, SG_EINVAL, "termination: name too long in \"%.80s\"",
                      spec);
  memcpy(name, spec, nlen);
  name[nlen] = '\0';
  const sg_termination_plugin *p = sg_termination_find(reg, name);
  if (p == NULL) {
    char known[512] = "";
    size_t off = 0;
    for (size_t i = 0; i < reg->n && off < sizeof known; i++)
      off += (size_t)snprintf(known + off, sizeof known - off, "%s%s",
                              i ? ", " : "", reg->plugins[i]->name);
    return sg_err_set(err, SG_ENOENT,
                      "termination: unknown criterion \"%s\" (known: %s)",
                      name, known);
  }
  void *state = NULL;
  if (p->init != NULL) {
    int rc = p->init(&state, colon ? colon + 1 : NULL, err);
    if (rc < 0) {
      sg_err_prefix(err, "termination %s", p->name);
      return rc;
    }
  } else if (colon != NULL) {
    return sg_err_set(err, SG_EINVAL,
                      "termination %s: takes no argument (got \"%s\")",
                      p->name, colon + 1);
  }
  sg_termination *t = sg_calloc(1, sizeof *t);
  t->plugin = p;
  t->state = state;
  *out = t;
  return 0;
}

void sg_termination_free(sg_termination *t) {
  if (t == NULL)
    return;
  if (t->plugin->free != NULL)
    t->plugin->free(t->state);
  free(t);
}

const char *sg_termination_name(const sg_termination *t) {
  return t->plugin->name;
}

bool sg_termination_decide(const sg_termination *t,
                           const sg_termination_history *h, double speedup) {
  assert(h->n >= 1 && h->speedups != NULL);
  if (isnan(speedup))
    return false; /* nothing measured, nothing to beat the history with */
  return t->plugin->decide(t->state, h, speedup);
}

void sg_speedup_history_init(sg_speedup_history *h) {
  memset(h, 0, sizeof *h);
  h->cap = 16;
  h->v = sg_malloc(h->cap * sizeof *h->v);
  h->v[h->n++] = 0.0; /* the history starts as {0} */
  h->sum = 0.0;
  h->best = 0.0;
}

void sg_speedup_history_free(sg_speedup_history *h) {
  free(h->v);
  memset(h, 0, sizeof *h);
}

void sg_speedup_history_add(sg_speedup_history *h, double speedup) {
  assert(!isnan(speedup));
  if (h->n == h->cap) {
    h->cap *= 2;
    h->v = sg_realloc(h->v, h->cap * sizeof *h->v);
  }
  h->v[h->n++] = speedup;
  h->sum += speedup;
  if (speedup > h->best)
    h->best = speedup;
}

sg_termination_history sg_speedup_history_view(const sg_speedup_history *h) {
  assert(h->n >= 1);
  sg_termination_history v = {h->v, h->n, h->sum / (double)h->n, h->best};
  return v;
}
