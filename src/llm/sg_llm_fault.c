/* sg_llm_fault.c: a model server's faults (sg_llm_fault.h): their
 * names and the parser of a fault spec ("status429:1:2", "stall:5"), with
 * messages that name the fault and the argument that is wrong. */
#include "llm/sg_llm_fault.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_AFTER_CHUNKS 2
#define MAX_FAULT_SECONDS 3600.0

static const char *const fault_names[SG_LLM_FAULT__COUNT] = {
    [SG_LLM_FAULT_NONE] = "none",
    [SG_LLM_FAULT_DISCONNECT] = "disconnect",
    [SG_LLM_FAULT_STATUS429] = "status429",
    [SG_LLM_FAULT_STATUS500] = "status500",
    [SG_LLM_FAULT_STALL] = "stall",
    [SG_LLM_FAULT_MALFORMED] = "malformed",
    [SG_LLM_FAULT_SLOW_FIRST_BYTE] = "slow_first_byte",
    [SG_LLM_FAULT_ERROR_IN_STREAM] = "error_in_stream",
};

const char *sg_llm_fault_name(sg_llm_fault_kind kind) {
  return kind >= 0 && kind < SG_LLM_FAULT__COUNT ? fault_names[kind] : "unknown";
}

static int parse_num(const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi))
    return -1;
  *out = v;
  return 0;
}

/* Longer than 80 lines on purpose: one case per fault kind, each with its
 * arguments and messages. */
int sg_llm_fault_parse(const char *spec, sg_llm_fault *out, sg_err *err) {
  memset(out, 0, sizeof *out);
  if (!spec || !*spec || strcmp(spec, "none") == 0)
    return 0;
  char buf[128];
  if (strlen(spec) >= sizeof buf)
    return sg_err_set(err, SG_EINVAL, "fault \"%.40s...\": too long", spec);
  strcpy(buf, spec);
  char *args[3] = {NULL, NULL, NULL};
  int nargs = 0;
  char *name = buf;
  for (char *p = strchr(buf, ':'); p; p = strchr(p + 1, ':')) {
    *p = '\0';
    if (nargs == 2)
      return sg_err_set(err, SG_EINVAL, "fault \"%s\": too many arguments", spec);
    args[nargs++] = p + 1;
  }
  int kind = -1;
  for (int k = 1; k < SG_LLM_FAULT__COUNT; k++)
    if (strcmp(name, fault_names[k]) == 0)
      kind = k;
  if (kind < 0)
    return sg_err_set(err, SG_EINVAL,
                      "fault \"%s\": unknown name \"%s\" (disconnect, status429, status500, "
                      "stall, malformed, slow_first_byte, error_in_stream)",
                      spec, name);
  out->kind = (sg_llm_fault_kind)kind;
  out->after_chunks = DEFAULT_AFTER_CHUNKS;
  double v;
  /* Which arguments each fault takes: [0] and [1], as (kind, lo, hi). */
  switch (out->kind) {
  case SG_LLM_FAULT_DISCONNECT:
  case SG_LLM_FAULT_MALFORMED:
  case SG_LLM_FAULT_ERROR_IN_STREAM:
    if (nargs >= 1) {
      if (parse_num(args[0], 0, 1e9, &v) < 0 || v != floor(v))
        return sg_err_set(err, SG_EINVAL, "fault \"%s\": after_chunks \"%s\" is not a count",
                          spec, args[0]);
      out->after_chunks = (int)v;
    }
    if (nargs == 2) {
      if (parse_num(args[1], 0, 1e6, &v) < 0 || v != floor(v))
        return sg_err_set(err, SG_EINVAL, "fault \"%s\": streams \"%s\" is not a count",
                          spec, args[1]);
      out->streams = (int)v;
    }
    break;
  case SG_LLM_FAULT_STATUS429:
  case SG_LLM_FAULT_STATUS500: {
    int a = 0;
    if (out->kind == SG_LLM_FAULT_STATUS429) {
      out->seconds = 1;
      if (nargs >= 1) {
        if (parse_num(args[0], 0, MAX_FAULT_SECONDS, &v) < 0)
          return sg_err_set(err, SG_EINVAL,
                            "fault \"%s\": retry_after_s \"%s\" is not a number of seconds",
                            spec, args[0]);
        out->seconds = v;
      }
      a = 1;
    } else if (nargs > 1) {
      return sg_err_set(err, SG_EINVAL, "fault \"%s\": takes one argument (attempts)", spec);
    }
    if (nargs > a) {
      if (parse_num(args[a], 0, 1e6, &v) < 0 || v != floor(v))
        return sg_err_set(err, SG_EINVAL, "fault \"%s\": attempts \"%s\" is not a count", spec,
                          args[a]);
      out->attempts = (int)v;
    }
    break;
  }
  case SG_LLM_FAULT_STALL:
    if (nargs < 1)
      return sg_err_set(err, SG_EINVAL, "fault \"%s\": needs seconds (stall:<seconds>)", spec);
    if (parse_num(args[0], 0, MAX_FAULT_SECONDS, &v) < 0)
      return sg_err_set(err, SG_EINVAL, "fault \"%s\": seconds \"%s\" is not a number", spec,
                        args[0]);
    out->seconds = v;
    if (nargs == 2) {
      if (parse_num(args[1], 0, 1e9, &v) < 0 || v != floor(v))
        return sg_err_set(err, SG_EINVAL, "fault \"%s\": after_chunks \"%s\" is not a count",
                          spec, args[1]);
      out->after_chunks = (int)v;
    }
    break;
  case SG_LLM_FAULT_SLOW_FIRST_BYTE:
    if (nargs != 1)
      return sg_err_set(err, SG_EINVAL, "fault \"%s\": needs seconds (slow_first_byte:<s>)",
                        spec);
    if (parse_num(args[0], 0, MAX_FAULT_SECONDS, &v) < 0)
      return sg_err_set(err, SG_EINVAL, "fault \"%s\": seconds \"%s\" is not a number", spec,
                        args[0]);
    out->seconds = v;
    break;
  default:
    break;
  }
  return 0;
}
