/* sg_eval_worker_main.c: main of specgen-eval-worker, the cpu evaluator's
 * worker as a program of its own (sg_eval_cpu_worker.c says why).
 */
#include "eval/sg_eval_cpu_worker.h"

int main(int argc, char **argv) { return sg_eval_cpu_worker_main(argc, argv); }
