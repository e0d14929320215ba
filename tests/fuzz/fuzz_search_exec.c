/* fuzz_search_exec.c: the exec search's parsers (sg_search_exec.h) on any
 * bytes, as a user's search process could send them.
 *
 * The input, copied to an exact-size buffer so an over-read is caught, is
 * parsed as a hello and as a plan against a small history (ids 1..6). A plan
 * that parses must pass every check sg_search_next asserts on: 1..16
 * prompts, items within bounds with a known kind, every id present, and each
 * inspiration also shown as a kernel item.
 */
#include "run/sg_search_exec.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_plan(const sg_search_plan *plan, const sg_history *h) {
  assert(plan->n >= 1 && plan->n <= SG_SEARCH_MAX_MAINS);
  for (size_t i = 0; i < plan->n; i++) {
    const sg_prompt *p = &plan->prompts[i];
    assert(p->base_kernel == 0 || sg_history_get(h, p->base_kernel) != NULL);
    assert(p->n_items <= SG_PROMPT_MAX_ITEMS);
    assert(p->n_inspirations <= SG_PROMPT_MAX_INSPIRATIONS);
    for (size_t j = 0; j < p->n_items; j++) {
      assert((unsigned)p->items[j].kind < SG_ITEM__COUNT);
      assert(sg_history_get(h, p->items[j].kernel) != NULL);
    }
    for (size_t j = 0; j < p->n_inspirations; j++) {
      bool shown = false;
      for (size_t k = 0; k < p->n_items; k++)
        shown |= p->items[k].kind == SG_ITEM_KERNEL &&
                 p->items[k].kernel == p->inspirations[j];
      assert(shown);
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static sg_history h;
  static bool ready;
  if (!ready) {
    sg_history_init(&h);
    for (int i = 0; i < 6; i++)
      sg_history_add(&h, (uint32_t)i / 2, SG_GEN_MAIN, (uint64_t)i + 1, 0,
                     SG_EXTRACT_FOUND, "k", 1);
    ready = true;
  }
  char *buf = malloc(size ? size : 1);
  memcpy(buf, data, size);
  sg_err err;
  sg_err_clear(&err);
  int rc = sg_search_exec_hello_parse(buf, size, 1, &err);
  assert(rc == 0 || (rc < 0 && err.msg[0] != '\0'));
  sg_search_plan plan;
  sg_err_clear(&err);
  rc = sg_search_exec_plan_parse(buf, size, 2, &h, &plan, &err);
  if (rc == 0)
    check_plan(&plan, &h);
  else
    assert(rc < 0 && err.msg[0] != '\0' && plan.n == 0);
  free(buf);
  return 0;
}
