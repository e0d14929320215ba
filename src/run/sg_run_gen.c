/* sg_run_gen.c: the run loop's generations (sg_run_priv.h): a controller's
 * start becomes a stream on the LLM client, with the prompt rendered once per
 * iteration and every generation recorded in the store; stream callbacks
 * become controller events. A speculative fork continues its parent's
 * reasoning: as the exact token ids on /completions where the provider
 * returns ids (a token fork), else as a chat continuation.
 */
#include "run/sg_run_priv.h"

#include "llm/sg_llm_generate.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

void sg_run_gen_free(rgen *g) {
  sg_buf_free(&g->think);
  free(g->prompt_ids);
  free(g->ids);
  free(g->marks);
  json_decref(g->rec);
  free(g);
}

/* ---- generations ------------------------------------------------------------- */

static rgen *gen_find(wf *f, uint64_t gen) {
  for (rgen *g = f->gens; g; g = g->next)
    if (g->gen == gen)
      return g;
  return NULL;
}

static void gen_unlink(wf *f, rgen *g) {
  for (rgen **p = &f->gens; *p; p = &(*p)->next)
    if (*p == g) {
      *p = g->next;
      return;
    }
}

static void gen_counts(wf *f, rgen *g, int delta) {
  if (g->kind == SG_GEN_MAIN)
    f->live_main += delta;
  else
    f->live_spec += delta;
}

static sg_finish_reason finish_reason_of(const char *s) {
  if (s && strcmp(s, "stop") == 0)
    return SG_FINISH_STOP;
  if (s && strcmp(s, "length") == 0)
    return SG_FINISH_LENGTH;
  return SG_FINISH_OTHER;
}

static const char *outcome_name(sg_store_gen_outcome o) {
  return o == SG_STORE_GEN_COMPLETED ? "completed"
       : o == SG_STORE_GEN_CANCELLED ? "cancelled"
                                     : "failed";
}

/* The generation's record line (sg_replay.h): what the server sent, as it
 * came, with the usage only the server measured. */
static void gen_record_log(run *r, rgen *g, const sg_llm_usage *u, const char *finish,
                           sg_store_gen_outcome outcome) {
  if (r->llm_log == NULL || g->rec == NULL)
    return;
  json_t *j = g->rec;
  json_object_set_new(j, "usage",
                      u && u->present
                          ? json_pack("{s:I, s:I, s:I}", "prompt_tokens",
                                      (json_int_t)u->prompt_tokens, "completion_tokens",
                                      (json_int_t)u->completion_tokens, "cached_tokens",
                                      (json_int_t)u->cached_tokens)
                          : json_null());
  bool cancelled = outcome == SG_STORE_GEN_CANCELLED;
  json_object_set_new(j, "finish", finish && !cancelled ? json_string(finish) : json_null());
  json_object_set_new(j, "outcome", json_string(outcome_name(outcome)));
  if (json_object_get(j, "error") == NULL) /* gen_ended sets a failure's */
    json_object_set_new(j, "error", json_null());
  json_object_set_new(j, "ended_us", json_integer(now_us() - g->rec_t0_us));
  STORE(r, sg_replay_log_write(r->llm_log, j, err));
}

static void gen_record_end(run *r, rgen *g, const sg_llm_usage *u, bool client_counted,
                           const char *finish, sg_store_gen_outcome outcome) {
  gen_record_log(r, g, u, finish, outcome);
  sg_gen_tokens t = sg_gen_tokens_of(&r->acct, u, client_counted, g->chunks, g->prompt_bytes);
  STORE(r, sg_store_generation_end(r->store, g->store_id, t.prompt, t.completion,
                                   t.cached, finish, outcome, now_us(), err));
  if (t.prompt_estimated || t.completion_estimated)
    STORE(r, sg_store_generation_estimated(r->store, g->store_id, t.prompt_estimated,
                                           t.completion_estimated, err));
}

static void on_delta(rgen *g, bool reasoning, const char *text, size_t len) {
  run *r = g->r;
  g->chunks++;
  if (reasoning) {
    g->reasoning_bytes += len;
    if (g->think.limit)
      sg_buf_append(&g->think, text, len);
  } else {
    g->content_bytes += len;
  }
  if (g->rec_chunks && json_array_size(g->rec_chunks) < SG_REPLAY_MAX_CHUNKS)
    json_array_append_new(g->rec_chunks,
                          json_pack("[I, s, s%]", (json_int_t)(now_us() - g->rec_t0_us),
                                    reasoning ? "r" : "c", text, len));
  sg_ctl_event ev;
  memset(&ev, 0, sizeof ev);
  ev.type = SG_CEV_GEN_CHUNK;
  ev.now_us = now_us();
  ev.u.chunk.gen = g->gen;
  if (reasoning) {
    ev.u.chunk.reasoning = text;
    ev.u.chunk.reasoning_len = len;
  } else {
    ev.u.chunk.content = text;
    ev.u.chunk.content_len = len;
  }
  ev.u.chunk.tokens = 1; /* vLLM and SGLang stream one token per chunk */
  sg_run_load_chunk(r, g);
  sg_interp_event(r->it, g->w, &ev);
  sg_run_drain(r);
}

static void on_reasoning(sg_llm_stream *s, void *data, const char *text, size_t len) {
  (void)s;
  on_delta(data, true, text, len);
}

static void on_content(sg_llm_stream *s, void *data, const char *text, size_t len) {
  (void)s;
  on_delta(data, false, text, len);
}

static void on_token_ids(sg_llm_stream *s, void *data, bool prompt, const int32_t *ids,
                         size_t n) {
  (void)s;
  rgen *g = data;
  if (prompt) {
    free(g->prompt_ids);
    g->prompt_ids = sg_malloc((n ? n : 1) * sizeof *ids);
    memcpy(g->prompt_ids, ids, n * sizeof *ids);
    g->n_prompt_ids = n;
    return;
  }
  /* The client delivers a chunk's ids after its text: a mark here is a
   * token boundary at the reasoning bytes received so far. */
  if (g->n_ids + n > g->cap_ids) {
    g->cap_ids = (g->n_ids + n) * 2;
    g->ids = sg_realloc(g->ids, g->cap_ids * sizeof *g->ids);
  }
  memcpy(g->ids + g->n_ids, ids, n * sizeof *ids);
  g->n_ids += n;
  if (g->n_marks == g->cap_marks) {
    g->cap_marks = g->cap_marks ? g->cap_marks * 2 : 256;
    g->marks = sg_realloc(g->marks, g->cap_marks * sizeof *g->marks);
  }
  g->marks[g->n_marks].bytes = g->reasoning_bytes;
  g->marks[g->n_marks].nids = g->n_ids;
  g->n_marks++;
}

/* The token prompt of a fork of m at prefix_len reasoning bytes: the
 * prompt, the ids of the chunks wholly before prefix_len, the ids that end
 * the reasoning; NULL when m has no ids to fork from. */
static int32_t *fork_ids(const run *r, const rgen *m, uint64_t prefix_len, size_t *n) {
  if (r->end_think == NULL || m == NULL || m->n_prompt_ids == 0)
    return NULL;
  size_t nids = 0;
  for (size_t i = 0; i < m->n_marks && m->marks[i].bytes <= prefix_len; i++)
    nids = m->marks[i].nids;
  if (nids == 0)
    return NULL;
  return sg_llm_fork_token_prompt(m->prompt_ids, m->n_prompt_ids, m->ids, nids,
                                  r->end_think, r->n_end_think, n);
}

static void on_usage(sg_llm_stream *s, void *data, const sg_llm_usage *u) {
  (void)s;
  rgen *g = data;
  g->usage = *u;
}

static sg_usage usage_of(const sg_llm_usage *u, uint64_t chunks) {
  sg_usage o = {0, chunks, 0};
  if (u->present) {
    o.prompt_tokens = (uint64_t)(u->prompt_tokens > 0 ? u->prompt_tokens : 0);
    o.completion_tokens = (uint64_t)(u->completion_tokens > 0 ? u->completion_tokens : 0);
    o.cached_tokens = (uint64_t)(u->cached_tokens > 0 ? u->cached_tokens : 0);
  }
  return o;
}

/* The prompt of main generation g while its iteration is the open one;
 * NULL once it is not (a main a cutoff detached, one started ahead): such a
 * main is not sent again. *row: the iteration's store id. */
static const sg_prompt_text *main_prompt(const wf *f, const rgen *g, int64_t *row) {
  if (g->kind != SG_GEN_MAIN || f->iter_store_id == 0 || g->iteration != f->iter_open ||
      g->prompt_index >= SG_SEARCH_MAX_MAINS || !f->have_prompt[g->prompt_index])
    return NULL;
  *row = f->iter_store_id;
  return &f->prompts[g->prompt_index];
}

/* How long a main waits before it is sent again: 1 s, doubling, at most
 * 15 s (the client's own retries of 429 and 5xx came first). */
static int64_t retry_wait_us(int retries) {
  int64_t us = 1000000;
  for (int i = 0; i < retries && us < 15000000; i++)
    us *= 2;
  return us < 15000000 ? us : 15000000;
}

/* A generation ended: a completed one ends any outage of the model server;
 * a failure of the server's (sg_gen_endpoint_failure) starts one or goes
 * on with it, and once it has lasted --llm-outage seconds the run stops,
 * resumable: the open iterations stay open in the store and are redone. */
static void outage_note(run *r, bool ok, bool endpoint, const char *message) {
  if (ok) {
    r->outage_since_us = 0;
    r->outage_warned = false;
    return;
  }
  if (!endpoint)
    return;
  int64_t now = now_us();
  if (r->outage_since_us == 0)
    r->outage_since_us = now;
  double s = (double)(now - r->outage_since_us) / 1e6;
  if (s < r->cfg->llm_outage || r->stopping)
    return;
  char cause[SG_GEN_CAUSE_BYTES];
  sg_gen_cause(message, cause, sizeof cause);
  sg_err e;
  sg_err_clear(&e);
  sg_err_set(&e, SG_ECONN,
             "the model server %s failed every request for %.0f s (llm-outage %g s; "
             "the last: %s): the run stopped; the iterations it cut do not count",
             r->base_url, s, r->cfg->llm_outage, cause);
  sg_run_fail(r, &e);
}

static void gen_ended(rgen *g, const sg_llm_result *res, bool ok) {
  run *r = g->r;
  wf *f = wf_of(r, g->w);
  g->stream = NULL; /* freed by the client after this callback */
  bool endpoint = !ok && sg_gen_endpoint_failure(res->code, res->http_status);
  int64_t row = 0;
  /* The server failed a main before it streamed anything: no kernel came
   * because of the server, not the model, so the iteration does not end
   * (and count) for it: it waits, and the main is sent again. */
  bool again = endpoint && g->chunks == 0 && !res->output_started &&
               main_prompt(f, g, &row) != NULL;
  if (!again) {
    gen_unlink(f, g);
    gen_counts(f, g, -1);
  }
  sg_llm_usage u = res->usage.present ? res->usage : g->usage;
  if (!ok && g->rec)
    json_object_set_new(g->rec, "error", json_string(res->message ? res->message : ""));
  gen_record_end(r, g, &u, res->usage.present && res->usage_estimated, res->finish_reason,
                 ok ? SG_STORE_GEN_COMPLETED : SG_STORE_GEN_FAILED);
  if (ok) {
    sg_gen_account_completed(&r->acct);
    if (g->kind == SG_GEN_MAIN && g->reasoning_bytes == 0 && r->cfg->knobs.spec &&
        sg_gen_account_no_reasoning(&r->acct))
      sg_run_emit(r, "warning",
                  json_pack("{s:s, s:s}", "task", f->task->name, "message",
                            "the model streamed no reasoning (no reasoning field, no "
                            "leading <think> block in its content), so speculative "
                            "forks have nothing to fork from: use a reasoning model, "
                            "or a server that parses its reasoning"));
  } else {
    /* Each distinct cause once, in plain words, where a person reads it. */
    const char *cause = sg_gen_account_failed(&r->acct, res->message);
    if (cause) {
      char msg[SG_GEN_CAUSE_BYTES + 300];
      snprintf(msg, sizeof msg, "generation failed: %s (model server %s)", cause,
               r->base_url);
      sg_run_emit(r, "warning", json_pack("{s:s, s:s}", "task", f->task->name, "message", msg));
    }
  }
  sg_run_emit(r, "generation",
       json_pack("{s:s, s:i, s:s, s:s, s:I, s:s?}", "task", f->task->name,
                 "iteration", (int)g->iteration + 1, "kind", sg_gen_kind_name(g->kind),
                 "outcome", ok ? "completed" : "failed", "completion_tokens",
                 (json_int_t)(u.present ? u.completion_tokens : (int64_t)g->chunks),
                 "error", ok ? NULL : res->message));
  outage_note(r, ok, endpoint, res->message);
  if (again && r->stopping) {
    /* stopped (this outage, or a signal): the iteration stays open in the
     * store, and a resumed run redoes it */
    gen_unlink(f, g);
    gen_counts(f, g, -1);
    sg_run_gen_free(g);
    sg_run_drain(r);
    return;
  }
  if (again) {
    int64_t wait = retry_wait_us(g->retries++);
    g->retry_at_us = now_us() + wait;
    if (!r->outage_warned) {
      r->outage_warned = true;
      char msg[512];
      snprintf(msg, sizeof msg,
               "the model server %s failed before the main generation streamed "
               "anything: the iteration waits and sends it again (first in %.0f s); "
               "after %g s of failures (--llm-outage) the run stops, resumable",
               r->base_url, (double)wait / 1e6, r->cfg->llm_outage);
      sg_run_emit(r, "warning", json_pack("{s:s, s:s}", "task", f->task->name, "message", msg));
    }
    return;
  }
  sg_ctl_event ev;
  memset(&ev, 0, sizeof ev);
  ev.now_us = now_us();
  if (ok) {
    ev.type = SG_CEV_GEN_FINISHED;
    ev.u.finished.gen = g->gen;
    ev.u.finished.text = NULL; /* the content came in chunks */
    if (g->think.limit && g->content_bytes == 0 && g->think.len > 0) {
      /* Prompted reasoning, and the model never wrote </think>: all it
       * wrote was taken as thinking, and is its answer too (a small model
       * often writes the kernel inside the block). */
      ev.u.finished.text = sg_buf_str(&g->think);
      ev.u.finished.len = g->think.len;
      if (!r->warned_unclosed) {
        r->warned_unclosed = true;
        sg_run_emit(r, "warning",
                    json_pack("{s:s, s:s}", "task", f->task->name, "message",
                              "prompted reasoning: the model did not close its <think> "
                              "block, so its whole text is read as its answer too"));
      }
    }
    ev.u.finished.reason = finish_reason_of(res->finish_reason);
    ev.u.finished.usage = usage_of(&u, g->chunks);
  } else {
    ev.type = SG_CEV_GEN_FAILED;
    ev.u.failed.gen = g->gen;
    ev.u.failed.error = res->code ? res->code : SG_EHTTP;
    ev.u.failed.message = res->message;
    ev.u.failed.usage = usage_of(&u, g->chunks);
    /* a main the server cut mid-stream: the controller sends it again
     * (op_gen_start records why). Not in a replay: a recording that ends
     * before its finish was cancelled live, and sent again it ends there
     * again; the main fails as a cancelled one would have. */
    ev.u.failed.endpoint = endpoint && r->cfg->replay == NULL;
    r->cut_cause = sg_gen_endpoint_cause(res->code, res->http_status);
    snprintf(r->cut_message, sizeof r->cut_message, "%s", res->message ? res->message : "");
  }
  uint32_t w = g->w;
  f->ending = g;
  sg_interp_event(r->it, w, &ev);
  f->ending = NULL;
  r->cut_cause = NULL;
  sg_run_gen_free(g); /* after: the event may point into g->think */
  sg_run_drain(r);
}

static void on_finish(sg_llm_stream *s, void *data, const sg_llm_result *res) {
  (void)s;
  gen_ended(data, res, true);
}

static void on_error(sg_llm_stream *s, void *data, const sg_llm_result *res) {
  (void)s;
  gen_ended(data, res, false);
}

/* The iteration the controller's action belongs to is open in the store. */
void sg_run_iteration_open(run *r, wf *f, uint32_t iteration) {
  if (f->iter_store_id != 0 && f->iter_open == iteration)
    return;
  assert(f->iter_store_id == 0);
  f->iter_open = iteration;
  STORE(r, sg_store_iteration_begin(r->store, f->store_id, (int64_t)iteration + 1,
                                    now_us(), &f->iter_store_id, err));
}

/* Closes the open iteration; the next one, if a main generation started
 * ahead opened it (next-ahead), is then the open one, with that main's
 * prompt. */
void sg_run_iteration_close(run *r, wf *f, const char *reason) {
  if (f->iter_store_id == 0)
    return;
  STORE(r, sg_store_iteration_end(r->store, f->iter_store_id, reason, now_us(), err));
  f->iter_store_id = 0;
  for (size_t i = 0; i < SG_SEARCH_MAX_MAINS; i++) {
    if (f->have_prompt[i])
      sg_prompt_text_free(&f->prompts[i]);
    f->have_prompt[i] = false;
  }
  if (f->ahead_iter_store_id != 0) {
    f->iter_store_id = f->ahead_iter_store_id;
    f->iter_open = f->ahead_iter;
    f->ahead_iter_store_id = 0;
    if (f->have_ahead_prompt) {
      f->prompts[0] = f->ahead_prompt; /* the controller starts it at index 0 */
      f->have_prompt[0] = true;
      f->have_ahead_prompt = false;
    }
  }
}

/* next-ahead: a main generation of the iteration after the open one opens
 * it in the store now (it begins before this one ends) and has its own
 * prompt; sg_run_iteration_close makes both the open ones. */
static int ahead_open(run *r, wf *f, const sg_ctl_action *a, sg_err *e) {
  if (f->ahead_iter_store_id == 0 || f->ahead_iter != a->iteration) {
    assert(f->ahead_iter_store_id == 0);
    f->ahead_iter = a->iteration;
    STORE(r, sg_store_iteration_begin(r->store, f->store_id, (int64_t)a->iteration + 1,
                                      now_us(), &f->ahead_iter_store_id, err));
    if (r->failed)
      return 0;
  }
  if (f->have_ahead_prompt)
    sg_prompt_text_free(&f->ahead_prompt);
  f->have_ahead_prompt = false;
  if (sg_prompt_render(r->templates, f->task, sg_controller_history(f->ctl),
                       a->u.start.prompt, a->iteration, &f->ahead_prompt, e) < 0)
    return -1;
  f->have_ahead_prompt = true;
  return 0;
}

/* What the store keeps of a generation's prompt: the rendered messages, a
 * fork's reasoning prefix, and how many token ids a token fork sent. */
static char *prompt_record(const sg_prompt_text *pt, const char *prefix, size_t plen,
                           size_t n_token_ids, const char *prefill) {
  json_t *j = json_pack("{s:s, s:s}", "system", pt->system, "user", pt->user);
  if (prefill) /* prompted reasoning: the answer the model was asked to continue */
    json_object_set_new(j, "assistant_prefill", json_string(prefill));
  if (prefix)
    json_object_set_new(j, "reasoning_prefix", json_stringn(prefix, plen));
  if (n_token_ids)
    json_object_set_new(j, "token_ids", json_integer((json_int_t)n_token_ids));
  char *s = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  return s;
}

/* The start of a generation's record line: the request, without its
 * headers (no key ever reaches the record). A fork's messages and prefix
 * are its parent's (the parent's messages, the first prefix_bytes of its
 * reasoning), so they are not written twice. */
static json_t *gen_record_begin(const run *r, const wf *f, const sg_ctl_action *a,
                                const sg_prompt_text *pt, size_t n_token_ids, int64_t t0_us) {
  bool spec = a->u.start.kind == SG_GEN_SPEC;
  json_t *j = json_pack("{s:s, s:i, s:I, s:s, s:I, s:I, s:s, s:s, s:b, s:I, s:f, s:I, s:I}",
                        "task", f->task->name, "iteration", (int)a->iteration + 1, "gen",
                        (json_int_t)a->u.start.gen, "kind", sg_gen_kind_name(a->u.start.kind),
                        "parent_gen", (json_int_t)(spec ? a->u.start.parent_gen : 0),
                        "prefix_bytes", (json_int_t)(spec ? a->u.start.prefix_len : 0),
                        "system", spec ? "" : pt->system, "user", spec ? "" : pt->user,
                        "thinking",
                        a->u.start.thinking, "max_tokens", (json_int_t)r->cfg->max_tokens,
                        "temperature", r->cfg->temperature, "token_ids",
                        (json_int_t)n_token_ids, "started_us", (json_int_t)(t0_us - r->t0_us));
  if (a->u.start.answer) /* the answer at the length cap, not a fork */
    json_object_set_new(j, "answer_at_cap", json_true());
  json_object_set_new(j, "chunks", json_array());
  return j;
}

/* Prompted reasoning: the answer a main generation is asked to continue,
 * so that what it writes first is its thinking, whatever it would have
 * opened with (a small model told to "open with <think>" often does not). */
static const char k_prompted_prefill[] = "<think>\n";

/* What a generation's request holds while it is being started. */
typedef struct gen_request {
  sg_llm_message msgs[3];
  char *prefix;            /* a fork's reasoning prefix (owned) */
  char rid[96];
  char seed_json[64];
  sg_llm_request q;
} gen_request;

/* The request of START_GEN a: chat messages (a fork: the parent's reasoning
 * as the assistant's prefix), or a token fork's exact ids on /completions. */
static void request_of(run *r, uint32_t w, const sg_ctl_action *a, const sg_prompt_text *pt,
                       int32_t *fork_prompt, size_t n_fork_ids, bool prompted,
                       gen_request *gq) {
  bool spec = a->u.start.kind == SG_GEN_SPEC;
  sg_llm_message *msgs = gq->msgs;
  msgs[0] = (sg_llm_message){"system", pt->system, NULL, false};
  msgs[1] = (sg_llm_message){"user", pt->user, NULL, false};
  msgs[2] = (sg_llm_message){"assistant", "", NULL, true};
  gq->prefix = NULL;
  if (spec) {
    gq->prefix = sg_strndup(a->u.start.prefix, (size_t)a->u.start.prefix_len);
    msgs[2].reasoning = gq->prefix;
  }
  snprintf(gq->rid, sizeof gq->rid, "specgen-%lld-w%u-g%llu-%llu", (long long)r->run_id, w,
           (unsigned long long)a->u.start.gen, (unsigned long long)++r->gen_seq);
  sg_llm_request *q = &gq->q;
  sg_llm_request_init(q);
  q->base_url = r->base_url;
  q->model = r->model;
  q->endpoint = SG_LLM_ENDPOINT_CHAT;
  q->messages = msgs;
  q->n_messages = spec ? 3 : 2;
  if (prompted) {
    msgs[2].content = k_prompted_prefill;
    q->n_messages = 3;
    q->think_mode = SG_LLM_THINK_OPEN; /* the "<think>" was ours, not streamed */
  }
  q->max_tokens = r->cfg->max_tokens;
  q->temperature = r->cfg->temperature;
  q->no_think = !a->u.start.thinking;
  q->request_id = gq->rid;
  q->provider = r->provider;
  q->deadline_s = r->cfg->gen_deadline;
  q->idle_timeout_s = r->cfg->idle_timeout;
  if (fork_prompt) {
    /* The exact tokens of the parent's prompt and reasoning, then the end of
     * thinking: the server's prefix cache serves all of it. */
    q->endpoint = SG_LLM_ENDPOINT_COMPLETIONS;
    q->messages = NULL;
    q->n_messages = 0;
    q->prompt_token_ids = fork_prompt;
    q->n_prompt_token_ids = n_fork_ids;
    q->no_think = false;
  } else if (!spec && r->end_think) {
    q->return_token_ids = true; /* what forks of it will send back */
  }
  /* The caller's server (the built-in model) samples from the request's
   * seed: one drawn from the run's seed, the workflow and the generation
   * makes a run repeatable in what the model writes (its timing still
   * varies). A real endpoint is left to sample as it is configured. */
  if (r->server_up) {
    snprintf(gq->seed_json, sizeof gq->seed_json, "{\"seed\": %llu}",
             (unsigned long long)((r->cfg->seed * 1000003ull + w * 1009ull +
                                   a->u.start.gen) % 9007199254740991ull));
    q->extra_json = gq->seed_json;
  }
}

/* Records generation g (of START_GEN a, with prompt pt, in the iteration
 * whose store id is iter_row) and starts its stream. False when it did not
 * start: a store failure (the run stops), or a request that cannot be
 * expressed (a profile without prefix continuation, say): a failed
 * generation, recorded, and reported to the controller after this action
 * list, as a stream error would be. g is freed then (unlinked first when it
 * was a main waiting to be sent again). */
static bool gen_launch(run *r, wf *f, rgen *g, const sg_ctl_action *a,
                       const sg_prompt_text *pt, int64_t iter_row) {
  bool spec = a->u.start.kind == SG_GEN_SPEC;
  bool linked = g->retry_at_us != 0;
  rgen *parent = spec ? gen_find(f, a->u.start.parent_gen) : NULL;
  if (parent == NULL && spec && f->ending && f->ending->gen == a->u.start.parent_gen)
    parent = f->ending; /* the answer at the length cap of a main just ended */
  size_t n_fork_ids = 0;
  int32_t *fork_prompt = spec ? fork_ids(r, parent, a->u.start.prefix_len, &n_fork_ids) : NULL;
  /* Prompted reasoning: a main generation's system message asks it to
   * reason first (think.txt) and its answer starts inside "<think>"; a fork
   * sees neither, and continues the thinking closed, like any fork. */
  bool prompted = r->prompted && !spec;
  sg_prompt_text sent = *pt;
  char *system = prompted ? sg_asprintf("%s\n\n%s", pt->system, pt->think) : NULL;
  if (system)
    sent.system = system;
  char *prompt_json = prompt_record(&sent, spec ? a->u.start.prefix : NULL,
                                    spec ? (size_t)a->u.start.prefix_len : 0, n_fork_ids,
                                    prompted ? k_prompted_prefill : NULL);
  sg_store_generation sg = {
      .iteration_id = iter_row,
      .kind = spec ? SG_STORE_GEN_SPEC : SG_STORE_GEN_MAIN,
      .parent_id = parent ? parent->store_id : 0,
      .prefix_bytes = spec ? (int64_t)a->u.start.prefix_len : 0,
      .prompt = prompt_json,
      .started_us = now_us(),
      .answer_at_cap = a->u.start.answer,
  };
  int64_t store_id = 0;
  STORE(r, sg_store_generation_begin(r->store, &sg, &store_id, err));
  free(prompt_json);
  int rc = 0;
  sg_err e;
  sg_err_clear(&e);
  if (!r->failed) {
    gen_request gq;
    request_of(r, g->w, a, &sent, fork_prompt, n_fork_ids, prompted, &gq);
    g->store_id = store_id;
    g->prompt_bytes = strlen(sent.system) + strlen(sent.user) +
                      (spec ? (size_t)a->u.start.prefix_len : 0);
    sg_buf_free(&g->think); /* a main sent again starts its thinking anew */
    g->content_bytes = 0;
    if (prompted)
      sg_buf_init(&g->think, SG_PROMPTED_THINK_MAX);
    idmap_set(&f->gen_store, g->gen, store_id);
    json_decref(g->rec); /* a main sent again: its failed try was logged */
    g->rec_t0_us = now_us();
    g->rec = gen_record_begin(r, f, a, &sent, n_fork_ids, g->rec_t0_us);
    g->rec_chunks = json_object_get(g->rec, "chunks");
    sg_llm_callbacks cb = {g,         on_reasoning, on_content,
                           gq.q.return_token_ids ? on_token_ids : NULL,
                           on_usage,  on_finish,    on_error};
    rc = sg_llm_stream_start(r->client, &gq.q, &cb, &g->stream, &e);
    free(gq.prefix);
  }
  free(fork_prompt);
  free(system);
  if (r->failed || rc < 0) {
    if (rc < 0) {
      gen_record_end(r, g, NULL, false, NULL, SG_STORE_GEN_FAILED);
      if (sg_gen_account_failed(&r->acct, e.msg))
        sg_run_emit(r, "warning", json_pack("{s:s, s:s}", "task", f->task->name, "message",
                                            e.msg));
      sg_interp_gen_failed(r->it, g->w, g->gen, rc, e.msg);
    }
    if (linked) {
      gen_unlink(f, g);
      gen_counts(f, g, -1);
    }
    sg_run_gen_free(g);
    return false;
  }
  g->retry_at_us = 0;
  g->last_chunk_us = 0; /* its own prefill is not a gap between chunks */
  r->generations++;
  return true;
}

/* A main generation the model server cut is sent again (START_GEN with
 * restart n): the store keeps a main_restart decision with the cause, the
 * progress says it. */
static void main_restarted(run *r, wf *f, const rgen *g, const sg_ctl_action *a) {
  const char *cause = r->cut_cause ? r->cut_cause : "another failure";
  const char *message = r->cut_cause ? r->cut_message : "";
  bool wait = a->u.start.wait;
  sg_run_record_decision(r, f, "main_restart",
                         json_pack("{s:I, s:i, s:s, s:s, s:b}", "generation",
                                   (json_int_t)g->gen, "restart", (int)a->u.start.restart,
                                   "cause", cause, "message", message, "after_wait", wait));
  sg_run_emit(r, "main_restart",
              json_pack("{s:s, s:i, s:i, s:s, s:b}", "task", f->task->name, "iteration",
                        (int)a->iteration + 1, "restart", (int)a->u.start.restart,
                        "cause", cause, "after_wait", wait));
  if (!wait || r->restart_warned)
    return;
  r->restart_warned = true;
  char msg[SG_GEN_CAUSE_BYTES + 400];
  snprintf(msg, sizeof msg,
           "the model server cut a main generation %d times in one iteration (the "
           "last: %s): it is sent again after waits, its iteration uncounted; after "
           "%g s of failures (--llm-outage) the run stops, resumable",
           (int)a->u.start.restart, cause, r->cfg->llm_outage);
  sg_run_emit(r, "warning", json_pack("{s:s, s:s}", "task", f->task->name, "message", msg));
}

/* START_GEN: the iteration is opened in the store, the prompt rendered
 * (by each main generation; its forks reuse it), the generation recorded
 * and its stream started. A main generation of the next iteration, started
 * ahead (next-ahead), opens that one beside the open one. */
static int op_gen_start(void *data, uint32_t w, const sg_ctl_action *a) {
  run *r = data;
  wf *f = wf_of(r, w);
  bool spec = a->u.start.kind == SG_GEN_SPEC;
  bool ahead = !spec && f->iter_store_id != 0 && a->iteration != f->iter_open;
  sg_err e;
  sg_err_clear(&e);
  size_t pi = a->u.start.prompt_index;
  assert(pi < SG_SEARCH_MAX_MAINS);
  int rc = 0;
  if (ahead) {
    rc = ahead_open(r, f, a, &e);
  } else {
    sg_run_iteration_open(r, f, a->iteration);
    if (!spec && a->u.start.restart == 0 && f->have_prompt[pi]) {
      /* a main started ahead, then cancelled (a main sent again keeps the
       * prompt it was first sent with) */
      sg_prompt_text_free(&f->prompts[pi]);
      f->have_prompt[pi] = false;
    }
    if (!r->failed && !f->have_prompt[pi]) {
      rc = sg_prompt_render(r->templates, f->task, sg_controller_history(f->ctl),
                            a->u.start.prompt, a->iteration, &f->prompts[pi], &e);
      f->have_prompt[pi] = rc == 0;
    }
  }
  if (rc < 0) {
    sg_err_prefix(&e, "task %s: rendering the prompt", f->task->name);
    sg_run_fail(r, &e);
    return 0;
  }
  if (r->failed)
    return 0;
  const sg_prompt_text *pt = ahead ? &f->ahead_prompt : &f->prompts[pi];
  rgen *g = sg_calloc(1, sizeof *g);
  g->r = r;
  g->w = w;
  g->gen = a->u.start.gen;
  g->kind = a->u.start.kind;
  g->iteration = a->iteration;
  g->thinking = a->u.start.thinking;
  g->prompt_index = pi;
  if (a->u.start.restart > 0)
    main_restarted(r, f, g, a);
  if (a->u.start.restart > 0 && a->u.start.wait) {
    /* sent when due (sg_run_gen_retry_due), as a main the server failed
     * before it streamed */
    g->retries = (int)a->u.start.restart - r->cfg->main_retries - 1;
    g->retry_at_us = now_us() + retry_wait_us(g->retries);
  } else if (!gen_launch(r, f, g, a, pt, ahead ? f->ahead_iter_store_id : f->iter_store_id)) {
    return 0;
  }
  g->next = f->gens;
  f->gens = g;
  gen_counts(f, g, 1);
  if (g->retry_at_us == 0)
    sg_run_load_stream_started(r);
  if (spec) {
    /* the answer at the length cap is its own event: not a fork */
    sg_run_emit(r, a->u.start.answer ? "answer_at_cap" : "fork",
                json_pack("{s:s, s:i, s:I}", "task", f->task->name, "iteration",
                          (int)a->iteration + 1, "prefix_bytes",
                          (json_int_t)a->u.start.prefix_len));
  }
  return 0;
}

/* Cancels a running generation; true when it was a main one. */
static bool gen_cancel(run *r, uint32_t w, uint64_t gen) {
  wf *f = wf_of(r, w);
  rgen *g = gen_find(f, gen);
  if (g == NULL)
    return false;
  if (g->stream)
    sg_llm_stream_cancel(g->stream);
  g->stream = NULL;
  gen_unlink(f, g);
  gen_counts(f, g, -1);
  bool main = g->kind == SG_GEN_MAIN;
  if (g->retry_at_us == 0) /* a main waiting to be sent again was recorded failed */
    gen_record_end(r, g, &g->usage, false, "cancelled", SG_STORE_GEN_CANCELLED);
  sg_run_gen_free(g);
  return main;
}

void sg_run_gen_cancel(run *r, uint32_t w, uint64_t gen) { (void)gen_cancel(r, w, gen); }

static int op_gen_cancel(void *data, uint32_t w, uint64_t gen, bool *was_main) {
  *was_main = gen_cancel(data, w, gen);
  return 0;
}

void sg_run_gen_retry_due(run *r, int64_t now) {
  for (size_t i = 0; i < r->nwf && !r->stopping; i++) {
    wf *f = &r->wfs[i];
    rgen *next;
    for (rgen *g = f->gens; g; g = next) {
      next = g->next;
      if (g->retry_at_us == 0 || g->retry_at_us > now)
        continue;
      int64_t row = 0;
      const sg_prompt_text *pt = main_prompt(f, g, &row);
      if (pt == NULL) {
        /* its iteration ended without cancelling it (a cutoff detached
         * it): it ends as the failure it was */
        gen_unlink(f, g);
        gen_counts(f, g, -1);
        sg_interp_gen_failed(r->it, (uint32_t)i, g->gen, SG_ECONN,
                             "the model server failed it before its iteration ended");
        sg_run_gen_free(g);
        continue;
      }
      sg_ctl_action a;
      memset(&a, 0, sizeof a);
      a.iteration = g->iteration;
      a.u.start.kind = SG_GEN_MAIN;
      a.u.start.gen = g->gen;
      a.u.start.thinking = g->thinking;
      a.u.start.prompt_index = g->prompt_index;
      free(g->prompt_ids);
      free(g->ids);
      free(g->marks);
      g->prompt_ids = g->ids = NULL;
      g->marks = NULL;
      g->n_prompt_ids = g->n_ids = g->cap_ids = g->n_marks = g->cap_marks = 0;
      memset(&g->usage, 0, sizeof g->usage);
      if (gen_launch(r, f, g, &a, pt, row))
        sg_run_load_stream_started(r);
    }
  }
}

void sg_run_gen_ops(sg_interp_ops *ops) {
  ops->gen_start = op_gen_start;
  ops->gen_cancel = op_gen_cancel;
}
