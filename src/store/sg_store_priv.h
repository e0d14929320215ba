/* sg_store_priv.h: what the run store's files share (sg_store.c: schema,
 * statements, opening and recording; sg_store_read.c: the JSON reads). Not
 * a public header: only src/store/sg_store*.c include it. */
#ifndef SG_STORE_PRIV_H
#define SG_STORE_PRIV_H

#include "store/sg_store.h"

#include <sqlite3.h>

/* The prepared statements, by index into the store's table of them. */
enum {
  ST_RUN_COUNT,
  ST_RUN_INSERT,
  ST_RUN_END,
  ST_RUN_ID,
  ST_WF_INSERT,
  ST_WF_STATE,
  ST_IT_INSERT,
  ST_IT_END,
  ST_GEN_INSERT,
  ST_GEN_END,
  ST_GEN_ESTIMATED,
  ST_CAND_FIND,
  ST_CAND_INSERT,
  ST_EVAL_QUEUE,
  ST_EVAL_START,
  ST_EVAL_FINISH,
  ST_EVAL_LOOKUP,
  ST_EVAL_LOOKUP_SOURCE,
  ST_EVAL_LOOKUP_SOURCE_NTH,
  ST_EVAL_SUBMITTED,
  ST_DEC_INSERT,
  ST_DEV_INSERT,
  ST_BEGIN,
  ST_COMMIT,
  ST_ROLLBACK,
  ST__COUNT
};

struct sg_store {
  sqlite3 *db;
  char *path;
  int version;
  const char *synchronous; /* "normal" or "full", as read back */
  sqlite3_stmt *st[ST__COUNT];
};

/* "<file>: <table>: <sqlite message> (in SQL: <sql>)": the error of the
 * statement that just failed, mapped to an SG_E* code. */
int sg_store_db_fail(sg_store *s, const char *table, const char *sql, sg_err *err);

#endif
