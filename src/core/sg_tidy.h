/* sg_tidy.h: what a model writes around a kernel that can never build in
 * the harness, taken out of the candidate (pure).
 *
 * Three things, all seen in campaigns of a small coder model:
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
 * - A standard header never included (C only, beside a complete
 *   definition of the entry): `NAN`, `fabsf`, `expf`... without <math.h>,
 *   which cannot compile. For each of <math.h>,
 *   <stdint.h> (intN_t, uintN_t), <stddef.h> (size_t) and <string.h>
 *   (memset, memcpy) whose names the text uses as whole identifiers
 *   outside comments and literals, whose declarations it did not include
 *   (from that header or one that declares the same), and whose names it
 *   never declares or defines itself (a name right after another
 *   identifier than return/else/case/sizeof/do/goto, as in `#define NAN`
 *   or `float expf(float)`), an #include is added before the first
 *   unconditional #include, or at the top when there is none (unless the
 *   text defines a feature-test macro such as _GNU_SOURCE, which must come
 *   before any header: then nothing is added).
 * Each is replaced by (or, for a header, preceded by) a comment saying what
 * changed and why; the kernel is then stored, evaluated and shown in that
 * form. Nothing else
 * changes: a macro also used at file scope (an array's size) still fails
 * to compile, and the compiler's message says so.
 */
#ifndef SG_TIDY_H
#define SG_TIDY_H

#include <stddef.h>

/* A copy of src (len bytes) so tidied (malloc'd, NUL-terminated, its
 * length at *out_len, the number of things taken out or added at
 * *changes), or NULL when there is nothing to do (nothing is allocated).
 * language: the task's; only "c" and "cuda" are looked at. */
char *sg_tidy_candidate(const char *src, size_t len, const char *language,
                         const char *entry, size_t *out_len, int *changes);

#endif
