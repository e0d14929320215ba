/* sg_search.h: the workflow's history and the search algorithms that choose
 * the next iteration's prompts from it (pure).
 *
 * A search is asked once per iteration: "given the history, what should the
 * main (reasoning) generations of iteration i be asked?". It answers with a
 * plan: one structured prompt description per main generation. A prompt
 * description names a base kernel (0: write one from scratch) and feedback
 * items (which kernels' validation errors, profiles, speedups to show); the
 * runtime renders the text from templates. Searches:
 *   refine     one main generation; refine the best kernel so far with its
 *              profile, plus the most recent failures (the paper's default)
 *   best-of-n  N independent main generations per iteration ("best-of-n:N",
 *              default 4), each given the best kernel: the prior systems'
 *              pattern, kept as a baseline
 * More are added through the same table as built-ins or by a runtime (an
 * `evolve` with islands, an `exec:CMD` that asks an external process over
 * JSON lines: its next() does I/O, so it lives in the runtime, not here).
 * Randomness only from the seed given to init.
 */
#ifndef SG_SEARCH_H
#define SG_SEARCH_H

#include "common/sg_error.h"
#include "core/sg_extract.h"
#include "core/sg_termination.h"
#include "core/sg_outcome.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A generation's kind: the main reasoning one, or a speculative fork. */
typedef enum sg_gen_kind { SG_GEN_MAIN, SG_GEN_SPEC, SG_GEN__COUNT } sg_gen_kind;

/* "main", "spec". */
const char *sg_gen_kind_name(sg_gen_kind k);

/* Text kept from outside is capped (docs/style.md rule 5). */
#define SG_KERNEL_SOURCE_MAX ((size_t)256 * 1024)
#define SG_KERNEL_MESSAGE_MAX ((size_t)8 * 1024)

/* One candidate kernel and everything learned about it. */
typedef struct sg_kernel {
  uint64_t id;                  /* candidate id, from 1 */
  uint32_t iteration;           /* from 0 */
  sg_gen_kind origin;
  uint64_t gen;                 /* the generation it came from */
  uint64_t prefix_len;          /* spec: reasoning bytes it was forked at */
  bool answer;                  /* spec: the answer at the length cap of
                                   its main (prefix: all its reasoning),
                                   not a fork */
  sg_extract_outcome extract;   /* FOUND, or why there was no candidate */
  char *source;                 /* owned; NULL unless FOUND */
  size_t source_len;
  bool validated;               /* a validation result came back */
  sg_eval_status validate_status;
  char *validate_message;       /* owned; may be NULL */
  bool profiled;                /* a profile came back (status ok) */
  double speedup;               /* ref/cand time; NAN unless measured */
  char *profile_text;           /* owned; may be NULL */
  bool dropped;                 /* withdrawn at an iteration boundary */
  bool compacted;               /* its texts freed (sg_history_compact):
                                   source, messages and profile NULL */
} sg_kernel;

/* A workflow's history: every candidate, oldest first, and the profiled
 * speedups the termination criteria decide on. */
typedef struct sg_history {
  sg_kernel *v;
  size_t n, cap;
  sg_speedup_history speedups;
  uint64_t best_id;             /* best profiled kernel, 0 if none */
  uint32_t iterations_done;
} sg_history;

void sg_history_init(sg_history *h);
void sg_history_free(sg_history *h);
/* Appends a candidate (id = n+1) and returns it (valid until the next add);
 * source (len bytes, may be NULL) is copied, cut at SG_KERNEL_SOURCE_MAX. */
sg_kernel *sg_history_add(sg_history *h, uint32_t iteration,
                          sg_gen_kind origin, uint64_t gen,
                          uint64_t prefix_len, sg_extract_outcome extract,
                          const char *source, size_t len);
/* The kernel with this id, or NULL. */
sg_kernel *sg_history_get(const sg_history *h, uint64_t id);
/* Records a validation result (message copied and capped). */
void sg_history_validated(sg_history *h, uint64_t id, sg_eval_status status,
                          double speedup, const char *message);
/* Records a profile (speedup NAN keeps the validation's); adds the speedup
 * to the speedup history and updates best_id. */
void sg_history_profiled(sg_history *h, uint64_t id, double speedup,
                         const char *profile_text);

/* Frees the texts (source, validation message, profile) of the kernels in
 * [from, end) that the refine search can never show again: all but the
 * best kernel and the SG_SEARCH_RECENT_FAILURES newest failures of the
 * history. Their records stay (ids, outcomes, speedups: what the
 * termination criteria and the counts read), marked compacted. Returns the
 * cursor for the next call: the first kept failure in [from, end), else
 * end; a best kernel left behind it keeps its texts after it is beaten (at
 * most one per improvement). Only for searches that read no more than
 * refine does (refine: a thousand workflows kept every fork's kernel text,
 * gigabytes in a long campaign); evolve and exec read any kernel. */
size_t sg_history_compact(sg_history *h, size_t from, size_t end);

/* What a prompt shows. */
typedef enum sg_prompt_item_kind {
  SG_ITEM_KERNEL,      /* a kernel's source with its speedup */
  SG_ITEM_PROFILE,     /* a kernel's profiling metrics (profile_text) */
  SG_ITEM_FAILURE,     /* a kernel's validation error, or why none came out */
  SG_ITEM__COUNT
} sg_prompt_item_kind;

const char *sg_prompt_item_kind_name(sg_prompt_item_kind k);

#define SG_PROMPT_MAX_ITEMS 16
#define SG_PROMPT_MAX_INSPIRATIONS 8

typedef struct sg_prompt_item {
  sg_prompt_item_kind kind;
  uint64_t kernel;     /* id in the history */
} sg_prompt_item;

/* One main generation's prompt, structured. base_kernel 0 with no items is
 * the first prompt: the task alone. */
typedef struct sg_prompt {
  uint64_t base_kernel;          /* the kernel to improve, 0: from scratch */
  sg_prompt_item items[SG_PROMPT_MAX_ITEMS];
  size_t n_items;
  /* Other kernels shown for inspiration (evolve: elites of other cells).
   * Each is also a SG_ITEM_KERNEL item, so a renderer that does not read
   * this list still shows them; one that does can label them. */
  uint64_t inspirations[SG_PROMPT_MAX_INSPIRATIONS];
  size_t n_inspirations;
} sg_prompt;

#define SG_SEARCH_MAX_MAINS 16

/* The plan for one iteration: n main generations, one per prompt. */
typedef struct sg_search_plan {
  sg_prompt prompts[SG_SEARCH_MAX_MAINS];
  size_t n;                      /* 1..SG_SEARCH_MAX_MAINS */
} sg_search_plan;

/* A search algorithm's table.
 *   init  (may be NULL) state from ARG ("best-of-n:4" gives "4") and seed
 *   next  fills plan for iteration (history holds all earlier ones); 0 or
 *         a negative SG_E* with err filled
 *   free  (may be NULL) */
typedef struct sg_search_ops {
  const char *name;
  int (*init)(void **state, const char *arg, uint64_t seed, sg_err *err);
  int (*next)(void *state, const sg_history *h, uint32_t iteration,
              sg_search_plan *plan, sg_err *err);
  void (*free)(void *state);
} sg_search_ops;

#define SG_SEARCH_MAX_ALGOS 16

typedef struct sg_search_registry {
  const sg_search_ops *algos[SG_SEARCH_MAX_ALGOS];
  size_t n;
} sg_search_registry;

/* A registry holding the built-ins (refine, best-of-n, evolve). */
void sg_search_registry_init(sg_search_registry *reg);
/* Adds one (borrowed). SG_EINVAL bad name/no next, SG_ESTATE duplicate,
 * SG_EFULL full. */
int sg_search_register(sg_search_registry *reg, const sg_search_ops *ops,
                       sg_err *err);

typedef struct sg_search sg_search;

/* Builds the search a spec ("refine", "best-of-n:8") names. SG_ENOENT for an
 * unknown name (message lists the known ones); init's error for a bad ARG. */
int sg_search_new(const sg_search_registry *reg, const char *spec,
                  uint64_t seed, sg_search **out, sg_err *err);
void sg_search_free(sg_search *s);
const char *sg_search_name(const sg_search *s);

/* The plan for iteration; asserts the plan is well formed (1..MAX mains,
 * items within bounds, kernel ids present in the history). */
int sg_search_next(sg_search *s, const sg_history *h, uint32_t iteration,
                   sg_search_plan *plan, sg_err *err);

/* How many recent failures refine shows. */
#define SG_SEARCH_RECENT_FAILURES 3

#endif
