/* trace_step.c - a training step's intervals in the trace (ringsim/step.h's
 * rs_trace_add_step): each worker's forward and backward and each bucket's
 * all-reduce on its clock, per iteration of a run, in one transaction.
 */
#include <sqlite3.h>
#include <stdio.h>

#include "io/trace_internal.h"
#include "ringsim/step.h"

/* One row of step_interval, after its run_id; bucket < 0: a compute
 * interval (NULL). */
typedef struct interval {
  int iter, worker;
  const char *kind;
  int64_t bucket;
  uint64_t start_ns, end_ns;
} interval_t;

static int insert(sqlite3_stmt *st, int64_t run_id, const interval_t *row) {
  sqlite3_reset(st);
  sqlite3_bind_int64(st, 1, run_id);
  sqlite3_bind_int(st, 2, row->iter);
  sqlite3_bind_int(st, 3, row->worker);
  sqlite3_bind_text(st, 4, row->kind, -1, SQLITE_STATIC);
  if (row->bucket < 0)
    sqlite3_bind_null(st, 5);
  else
    sqlite3_bind_int64(st, 5, row->bucket);
  sqlite3_bind_int64(st, 6, (int64_t)row->start_ns);
  sqlite3_bind_int64(st, 7, (int64_t)row->end_ns);
  return sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
}

int rs_trace_add_step(rs_trace_t *t, int64_t run_id, const rs_step_time_t *st,
                      int iterations, char *errmsg) {
  sqlite3_stmt *ins = NULL;
  int rc = rs__trace_exec_retry(t, "BEGIN IMMEDIATE");
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(t->db,
                            "INSERT INTO step_interval (run_id, iter, worker, "
                            "kind, bucket, start_ns, end_ns) VALUES (?, ?, "
                            "?, ?, ?, ?, ?)",
                            -1, &ins, NULL);
  const size_t W = (size_t)st->workers;
  for (int it = 0; rc == SQLITE_OK && it < iterations; it++)
    for (size_t r = 0; rc == SQLITE_OK && r < W; r++) {
      rc = insert(
          ins, run_id,
          &(interval_t){it, (int)r, "forward", -1, 0, st->worker_forward[r]});
      if (rc == SQLITE_OK)
        rc = insert(ins, run_id,
                    &(interval_t){it, (int)r, "backward", -1,
                                  st->worker_forward[r],
                                  st->worker_last_grad[r]});
      for (size_t b = 0; rc == SQLITE_OK && b < st->bucket_count; b++)
        rc = insert(ins, run_id,
                    &(interval_t){it, (int)r, "allreduce", (int64_t)b,
                                  st->worker_start[b * W + r],
                                  st->worker_end[b * W + r]});
    }
  if (rc == SQLITE_OK)
    rc = rs__trace_exec_retry(t, "COMMIT");
  if (rc != SQLITE_OK) {
    snprintf(errmsg, RS_ERRMSG_MAX,
             "trace %s: cannot write the step's "
             "intervals: %s",
             t->path, sqlite3_errmsg(t->db));
    sqlite3_finalize(ins);
    sqlite3_exec(t->db, "ROLLBACK", NULL, NULL, NULL);
    return RS_EIO;
  }
  sqlite3_finalize(ins);
  return RS_OK;
}
