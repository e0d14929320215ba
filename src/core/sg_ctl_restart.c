/* sg_ctl_restart.c: a main generation the model server failed is sent
 * again in its iteration (sg_ctl_opts.main_retries; docs/core.md, States).
 * Pure, as the rest of the controller. */
#include "core/sg_controller_priv.h"

/* Main generation g of this iteration, which the model server failed (it
 * cut the stream, say), is sent again: the same generation (id, prompt),
 * its text and trigger scanner anew, as the new try streams its own text.
 * Forks already started from the cut text go on (their kernels count as
 * any fork's), and the next forks come from the new text. Past
 * main_retries the runtime waits before sending it (`wait`); the
 * iteration meanwhile neither ends nor counts. The cut try is restarted,
 * not continued from its text: continuing asks the server to go on
 * thinking in an unfinished turn, which the OpenAI-style chat API has no
 * standard way to say and which was not checked against a real server
 * (docs/core.md, States). */
void ctl_restart_main(sg_controller *c, gen *g, sg_ctl_actions *out) {
  sg_buf_free(&g->content);
  sg_buf_free(&g->reasoning);
  sg_scanner_free(g->scanner);
  g->scanner = NULL;
  ctl_gen_init_bufs(c, g);
  g->last_fork_prefix = 0;
  g->restarts++;
  c->st.main_restarts++;
  sg_ctl_action *a = ctl_emit_start(c, out, g);
  a->u.start.restart = g->restarts;
  a->u.start.wait = g->restarts > c->o.main_retries;
}
