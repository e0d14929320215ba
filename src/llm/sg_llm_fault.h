/* sg_llm_fault.h: the faults a model server can show its client (a
 * disconnect, 429/500, a stall, a malformed chunk, a slow first byte, an
 * error chunk), by the names `--server-fault`, `specgen llm serve --fault`
 * and the X-Specgen-Fault header use. The built-in test server injects them
 * (sg_llm_server.h); a run's configuration checks its server-fault key with
 * the same parser, without depending on the server. */
#ifndef SG_LLM_FAULT_H
#define SG_LLM_FAULT_H

#include "common/sg_error.h"

/* The fault kinds, by their names in --fault and X-Specgen-Fault. */
typedef enum sg_llm_fault_kind {
  SG_LLM_FAULT_NONE,
  SG_LLM_FAULT_DISCONNECT,      /* disconnect:<after_chunks>[:<streams>] */
  SG_LLM_FAULT_STATUS429,       /* status429:<retry_after_s>[:<attempts>] */
  SG_LLM_FAULT_STATUS500,       /* status500[:<attempts>] */
  SG_LLM_FAULT_STALL,           /* stall:<seconds>[:<after_chunks>] */
  SG_LLM_FAULT_MALFORMED,       /* malformed[:<after_chunks>[:<streams>]] */
  SG_LLM_FAULT_SLOW_FIRST_BYTE, /* slow_first_byte:<seconds> */
  SG_LLM_FAULT_ERROR_IN_STREAM, /* error_in_stream[:<after_chunks>[:<streams>]] */
  SG_LLM_FAULT__COUNT
} sg_llm_fault_kind;

/* A parsed fault. `attempts` (429/500): 0 = every attempt fails; N = the
 * first N attempts of one logical request fail and later ones succeed, where
 * a logical request is named by its X-Request-Id header, else its body's
 * "rid", else the hash of its body (so a client retrying the same body is
 * the same request). `streams` (disconnect, malformed, error_in_stream):
 * 0 = every request meets the fault; N = the first N requests the server
 * takes meet it (server-wide, in arrival order), later ones go through. */
typedef struct sg_llm_fault {
  sg_llm_fault_kind kind;
  double seconds;        /* stall, slow_first_byte; 429: Retry-After */
  int after_chunks;      /* disconnect, stall, malformed, error_in_stream */
  int attempts;          /* status429, status500 */
  int streams;           /* disconnect, malformed, error_in_stream */
} sg_llm_fault;

/* Parses "name[:arg[:arg]]" (e.g. "disconnect:3", "status429:1:2"); errors
 * name the fault and the argument that is wrong. */
int sg_llm_fault_parse(const char *spec, sg_llm_fault *out, sg_err *err);
/* "disconnect", "status429", ...; "none" for SG_LLM_FAULT_NONE. */
const char *sg_llm_fault_name(sg_llm_fault_kind kind);

#endif
