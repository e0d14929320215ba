/* sg_scheduler_devices.c: the scheduler's devices (the interface is
 * sg_scheduler_priv.h): their state machine, the split of the live devices
 * into a validation part and a profiling part (Algorithm 2's re-split) and
 * the free capacity the controllers compute K from.
 *
 * Each live device has a part (the phase it serves next). A re-split
 * changes the parts of as few devices as possible, preferring idle ones; a
 * busy device finishes its request first. With one live device the device
 * serves both phases (PART_SHARED), profiling first.
 */
#include "core/sg_scheduler_priv.h"

#include <assert.h>
#include <string.h>

static bool device_transition_ok(sg_device_state from, sg_device_state to) {
  switch (to) {
  case SG_DEVICE_IDLE:
    return from == SG_DEVICE_BUSY;
  case SG_DEVICE_BUSY:
    return from == SG_DEVICE_IDLE;
  case SG_DEVICE_DEAD:
    return from != SG_DEVICE_DEAD;
  default:
    return false;
  }
}

void sched_device_set_state(sg_scheduler *s, int d, sg_device_state to) {
  device *dv = &s->dev[d];
  assert(device_transition_ok(dv->state, to));
  if (dv->state == SG_DEVICE_IDLE)
    sg_bitset_clear(&s->idle[dv->part], (size_t)d);
  if (to == SG_DEVICE_IDLE)
    sg_bitset_set(&s->idle[dv->part], (size_t)d);
  if (to == SG_DEVICE_DEAD) {
    s->nlive--;
    s->npart[dv->part]--;
  }
  dv->state = to;
}

/* Gives live device d a part, keeping the counts and idle sets true. */
static void device_set_part(sg_scheduler *s, int d, int part) {
  device *dv = &s->dev[d];
  assert(dv->state != SG_DEVICE_DEAD);
  if (dv->part == part)
    return;
  s->npart[dv->part]--;
  s->npart[part]++;
  if (dv->state == SG_DEVICE_IDLE) {
    sg_bitset_clear(&s->idle[dv->part], (size_t)d);
    sg_bitset_set(&s->idle[part], (size_t)d);
  }
  dv->part = part;
}

int sg_scheduler_split(int g, size_t lv, size_t lp) {
  assert(g >= 1);
  if (g == 1)
    return 0; /* one device: shared by both parts */
  long long prof;
  if (lv == 0 && lp == 0) {
    prof = g / 2; /* even split; validation gets the odd device */
  } else {
    /* round(G*Lp/(Lv+Lp)), half up, in integers: floor((2*G*Lp + L)/(2L)) */
    unsigned long long L = (unsigned long long)lv + lp;
    prof = (long long)((2ull * (unsigned long long)g * lp + L) / (2ull * L));
  }
  if (prof < 1)
    prof = 1;
  if (prof > g - 1)
    prof = g - 1;
  return (int)prof;
}

/* Gives the live devices parts so that `target` of them profile, moving as
 * few as possible and idle ones first (a busy one switches after its run). */
void sched_assign_parts(sg_scheduler *s) {
  int g = live_devices(s);
  if (g == 0)
    return;
  if (g == 1) {
    for (int d = 0; d < s->o.devices; d++)
      if (s->dev[d].state != SG_DEVICE_DEAD)
        device_set_part(s, d, PART_SHARED);
    return;
  }
  if (s->prof_target < 1)
    s->prof_target = 1;
  if (s->prof_target > g - 1)
    s->prof_target = g - 1;
  /* A device leaving shared mode (a device came back or g grew) needs a part:
   * give it validation first; the balancing below fixes the counts. */
  int prof = 0;
  for (int d = 0; d < s->o.devices; d++) {
    device *dv = &s->dev[d];
    if (dv->state == SG_DEVICE_DEAD)
      continue;
    if (dv->part == PART_SHARED)
      device_set_part(s, d, SG_PHASE_VALIDATE);
    prof += dv->part == SG_PHASE_PROFILE;
  }
  /* Two passes: idle devices first, then busy ones. Profiling gathers at
   * the high indices: validation->profiling takes the highest index first,
   * profiling->validation the lowest (deterministic, and a fresh pool reads
   * "validation devices, then profiling devices"). */
  for (int pass = 0; pass < 2 && prof != s->prof_target; pass++) {
    sg_device_state want = pass == 0 ? SG_DEVICE_IDLE : SG_DEVICE_BUSY;
    if (prof > s->prof_target) {
      for (int d = 0; d < s->o.devices && prof > s->prof_target; d++)
        if (s->dev[d].state == want && s->dev[d].part == SG_PHASE_PROFILE) {
          device_set_part(s, d, SG_PHASE_VALIDATE);
          prof--;
        }
    } else {
      for (int d = s->o.devices - 1; d >= 0 && prof < s->prof_target; d--)
        if (s->dev[d].state == want && s->dev[d].part == SG_PHASE_VALIDATE) {
          device_set_part(s, d, SG_PHASE_PROFILE);
          prof++;
        }
    }
  }
  assert(prof == s->prof_target);
}

static void part_counts(const sg_scheduler *s, int *nv, int *np) {
  *nv = s->npart[SG_PHASE_VALIDATE] + s->npart[PART_SHARED];
  *np = s->npart[SG_PHASE_PROFILE] + s->npart[PART_SHARED];
}

/* The re-split is pool-wide, but the store keeps a decision under a
 * workflow: the action names the workflow (and iteration) whose event
 * caused it, which is live then, never a fixed one that may have ended. */
void sched_emit_resplit(sg_scheduler *s, uint32_t workflow, uint32_t iteration,
                        sg_sched_actions *out) {
  sg_sched_action a;
  memset(&a, 0, sizeof a);
  a.type = SG_SACT_RESPLIT;
  a.workflow = workflow;
  a.iteration = iteration;
  a.device = -1;
  part_counts(s, &a.validate_devices, &a.profile_devices);
  sched_emit(out, &a);
}

void sg_scheduler_capacity(const sg_scheduler *s, sg_sched_capacity *c) {
  memset(c, 0, sizeof *c);
  part_counts(s, &c->validate_devices, &c->profile_devices);
  c->queued_validate = (int)s->waiting[SG_PHASE_VALIDATE];
  c->queued_profile = (int)s->waiting[SG_PHASE_PROFILE];
  long lv = (long)s->waiting[SG_PHASE_VALIDATE] +
            (long)s->running[SG_PHASE_VALIDATE];
  long lp = (long)s->waiting[SG_PHASE_PROFILE] +
            (long)s->running[SG_PHASE_PROFILE];
  long fv, fp;
  if (live_devices(s) == 1) {
    fv = fp = 1 - (lv + lp); /* one shared device */
  } else if (s->o.work_conserving && !s->o.split_capacity) {
    fv = fp = live_devices(s) - (lv + lp); /* every device serves both */
  } else {
    fv = c->validate_devices - lv;
    fp = c->profile_devices - lp;
  }
  c->free_validate = fv > 0 ? (int)fv : 0;
  c->free_profile = fp > 0 ? (int)fp : 0;
}

int sg_scheduler_devices(const sg_scheduler *s) { return s->o.devices; }

sg_device_state sg_scheduler_device_state(const sg_scheduler *s, int device) {
  assert(device >= 0 && device < s->o.devices);
  return s->dev[device].state;
}

sg_req_id sg_scheduler_device_request(const sg_scheduler *s, int device) {
  assert(device >= 0 && device < s->o.devices);
  return s->dev[device].req;
}

sg_phase sg_scheduler_device_part(const sg_scheduler *s, int device) {
  assert(device >= 0 && device < s->o.devices);
  return (sg_phase)s->dev[device].part;
}
