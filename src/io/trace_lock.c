/* trace_lock.c - waiting for the trace's lock, and what a statement that
 * failed says of it.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "base/util.h"
#include "core/runstate.h"
#include "io/trace_internal.h"

/* ---- waiting for the lock ----------------------------------------------
 *
 * Many ringsim processes may append to one trace at once (a sweep script).
 * SQLite lets one writer in at a time; the others wait in the busy handler
 * below, polling with a short sleep, until the trace's wait (RS_TRACE_WAIT_S,
 * or rs_trace_open_waiting's) has passed. A few statements can return
 * SQLITE_BUSY without calling the handler (changing the journal mode; in
 * WAL mode a BEGIN whose snapshot went stale, or a recovery in progress):
 * rs__trace_exec_retry runs those again until the same deadline. */

static void sleep_ms(unsigned ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Sleep a little longer each time (1, 2, 4, ... up to 50 ms), so a queue
 * of writers costs no CPU and each sees the lock soon after it is free. */
static unsigned backoff_ms(int attempt) {
  return attempt >= 6 ? 50u : 1u << attempt;
}

int rs__trace_busy_handler(void *arg, int count) {
  rs_trace_t *t = arg;
  uint64_t now = rs__now_ns();
  if (count == 0)
    t->busy_since_ns = now;
  if ((double)(now - t->busy_since_ns) / 1e9 >= t->wait_s ||
      (t->cancel && atomic_load(t->cancel))) /* the run was interrupted */
    return 0;
  sleep_ms(backoff_ms(count));
  return 1;
}

/* Run sql, again and again while the database is busy, until the wait has
 * passed. Returns the last SQLite code; the error text is in the handle. */
int rs__trace_exec_retry(rs_trace_t *t, const char *sql) {
  uint64_t start = rs__now_ns();
  for (int attempt = 0;; attempt++) {
    int rc = sqlite3_exec(t->db, sql, NULL, NULL, NULL);
    int busy = (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
    if (!busy || (double)(rs__now_ns() - start) / 1e9 >= t->wait_s ||
        (t->cancel && atomic_load(t->cancel)))
      return rc;
    sleep_ms(backoff_ms(attempt));
  }
}

/* A read or statement of rs_trace_open that failed: a lock another
 * process held past the wait is RS_ETRACE (the run is not run, exit 3, as
 * a run whose trace lock is not had), said with the wait; any other
 * failure RS_EIO. */
int rs__trace_open_failed(rs_trace_t *t, const char *what, char *errmsg) {
  int code = sqlite3_errcode(t->db) & 0xff;
  if (code != SQLITE_BUSY && code != SQLITE_LOCKED)
    return rs__err(errmsg, RS_EIO, "trace %s: %s%s", t->path, what,
                   sqlite3_errmsg(t->db));
  if (t->cancel && atomic_load(t->cancel))
    return rs__err(errmsg, RS_ETRACE,
                   "trace %s: %s%s (a signal stopped the wait for other "
                   "writers)",
                   t->path, what, sqlite3_errmsg(t->db));
  return rs__err(errmsg, RS_ETRACE,
                 "trace %s: %s%s (waited %g s for other writers)", t->path,
                 what, sqlite3_errmsg(t->db), t->wait_s);
}

int rs__trace_exec(rs_trace_t *t, const char *sql, char *errmsg) {
  int rc = rs__trace_exec_retry(t, sql);
  if (rc != SQLITE_OK)
    return rs__trace_open_failed(t, "", errmsg);
  return RS_OK;
}

int rs__trace_fail_sql(rs_run_t *run, const char *what) {
  rs_trace_t *t = run->trace;
  t->busy = (sqlite3_errcode(t->db) & 0xff) == SQLITE_BUSY;
  char waited[64] = "";
  if (t->busy && t->cancel && atomic_load(t->cancel))
    snprintf(waited, sizeof waited,
             " (a signal stopped the wait for other writers)");
  else if (t->busy)
    snprintf(waited, sizeof waited, " (waited %g s for other writers)",
             t->wait_s);
  rs__err(run->trace_errmsg, RS_EIO, "trace %s: cannot %s: %s%s", t->path, what,
          sqlite3_errmsg(t->db), waited);
  return RS_EIO;
}
