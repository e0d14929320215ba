/* sg_edit.h: how near two names are, for "did you mean" suggestions (a
 * mistyped flag, a mistyped task). */
#ifndef SG_EDIT_H
#define SG_EDIT_H

#include <stddef.h>

/* The Levenshtein distance of a and b, each cut at 63 bytes (longer names
 * are far from everything a suggestion would offer anyway). */
size_t sg_edit_distance(const char *a, const char *b);

#endif
