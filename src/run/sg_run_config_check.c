/* sg_run_config_check.c: checking a configuration as a whole
 * (sg_run_config_check: tasks, devices, the LLM settings, the search and the
 * termination criterion, the keys with fixed choices) and parsing the
 * devices spec (sg_run_devices_parse). */
#include "run/sg_run_config_priv.h"

#include "common/sg_alloc.h"
#include "core/sg_search.h"
#include "core/sg_termination.h"
#include "llm/sg_llm_fault.h"
#include "run/sg_search_exec.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- checks -------------------------------------------------------------- */

/* Longer than 80 lines on purpose: one small grammar (KIND:N, KIND:A-B, lists
 * of them) read top to bottom, every branch with its own message. */
int sg_run_devices_parse(const char *spec, char ***out, size_t *n,
                         sg_err *err) {
  *out = NULL;
  *n = 0;
  if (spec == NULL || spec[0] == '\0')
    return sg_err_set(err, SG_EINVAL, "devices: empty spec");
  char sp[80];
  sg_run_config_shown(sp, sizeof sp, spec);
  if (strlen(spec) > SG_RUN_VALUE_MAX)
    return sg_err_set(err, SG_EINVAL, "devices \"%s\": longer than %d bytes", sp,
                      SG_RUN_VALUE_MAX);
  enum { MAXDEV = 4096 };
  bool *used = sg_calloc(MAXDEV, sizeof *used);
  char **list = NULL;
  size_t count = 0;
  const char *kind = NULL;
  size_t kind_len = 0;
  int rc = 0;
  for (const char *p = spec; rc == 0;) {
    const char *comma = strchr(p, ',');
    size_t ilen = comma ? (size_t)(comma - p) : strlen(p);
    char item[80];
    snprintf(item, sizeof item, "%.*s", (int)(ilen < 64 ? ilen : 64), p);
    const char *colon = memchr(p, ':', ilen);
    size_t klen = colon ? (size_t)(colon - p) : 0;
    bool kind_ok = colon && ((klen == 3 && strncmp(p, "cpu", 3) == 0) ||
                             (klen == 4 && strncmp(p, "cuda", 4) == 0));
    if (!kind_ok) {
      rc = sg_err_set(err, SG_EINVAL,
                      "devices \"%s\": \"%s\": expected cpu:N, cpu:A-B, cuda:N "
                      "or cuda:A-B", sp, item);
      break;
    }
    if (kind && (klen != kind_len || strncmp(kind, p, klen) != 0)) {
      rc = sg_err_set(err, SG_EINVAL,
                      "devices \"%s\": \"%s\": one kind of device only "
                      "(%.*s and %.*s)", sp, item, (int)kind_len, kind,
                      (int)klen, p);
      break;
    }
    kind = p;
    kind_len = klen;
    /* A or A-B, decimal digits only. */
    long idx[2] = {-1, -1};
    int got = 0;
    bool dash = false;
    const char *q = colon + 1, *end = p + ilen;
    while (got < 2) {
      long x = 0;
      const char *d = q;
      while (q < end && isdigit((unsigned char)*q) && q - d < 6)
        x = x * 10 + (*q++ - '0');
      if (q == d || (q < end && isdigit((unsigned char)*q)))
        break; /* no digits, or too many */
      idx[got++] = x;
      if (q < end && *q == '-' && got == 1) {
        q++;
        dash = true;
        continue;
      }
      break;
    }
    if (got == 0 || q != end || (dash && got != 2)) {
      rc = sg_err_set(err, SG_EINVAL,
                      "devices \"%s\": \"%s\": expected an index or a range "
                      "A-B", sp, item);
      break;
    }
    long lo = idx[0], hi = got == 2 ? idx[1] : idx[0];
    if (lo >= MAXDEV || hi >= MAXDEV) {
      rc = sg_err_set(err, SG_EINVAL,
                      "devices \"%s\": \"%s\": indices go from 0 to %d", sp,
                      item, MAXDEV - 1);
      break;
    }
    if (hi < lo) {
      rc = sg_err_set(err, SG_EINVAL,
                      "devices \"%s\": \"%s\": a range goes up (A-B, A <= B)", sp,
                      item);
      break;
    }
    for (long x = lo; x <= hi; x++) {
      if (used[x]) {
        rc = sg_err_set(err, SG_EINVAL,
                        "devices \"%s\": \"%s\": %.*s:%ld given twice", sp, item,
                        (int)klen, p, x);
        break;
      }
      used[x] = true;
      list = sg_realloc(list, (count + 1) * sizeof *list);
      list[count++] = sg_asprintf("%.*s:%ld", (int)klen, p, x);
    }
    if (comma == NULL)
      break;
    p = comma + 1;
  }
  free(used);
  if (rc < 0) {
    for (size_t i = 0; i < count; i++)
      free(list[i]);
    free(list);
    return rc;
  }
  *out = list;
  *n = count;
  return 0;
}

/* Prefixes err with "key: " unless the message says it already (the core's
 * messages name their module: "termination: unknown criterion ..."). */
static int prefix_once(sg_err *err, const char *key) {
  size_t n = strlen(key);
  if (strncmp(err->msg, key, n) == 0 && err->msg[n] == ':')
    return err->code;
  return sg_err_prefix(err, "%s", key);
}

static int check_search(const char *spec, uint64_t seed, sg_err *err) {
  if (strncmp(spec, "exec:", 5) == 0) {
    for (const char *p = spec + 5; *p; p++)
      if (!isspace((unsigned char)*p))
        return 0; /* the command is the runtime's to start */
    return sg_err_set(err, SG_EINVAL, "search: exec: needs a command (exec:CMD)");
  }
  sg_search_registry reg;
  sg_search_registry_init(&reg); /* refine, best-of-n and evolve */
  /* and exec, so that the list an unknown name is answered with has it */
  int rc = sg_search_register(&reg, &sg_search_exec_ops, err);
  sg_search *s = NULL;
  if (rc == 0)
    rc = sg_search_new(&reg, spec, seed, &s, err);
  if (rc < 0)
    return prefix_once(err, "search");
  sg_search_free(s);
  return 0;
}

int sg_run_config_check(const sg_run_config *c, sg_err *err) {
  if (c->n_task == 0)
    return sg_err_set(err, SG_EINVAL,
                      "task: at least one task is needed (--task NAME)");
  if (c->replay && c->llm)
    return sg_err_set(err, SG_EINVAL,
                      "replay: the recorded streams play the model; drop llm (%s)", c->llm);
  if (c->llm && c->model == NULL)
    return sg_err_set(err, SG_EINVAL,
                      "model: required with llm (--model NAME)");
  if (c->json && c->quiet)
    return sg_err_set(err, SG_EINVAL,
                      "json and quiet: choose one (json already replaces the "
                      "progress lines)");
  /* Keys with fixed choices, for a struct written by hand. */
  size_t nkeys = 0;
  const sg_run_key *keys = sg_run_keys(&nkeys);
  for (size_t i = 0; i < nkeys; i++) {
    if (keys[i].type != SG_KEY_STRING || keys[i].choices == NULL)
      continue;
    const char *s = *CFIELD(c, &keys[i], char *);
    if (s && !sg_run_config_in_choices(keys[i].choices, s)) {
      char want[160];
      sg_run_config_describe(&keys[i], want, sizeof want);
      return sg_err_set(err, SG_EINVAL, "%s: expected %s, got \"%s\"",
                        keys[i].name, want, s);
    }
  }
  if (c->knobs.decide_at_validation > 0 && c->knobs.decide_at_validation < 1)
    return sg_err_set(err, SG_EINVAL,
                      "decide-at-validation: expected 0 (off) or a margin in "
                      "1..10, got %g", c->knobs.decide_at_validation);
  if (c->knobs.decide_with_siblings && c->knobs.decide_at_validation <= 0)
    return sg_err_set(err, SG_EINVAL,
                      "decide-with-siblings: needs decide-at-validation (a margin "
                      "1..10), got decide-at-validation %g",
                      c->knobs.decide_at_validation);
  if (c->knobs.next_ahead && (c->search == NULL || strcmp(c->search, "refine") != 0))
    return sg_err_set(err, SG_EINVAL,
                      "next-ahead: needs the refine search (the main started ahead "
                      "refines the best kernel), got search %s",
                      c->search ? c->search : "(none)");
  if (c->knobs.cutoff_detach && c->knobs.cutoff <= 0)
    return sg_err_set(err, SG_EINVAL,
                      "cutoff-detach: needs a cutoff (cutoff > 0), got cutoff %g",
                      c->knobs.cutoff);
  if (c->replay_evals && c->replay == NULL)
    return sg_err_set(err, SG_EINVAL, "replay-evals: needs replay (--replay DIR)");
  /* A replay of a prompted run sends what it sent, so that the recording
   * matches. */
  if (c->reasoning && strcmp(c->reasoning, "prompted") == 0 && c->llm == NULL &&
      c->replay == NULL)
    return sg_err_set(err, SG_EINVAL,
                      "reasoning: prompted needs llm (the built-in test server "
                      "reasons on its own)");
  if (c->server_fault) {
    sg_llm_fault f;
    if (sg_llm_fault_parse(c->server_fault, &f, err) < 0)
      return sg_err_prefix(err, "server-fault");
  }
  {
    char **names;
    size_t n;
    int rc = sg_run_devices_parse(c->devices, &names, &n, err); /* NULL too */
    if (rc < 0)
      return rc;
    for (size_t i = 0; i < n; i++)
      free(names[i]);
    free(names);
  }
  if (c->termination) {
    sg_termination_registry reg;
    sg_termination_registry_init(&reg);
    sg_termination *t = NULL;
    if (sg_termination_new(&reg, c->termination, &t, err) < 0)
      return prefix_once(err, "termination");
    sg_termination_free(t);
  }
  if (c->search) {
    int rc = check_search(c->search, c->seed, err);
    if (rc < 0)
      return rc;
  }
  return sg_run_kv_config_check(c, err);
}
