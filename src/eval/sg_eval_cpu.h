/* sg_eval_cpu.h: internals of the CPU evaluator, exposed for its tests and
 * its benchmark (not a contract for other modules; sg_eval.h is).
 *
 * The pure parts: the seeded random number generator, the input
 * distributions and their per-call refresh, NaN poisoning and the allclose
 * comparison (sg_eval_cpu_values.c); the ELF dynamic symbol reader and the
 * symbol rules, the cut of compiler diagnostics, the names of signals
 * (sg_eval_cpu_check.c). The I/O parts
 * (sg_eval_cpu.c): compile, run, and a run variant that hands back the
 * child's own log (the order and count of timed calls, phase times).
 */
#ifndef SG_EVAL_CPU_H
#define SG_EVAL_CPU_H

#include "common/sg_error.h"
#include "common/sg_rng.h"
#include "eval/sg_eval.h"
#include "eval/sg_task.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- random inputs ---- */

/* Inputs draw from the shared generator (common/sg_rng.h). */
/* Standard normal (Marsaglia and Tsang's ziggurat). */
double sg_rng_normal(sg_rng *r);
/* The seed of one input set: (seed, trial, argument) mixed. */
uint64_t sg_rng_derive(uint64_t seed, uint64_t trial, uint64_t arg);

/* Fills buf (a->numel elements of a->dtype) from a->init, then applies its
 * structure to each trailing square matrix. */
void sg_eval_fill(const sg_task_arg *a, void *buf, sg_rng *r);

/* Fresh values for one more call, cheaper than sg_eval_fill and as good for
 * checking: where the distribution is symmetric about a center c (normal
 * about its mean, uniform about the middle of its range, a choice closed
 * under negation about 0; float types; not a symmetric matrix), every
 * element is reflected about c (x -> 2c - x; for c = 0 its sign flipped)
 * or not, one random bit each, and a random eighth of the elements is
 * drawn anew, then the structure is applied again; otherwise the whole
 * buffer is drawn anew (sg_eval_fill). Either way no call sees the values of
 * an earlier one, and the values keep the task's distribution. */
void sg_eval_refresh(const sg_task_arg *a, void *buf, sg_rng *r);
/* Whether sg_eval_refresh can reflect a's values, and about what center. */
bool sg_eval_reflect_center(const sg_task_arg *a, double *center);
/* Whether that center is 0 (a sign flip). */
bool sg_eval_sign_symmetric(const sg_task_arg *a);

/* ---- checking outputs ---- */

/* Outputs are filled with a NaN of a payload no arithmetic produces before
 * each run (integers: a sentinel), so an element left unwritten is told
 * apart from one computed as NaN. */
void sg_eval_poison(sg_dtype d, void *buf, int64_t n);
bool sg_eval_is_poison(sg_dtype d, const void *buf, int64_t i);

typedef enum sg_eval_bad {
  SG_EVAL_BAD_NONE,
  SG_EVAL_BAD_UNWRITTEN,  /* still the poison */
  SG_EVAL_BAD_NAN,        /* NaN (or inf) where the reference is finite */
  SG_EVAL_BAD_MISMATCH,   /* outside atol + rtol * |ref| */
} sg_eval_bad;

typedef struct sg_eval_cmp {
  sg_eval_bad kind;       /* of the first bad element */
  int64_t first_bad;      /* flat index; -1 when all are close */
  double cand, ref;       /* the values there */
  int64_t nbad;           /* how many elements are bad */
  double max_abs, max_rel;/* over the elements (rel: where ref != 0) */
} sg_eval_cmp;

/* allclose: |cand - ref| <= atol + rtol * |ref|, NaN equal to NaN. */
void sg_eval_compare(sg_dtype d, const void *cand, const void *ref, int64_t n,
                     double atol, double rtol, sg_eval_cmp *c);
/* sg_eval_compare, and cand poisoned for the next call as it goes (block by
 * block, while the block is in cache): the per-call check in one pass over
 * the candidate's memory instead of two. */
void sg_eval_compare_poison(sg_dtype d, void *cand, const void *ref, int64_t n,
                            double atol, double rtol, sg_eval_cmp *c);
/* What went wrong, for the LLM, e.g. "output out: element 7 (index [0, 7])
 * was never written"; the caller frees it. */
char *sg_eval_cmp_message(const sg_task_arg *a, const sg_eval_cmp *c,
                          double atol, double rtol);


/* ---- the candidate's symbols ---- */

typedef struct sg_elf_sym {
  char *name;
  bool defined;
  bool weak;
  bool func;
} sg_elf_sym;

/* The dynamic symbol table of an ELF shared object held in memory (64-bit,
 * this machine's byte order), bounds-checked; free with
 * sg_elf_symbols_free. */
int sg_elf_dynamic_symbols(const void *data, size_t len, sg_elf_sym **out,
                           size_t *n, sg_err *err);
void sg_elf_symbols_free(sg_elf_sym *s, size_t n);

/* Why calling the symbol name breaks a rule ("creates a process", ...), or
 * NULL when it is allowed. */
const char *sg_eval_forbidden_symbol(const char *name);

/* Whether a symbol the candidate imports can be found among the libraries a
 * candidate may use (the C library, libm). */
typedef bool (*sg_eval_resolver)(const char *name, void *ctx);

/* Applies the rules to a candidate's symbols: a forbidden import gives
 * rejected; an import no allowed library defines, or no exported entry
 * function, gives compile_error. *status stays ok and *message NULL when all
 * is well; else *message (the caller frees it) explains. */
void sg_eval_check_symbols(const sg_elf_sym *syms, size_t n, const char *entry,
                           sg_eval_resolver resolve, void *ctx,
                           sg_eval_status *status, char **message);

/* ---- messages ---- */

/* The compiler's output cut to its first max_diags diagnostics (errors and
 * warnings; their notes and context lines stay with them) and max_bytes,
 * saying what was cut; the caller frees it. */
char *sg_eval_trim_diagnostics(const char *text, size_t max_diags,
                               size_t max_bytes);

/* "SIGSEGV (segmentation fault)"; the caller frees it. */
char *sg_eval_signal_text(int sig);

/* "cpu:N" (or NULL: cpu:0) to N; errors name the device. */
int sg_eval_cpu_parse_device(const char *device, int *cpu, sg_err *err);
/* The same, and the core is one this process may run on (SG_EINVAL, naming
 * the cores it may use, when not). */
int sg_eval_cpu_device_check(const char *device, sg_err *err);

/* ---- the evaluator ---- */

int sg_eval_cpu_compile(const sg_task *task, const char *source, size_t len,
                        const sg_eval_opts *opts, sg_eval_build *build,
                        sg_eval_result *r, sg_err *err);
int sg_eval_cpu_run(const sg_task *task, const sg_eval_build *build,
                    const sg_eval_opts *opts, sg_eval_result *r, sg_err *err);
/* sg_eval_cpu_run, also handing back the child's final report (owned by the
 * caller, NULL when the child sent none): "order" is the sequence of timed
 * calls ("r"/"c" for warm-ups, "R"/"C" for timed runs), "ref_ns"/"cand_ns"
 * the timed runs, "phase_s" the time of each phase. */
int sg_eval_cpu_run_logged(const sg_task *task, const sg_eval_build *build,
                           const sg_eval_opts *opts, sg_eval_result *r,
                           json_t **log, sg_err *err);

#endif
