/* sg_termination.h: termination criteria, the rule that ends an iteration
 * early when a speculative (or main) candidate is good enough (pure).
 *
 * The controller asks a criterion once per profiled candidate: "given the
 * workflow's history of profiled speedups, does this candidate end the
 * iteration?". The history is the workflow's, across iterations, and starts as
 * {0} (so under hist-avg the first kernel that is faster than nothing wins).
 * The candidate is appended to the history after the decision, whatever it is.
 *
 * Built-in criteria (the paper's, from fastest to most demanding):
 *   first-valid  any profiled (hence valid) candidate ends the iteration
 *   hist-avg     speedup > mean of the history (the default)
 *   hist-best    speedup > best of the history
 *   none         never end early: the main generation is always waited for
 *
 * Users add their own through the plugin table below, registered in an
 * sg_termination_registry (no global state: each runtime owns a registry).
 * Example (docs/core.md has it in full):
 *
 *   static bool above_ratio_decide(void *st, const sg_termination_history *h,
 *                                  double speedup) {
 *     return speedup > h->best * *(double *)st;
 *   }
 *   static const sg_termination_plugin above_ratio = {
 *     "above-ratio", above_ratio_init, above_ratio_decide, above_ratio_free};
 *   sg_termination_register(&reg, &above_ratio, &err);
 *   sg_termination_new(&reg, "above-ratio:0.9", &crit, &err);
 *
 * A spec string is "NAME" or "NAME:ARG"; ARG goes to the plugin's init.
 */
#ifndef SG_TERMINATION_H
#define SG_TERMINATION_H

#include "common/sg_error.h"

#include <stdbool.h>
#include <stddef.h>

/* The history a criterion decides against (borrowed, read-only). */
typedef struct sg_termination_history {
  const double *speedups;  /* profiled speedups, oldest first; speedups[0]=0 */
  size_t n;                /* at least 1 */
  double mean;             /* of speedups[0..n) */
  double best;             /* max of speedups[0..n) */
} sg_termination_history;

/* A criterion's implementation: a table of functions.
 *   name    the spec name ("hist-avg"); letters, digits, '-', '_'
 *   init    (may be NULL) builds the plugin's state from ARG (NULL when the
 *           spec had none) into *state; returns 0 or a negative SG_E* with
 *           err filled (e.g. a bad ARG)
 *   decide  true: end the iteration with this candidate. Must be pure: same
 *           history and speedup, same answer.
 *   free    (may be NULL) frees the state from init */
typedef struct sg_termination_plugin {
  const char *name;
  int (*init)(void **state, const char *arg, sg_err *err);
  bool (*decide)(void *state, const sg_termination_history *h,
                 double speedup);
  void (*free)(void *state);
} sg_termination_plugin;

#define SG_TERMINATION_MAX_PLUGINS 32

/* The criteria a runtime knows, by name. Plain data: embed it anywhere. */
typedef struct sg_termination_registry {
  const sg_termination_plugin *plugins[SG_TERMINATION_MAX_PLUGINS];
  size_t n;
} sg_termination_registry;

/* A registry holding the four built-ins. */
void sg_termination_registry_init(sg_termination_registry *reg);

/* Adds a plugin (borrowed: it must outlive the registry). SG_EINVAL for a
 * bad name or a missing decide, SG_ESTATE for a name already registered,
 * SG_EFULL when SG_TERMINATION_MAX_PLUGINS are registered. */
int sg_termination_register(sg_termination_registry *reg,
                            const sg_termination_plugin *plugin, sg_err *err);

/* The plugin called name (no ":ARG"), or NULL. */
const sg_termination_plugin *
sg_termination_find(const sg_termination_registry *reg, const char *name);

/* One instance of a criterion (plugin + its state). */
typedef struct sg_termination sg_termination;

/* Builds the criterion a spec ("NAME" or "NAME:ARG") names; *out is freed
 * with sg_termination_free. SG_ENOENT (message lists the known names) for an
 * unknown NAME; whatever init returns for a bad ARG. */
int sg_termination_new(const sg_termination_registry *reg, const char *spec,
                       sg_termination **out, sg_err *err);
void sg_termination_free(sg_termination *t);

/* The criterion's name ("hist-avg"). */
const char *sg_termination_name(const sg_termination *t);

/* Asks the criterion. */
bool sg_termination_decide(const sg_termination *t,
                           const sg_termination_history *h, double speedup);

/* A growable history with its mean and best kept current; starts as {0}. */
typedef struct sg_speedup_history {
  double *v;
  size_t n, cap;
  double sum, best;
} sg_speedup_history;

void sg_speedup_history_init(sg_speedup_history *h);
void sg_speedup_history_free(sg_speedup_history *h);
void sg_speedup_history_add(sg_speedup_history *h, double speedup);
/* A read-only view of h for sg_termination_decide (valid until h changes). */
sg_termination_history sg_speedup_history_view(const sg_speedup_history *h);

#endif
