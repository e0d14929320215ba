/* sg_sim_streams.c: loading the measured stream model (the files in sim/streams,
 * compiled in by the build) and drawing from its quantile functions. See
 * sg_sim_streams.h. */
#include "sim/sg_sim_streams.h"

#include "common/sg_file.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Generated from sim/streams/ (src/sim/meson.build). */
extern const unsigned char sg_sim_stream_qwq32b[];
extern const size_t sg_sim_stream_qwq32b_len;
extern const unsigned char sg_sim_stream_gptoss120b[];
extern const size_t sg_sim_stream_gptoss120b_len;

static const struct {
  const char *name;
  const unsigned char *data;
  const size_t *len;
} builtin[] = {
    {"qwq32b", sg_sim_stream_qwq32b, &sg_sim_stream_qwq32b_len},
    {"gptoss120b", sg_sim_stream_gptoss120b, &sg_sim_stream_gptoss120b_len},
};
#define NBUILTIN (sizeof builtin / sizeof builtin[0])

bool sg_sim_streams_none(const char *profile) { return strcmp(profile, "none") == 0; }

static int get_qf(const json_t *root, const char *key, const char *name, double lo,
                  double hi, sg_sim_qf *out, sg_err *err) {
  const json_t *q = json_object_get(json_object_get(root, key), "quantiles");
  if (!json_is_array(q) || json_array_size(q) != SG_SIM_QUANTILES)
    return sg_err_set(err, SG_EINVAL, "%s: %s.quantiles: expected %d numbers", name, key,
                      SG_SIM_QUANTILES);
  for (size_t i = 0; i < SG_SIM_QUANTILES; i++) {
    const json_t *v = json_array_get(q, i);
    double x = json_number_value(v);
    if (!json_is_number(v) || !isfinite(x) || x < lo || x > hi ||
        (i > 0 && x < out->q[i - 1]))
      return sg_err_set(err, SG_EINVAL,
                        "%s: %s.quantiles[%zu]: not a number in [%g, %g] at least "
                        "the one before",
                        name, key, i, lo, hi);
    out->q[i] = x;
  }
  return 0;
}

int sg_sim_streams_parse(const char *json, size_t len, const char *name,
                         sg_sim_streams *out, sg_err *err) {
  json_error_t je;
  json_t *root = json_loadb(json, len, 0, &je);
  if (root == NULL)
    return sg_err_set(err, SG_EINVAL, "%s:%d: %s", name, je.line, je.text);
  memset(out, 0, sizeof *out);
  int rc = get_qf(root, "triggers_per_trace_at_controller_gap", name, 0, 1e6,
                  &out->triggers, err);
  if (rc == 0)
    rc = get_qf(root, "trigger_position_fraction_at_controller_gap", name, 0, 1,
                &out->trigger_pos, err);
  if (rc == 0)
    rc = get_qf(root, "first_kernel_fraction", name, 0, 1, &out->first_kernel, err);
  if (rc == 0) {
    const json_t *v = json_object_get(root, "share_without_kernel");
    out->share_without_kernel = json_number_value(v);
    if (!json_is_number(v) || out->share_without_kernel < 0 ||
        out->share_without_kernel > 1)
      rc = sg_err_set(err, SG_EINVAL, "%s: share_without_kernel: not a number in [0, 1]",
                      name);
  }
  json_decref(root);
  return rc;
}

int sg_sim_streams_load(const char *profile, sg_sim_streams *out, sg_err *err) {
  for (size_t i = 0; i < NBUILTIN; i++)
    if (strcmp(profile, builtin[i].name) == 0)
      return sg_sim_streams_parse((const char *)builtin[i].data, *builtin[i].len,
                                  builtin[i].name, out, err);
  size_t n = strlen(profile);
  if (n < 5 || strcmp(profile + n - 5, ".json") != 0)
    return sg_err_set(err, SG_ENOENT,
                      "stream.profile: \"%s\" (known: none, qwq32b, gptoss120b, or a "
                      "file ending in .json)",
                      profile);
  char *buf = NULL;
  size_t len = 0;
  int rc = sg_file_read(profile, 1u << 24, &buf, &len, err);
  if (rc < 0)
    return rc;
  rc = sg_sim_streams_parse(buf, len, profile, out, err);
  free(buf);
  return rc;
}

double sg_sim_qf_at(const sg_sim_qf *qf, double u) {
  double pos = fmin(fmax(u, 0.0), 1.0) * (SG_SIM_QUANTILES - 1);
  int i = (int)pos;
  if (i >= SG_SIM_QUANTILES - 1)
    return qf->q[SG_SIM_QUANTILES - 1];
  return qf->q[i] + (qf->q[i + 1] - qf->q[i]) * (pos - i);
}
