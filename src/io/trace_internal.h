/* trace_internal.h - between the files of src/io/ that write the SQLite
 * trace (io/trace.h says what the trace holds and when it is written).
 *
 *   trace_lock.c      waiting for the trace's lock (the busy handler, a
 *                     statement run again while the trace is busy), and
 *                     what a failed statement says of that wait
 *   trace_schema.c    the schema; what a file is (a trace of our version,
 *                     an empty one, or something to leave alone); its
 *                     integrity; a new trace's schema, an older one's
 *                     missing tables and columns
 *   trace_open.c      rs_trace_open and rs_trace_close: the name and the
 *                     files checked, the lock's wait, the schema, the
 *                     writing process named (and rs_process_gone, which
 *                     finds abandoned runs)
 *   trace_write.c     a run's rows: the header before it (rs__trace_begin),
 *                     the totals and the outcome after it
 *                     (rs__trace_finish), a run's row marked
 *   trace_transfer.c  the transfer rows: after the run, or over MPI
 *                     streamed during it (rs__trace_stream_open, ...)
 */
#ifndef RINGSIM_TRACE_INTERNAL_H
#define RINGSIM_TRACE_INTERNAL_H

#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>

#include "io/trace.h"

struct rs_trace {
  sqlite3 *db;
  char *path;
  double wait_s;            /* how long a writer queues for the lock */
  uint64_t busy_since_ns;   /* when the busy handler began this wait */
  int busy;                 /* the last failed write found the lock taken */
  const atomic_int *cancel; /* while writing a run: its abort flag */
  /* Over MPI, while the run goes on (rs__trace_stream_open): the
   * transaction is open, this the transfer insert, stream_rc any failure
   * of a write. */
  sqlite3_stmt *stream;
  int stream_rc;
  /* Who writes: a run's row names its process (host, pid, and when the
   * process started), so a later run can tell a row whose process is gone. */
  char host[256];
  int64_t pid, pid_start;
  int64_t first_run_id; /* the first run begun through this handle, or 0 */
  /* The run table has channel_slots (a trace from before queue_slots,
   * trace_schema.c): a new run's row fills it too. */
  int channel_slots;
};

/* ---- trace_lock.c ---- */
/* SQLite's busy handler of a trace (arg): polls with a growing sleep
 * until the trace's wait has passed or its run was interrupted. */
int rs__trace_busy_handler(void *arg, int count);
/* Run sql, again and again while the database is busy, until the wait has
 * passed. Returns the last SQLite code; the error text is in the handle. */
int rs__trace_exec_retry(rs_trace_t *t, const char *sql);
/* A read or statement of rs_trace_open that failed (what prefixes
 * SQLite's message): RS_ETRACE for a lock held past the wait, else
 * RS_EIO, with the message in errmsg. */
int rs__trace_open_failed(rs_trace_t *t, const char *what, char *errmsg);
/* rs__trace_exec_retry, a failure as rs__trace_open_failed says it. */
int rs__trace_exec(rs_trace_t *t, const char *sql, char *errmsg);
/* A statement of a run's writing that failed: the message (with the
 * wait, if the lock was not had) in run->trace_errmsg; returns RS_EIO. */
int rs__trace_fail_sql(rs_run_t *run, const char *what);

/* ---- trace_schema.c ---- */
/* What the file is, reading only: *fresh if an empty database to
 * initialize; RS_OK too for a ringsim trace of our version; else refused. */
int rs__trace_classify(rs_trace_t *t, int *fresh, char *errmsg);
/* Check, reading only, the tables and the pages a run's append touches. */
int rs__trace_check_integrity(rs_trace_t *t, char *errmsg);
/* Make an empty file a trace (WAL mode, the schema, the header). */
int rs__trace_create_schema(rs_trace_t *t, char *errmsg);
/* Give a trace the tables and columns added after schema version 1. */
int rs__trace_upgrade(rs_trace_t *t, char *errmsg);

/* ---- trace_transfer.c ---- */
/* Insert every transfer of the run not streamed yet: each receiver's
 * records, then the messages still on an edge. Returns RS_OK, or RS_EIO
 * (RS_ENOMEM) with run->trace_errmsg. */
int rs__trace_write_transfers(rs_run_t *run);
/* Finalize the stream's statement (its transaction goes on). */
void rs__trace_stream_close(rs_trace_t *t);

#endif /* RINGSIM_TRACE_INTERNAL_H */
