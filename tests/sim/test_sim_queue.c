/* test_sim_queue.c: the simulator's event heap and random streams. */
#include "sg_test.h"
#include "sim/sg_sim_queue.h"
#include "sim/sg_sim_rng.h"

#include <stdint.h>

static void pops_in_time_order(void) {
  sg_sim_queue q;
  sg_sim_queue_init(&q);
  sg_sim_rng r;
  sg_sim_rng_seed(&r, 7, 0);
  for (int i = 0; i < 5000; i++) {
    sg_sim_event e = {.t_us = (int64_t)(sg_sim_rng_next(&r) % 1000), .id = (uint64_t)i};
    sg_sim_queue_push(&q, e);
  }
  SG_CHECK_EQ_INT(sg_sim_queue_size(&q), 5000);
  sg_sim_event prev = {.t_us = -1}, e;
  int n = 0;
  while (sg_sim_queue_pop(&q, &e)) {
    SG_CHECK(e.t_us > prev.t_us || (e.t_us == prev.t_us && e.seq > prev.seq));
    prev = e;
    n++;
  }
  SG_CHECK_EQ_INT(n, 5000);
  sg_sim_queue_free(&q);
}

static void ties_pop_in_push_order(void) {
  sg_sim_queue q;
  sg_sim_queue_init(&q);
  /* Interleave two times; within each, ids must come back in push order. */
  for (int i = 0; i < 100; i++) {
    sg_sim_event e = {.t_us = (i % 2) ? 50 : 10, .id = (uint64_t)i};
    sg_sim_queue_push(&q, e);
  }
  sg_sim_event e;
  int last_even = -2, last_odd = -1;
  for (int i = 0; i < 100; i++) {
    SG_CHECK(sg_sim_queue_pop(&q, &e));
    if (i < 50) {
      SG_CHECK_EQ_INT(e.t_us, 10);
      SG_CHECK_EQ_INT(e.id, (uint64_t)(last_even + 2));
      last_even = (int)e.id;
    } else {
      SG_CHECK_EQ_INT(e.t_us, 50);
      SG_CHECK_EQ_INT(e.id, (uint64_t)(last_odd + 2));
      last_odd = (int)e.id;
    }
  }
  SG_CHECK(!sg_sim_queue_pop(&q, &e));
  sg_sim_queue_free(&q);
}

static void interleaved_push_pop_keeps_order(void) {
  sg_sim_queue q;
  sg_sim_queue_init(&q);
  sg_sim_rng r;
  sg_sim_rng_seed(&r, 3, 1);
  int64_t now = 0;
  sg_sim_event e = {.t_us = 0};
  sg_sim_queue_push(&q, e);
  for (int i = 0; i < 20000; i++) {
    SG_CHECK(sg_sim_queue_pop(&q, &e));
    SG_CHECK(e.t_us >= now);
    now = e.t_us;
    int k = (int)(sg_sim_rng_next(&r) % 3);
    for (int j = 0; j < k || sg_sim_queue_size(&q) == 0; j++) {
      sg_sim_event n = {.t_us = now + (int64_t)(sg_sim_rng_next(&r) % 100)};
      sg_sim_queue_push(&q, n);
      if (j > 4)
        break;
    }
  }
  sg_sim_queue_free(&q);
}

/* Lanes change where events wait, never the order: the same pushes, some
 * to lanes (in order, or out of order so that they fall back to the heap),
 * pop exactly as from the heap alone, interleaved with pops. */
static void lanes_pop_as_the_heap_alone(void) {
  sg_sim_queue a, b;
  sg_sim_queue_init(&a);
  sg_sim_queue_init(&b);
  sg_sim_rng r;
  sg_sim_rng_seed(&r, 11, 2);
  int64_t now = 0;
  uint64_t id = 0;
  int popped = 0, in_lanes = 0;
  for (int i = 0; i < 50000; i++) {
    int k = (int)(sg_sim_rng_next(&r) % 4);
    for (int j = 0; j < k; j++) {
      unsigned kind = (unsigned)(sg_sim_rng_next(&r) % (SG_SIM_QUEUE_LANES + 1));
      /* lane 0: a fixed delay; lane 1: now; others: random delays */
      int64_t d = kind == 0   ? 500
                  : kind == 1 ? 0
                              : (int64_t)(sg_sim_rng_next(&r) % 1000);
      sg_sim_event e = {.t_us = now + d, .id = ++id, .type = (int)kind};
      sg_sim_queue_push(&a, e);
      if (kind < SG_SIM_QUEUE_LANES) {
        sg_sim_queue_push_lane(&b, kind, e);
        in_lanes++;
      } else {
        sg_sim_queue_push(&b, e);
      }
    }
    SG_CHECK_EQ_INT(sg_sim_queue_size(&a), sg_sim_queue_size(&b));
    sg_sim_event x, y;
    bool ha = sg_sim_queue_pop(&a, &x), hb = sg_sim_queue_pop(&b, &y);
    SG_CHECK(ha == hb);
    if (!ha)
      continue;
    SG_CHECK_EQ_INT(x.id, y.id);
    SG_CHECK_EQ_INT(x.t_us, y.t_us);
    SG_CHECK_EQ_INT(x.seq, y.seq);
    SG_CHECK(x.t_us >= now);
    now = x.t_us;
    popped++;
  }
  sg_sim_event x, y;
  while (sg_sim_queue_pop(&a, &x)) {
    SG_CHECK(sg_sim_queue_pop(&b, &y));
    SG_CHECK_EQ_INT(x.id, y.id);
  }
  SG_CHECK(!sg_sim_queue_pop(&b, &y));
  SG_CHECK(popped > 40000 && in_lanes > 30000);
  sg_sim_queue_free(&a);
  sg_sim_queue_free(&b);
}

static void rng_same_seed_same_stream(void) {
  sg_sim_rng a, b, c;
  sg_sim_rng_seed(&a, 42, 5);
  sg_sim_rng_seed(&b, 42, 5);
  sg_sim_rng_seed(&c, 42, 6);
  int differ = 0;
  for (int i = 0; i < 100; i++) {
    uint64_t x = sg_sim_rng_next(&a), y = sg_sim_rng_next(&b), z = sg_sim_rng_next(&c);
    SG_CHECK(x == y);
    differ += x != z;
  }
  SG_CHECK(differ > 90);
}

static void rng_distributions_have_their_means(void) {
  sg_sim_rng r;
  sg_sim_rng_seed(&r, 1, 2);
  const int n = 200000;
  double su = 0, sn = 0, sn2 = 0, sl = 0, se = 0, sp = 0;
  int bern = 0;
  for (int i = 0; i < n; i++) {
    double u = sg_sim_rng_uniform(&r);
    SG_CHECK(u >= 0 && u < 1);
    su += u;
    double z = sg_sim_rng_normal(&r);
    sn += z;
    sn2 += z * z;
    sl += sg_sim_rng_lognormal(&r, 700, 0.35);
    se += sg_sim_rng_exponential(&r, 3);
    sp += sg_sim_rng_poisson(&r, 8);
    bern += sg_sim_rng_bernoulli(&r, 0.363);
  }
  SG_CHECK_NEAR(su / n, 0.5, 0.01);
  SG_CHECK_NEAR(sn / n, 0.0, 0.01);
  SG_CHECK_NEAR(sn2 / n, 1.0, 0.02);
  SG_CHECK_NEAR(sl / n / 700, 1.0, 0.01);
  SG_CHECK_NEAR(se / n, 3.0, 0.05);
  SG_CHECK_NEAR(sp / n, 8.0, 0.05);
  SG_CHECK_NEAR((double)bern / n, 0.363, 0.005);
  SG_CHECK(sg_sim_rng_lognormal(&r, 5, 0) == 5);
}

SG_TEST_MAIN(SG_TEST(pops_in_time_order), SG_TEST(ties_pop_in_push_order),
             SG_TEST(interleaved_push_pop_keeps_order),
             SG_TEST(lanes_pop_as_the_heap_alone),
             SG_TEST(rng_same_seed_same_stream),
             SG_TEST(rng_distributions_have_their_means))
