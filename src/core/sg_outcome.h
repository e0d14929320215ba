/* sg_outcome.h: how an evaluation of a candidate ended, the one thing the
 * core needs to know of evaluators. The evaluators (src/eval) fill it in
 * their results (sg_eval_result.status); the controller, the searches and
 * the termination criteria decide on it. It lives in the core so that the
 * core includes nothing from eval/, llm/ or runtime/.
 */
#ifndef SG_OUTCOME_H
#define SG_OUTCOME_H

typedef enum sg_eval_status {
  SG_EVAL_OK,
  SG_EVAL_COMPILE_ERROR,
  SG_EVAL_RUNTIME_ERROR,
  SG_EVAL_NUMERICAL_ERROR,
  SG_EVAL_TIMEOUT,
  SG_EVAL_REJECTED,     /* a rule broken: calling the reference, cheating */
  SG_EVAL_ABORTED,      /* the scheduler withdrew the request */
  SG_EVAL_INFRA_ERROR,  /* specgen or the machine failed, not the candidate */
  SG_EVAL__COUNT
} sg_eval_status;

/* "ok", "compile_error", ...; and back (-1 for an unknown name). */
const char *sg_eval_status_name(sg_eval_status s);
int sg_eval_status_parse(const char *name);

#endif
