/* sg_fakemodel_priv.h: what the test model's files share (sg_fakemodel.c:
 * the model, its random streams and the reasoning traces; sg_fm_answer.c:
 * the answer). Not a public header: only src/testserver/sg_f*.c include it. */
#ifndef SG_FAKEMODEL_PRIV_H
#define SG_FAKEMODEL_PRIV_H

#include "testserver/sg_fakemodel.h"

#include <stdint.h>

typedef struct rng {
  uint64_t s;
} rng;

#define PICK(r, arr) ((arr)[sg_fm_rng_below((r), sizeof(arr) / sizeof((arr)[0]))])

struct sg_fakemodel {
  sg_fm_params p;
  uint64_t seed;
  sg_fm_task *tasks;
  size_t ntasks;
};

uint64_t sg_fm_hash_str(const char *s);
const char *sg_fm_lang_tag(const sg_fm_task *t);
uint64_t sg_fm_mix(uint64_t a, uint64_t b);
double sg_fm_rng_unit(rng *r);
size_t sg_fm_rng_below(rng *r, size_t n);
uint64_t sg_fm_variants_in(const sg_fakemodel *m, int task, const char *context,
                            const char *text);

#endif
