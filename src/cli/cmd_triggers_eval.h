/* cmd_triggers_eval.h: `specgen triggers --eval DIR` (cmd_triggers_eval.c). */
#ifndef CMD_TRIGGERS_EVAL_H
#define CMD_TRIGGERS_EVAL_H

#include "core/sg_triggers.h"

#include <stdbool.h>
#include <stdint.h>

/* Scans every DIR/NAME.txt with o, scores it against DIR/NAME.ann and prints
 * the table (or one JSON object); returns an exit status. */
int sg_cmd_triggers_eval(const char *dir, bool json, const sg_scanner_opts *o,
                         uint64_t window_bytes);

#endif
