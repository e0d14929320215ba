/* sg_prompt.h: the text sent to the LLM, rendered from templates.
 *
 * A search (src/core/sg_search.h) describes each main generation's prompt
 * as a structure: a base kernel to improve (0: from scratch) and feedback
 * items (a kernel's source, its profile, a failure). This module turns that
 * description, the task and the workflow history into a system message and
 * a user message, through template files:
 *
 *   system.txt         the system message
 *   think.txt          the request to reason first, added to a main
 *                      generation's system message when the model does not
 *                      reason on its own (`--reasoning prompted`)
 *   task.txt           the user message when there is no base kernel
 *   refine.txt         the user message when there is one
 *   kernel.txt         one other kernel shown ({{others}})
 *   failure.txt        one recent failure ({{failures}})
 *   rules_<evaluator>.txt  what a kernel must not do ({{task.rules}})
 *
 * The built-in templates live in prompts/ (sg_prompt_builtin_dir); a user's
 * directory overrides them file by file (a file with the same name wins).
 *
 * Syntax, written by hand (the one C-usable mustache in Debian 12,
 * libkainjow-mustache-dev, is C++; the syntax needed here is two forms):
 *   {{name}}              the value of a placeholder
 *   {{#name}}...{{/name}} the inside, only when the value is not empty
 * A section tag alone on its line leaves no blank line. Values are inserted
 * as they are and never scanned again, so "{{" in a kernel's source is
 * harmless. An unknown placeholder, an unclosed tag or section is an error
 * naming the template file and line, found when the templates are loaded.
 *
 * Everything is capped: a template file at SG_PROMPT_TEMPLATE_MAX_BYTES, a
 * failure's source at SG_PROMPT_FAILURE_SOURCE_MAX, a rendered message at
 * SG_PROMPT_TEXT_MAX (beyond: SG_EFULL, never a silently cut prompt).
 * Loading reads files; rendering is pure.
 */
#ifndef SG_PROMPT_H
#define SG_PROMPT_H

#include "common/sg_buf.h"
#include "common/sg_error.h"
#include "core/sg_search.h"
#include "eval/sg_task.h"

#include <stddef.h>
#include <stdint.h>

#define SG_PROMPT_TEMPLATE_MAX_BYTES ((size_t)64 * 1024)
#define SG_PROMPT_FAILURE_SOURCE_MAX ((size_t)16 * 1024)
#define SG_PROMPT_TEXT_MAX ((size_t)1024 * 1024)
/* The task's reference as shown in the prompt; a longer one is cut, with a
 * note saying so. */
#define SG_PROMPT_REFERENCE_MAX ((size_t)64 * 1024)
/* Sections nest at most this deep. */
#define SG_PROMPT_MAX_DEPTH 8

/* One placeholder and its value ("" is empty; NULL is not allowed). */
typedef struct sg_prompt_var {
  const char *name;
  const char *value;
} sg_prompt_var;

/* Expands template text (file names it in errors) with vars into out.
 * out NULL: checks only (every section's inside is checked, whatever the
 * values). SG_EPARSE with "file:line: ..." for an unknown placeholder, an
 * unclosed tag or section, a stray closing tag, too deep a nesting; SG_EFULL
 * when out's limit cut the text. */
int sg_prompt_expand(const char *file, const char *text,
                     const sg_prompt_var *vars, size_t nvars, sg_buf *out,
                     sg_err *err);

/* The directory of the built-in templates: $SPECGEN_PROMPTS_DIR, else the
 * installed data directory's prompts/, else the source tree's prompts/. */
const char *sg_prompt_builtin_dir(void);

typedef struct sg_prompt_templates sg_prompt_templates;

/* Loads every template: from user_dir when it holds a file of that name
 * (user_dir may be NULL), else from the built-in directory, and checks each
 * against its placeholders. Errors name the file (and line); a *.txt file in
 * user_dir that is not a template name is an error too (a typo would
 * otherwise be ignored silently). Free with sg_prompt_templates_free. */
int sg_prompt_templates_load(const char *user_dir, sg_prompt_templates **out,
                             sg_err *err);
void sg_prompt_templates_free(sg_prompt_templates *t);

/* The path a template was read from, or NULL for an unknown name. */
const char *sg_prompt_template_path(const sg_prompt_templates *t,
                                    const char *name);

/* A rendered prompt: the chat messages. Both owned. */
typedef struct sg_prompt_text {
  char *system;
  char *user;
  char *think;  /* think.txt: the request to reason, for prompted reasoning */
} sg_prompt_text;

void sg_prompt_text_free(sg_prompt_text *pt);

/* Renders prompt p of iteration for task, with kernels from history h
 * (every id in p must be in h, as sg_search_next guarantees). Kernel
 * feedback comes from the history: the validation message and profile text
 * the runtime stored there (built with sg_feedback), or the extraction
 * sentence for a generation without a candidate. 0, or SG_EFULL when a
 * message would exceed SG_PROMPT_TEXT_MAX (err names the template). */
int sg_prompt_render(const sg_prompt_templates *t, const sg_task *task,
                     const sg_history *h, const sg_prompt *p,
                     uint32_t iteration, sg_prompt_text *out, sg_err *err);

#endif
