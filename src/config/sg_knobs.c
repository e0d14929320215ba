/* sg_knobs.c: the knob table as data (sg_knobs.h): the defaults, the landing
 * in the core's options and the documentation's table, each a loop over the
 * rows. */
#include "config/sg_knobs.h"

#include <math.h>
#include <string.h>

/* The conversions of the FN(...) rows. */
static void land_iterations(const sg_knobs *k, sg_ctl_opts *o) {
  o->max_iterations = (uint32_t)k->iterations;
}

/* Rounded to the microsecond, and never to 0, which means no budget: a
 * budget of 1e-7 s truncated was none at all. */
static void land_time_budget(const sg_knobs *k, sg_ctl_opts *o) {
  double us = k->time_budget * 1e6;
  o->max_wall_us = k->time_budget > 0 ? (us < 1 ? 1 : (int64_t)llround(us)) : 0;
}

#define CTL(f) SG_LAND_CTL, offsetof(sg_ctl_opts, f), #f, NULL, NULL
#define SCHED(f) SG_LAND_SCHED, offsetof(sg_sched_opts, f), #f, NULL, NULL
#define FN(f, fn) SG_LAND_FN, offsetof(sg_ctl_opts, f), #f, fn, NULL
#define NONE(why) SG_LAND_NONE, 0, NULL, NULL, why
#define ROW(field, TYPE, name, def, min, max, flags, vname, GROUP, sim, LAND, help) \
  {name, SG_KNOB_##TYPE, offsetof(sg_knobs, field), def, min, max, flags, sim, LAND, help},

static const sg_knob table[] = {SG_KNOBS(ROW)};

#undef ROW
#undef CTL
#undef SCHED
#undef FN
#undef NONE

/* A CTL or SCHED row is copied byte for byte: its knob and the field it
 * lands in must have one size. */
#define CTL(f) sizeof(((sg_ctl_opts *)0)->f)
#define SCHED(f) sizeof(((sg_sched_opts *)0)->f)
#define FN(f, fn) 0
#define NONE(why) 0
#define SAME_SIZE(field, TYPE, name, def, min, max, flags, vname, GROUP, sim, LAND, help) \
  _Static_assert((LAND) == 0 || (LAND) == sizeof(((sg_knobs *)0)->field),             \
                 name ": lands in a field of another size");
SG_KNOBS(SAME_SIZE)
#undef SAME_SIZE
#undef CTL
#undef SCHED
#undef FN
#undef NONE

#define NKNOBS (sizeof table / sizeof table[0])

const sg_knob *sg_knobs_table(size_t *n) {
  if (n)
    *n = NKNOBS;
  return table;
}

double sg_knobs_get(const sg_knobs *k, const sg_knob *r) {
  const char *p = (const char *)k + r->offset;
  switch (r->type) {
  case SG_KNOB_BOOL:
    return *(const bool *)p;
  case SG_KNOB_INT:
    return *(const int *)p;
  case SG_KNOB_DOUBLE:
    return *(const double *)p;
  case SG_KNOB_U64:
    return (double)*(const uint64_t *)p;
  }
  return 0;
}

void sg_knobs_put(sg_knobs *k, const sg_knob *r, double v) {
  char *p = (char *)k + r->offset;
  switch (r->type) {
  case SG_KNOB_BOOL:
    *(bool *)p = v != 0;
    break;
  case SG_KNOB_INT:
    *(int *)p = (int)v;
    break;
  case SG_KNOB_DOUBLE:
    *(double *)p = v;
    break;
  case SG_KNOB_U64:
    *(uint64_t *)p = (uint64_t)v;
    break;
  }
}

void sg_knobs_default(sg_knobs *k) {
  memset(k, 0, sizeof *k);
  for (size_t i = 0; i < NKNOBS; i++)
    sg_knobs_put(k, &table[i], table[i].def);
}

/* The size of a knob's field, which is also the field it lands in (CTL,
 * SCHED rows). */
static size_t type_size(sg_knob_type t) {
  switch (t) {
  case SG_KNOB_BOOL:
    return sizeof(bool);
  case SG_KNOB_INT:
    return sizeof(int);
  case SG_KNOB_DOUBLE:
    return sizeof(double);
  case SG_KNOB_U64:
    return sizeof(uint64_t);
  }
  return 0;
}

void sg_knobs_land(const sg_knobs *k, sg_ctl_opts *o, sg_sched_opts *s) {
  for (size_t i = 0; i < NKNOBS; i++) {
    const sg_knob *r = &table[i];
    const char *from = (const char *)k + r->offset;
    if (r->land == SG_LAND_CTL && o)
      memcpy((char *)o + r->land_offset, from, type_size(r->type));
    else if (r->land == SG_LAND_SCHED && s)
      memcpy((char *)s + r->land_offset, from, type_size(r->type));
    else if (r->land == SG_LAND_FN && o)
      r->land_fn(k, o);
  }
}

/* ---- the documentation's table -------------------------------------------- */

static void doc_range(FILE *f, const sg_knob *r) {
  switch (r->type) {
  case SG_KNOB_BOOL:
    fprintf(f, "on/off");
    return;
  case SG_KNOB_INT:
    fprintf(f, "integer %.0f..%.0f", r->min, r->max);
    return;
  case SG_KNOB_U64:
    fprintf(f, "integer %.0f..2^64-1", r->min);
    return;
  case SG_KNOB_DOUBLE:
    fprintf(f, "number in %c%g, %g%c", r->flags & SG_KNOBF_MIN_OPEN ? '(' : '[', r->min,
            r->max, r->flags & SG_KNOBF_MAX_OPEN ? ')' : ']');
    return;
  }
}

static void doc_land(FILE *f, const sg_knob *r) {
  switch (r->land) {
  case SG_LAND_CTL:
    fprintf(f, "`sg_ctl_opts.%s`", r->land_field);
    return;
  case SG_LAND_SCHED:
    fprintf(f, "`sg_sched_opts.%s`", r->land_field);
    return;
  case SG_LAND_FN:
    fprintf(f, "`sg_ctl_opts.%s`, converted", r->land_field);
    return;
  case SG_LAND_NONE:
    fprintf(f, "%s", r->land_note);
    return;
  }
}

void sg_knobs_doc(FILE *f) {
  fprintf(f, "| knob (YAML key, `--flag`) | type, range | default | `specgen sim` | "
             "lands in |\n|---|---|---|---|---|\n");
  sg_knobs d;
  sg_knobs_default(&d);
  for (size_t i = 0; i < NKNOBS; i++) {
    const sg_knob *r = &table[i];
    fprintf(f, "| `%s` | ", r->name);
    doc_range(f, r);
    if (r->type == SG_KNOB_BOOL)
      fprintf(f, " | %s | ", sg_knobs_get(&d, r) != 0 ? "on" : "off");
    else
      fprintf(f, " | %g | ", sg_knobs_get(&d, r));
    fprintf(f, "%s | ", r->sim);
    doc_land(f, r);
    fprintf(f, " |\n");
  }
}

/* ---- setting a knob from text ---------------------------------------------- */

int sg_knobs_set(sg_knobs *k, const sg_knob *r, const char *text, sg_err *err) {
  sg_value_range range = {.type = (sg_value_type)r->type, .min = r->min, .max = r->max,
                          .flags = r->flags};
  if (sg_value_parse(&range, text, (char *)k + r->offset))
    return 0;
  char want[160];
  sg_value_describe(&range, want, sizeof want);
  return sg_err_set(err, SG_EINVAL, "expected %s, got \"%.64s\"", want, text);
}

#define SIM_SET "--set "

bool sg_knob_sim_key(const sg_knob *r, char *buf, size_t n) {
  size_t len = 0;
  if (strncmp(r->sim, SIM_SET, strlen(SIM_SET)) == 0) {
    const char *key = r->sim + strlen(SIM_SET);
    len = strcspn(key, ", ");
    snprintf(buf, n, "%.*s", (int)len, key);
  } else if (n > 0) {
    buf[0] = '\0';
  }
  return len > 0;
}

const sg_knob *sg_knobs_find(const char *name) {
  for (size_t i = 0; i < NKNOBS; i++)
    if (strcmp(table[i].name, name) == 0)
      return &table[i];
  return NULL;
}
