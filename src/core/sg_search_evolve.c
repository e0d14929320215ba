/* sg_search_evolve.c: the `evolve` search (see the header): a program
 * database with islands, each a MAP-Elites grid, after OpenEvolve's.
 *
 * How it works. The database is one array of at most `cap` program slots;
 * each slot is one kernel on one island (a migrant is a second slot of the
 * same kernel on another island). Each island has a grid of cells; a cell
 * holds the slot index of its elite (+1, 0: empty). A program that does not
 * win its cell stays in the database as a non-elite (random draws and the
 * cap see it) until the cap pushes it out.
 *
 * Invariants (asserted): an elite's slot is live, on its island, in its
 * cell; no island holds a kernel twice; n <= cap.
 *
 * Purity: no I/O, no clock; every draw comes from common's generator
 * (common/sg_rng.h) seeded from the seed given to new, so a seed and a
 * history give one sequence of plans. The island an iteration visits is iteration % islands,
 * so a kernel's island is a function of its iteration, with no bookkeeping
 * that a resumed run would have to restore. Its options (defaults, checks,
 * the parser of "key=value,...") are in sg_search_evolve_opts.c.
 */
#include "core/sg_search_evolve.h"

#include "common/sg_alloc.h"
#include "common/sg_hash.h"
#include "common/sg_rng.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the database ------------------------------------------------------ */

typedef struct program {
  uint64_t kernel;
  uint32_t island;
  uint32_t cell;
  double speedup;
} program;

struct sg_evolve {
  sg_evolve_opts o;
  uint32_t cells;       /* per island */
  uint32_t *grid;       /* islands * cells: slot + 1, 0 empty */
  program *progs;       /* cap slots, [0, n) live */
  size_t n;
  sg_rng rng;
  size_t cursor;        /* history entries already taken in */
  bool migrated_once;
  uint32_t last_migration;
  uint32_t last_island;
  sg_evolve_mode last_modes[SG_SEARCH_MAX_MAINS];
};

/* Uniform in [0, 1). */
static double rng_unit(sg_evolve *e) { return sg_rng_uniform(&e->rng); }

/* Uniform in [0, n), n >= 1 (the modulo bias is below 2^-40 here). */
static size_t rng_below(sg_evolve *e, size_t n) {
  assert(n >= 1);
  return (size_t)(sg_rng_next(&e->rng) % n);
}

int sg_evolve_new(const sg_evolve_opts *o, uint64_t seed, sg_evolve **out,
                  sg_err *err) {
  int rc = sg_evolve_opts_check(o, err);
  if (rc < 0)
    return rc;
  sg_evolve *e = sg_calloc(1, sizeof *e);
  e->o = *o;
  e->cells = (uint32_t)sg_evolve_opts_cells(o);
  e->grid = sg_calloc((size_t)o->islands * e->cells, sizeof *e->grid);
  e->progs = sg_calloc(o->cap, sizeof *e->progs);
  sg_rng_seed(&e->rng, seed);
  *out = e;
  return 0;
}

void sg_evolve_free(sg_evolve *e) {
  if (e == NULL)
    return;
  free(e->grid);
  free(e->progs);
  free(e);
}

uint32_t sg_evolve_cells(const sg_evolve *e) { return e->cells; }
size_t sg_evolve_size(const sg_evolve *e) { return e->n; }
uint32_t sg_evolve_last_island(const sg_evolve *e) { return e->last_island; }

sg_evolve_mode sg_evolve_last_mode(const sg_evolve *e, size_t prompt) {
  assert(prompt < SG_SEARCH_MAX_MAINS);
  return e->last_modes[prompt];
}

static uint32_t *cell_at(const sg_evolve *e, uint32_t island, uint32_t cell) {
  assert(island < e->o.islands && cell < e->cells);
  return &e->grid[(size_t)island * e->cells + cell];
}

uint64_t sg_evolve_elite(const sg_evolve *e, uint32_t island, uint32_t cell) {
  uint32_t s = *cell_at(e, island, cell);
  return s == 0 ? 0 : e->progs[s - 1].kernel;
}

static bool is_elite(const sg_evolve *e, size_t slot) {
  const program *p = &e->progs[slot];
  return *cell_at(e, p->island, p->cell) == slot + 1;
}

bool sg_evolve_holds(const sg_evolve *e, uint32_t island, uint64_t kernel) {
  for (size_t i = 0; i < e->n; i++)
    if (e->progs[i].island == island && e->progs[i].kernel == kernel)
      return true;
  return false;
}

/* ---- features ---------------------------------------------------------- */

static uint32_t clamp_bucket(double x, uint32_t bins) {
  if (!(x > 0))
    return 0; /* NaN lands here too */
  if (x >= bins)
    return bins - 1;
  return (uint32_t)x;
}

/* Whitespace does not make a kernel different. */
static uint64_t source_hash(const char *s, size_t len) {
  uint64_t h = SG_FNV1A64_INIT;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
      h = sg_fnv1a64_byte(h, c);
  }
  return h;
}

/* The profile's first verdict: the profile summary names the longest
 * kernel first (eval/sg_ncu.c), so the earliest word wins. */
static uint32_t verdict_class(const char *text) {
  static const char *const words[] = {"memory-bound", "compute-bound",
                                      "latency-bound"};
  if (text == NULL)
    return 0;
  uint32_t best = 0;
  const char *at = NULL;
  for (uint32_t i = 0; i < 3; i++) {
    const char *p = strstr(text, words[i]);
    if (p != NULL && (at == NULL || p < at)) {
      at = p;
      best = i + 1;
    }
  }
  return best;
}

static uint32_t feature(const sg_evolve *e, sg_evolve_dim d,
                        const sg_kernel *k) {
  uint32_t bins = e->o.bins;
  switch (d) {
  case SG_EVOLVE_DIM_SPEEDUP:
    return clamp_bucket((log2(k->speedup) + 2.0) / 4.0 * bins, bins);
  case SG_EVOLVE_DIM_LENGTH: {
    double len = k->source_len ? (double)k->source_len : 1;
    return clamp_bucket((log2(len) - 7.0) / 8.0 * bins, bins);
  }
  case SG_EVOLVE_DIM_HASH:
    return (uint32_t)(source_hash(k->source ? k->source : "", k->source_len) %
                      bins);
  case SG_EVOLVE_DIM_VERDICT:
    return verdict_class(k->profile_text);
  case SG_EVOLVE_DIM__COUNT:
    break;
  }
  assert(0 && "bad dimension");
  return 0;
}

uint32_t sg_evolve_cell_of(const sg_evolve *e, const sg_kernel *k) {
  uint32_t cell = 0;
  for (size_t i = 0; i < e->o.n_dims; i++) {
    uint32_t b = feature(e, e->o.dims[i], k);
    assert(b < sg_evolve_dim_bins(&e->o, e->o.dims[i]));
    cell = cell * sg_evolve_dim_bins(&e->o, e->o.dims[i]) + b;
  }
  assert(cell < e->cells);
  return cell;
}

/* ---- placement and the cap --------------------------------------------- */

static bool is_program(const sg_kernel *k) {
  return k->extract == SG_EXTRACT_FOUND && k->validated &&
         k->validate_status == SG_EVAL_OK && isfinite(k->speedup) &&
         k->speedup > 0;
}

/* The slowest program (elite or not, as asked); the oldest slot on ties. */
static size_t slowest(const sg_evolve *e, bool elite) {
  size_t w = SIZE_MAX;
  for (size_t i = 0; i < e->n; i++)
    if (is_elite(e, i) == elite &&
        (w == SIZE_MAX || e->progs[i].speedup < e->progs[w].speedup))
      w = i;
  return w;
}

/* Empties slot s (the last slot moves into it; its cell follows). */
static void remove_slot(sg_evolve *e, size_t s) {
  assert(s < e->n);
  program *p = &e->progs[s];
  uint32_t *c = cell_at(e, p->island, p->cell);
  if (*c == s + 1)
    *c = 0;
  size_t last = e->n - 1;
  if (s != last) {
    program *q = &e->progs[last];
    uint32_t *qc = cell_at(e, q->island, q->cell);
    if (*qc == last + 1)
      *qc = (uint32_t)s + 1;
    *p = *q;
  }
  e->n--;
}

static bool place(sg_evolve *e, const program *np) {
  uint32_t *c = cell_at(e, np->island, np->cell);
  bool wins = *c == 0 || np->speedup > e->progs[*c - 1].speedup;
  if (e->n == e->o.cap) {
    /* Full: the slowest non-elite goes; the newcomer counts as one when it
     * does not win its cell (the displaced incumbent becomes one when it
     * does, so it can go at once). */
    size_t w = slowest(e, false);
    if (!wins) {
      if (w == SIZE_MAX || !(np->speedup > e->progs[w].speedup))
        return false; /* the newcomer is the slowest non-elite */
    } else if (*c != 0) {
      size_t inc = *c - 1;
      if (w == SIZE_MAX || e->progs[inc].speedup <= e->progs[w].speedup)
        w = inc;
    } else if (w == SIZE_MAX) {
      w = slowest(e, true); /* every program is an elite */
    }
    assert(w != SIZE_MAX);
    remove_slot(e, w);
    c = cell_at(e, np->island, np->cell); /* w's removal may have moved it */
  }
  assert(e->n < e->o.cap);
  size_t s = e->n++;
  e->progs[s] = *np;
  if (wins)
    *c = (uint32_t)s + 1;
  return wins;
}

bool sg_evolve_add(sg_evolve *e, const sg_kernel *k, uint32_t island) {
  assert(island < e->o.islands);
  if (!is_program(k) || sg_evolve_holds(e, island, k->id))
    return false;
  program np = {k->id, island, sg_evolve_cell_of(e, k), k->speedup};
  return place(e, &np);
}

/* ---- migration (ring) -------------------------------------------------- */

/* The island's elites, best first (ties: lower kernel id first), at most
 * max; returns how many. */
static size_t island_elites(const sg_evolve *e, uint32_t island, size_t *out,
                            size_t max) {
  size_t n = 0;
  for (uint32_t c = 0; c < e->cells; c++) {
    uint32_t s = *cell_at(e, island, c);
    if (s == 0)
      continue;
    size_t slot = s - 1;
    /* insertion into the sorted prefix, keeping at most max */
    size_t i = n < max ? n : max;
    while (i > 0) {
      const program *a = &e->progs[out[i - 1]], *b = &e->progs[slot];
      if (a->speedup > b->speedup ||
          (a->speedup == b->speedup && a->kernel < b->kernel))
        break;
      if (i < max)
        out[i] = out[i - 1];
      i--;
    }
    if (i < max) {
      out[i] = slot;
      if (n < max)
        n++;
    }
  }
  return n;
}

/* Each island sends copies of its `migrants` best elites to the next island
 * of the ring. Who goes is decided for every island before anyone moves, so
 * a program travels one hop per migration. */
static void migrate(sg_evolve *e) {
  uint32_t ni = e->o.islands;
  if (ni < 2)
    return;
  size_t per = e->o.migrants;
  program *moving = sg_malloc((size_t)ni * per * sizeof *moving);
  size_t nm = 0;
  size_t *best = sg_malloc(per * sizeof *best);
  for (uint32_t i = 0; i < ni; i++) {
    size_t n = island_elites(e, i, best, per);
    for (size_t j = 0; j < n; j++) {
      program p = e->progs[best[j]];
      p.island = (i + 1) % ni;
      moving[nm++] = p;
    }
  }
  for (size_t j = 0; j < nm; j++)
    if (!sg_evolve_holds(e, moving[j].island, moving[j].kernel))
      place(e, &moving[j]);
  free(best);
  free(moving);
}

/* ---- the plan ---------------------------------------------------------- */

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
  assert(p->n_items < SG_PROMPT_MAX_ITEMS);
  p->items[p->n_items].kind = kind;
  p->items[p->n_items].kernel = id;
  p->n_items++;
}

static int by_kernel(const void *pa, const void *pb, void *ctx) {
  const sg_evolve *e = ctx;
  uint64_t a = e->progs[*(const size_t *)pa].kernel;
  uint64_t b = e->progs[*(const size_t *)pb].kernel;
  return a < b ? -1 : a > b;
}

/* Elites of an island (or of every island when it has none), deduplicated
 * by kernel; returns how many slots went into out (at most
 * max(programs, cells)). */
static size_t pool_of(const sg_evolve *e, uint32_t island, size_t *out) {
  size_t n = 0;
  for (uint32_t c = 0; c < e->cells; c++)
    if (*cell_at(e, island, c) != 0)
      out[n++] = *cell_at(e, island, c) - 1;
  if (n > 0)
    return n;
  for (size_t s = 0; s < e->n; s++)
    if (is_elite(e, s))
      out[n++] = s;
  /* A migrant is an elite on two islands: keep one copy (sorting by
   * kernel keeps this O(n log n) at any cap). */
  qsort_r(out, n, sizeof *out, by_kernel, (void *)e);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (m == 0 || e->progs[out[m - 1]].kernel != e->progs[out[i]].kernel)
      out[m++] = out[i];
  return m;
}

static int by_speed_desc(const void *pa, const void *pb, void *ctx) {
  const sg_evolve *e = ctx;
  const program *a = &e->progs[*(const size_t *)pa];
  const program *b = &e->progs[*(const size_t *)pb];
  if (a->speedup != b->speedup)
    return a->speedup > b->speedup ? -1 : 1;
  return a->kernel < b->kernel ? -1 : a->kernel > b->kernel;
}

static void fill_prompt(sg_evolve *e, const sg_history *h, uint32_t island,
                        size_t *pool, size_t npool, sg_prompt *p,
                        sg_evolve_mode *mode) {
  memset(p, 0, sizeof *p);
  uint64_t parent = 0;
  *mode = SG_EVOLVE_SCRATCH;
  if (e->n > 0) {
    assert(npool > 0); /* a non-empty database has elites */
    double r = rng_unit(e);
    if (r < e->o.explore) {
      *mode = SG_EVOLVE_EXPLORE;
      parent = e->progs[pool[rng_below(e, npool)]].kernel;
    } else if (r < e->o.explore + e->o.exploit) {
      *mode = SG_EVOLVE_EXPLOIT;
      size_t top = npool < e->o.top ? npool : e->o.top;
      parent = e->progs[pool[rng_below(e, top)]].kernel; /* pool sorted */
    } else {
      *mode = SG_EVOLVE_RANDOM;
      parent = e->progs[rng_below(e, e->n)].kernel;
    }
  }
  if (parent != 0) {
    const sg_kernel *k = sg_history_get(h, parent);
    assert(k != NULL);
    p->base_kernel = parent;
    push_item(p, SG_ITEM_KERNEL, parent);
    if (k->profile_text != NULL)
      push_item(p, SG_ITEM_PROFILE, parent);
    /* Inspirations: the island's best (other than the parent), then other
     * elites at random (a partial Fisher-Yates over the rest of the pool). */
    size_t want = e->o.inspirations;
    size_t start = 0;
    if (want > 0 && npool > 0 && e->progs[pool[0]].kernel != parent) {
      p->inspirations[p->n_inspirations++] = e->progs[pool[0]].kernel;
      start = 1;
    } else if (npool > 0 && e->progs[pool[0]].kernel == parent) {
      start = 1;
    }
    for (size_t i = start; i < npool && p->n_inspirations < want; i++) {
      size_t j = i + rng_below(e, npool - i);
      size_t t = pool[i];
      pool[i] = pool[j];
      pool[j] = t;
      if (e->progs[pool[i]].kernel != parent)
        p->inspirations[p->n_inspirations++] = e->progs[pool[i]].kernel;
    }
    /* The shuffle disturbed the pool's order: restore it for the next
     * prompt's exploit draw. */
    qsort_r(pool, npool, sizeof *pool, by_speed_desc, e);
    for (size_t i = 0; i < p->n_inspirations; i++)
      push_item(p, SG_ITEM_KERNEL, p->inspirations[i]);
  }
  /* This island's most recent failures, newest first. */
  uint32_t shown = 0;
  for (size_t i = h->n; i > 0 && shown < e->o.failures; i--) {
    const sg_kernel *k = &h->v[i - 1];
    if (k->iteration % e->o.islands == island && is_failure(k)) {
      push_item(p, SG_ITEM_FAILURE, k->id);
      shown++;
    }
  }
}

int sg_evolve_next(sg_evolve *e, const sg_history *h, uint32_t iteration,
                   sg_search_plan *plan, sg_err *err) {
  (void)err;
  /* Take in what earlier iterations produced; their kernels are final once
   * their iteration ended. */
  while (e->cursor < h->n && h->v[e->cursor].iteration < iteration) {
    const sg_kernel *k = &h->v[e->cursor++];
    sg_evolve_add(e, k, k->iteration % e->o.islands);
  }
  if (e->o.migrate > 0 && iteration > 0 && iteration % e->o.migrate == 0 &&
      !(e->migrated_once && e->last_migration == iteration)) {
    migrate(e);
    e->migrated_once = true;
    e->last_migration = iteration;
  }
  uint32_t island = iteration % e->o.islands;
  e->last_island = island;
  size_t *pool = sg_malloc((e->n > e->cells ? e->n : e->cells) * sizeof *pool +
                           sizeof *pool);
  size_t npool = pool_of(e, island, pool);
  qsort_r(pool, npool, sizeof *pool, by_speed_desc, e);
  memset(plan, 0, sizeof *plan);
  for (size_t i = 0; i < e->o.mains; i++)
    fill_prompt(e, h, island, pool, npool, &plan->prompts[i],
                &e->last_modes[i]);
  plan->n = e->o.mains;
  free(pool);
  return 0;
}

/* ---- the search table --------------------------------------------------- */

static int evolve_init(void **state, const char *arg, uint64_t seed,
                       sg_err *err) {
  sg_evolve_opts o;
  sg_evolve_opts_default(&o);
  int rc = sg_evolve_opts_parse(&o, arg, err);
  if (rc < 0)
    return rc;
  sg_evolve *e = NULL;
  rc = sg_evolve_new(&o, seed, &e, err);
  if (rc < 0)
    return rc;
  *state = e;
  return 0;
}

static int evolve_next(void *state, const sg_history *h, uint32_t iteration,
                       sg_search_plan *plan, sg_err *err) {
  return sg_evolve_next(state, h, iteration, plan, err);
}

static void evolve_free(void *state) { sg_evolve_free(state); }

const sg_search_ops sg_search_evolve_ops = {"evolve", evolve_init,
                                            evolve_next, evolve_free};
