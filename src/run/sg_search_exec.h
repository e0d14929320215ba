/* sg_search_exec.h: the `exec:CMD` search, a search written in any language
 * as an external process that answers over JSON lines (docs/search.md).
 *
 * specgen starts CMD through /bin/sh -c once per workflow, with its stdin and
 * stdout as pipes and its stderr inherited (free for the process's logs).
 * Both sides send a hello carrying the protocol version; then, at each
 * iteration, specgen sends the kernels the process has not seen yet and the
 * best kernel's id, and reads one plan line back. At the end specgen sends a
 * bye, closes the process's stdin, waits up to a second and kills the
 * process's group.
 *
 * The messages are built and parsed by the pure functions below (no I/O), so
 * they are unit-tested and fuzzed; the ops do the process handling. A plan is
 * checked here in full (counts, kinds, ids present in the history) before it
 * is handed over: sg_search_next would assert on a bad one.
 */
#ifndef SG_SEARCH_EXEC_H
#define SG_SEARCH_EXEC_H

#include "common/sg_error.h"
#include "core/sg_search.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The version both hellos carry; bumped on any change an older peer would
 * misread. */
#define SG_SEARCH_EXEC_PROTOCOL 1

/* The longest line the process may send, newline excluded. */
#define SG_SEARCH_EXEC_LINE_MAX ((size_t)1 << 20)

/* Seconds specgen waits for each reply; env SPECGEN_EXEC_TIMEOUT_S overrides
 * it (a number in (0, 86400]). */
#define SG_SEARCH_EXEC_TIMEOUT_S 60.0
#define SG_SEARCH_EXEC_TIMEOUT_ENV "SPECGEN_EXEC_TIMEOUT_S"

/* How long free waits for the process to exit after the bye. */
#define SG_SEARCH_EXEC_BYE_WAIT_S 1.0

/* The search's table: name "exec", ARG the shell command. */
extern const sg_search_ops sg_search_exec_ops;

/* The process id of a running exec search's process (its group's id too),
 * or -1 if it has been reaped; for tests that check nothing survives free.
 * state is what sg_search_exec_ops.init returned. */
long sg_search_exec_pid(const void *state);

/* ---- messages (pure) ----------------------------------------------------- */

/* Reads the timeout from the value of SPECGEN_EXEC_TIMEOUT_S (NULL or "":
 * the default). SG_EINVAL naming the variable if it is not a number in
 * (0, 86400]. */
int sg_search_exec_timeout_parse(const char *value, double *timeout_s,
                                 sg_err *err);

/* {"type":"hello","protocol":1,"seed":S,"max_prompts":16,"max_items":16,
 *  "max_inspirations":8}; the caller json_decref()s it. */
json_t *sg_search_exec_hello_json(uint64_t seed);

/* Checks the process's hello (one line without its newline): type "hello",
 * protocol 1. line_no (from 1) goes into the message: "line 1: ...".
 * SG_EPARSE not JSON or not a hello, SG_EPROTO another protocol version
 * (named), SG_ECHILD the process reported an error. */
int sg_search_exec_hello_parse(const char *line, size_t len,
                               unsigned line_no, sg_err *err);

/* One kernel as the protocol shows it (every field of sg_kernel; null where
 * there is no value); the caller json_decref()s it. */
json_t *sg_search_exec_kernel_json(const sg_kernel *k);

/* The "next" message for iteration: the kernels of h from index *sent on
 * whose iteration is before this one (the ones the process has not seen),
 * and best_id. Advances *sent past the kernels included. */
json_t *sg_search_exec_next_json(const sg_history *h, uint32_t iteration,
                                 size_t *sent);

/* Parses a plan line (without its newline) into plan, checked against h:
 * 1..SG_SEARCH_MAX_MAINS prompts, each with base_kernel (0 or null: from
 * scratch), items (at most SG_PROMPT_MAX_ITEMS; kind kernel|profile|failure)
 * and inspirations (at most SG_PROMPT_MAX_INSPIRATIONS); every id present in
 * h. An inspiration not already shown as a kernel item is added as one.
 * Errors name the line and field: "line 3: field
 * \"prompts[0].items[2].kernel\": kernel 17 is not in the history".
 * SG_EPARSE malformed, SG_ERANGE a count or id out of range, SG_ECHILD the
 * process sent {"type":"error"}. plan is only meaningful on 0. */
int sg_search_exec_plan_parse(const char *line, size_t len, unsigned line_no,
                              const sg_history *h, sg_search_plan *plan,
                              sg_err *err);

/* Lines of the protocol: sg_jsonl_line (pool/sg_jsonl.h). */

#endif
