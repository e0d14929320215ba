/* sg_search_evolve.h: the `evolve` search, a program database with islands
 * and MAP-Elites cells, after OpenEvolve's (pure: no I/O, no clock;
 * randomness only from the seed given to new).
 *
 * Programs are the history's valid kernels (validated ok, a finite speedup).
 * Each lives on one island; each island is a MAP-Elites grid over feature
 * dimensions computed from what the core knows (speedup, source length, a
 * hash of the source, the profile's verdict), and each cell keeps its best
 * program (its elite). Iteration i visits island i % islands; each main
 * generation's parent is drawn from it by exploration (any elite of the
 * island), exploitation (one of its best elites) or at random (any program
 * of the database), and a few other elites go in the prompt as
 * inspirations. Every `migrate` iterations each island sends copies of its
 * best elites to the next island of the ring. The database holds at most
 * `cap` programs. Options and their defaults: docs/core.md, "evolve".
 *
 * Most callers only need sg_search_evolve_ops (register it with
 * sg_search_register, then sg_search_new(reg, "evolve:islands=4", ...)).
 * The rest is the database itself, for tests and tools that look inside.
 */
#ifndef SG_SEARCH_EVOLVE_H
#define SG_SEARCH_EVOLVE_H

#include "common/sg_error.h"
#include "core/sg_search.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The search table ("evolve"). */
extern const sg_search_ops sg_search_evolve_ops;

/* Feature dimensions of the MAP-Elites grid. */
typedef enum sg_evolve_dim {
  SG_EVOLVE_DIM_SPEEDUP, /* log2(speedup) over [1/4, 4] in `bins` buckets */
  SG_EVOLVE_DIM_LENGTH,  /* log2(source bytes) over [128 B, 32 KiB], `bins` */
  SG_EVOLVE_DIM_HASH,    /* FNV-1a of the source without blanks % `bins` */
  SG_EVOLVE_DIM_VERDICT, /* profile: none, memory-, compute-, latency-bound */
  SG_EVOLVE_DIM__COUNT
} sg_evolve_dim;

/* "speedup", "length", "hash", "verdict". */
const char *sg_evolve_dim_name(sg_evolve_dim d);

#define SG_EVOLVE_VERDICT_BINS 4
#define SG_EVOLVE_MAX_ISLANDS 64
#define SG_EVOLVE_MAX_BINS 16
#define SG_EVOLVE_MAX_CELLS 4096 /* per island */
#define SG_EVOLVE_MAX_CAP 10000
#define SG_EVOLVE_MAX_INSPIRATIONS 8
#define SG_EVOLVE_MAX_FAILURES 6

/* How a parent was chosen. */
typedef enum sg_evolve_mode {
  SG_EVOLVE_SCRATCH, /* the database is empty: no parent */
  SG_EVOLVE_EXPLORE,
  SG_EVOLVE_EXPLOIT,
  SG_EVOLVE_RANDOM,
  SG_EVOLVE_MODE__COUNT
} sg_evolve_mode;

/* "scratch", "explore", "exploit", "random". */
const char *sg_evolve_mode_name(sg_evolve_mode m);

typedef struct sg_evolve_opts {
  uint32_t islands;      /* islands=N      1..64, default 4 */
  uint32_t bins;         /* bins=N         2..16, default 4 */
  sg_evolve_dim dims[SG_EVOLVE_DIM__COUNT];
  size_t n_dims;         /* features=A+B   default length+verdict+hash */
  double explore;        /* explore=R      default 0.2 */
  double exploit;        /* exploit=R      default 0.7 (random: the rest) */
  uint32_t top;          /* top=N          exploit draws among the island's
                                           N best elites, 1..64, default 3 */
  uint32_t inspirations; /* inspirations=N 0..8, default 3 */
  uint32_t migrate;      /* migrate=M      every M iterations, 0 never,
                                           default 10 */
  uint32_t migrants;     /* migrants=K     best elites sent, 1..64, default 2 */
  uint32_t cap;          /* cap=N          programs held, 1..10000,
                                           default 1000 */
  uint32_t mains;        /* mains=N        main generations, 1..16, default 1 */
  uint32_t failures;     /* failures=N     recent failures shown, 0..6,
                                           default 3 */
} sg_evolve_opts;

void sg_evolve_opts_default(sg_evolve_opts *o);
/* Parses "key=value,key=value" (NULL or "" keeps o) over o. SG_EINVAL with
 * a message naming the key for an unknown key, a bad or out-of-range value,
 * ratios that sum above 1 or a grid above SG_EVOLVE_MAX_CELLS cells. */
int sg_evolve_opts_parse(sg_evolve_opts *o, const char *arg, sg_err *err);

/* SG_EINVAL naming the option out of its range. */
int sg_evolve_opts_check(const sg_evolve_opts *o, sg_err *err);
/* The bins of dimension d; the cells of an island's grid (their product
 * over the dimensions chosen). */
uint32_t sg_evolve_dim_bins(const sg_evolve_opts *o, sg_evolve_dim d);
uint64_t sg_evolve_opts_cells(const sg_evolve_opts *o);

typedef struct sg_evolve sg_evolve;

/* A database for o (checked as parse does); free with sg_evolve_free. */
int sg_evolve_new(const sg_evolve_opts *o, uint64_t seed, sg_evolve **out,
                  sg_err *err);
void sg_evolve_free(sg_evolve *e);

/* The search's step: takes in the history's kernels of earlier iterations
 * not seen yet (each on island iteration % islands), migrates when
 * iteration is a positive multiple of `migrate`, then fills plan for island
 * iteration % islands. */
int sg_evolve_next(sg_evolve *e, const sg_history *h, uint32_t iteration,
                   sg_search_plan *plan, sg_err *err);

/* Places a kernel on an island (what next does with each new valid
 * kernel). Returns true when it became its cell's elite: the cell was
 * empty or held a strictly slower program. A kernel that is not a program
 * (invalid, no finite positive speedup) or already on that island is
 * ignored (false). With cap programs held, the slowest non-elite program
 * goes first (the newcomer itself when it is the slowest), else the
 * slowest elite. */
bool sg_evolve_add(sg_evolve *e, const sg_kernel *k, uint32_t island);

/* Looking inside. */
uint32_t sg_evolve_cells(const sg_evolve *e);   /* cells per island */
size_t sg_evolve_size(const sg_evolve *e);      /* programs held */
/* The cell a kernel falls in (any kernel with a speedup). */
uint32_t sg_evolve_cell_of(const sg_evolve *e, const sg_kernel *k);
/* The elite's kernel id in a cell, 0 if empty. */
uint64_t sg_evolve_elite(const sg_evolve *e, uint32_t island, uint32_t cell);
/* Whether an island holds the kernel (elite or not). */
bool sg_evolve_holds(const sg_evolve *e, uint32_t island, uint64_t kernel);
/* The island the last plan was made for, and how prompt i's parent was
 * chosen. */
uint32_t sg_evolve_last_island(const sg_evolve *e);
sg_evolve_mode sg_evolve_last_mode(const sg_evolve *e, size_t prompt);

#endif
