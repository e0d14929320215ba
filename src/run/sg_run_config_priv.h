/* sg_run_config_priv.h: what sg_run_config.c (the key table, setting keys,
 * YAML, flags, JSON) shares with sg_run_config_check.c (the checks). Not a
 * public header: only src/run/sg_run_config*.c include it. */
#ifndef SG_RUN_CONFIG_PRIV_H
#define SG_RUN_CONFIG_PRIV_H

#include "run/sg_run_config.h"

#include <stdbool.h>
#include <stddef.h>

/* The field of key k in c, as a T. */
#define CFIELD(c, k, T) ((const T *)((const char *)(c) + (k)->offset))

/* value for a message: quoted-safe and cut to fit buf. */
void sg_run_config_shown(char *buf, size_t n, const char *value);
/* What key k expects, for a message ("an integer from 1 to 100000"). */
void sg_run_config_describe(const sg_run_key *k, char *buf, size_t n);
/* Whether v is one of choices ("a|b|c"). */
bool sg_run_config_in_choices(const char *choices, const char *v);

#endif
