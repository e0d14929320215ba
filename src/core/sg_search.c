/* sg_search.c: the workflow history and the built-in searches (refine,
 * best-of-n), behind one table so evolve and an external exec: search can be
 * added without touching the controller.
 *
 * A search only describes prompts (which kernel to improve, which feedback
 * items to show); rendering text is the runtime's job. Everything here is
 * deterministic: same history, same plan.
 */
#include "core/sg_search.h"
#include "core/sg_search_evolve.h"

#include "common/sg_alloc.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *sg_gen_kind_name(sg_gen_kind k) {
  static const char *const names[SG_GEN__COUNT] = {"main", "spec"};
  return (unsigned)k < SG_GEN__COUNT ? names[k] : "unknown";
}

const char *sg_prompt_item_kind_name(sg_prompt_item_kind k) {
  static const char *const names[SG_ITEM__COUNT] = {"kernel", "profile",
                                                    "failure"};
  return (unsigned)k < SG_ITEM__COUNT ? names[k] : "unknown";
}

/* ---- history ---------------------------------------------------------- */

void sg_history_init(sg_history *h) {
  memset(h, 0, sizeof *h);
  sg_speedup_history_init(&h->speedups);
}

void sg_history_free(sg_history *h) {
  for (size_t i = 0; i < h->n; i++) {
    free(h->v[i].source);
    free(h->v[i].validate_message);
    free(h->v[i].profile_text);
  }
  free(h->v);
  sg_speedup_history_free(&h->speedups);
  memset(h, 0, sizeof *h);
}

static bool is_failure(const sg_kernel *k);

size_t sg_history_compact(sg_history *h, size_t from, size_t end) {
  assert(from <= end && end <= h->n);
  /* the newest failures refine may still show, searched back to `from`
   * only: those before it were kept by an earlier call */
  size_t keep_from = from;
  int failures = 0;
  for (size_t i = h->n; i > from && failures < SG_SEARCH_RECENT_FAILURES; i--)
    if (is_failure(&h->v[i - 1])) {
      keep_from = i - 1;
      failures++;
    }
  size_t cursor = end;
  for (size_t i = from; i < end; i++) {
    sg_kernel *k = &h->v[i];
    if (k->id == h->best_id)
      continue;
    if (is_failure(k) && i >= keep_from) {
      if (cursor == end)
        cursor = i;
      continue;
    }
    free(k->source);
    free(k->validate_message);
    free(k->profile_text);
    k->source = k->validate_message = k->profile_text = NULL;
    k->source_len = 0;
    k->compacted = true;
  }
  return cursor;
}

static char *copy_capped(const char *s, size_t len, size_t cap) {
  if (s == NULL)
    return NULL;
  return sg_strndup(s, len < cap ? len : cap);
}

sg_kernel *sg_history_add(sg_history *h, uint32_t iteration,
                          sg_gen_kind origin, uint64_t gen,
                          uint64_t prefix_len, sg_extract_outcome extract,
                          const char *source, size_t len) {
  if (h->n == h->cap) {
    h->cap = h->cap ? h->cap * 2 : 16;
    h->v = sg_realloc(h->v, h->cap * sizeof *h->v);
  }
  sg_kernel *k = &h->v[h->n];
  memset(k, 0, sizeof *k);
  k->id = (uint64_t)h->n + 1;
  k->iteration = iteration;
  k->origin = origin;
  k->gen = gen;
  k->prefix_len = prefix_len;
  k->extract = extract;
  if (extract == SG_EXTRACT_FOUND) {
    size_t n = source == NULL ? 0 : len;
    if (n > SG_KERNEL_SOURCE_MAX)
      n = SG_KERNEL_SOURCE_MAX;
    k->source = sg_strndup(source ? source : "", n);
    k->source_len = n;
  }
  k->validate_status = SG_EVAL__COUNT; /* none yet */
  k->speedup = NAN;
  h->n++;
  return k;
}

sg_kernel *sg_history_get(const sg_history *h, uint64_t id) {
  if (id == 0 || id > h->n)
    return NULL;
  sg_kernel *k = &h->v[id - 1];
  assert(k->id == id);
  return k;
}

void sg_history_validated(sg_history *h, uint64_t id, sg_eval_status status,
                          double speedup, const char *message) {
  sg_kernel *k = sg_history_get(h, id);
  assert(k != NULL && !k->validated);
  k->validated = true;
  k->validate_status = status;
  if (!isnan(speedup))
    k->speedup = speedup;
  if (message != NULL)
    k->validate_message =
        copy_capped(message, strlen(message), SG_KERNEL_MESSAGE_MAX);
}

void sg_history_profiled(sg_history *h, uint64_t id, double speedup,
                         const char *profile_text) {
  sg_kernel *k = sg_history_get(h, id);
  assert(k != NULL && k->validated && k->validate_status == SG_EVAL_OK &&
         !k->profiled);
  k->profiled = true;
  if (!isnan(speedup))
    k->speedup = speedup;
  if (profile_text != NULL)
    k->profile_text =
        copy_capped(profile_text, strlen(profile_text), SG_KERNEL_MESSAGE_MAX);
  if (isnan(k->speedup))
    return; /* profiled, but no speedup measured: nothing to rank */
  sg_speedup_history_add(&h->speedups, k->speedup);
  sg_kernel *best = sg_history_get(h, h->best_id);
  if (best == NULL || k->speedup > best->speedup)
    h->best_id = id;
}

/* ---- built-in searches ------------------------------------------------- */

static bool is_failure(const sg_kernel *k) {
  if (k->dropped)
    return false;
  if (k->extract != SG_EXTRACT_FOUND)
    return true;
  return k->validated && k->validate_status != SG_EVAL_OK &&
         k->validate_status != SG_EVAL_ABORTED &&
         k->validate_status != SG_EVAL_INFRA_ERROR;
}

static void push_item(sg_prompt *p, sg_prompt_item_kind kind, uint64_t id) {
  if (p->n_items >= SG_PROMPT_MAX_ITEMS)
    return;
  p->items[p->n_items].kind = kind;
  p->items[p->n_items].kernel = id;
  p->n_items++;
}

/* The refinement prompt: the best kernel with its profile, then the most
 * recent failures, newest first, so the LLM sees what broke last. */
static void refine_prompt(const sg_history *h, sg_prompt *p) {
  memset(p, 0, sizeof *p);
  const sg_kernel *best = sg_history_get(h, h->best_id);
  if (best != NULL) {
    p->base_kernel = best->id;
    push_item(p, SG_ITEM_KERNEL, best->id);
    if (best->profile_text != NULL)
      push_item(p, SG_ITEM_PROFILE, best->id);
  }
  int failures = 0;
  for (size_t i = h->n; i > 0 && failures < SG_SEARCH_RECENT_FAILURES; i--) {
    if (is_failure(&h->v[i - 1])) {
      push_item(p, SG_ITEM_FAILURE, h->v[i - 1].id);
      failures++;
    }
  }
}

static int refine_next(void *state, const sg_history *h, uint32_t iteration,
                       sg_search_plan *plan, sg_err *err) {
  (void)state;
  (void)iteration;
  (void)err;
  refine_prompt(h, &plan->prompts[0]);
  plan->n = 1;
  return 0;
}

static int parse_count(const char *arg, long lo, long hi, long *out) {
  if (arg == NULL || *arg == '\0')
    return -1;
  char *end = NULL;
  errno = 0;
  long v = strtol(arg, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

static int best_of_n_init(void **state, const char *arg, uint64_t seed,
                          sg_err *err) {
  (void)seed;
  long n = 4;
  if (arg != NULL && parse_count(arg, 1, SG_SEARCH_MAX_MAINS, &n) < 0)
    return sg_err_set(err, SG_EINVAL,
                      "best-of-n: N must be an integer from 1 to %d, got "
                      "\"%s\"",
                      SG_SEARCH_MAX_MAINS, arg);
  size_t *st = sg_malloc(sizeof *st);
  *st = (size_t)n;
  *state = st;
  return 0;
}

/* best-of-n: N independent reasoning generations from the same prompt, the
 * pattern the prior systems use, kept as a baseline. */
static int best_of_n_next(void *state, const sg_history *h,
                          uint32_t iteration, sg_search_plan *plan,
                          sg_err *err) {
  (void)iteration;
  (void)err;
  size_t n = *(size_t *)state;
  refine_prompt(h, &plan->prompts[0]);
  for (size_t i = 1; i < n; i++)
    plan->prompts[i] = plan->prompts[0];
  plan->n = n;
  return 0;
}

static void free_state(void *state) { free(state); }

static const sg_search_ops builtin_refine = {"refine", NULL, refine_next, NULL};
static const sg_search_ops builtin_best_of_n = {"best-of-n", best_of_n_init,
                                                best_of_n_next, free_state};

/* ---- registry and instances --------------------------------------------- */

struct sg_search {
  const sg_search_ops *ops;
  void *state;
};

void sg_search_registry_init(sg_search_registry *reg) {
  memset(reg, 0, sizeof *reg);
  reg->algos[reg->n++] = &builtin_refine;
  reg->algos[reg->n++] = &builtin_best_of_n;
  reg->algos[reg->n++] = &sg_search_evolve_ops;
}

static const sg_search_ops *find_algo(const sg_search_registry *reg,
                                      const char *name) {
  for (size_t i = 0; i < reg->n; i++)
    if (strcmp(reg->algos[i]->name, name) == 0)
      return reg->algos[i];
  return NULL;
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

int sg_search_register(sg_search_registry *reg, const sg_search_ops *ops,
                       sg_err *err) {
  if (ops == NULL || !name_ok(ops->name))
    return sg_err_set(err, SG_EINVAL,
                      "search: name must be 1-64 letters, digits, '-' or '_'");
  if (ops->next == NULL)
    return sg_err_set(err, SG_EINVAL, "search %s: no next", ops->name);
  if (find_algo(reg, ops->name) != NULL)
    return sg_err_set(err, SG_ESTATE, "search %s: already registered",
                      ops->name);
  if (reg->n >= SG_SEARCH_MAX_ALGOS)
    return sg_err_set(err, SG_EFULL, "search %s: registry full (%d)",
                      ops->name, SG_SEARCH_MAX_ALGOS);
  reg->algos[reg->n++] = ops;
  return 0;
}

int sg_search_new(const sg_search_registry *reg, const char *spec,
                  uint64_t seed, sg_search **out, sg_err *err) {
  *out = NULL;
  if (spec == NULL || spec[0] == '\0')
    return sg_err_set(err, SG_EINVAL, "search: empty name");
  const char *colon = strchr(spec, ':');
  size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
  char name[72];
  if (nlen >= sizeof name)
    return sg_err_set(err, SG_EINVAL, "search: name too long in \"%.80s\"",
                      spec);
  memcpy(name, spec, nlen);
  name[nlen] = '\0';
  const sg_search_ops *ops = find_algo(reg, name);
  if (ops == NULL) {
    char known[512] = "";
    size_t off = 0;
    for (size_t i = 0; i < reg->n && off < sizeof known; i++)
      off += (size_t)snprintf(known + off, sizeof known - off, "%s%s",
                              i ? ", " : "", reg->algos[i]->name);
    return sg_err_set(err, SG_ENOENT, "search: unknown search \"%s\" (known: %s)",
                      name, known);
  }
  void *state = NULL;
  if (ops->init != NULL) {
    int rc = ops->init(&state, colon ? colon + 1 : NULL, seed, err);
    if (rc < 0)
      return rc;
  } else if (colon != NULL) {
    return sg_err_set(err, SG_EINVAL, "search %s: takes no argument (got \"%s\")",
                      ops->name, colon + 1);
  }
  sg_search *s = sg_calloc(1, sizeof *s);
  s->ops = ops;
  s->state = state;
  *out = s;
  return 0;
}

void sg_search_free(sg_search *s) {
  if (s == NULL)
    return;
  if (s->ops->free != NULL)
    s->ops->free(s->state);
  free(s);
}

const char *sg_search_name(const sg_search *s) { return s->ops->name; }

int sg_search_next(sg_search *s, const sg_history *h, uint32_t iteration,
                   sg_search_plan *plan, sg_err *err) {
  memset(plan, 0, sizeof *plan);
  int rc = s->ops->next(s->state, h, iteration, plan, err);
  if (rc < 0)
    return rc;
  /* A plugin's plan is checked here, once, so the controller can trust it. */
  if (plan->n < 1 || plan->n > SG_SEARCH_MAX_MAINS)
    return sg_err_set(err, SG_ERANGE,
                      "search %s: plan has %zu main generations (1..%d)",
                      s->ops->name, plan->n, SG_SEARCH_MAX_MAINS);
  for (size_t i = 0; i < plan->n; i++) {
    const sg_prompt *p = &plan->prompts[i];
    if (p->base_kernel != 0 && sg_history_get(h, p->base_kernel) == NULL)
      return sg_err_set(err, SG_ERANGE, "search %s: prompt %zu: no kernel %llu",
                        s->ops->name, i, (unsigned long long)p->base_kernel);
    if (p->n_items > SG_PROMPT_MAX_ITEMS)
      return sg_err_set(err, SG_ERANGE, "search %s: prompt %zu: %zu items",
                        s->ops->name, i, p->n_items);
    for (size_t j = 0; j < p->n_items; j++)
      if ((unsigned)p->items[j].kind >= SG_ITEM__COUNT ||
          sg_history_get(h, p->items[j].kernel) == NULL)
        return sg_err_set(err, SG_ERANGE,
                          "search %s: prompt %zu item %zu: bad kind or kernel",
                          s->ops->name, i, j);
  }
  return 0;
}
