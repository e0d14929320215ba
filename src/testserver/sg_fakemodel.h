/* sg_fakemodel.h: the model of a reasoning LLM that writes kernels, played by
 * the built-in test server (sg_llm_server).
 *
 * Pure and deterministic: no I/O, no clock; the same tasks, seed and request
 * give the same bytes. It holds
 *   - a tokenizer: text is cut into pieces of 1-3 bytes at word boundaries;
 *     a piece's id packs its bytes, so ids decode back to text exactly;
 *   - a prefix cache model: remembered prompts (token ids) with the tokens
 *     generated after them, and the cached tokens of a new prompt = its
 *     longest common prefix with any of them, in whole blocks of 16 tokens
 *     (as vLLM's prefix cache counts);
 *   - the model proper: it picks the task named in the prompt, writes a
 *     reasoning trace about it (shapes, design decisions, self-corrections,
 *     drafts in fenced code blocks, noise) and answers with a kernel drawn
 *     from the task's example candidates. A thinking-on answer is valid with
 *     probability p_valid_reasoning; a thinking-off answer is valid with a
 *     probability that rises steeply with the fraction f of this context's
 *     reasoning trace found in its prompt, past a threshold drawn per task.
 * docs/test-server.md gives the parameters and their calibration.
 */
#ifndef SG_FAKEMODEL_H
#define SG_FAKEMODEL_H

#include "common/sg_buf.h"
#include "common/sg_error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- tokenizer ---- */

#define SG_FM_PIECE_MAX 3

/* Cuts text[0..len) into tokens. Writes at most max ids (ids may be NULL to
 * count only) and, when ends is not NULL, the end offset of each token.
 * Returns the number of tokens in the whole text. Concatenating the pieces
 * gives the text back. */
size_t sg_fm_tokenize(const char *text, size_t len, int32_t *ids,
                      size_t *ends, size_t max);
/* The bytes of token id into piece (SG_FM_PIECE_MAX bytes at most); returns
 * their count, 0 for an id no text tokenizes to. */
size_t sg_fm_token_piece(int32_t id, char piece[SG_FM_PIECE_MAX]);
/* Appends the text of ids to out; SG_EINVAL naming the index of the first
 * invalid id. */
int sg_fm_detokenize(const int32_t *ids, size_t n, sg_buf *out, sg_err *err);

/* ---- prefix cache model (not thread-safe: the caller locks) ---- */

#define SG_FM_CACHE_BLOCK_TOKENS 16

typedef struct sg_fm_cache sg_fm_cache;

/* Remembers up to max_prompts prompts (the oldest is forgotten first). */
sg_fm_cache *sg_fm_cache_new(size_t max_prompts);
void sg_fm_cache_free(sg_fm_cache *c);
/* The cached tokens of prompt ids[0..n): its longest common prefix with any
 * remembered sequence, at most n-1 (one token is always computed), rounded
 * down to whole blocks. Then remembers the prompt, and puts its handle in
 * *handle (handle may be NULL). */
size_t sg_fm_cache_lookup_insert(sg_fm_cache *c, const int32_t *ids, size_t n,
                                 uint64_t *handle);
/* Appends generated tokens to a remembered prompt: as in vLLM, the tokens a
 * generation computes are cached too, so a fork that sends the prompt plus
 * the reasoning so far hits the cache. Nothing happens if the prompt was
 * forgotten meanwhile. */
void sg_fm_cache_extend(sg_fm_cache *c, uint64_t handle, const int32_t *ids, size_t n);

/* ---- tasks as the model sees them ---- */

typedef struct sg_fm_example {
  char *status;   /* "ok", "compile_error", ... */
  char *label;    /* "fast", "reference", "syntax", ... */
  char *code;     /* the candidate's source */
} sg_fm_example;

typedef struct sg_fm_arg {
  char *name;
  char *kind;     /* "input", "output", "scalar" */
  char *dtype;    /* "float32", ... */
  int ndims;
  int64_t shape[6];
  double value;   /* scalars */
} sg_fm_arg;

typedef struct sg_fm_task {
  char *name;
  char *evaluator;
  char *language;  /* "c", "cuda", "python" */
  char *description;
  char *entry;
  char *signature;
  sg_fm_arg *args;
  size_t nargs;
  sg_fm_example *examples;
  size_t nexamples;
} sg_fm_task;

/* Frees the members of t (not t itself). */
void sg_fm_task_clear(sg_fm_task *t);

/* ---- the model ---- */

typedef struct sg_fm_params {
  int reasoning_tokens_min;   /* a trace's length is drawn in [min, max] */
  int reasoning_tokens_max;
  double p_valid_reasoning;   /* thinking on: P(answer is a valid kernel) */
  double p_fast_given_valid;  /* P(ok-fast | valid); else ok-reference */
  double p_valid_floor;       /* thinking off: P(valid) far below threshold */
  double p_valid_ceil;        /* ... and far above it */
  double threshold_min;       /* per-task threshold on f, drawn uniformly */
  double threshold_max;
  double threshold_width;     /* steepness: the logistic's scale in f */
  bool refine_other;          /* a valid answer to a prompt that shows one
                                 valid example's code is another valid
                                 example when there is one: a model asked to
                                 improve a kernel does not write it back
                                 (off: the draw alone decides) */
} sg_fm_params;

/* The defaults (docs/test-server.md): traces of 600-1800 tokens, 38.5% valid
 * with thinking on, thresholds in [0.14, 0.70], floor 0.02, ceiling 0.97,
 * refine_other off. */
void sg_fm_params_init(sg_fm_params *p);

typedef struct sg_fakemodel sg_fakemodel;

/* A model over tasks[0..ntasks), which it takes over (the array and its
 * contents are freed by sg_fakemodel_free). */
sg_fakemodel *sg_fakemodel_new(const sg_fm_params *params, uint64_t seed,
                               sg_fm_task *tasks, size_t ntasks);
void sg_fakemodel_free(sg_fakemodel *m);
size_t sg_fakemodel_ntasks(const sg_fakemodel *m);
const sg_fm_task *sg_fakemodel_task(const sg_fakemodel *m, size_t i);

/* The index of the task the text asks about (-1: none): the task whose name,
 * else whose entry, occurs earliest in the text as a whole word, the longest
 * on a tie; between tasks of the same name, the CUDA one when the text says
 * CUDA, GPU or __global__, else the CPU one. */
int sg_fakemodel_pick_task(const sg_fakemodel *m, const char *text);

/* The task's threshold on the prefix fraction, in
 * [threshold_min, threshold_max], drawn from the seed and the task's name. */
double sg_fakemodel_threshold(const sg_fakemodel *m, int task);
/* P(valid) of a thinking-off answer given the prefix fraction f. */
double sg_fakemodel_p_valid(const sg_fakemodel *m, int task, double f);

typedef struct sg_fm_request {
  const char *context;   /* the prompt up to where the answer starts: it keys
                            the reasoning traces (forks send the same one) */
  const char *prompt;    /* the whole prompt text, searched for the trace */
  bool thinking;         /* reason first, or answer at once */
  bool has_seed;         /* the request's own "seed" */
  uint64_t request_seed;
  const char *sample_key; /* varies the sampling (a request id); NULL: none */
  const char *reasoning_prefix; /* thinking on: reasoning already written (a
                                   continued assistant message); when it is a
                                   prefix of the trace, the rest follows */
} sg_fm_request;

typedef struct sg_fm_answer {
  char *reasoning;        /* "" with thinking off */
  char *content;          /* the final answer */
  int task;               /* -1: no task was named */
  const char *status;     /* the example answered: "ok", ...; "" if none */
  const char *label;      /* "fast", ...; "" if none */
  double prefix_fraction; /* f (thinking off) */
  int variant;            /* the trace variant written or matched */
  double p_valid;         /* the probability the draw was made with */
  size_t trace_bytes;     /* length of that full trace (0: no trace matched) */
} sg_fm_answer;

/* Writes the answer to req. Frees with sg_fm_answer_free. */
void sg_fakemodel_generate(const sg_fakemodel *m, const sg_fm_request *req,
                           sg_fm_answer *out);
void sg_fm_answer_free(sg_fm_answer *a);

/* A context has SG_FM_TRACE_VARIANTS traces; a thinking-on request writes
 * the variant its seed (else its id, else 0) picks, as a sampling model
 * writes a different trace each time. A thinking-off request is measured
 * against every variant its prompt holds, so a fork needs not send its
 * parent's seed or id. */
#define SG_FM_TRACE_VARIANTS 32

/* The variant req writes when thinking: from its seed, else its sample key,
 * else 0. */
int sg_fakemodel_variant(const sg_fm_request *req);

/* Variant `variant` of the full reasoning trace a thinking-on request with
 * this context writes about task (-1: no task); the caller frees it. */
char *sg_fakemodel_trace(const sg_fakemodel *m, int task, const char *context,
                         int variant);

/* The length of the longest prefix of trace that occurs in text, over the
 * trace's length; 0 for an empty trace or a match shorter than 16 bytes. */
double sg_fm_prefix_fraction(const char *trace, const char *text);

#endif
