/* cmd_run_server.c: `specgen run` without --llm plays the model with the
 * built-in test server (sg_llm_server.h), started here and handed to the
 * run as an endpoint (sg_run.h, sg_run_server): the run talks to it, as to
 * any server, through the LLM client alone. */
#include "cli/cmd_run_server.h"

#include "common/sg_alloc.h"

static int start(void *data, const sg_run_config *cfg, char **base_url, const char **model,
                 const char **profile, sg_err *err) {
  sg_llm_server **slot = data;
  sg_llm_server_opts so;
  sg_llm_server_opts_init(&so);
  so.seed = cfg->seed;
  so.tokens_per_s = cfg->server_speed;
  so.concurrency = cfg->server_concurrency;
  so.replay = cfg->replay;
  so.replay_speed = cfg->replay_speed;
  so.replay_hold_s = 5;
  if (cfg->server_fault) {
    int rc = sg_llm_fault_parse(cfg->server_fault, &so.fault, err);
    if (rc < 0)
      return sg_err_prefix(err, "--server-fault");
  }
  int rc = sg_llm_server_start(&so, slot, err);
  if (rc < 0)
    return sg_err_prefix(err, "starting the built-in test server");
  *base_url = sg_asprintf("http://127.0.0.1:%d", sg_llm_server_port(*slot));
  *model = "specgen-test";
  /* A recording is text: forks go as chat continuations (generic), which
   * the replay reads its prefix from, not as this server's token ids. */
  *profile = cfg->replay ? "generic" : "vllm";
  return 0;
}

static void stop(void *data) {
  sg_llm_server **slot = data;
  sg_llm_server_stop(*slot);
  *slot = NULL;
}

void sg_cli_run_server(sg_llm_server **slot, sg_run_server *out) {
  *slot = NULL;
  out->data = slot;
  out->start = start;
  out->stop = stop;
}
