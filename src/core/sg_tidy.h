/* sg_tidy.h: what a model writes around a kernel that can never build in
 * the harness, taken out of the candidate (pure).
 *
 * Two things, both seen in every campaign of a small coder model:
 * - Sizes as macros named like the parameters: `#define N 384` above
 *   `void f(const float *x, float *y, int N)`. That cannot compile (the
 *   macro expands inside the parameter list, `int 384`), yet the kernel
 *   means the parameter: the harness passes the value the prompt listed.
 *   So each object-like #define of one of the entry's parameter names,
 *   above the entry's definition, is taken out.
 * - A test driver: `int main(void) { ... }` beside the kernel. The harness
 *   has its own main and calls the entry itself, so a candidate's main can
 *   only break the build (a second main, or code that used the macros
 *   above). So a complete definition of main is taken out when the text
 *   also defines the entry (and main is not the entry).
 * Each is replaced by a comment saying what was taken out and why; the
 * kernel is then stored, evaluated and shown in that form. Nothing else
 * changes: a macro also used at file scope (an array's size) still fails
 * to compile, and the compiler's message says so.
 */
#ifndef SG_TIDY_H
#define SG_TIDY_H

#include <stddef.h>

/* A copy of src (len bytes) without them (malloc'd, NUL-terminated,
 * its length at *out_len, the number taken out at *removed), or NULL when
 * there is none (nothing is allocated). language: the task's; only "c" and
 * "cuda" are looked at. */
char *sg_tidy_candidate(const char *src, size_t len, const char *language,
                         const char *entry, size_t *out_len, int *removed);

#endif
