/* cmd_run_server.h: the model of `specgen run` without --llm, the built-in
 * test server (cmd_run_server.c). */
#ifndef CMD_RUN_SERVER_H
#define CMD_RUN_SERVER_H

#include "run/sg_run.h"
#include "testserver/sg_llm_server.h"

/* *out starts and stops the built-in test server in this process for the
 * run it is given to; *slot holds the server while it runs (NULL before
 * and after) and must outlive the run. */
void sg_cli_run_server(sg_llm_server **slot, sg_run_server *out);

#endif
