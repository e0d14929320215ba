/* sg_fm_answer.c: the test model's answer (sg_fakemodel.h): which of the
 * task's examples the content carries (valid with the model's probability,
 * else a broken one weighted as the paper's failures are), written as a
 * fenced block after a short preface. */
#include "testserver/sg_fakemodel_priv.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* The answer                                                                */

static const sg_fm_example *find_example(const sg_fm_task *t, const char *status,
                                         const char *label) {
  for (size_t i = 0; i < t->nexamples; i++)
    if (strcmp(t->examples[i].status, status) == 0 &&
        (!label || strcmp(t->examples[i].label, label) == 0))
      return &t->examples[i];
  return NULL;
}

/* Weight of a broken example: the paper's failures are mostly compile errors,
 * runtime errors and numerical mismatches. */
static double broken_weight(const char *status) {
  if (strcmp(status, "compile_error") == 0 || strcmp(status, "numerical_error") == 0)
    return 3;
  if (strcmp(status, "runtime_error") == 0)
    return 2;
  return 1;
}

/* Whether prompt shows e's code (its trailing white space aside). */
static bool prompt_shows(const char *prompt, const sg_fm_example *e) {
  size_t n = strlen(e->code);
  while (n > 0 && isspace((unsigned char)e->code[n - 1]))
    n--;
  if (n == 0)
    return false;
  char *head = sg_strndup(e->code, n);
  bool shown = strstr(prompt, head) != NULL;
  free(head);
  return shown;
}

static const sg_fm_example *pick_example(const sg_fakemodel *m, const sg_fm_task *t,
                                         bool valid, const char *prompt, rng *r) {
  if (valid) {
    bool fast = sg_fm_rng_unit(r) < m->p.p_fast_given_valid;
    const sg_fm_example *e = find_example(t, "ok", fast ? "fast" : "reference");
    if (!e)
      e = find_example(t, "ok", NULL);
    if (e && m->p.refine_other && prompt_shows(prompt, e)) {
      /* refine_other: not the kernel it was shown */
      const sg_fm_example *o = find_example(t, "ok", fast ? "reference" : "fast");
      if (o && !prompt_shows(prompt, o))
        e = o;
    }
    if (e)
      return e;
  }
  double total = 0;
  for (size_t i = 0; i < t->nexamples; i++)
    if (strcmp(t->examples[i].status, "ok") != 0)
      total += broken_weight(t->examples[i].status);
  if (total > 0) {
    double u = sg_fm_rng_unit(r) * total;
    for (size_t i = 0; i < t->nexamples; i++) {
      if (strcmp(t->examples[i].status, "ok") == 0)
        continue;
      u -= broken_weight(t->examples[i].status);
      if (u < 0)
        return &t->examples[i];
    }
    for (size_t i = t->nexamples; i-- > 0;)
      if (strcmp(t->examples[i].status, "ok") != 0)
        return &t->examples[i];
  }
  return t->nexamples ? &t->examples[0] : NULL;
}

static char *write_content(const sg_fm_task *t, const sg_fm_example *e, bool thinking,
                           rng *r) {
  sg_buf b;
  sg_buf_init(&b, 0);
  static const char *intros_think[] = {
      "Here is the optimized kernel:", "Here's my implementation:",
      "Final implementation:", "Below is the optimized version."};
  static const char *intros_fast[] = {"Here is the kernel:", "Implementation:",
                                      "Here is an optimized version:"};
  sg_buf_puts(&b, thinking ? PICK(r, intros_think) : PICK(r, intros_fast));
  if (e) {
    size_t cl = strlen(e->code);
    sg_buf_printf(&b, "\n\n```%s\n%s%s```\n", sg_fm_lang_tag(t), e->code,
                  cl && e->code[cl - 1] == '\n' ? "" : "\n");
  } else {
    sg_buf_printf(&b, "\n\n```%s\n%s {\n  /* not written */\n}\n```\n", sg_fm_lang_tag(t),
                  t->signature ? t->signature : "void kernel(void)");
  }
  if (thinking) {
    static const char *outros[] = {
        "\nThe loops are blocked for cache reuse and the inner loop is contiguous.",
        "\nIt tiles the computation and vectorizes the innermost loop.",
        "\nThis keeps the working set in fast memory and avoids redundant loads."};
    sg_buf_puts(&b, PICK(r, outros));
  }
  return sg_buf_steal(&b);
}

/* Longer than 80 lines on purpose: the model's one draw per request (task,
 * trace, validity, example, usage) in the order the draws are made, which
 * the pinned outputs depend on. */
void sg_fakemodel_generate(const sg_fakemodel *m, const sg_fm_request *req,
                           sg_fm_answer *out) {
  memset(out, 0, sizeof *out);
  const char *context = req->context ? req->context : "";
  const char *prompt = req->prompt ? req->prompt : context;
  int task = sg_fakemodel_pick_task(m, prompt);
  out->task = task;
  out->status = "";
  out->label = "";
  /* The sampling stream: the whole prompt, the request's seed and id, so
   * forks with different ids draw different answers. */
  uint64_t sk = sg_fm_mix(m->seed, sg_fm_hash_str(prompt));
  sk = sg_fm_mix(sk, req->thinking ? 1 : 2);
  if (req->has_seed)
    sk = sg_fm_mix(sk, req->request_seed);
  if (req->sample_key)
    sk = sg_fm_mix(sk, sg_fm_hash_str(req->sample_key));
  rng r = {sk};

  int variant = sg_fakemodel_variant(req);
  out->variant = variant;
  if (task < 0) {
    char *trace = req->thinking ? sg_fakemodel_trace(m, -1, context, variant) : sg_strdup("");
    out->reasoning = trace;
    out->trace_bytes = strlen(trace);
    out->content = sg_strdup(
        "I could not find a task I know in the prompt, so I cannot write its kernel. "
        "Name the task (its name or its entry function) in the prompt.");
    return;
  }
  const sg_fm_task *t = &m->tasks[task];
  if (req->thinking) {
    out->p_valid = m->p.p_valid_reasoning;
    /* A continuation goes on with the variant it continues, whichever seed
     * or id the request carries. */
    size_t pl = req->reasoning_prefix ? strlen(req->reasoning_prefix) : 0;
    char *trace = NULL;
    if (pl) {
      uint64_t set = sg_fm_variants_in(m, task, context, req->reasoning_prefix);
      for (int v = 0; v < SG_FM_TRACE_VARIANTS && !trace; v++) {
        if (!(set >> v & 1))
          continue;
        char *cand = sg_fakemodel_trace(m, task, context, v);
        if (strncmp(cand, req->reasoning_prefix, pl) == 0) {
          trace = cand;
          out->variant = variant = v;
        } else {
          free(cand);
        }
      }
    }
    if (trace) {
      out->trace_bytes = strlen(trace);
      out->reasoning = sg_strdup(trace + pl);
      free(trace);
    } else {
      out->reasoning = sg_fakemodel_trace(m, task, context, variant);
      out->trace_bytes = strlen(out->reasoning);
    }
  } else {
    /* f against every variant whose opening the prompt holds: a fork is
     * measured against the trace it copies, whatever its own seed or id. */
    /* Variants may share their first paragraphs: the one with the longest
     * match is the one copied; on a tie, the request's own, else the
     * lowest. */
    uint64_t set = sg_fm_variants_in(m, task, context, prompt);
    out->prefix_fraction = 0;
    out->trace_bytes = 0;
    double best_bytes = -1;
    for (int k = 0; k < SG_FM_TRACE_VARIANTS; k++) {
      int v = (variant + k) % SG_FM_TRACE_VARIANTS;
      if (!(set >> v & 1))
        continue;
      char *trace = sg_fakemodel_trace(m, task, context, v);
      double f = sg_fm_prefix_fraction(trace, prompt);
      double bytes = f * (double)strlen(trace);
      if (bytes > best_bytes + 0.5 ||
          (bytes > best_bytes - 0.5 && v < out->variant && out->variant != variant)) {
        best_bytes = bytes;
        out->prefix_fraction = f;
        out->trace_bytes = strlen(trace);
        out->variant = v;
      }
      free(trace);
    }
    out->p_valid = sg_fakemodel_p_valid(m, task, out->prefix_fraction);
    out->reasoning = sg_strdup("");
  }
  bool valid = sg_fm_rng_unit(&r) < out->p_valid;
  const sg_fm_example *e = pick_example(m, t, valid, prompt, &r);
  if (e) {
    out->status = e->status;
    out->label = e->label;
  }
  out->content = write_content(t, e, req->thinking, &r);
}

void sg_fm_answer_free(sg_fm_answer *a) {
  if (!a)
    return;
  free(a->reasoning);
  free(a->content);
  memset(a, 0, sizeof *a);
}
