/* sg_unshadow.h: #define lines that shadow a kernel's parameters, taken out
 * (pure).
 *
 * Small models turn the sizes a prompt lists into macros: `#define N 384`
 * above `void f(const float *x, float *y, int N)`. That cannot compile (the
 * macro expands inside the parameter list, `int 384`), yet the kernel means
 * the parameter: the harness passes the value the prompt listed. So each
 * object-like #define of one of the entry's parameter names, above the
 * entry's definition, is replaced by a comment saying what was taken out
 * and why; the kernel is then stored, evaluated and shown as it compiles.
 * Nothing else changes: a macro also used at file scope (an array's size)
 * still fails to compile, as it did, and the compiler's message says so.
 */
#ifndef SG_UNSHADOW_H
#define SG_UNSHADOW_H

#include <stddef.h>

/* A copy of src (len bytes) without such lines (malloc'd, NUL-terminated,
 * its length at *out_len, the number taken out at *removed), or NULL when
 * there is none (nothing is allocated). language: the task's; only "c" and
 * "cuda" are looked at. */
char *sg_unshadow_params(const char *src, size_t len, const char *language,
                         const char *entry, size_t *out_len, int *removed);

#endif
