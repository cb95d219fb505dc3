/* trace.c - the SQLite trace: schema, the run's rows, every transfer.
 *
 * One database holds many runs. It is marked as ringsim's by PRAGMA
 * application_id and versioned by PRAGMA user_version; anything else is
 * refused before a byte is written, as is a damaged one or one that cannot
 * be written. WAL mode lets a reader query while a run writes; several
 * processes may append at once, each waiting its turn for the lock (see
 * "waiting for the lock" below). All values go in through bound
 * parameters. The schema is documented, with example queries, in
 * docs/trace-schema.md.
 */
#include "io/trace.h"

#include <assert.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/mpi_run.h"
#include "core/runstate.h"
#include "base/util.h"

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
};

/* The transfer table has no index: with one, SQLite inserts about 40%
 * slower (measured), and a run's rows are written once and read by full
 * scans that take milliseconds per million rows. */
static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS run (\n"
    "  run_id INTEGER PRIMARY KEY,\n"
    "  started_at TEXT NOT NULL,\n"
    "  version TEXT NOT NULL,\n"
    "  model TEXT NOT NULL,\n"
    "  workers INTEGER NOT NULL,\n"
    "  algo TEXT NOT NULL,\n"
    "  collective TEXT NOT NULL,\n"
    "  dtype TEXT NOT NULL,\n"
    "  op TEXT NOT NULL,\n"
    "  elems INTEGER NOT NULL,\n"
    "  bytes INTEGER NOT NULL,\n"
    "  buckets INTEGER NOT NULL,\n"
    "  segment_bytes INTEGER NOT NULL,\n"
    "  segs_per_chunk INTEGER NOT NULL,\n"
    "  segment_elems INTEGER NOT NULL,\n"
    "  channel_slots INTEGER NOT NULL,\n"
    "  timeout_s REAL NOT NULL,\n"
    "  net_model TEXT,\n"
    "  status TEXT NOT NULL,\n"
    "  error TEXT,\n"
    "  transfers INTEGER,\n"
    "  wall_ns INTEGER,\n"
    "  ref_ns INTEGER,\n"
    "  sim_ns INTEGER,\n"
    "  algbw_gbs REAL,\n"
    "  busbw_gbs REAL,\n"
    "  identical INTEGER,\n"
    "  max_abs_err REAL,\n"
    "  bound REAL,\n"
    "  config_json TEXT,\n"
    "  procs INTEGER,\n"
    "  clock_offsets_json TEXT,\n"
    "  trace_stream_json TEXT,\n"
    "  host TEXT,\n"
    "  pid INTEGER,\n"
    "  pid_start INTEGER\n"
    ");\n"
    "CREATE TABLE IF NOT EXISTS param (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(run_id),\n"
    "  idx INTEGER NOT NULL,\n"
    "  name TEXT NOT NULL,\n"
    "  shape TEXT NOT NULL,\n"
    "  elem_offset INTEGER NOT NULL,\n"
    "  elems INTEGER NOT NULL,\n"
    "  bucket INTEGER NOT NULL,\n"
    "  PRIMARY KEY (run_id, idx)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE IF NOT EXISTS transfer (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(run_id),\n"
    "  iter INTEGER NOT NULL,\n"
    "  bucket INTEGER NOT NULL,\n"
    "  phase TEXT NOT NULL,\n"
    "  step INTEGER NOT NULL,\n"
    "  src INTEGER NOT NULL,\n"
    "  dst INTEGER NOT NULL,\n"
    "  chunk INTEGER NOT NULL,\n"
    "  segment INTEGER NOT NULL,\n"
    "  elem_offset INTEGER NOT NULL,\n"
    "  elems INTEGER NOT NULL,\n"
    "  bytes INTEGER NOT NULL,\n"
    "  seq INTEGER NOT NULL,\n"
    "  checksum INTEGER,\n"
    "  send_begin_ns INTEGER NOT NULL,\n"
    "  send_end_ns INTEGER NOT NULL,\n"
    "  recv_begin_ns INTEGER,\n"
    "  recv_end_ns INTEGER,\n"
    "  wait_ns INTEGER,\n"
    "  contrib_first INTEGER NOT NULL,\n"
    "  contrib_count INTEGER NOT NULL,\n"
    "  sim_send_ns INTEGER,\n"
    "  sim_recv_ns INTEGER,\n"
    "  src_rank INTEGER,\n"
    "  dst_rank INTEGER,\n"
    "  src_host TEXT,\n"
    "  dst_host TEXT\n"
    ");\n"
    "CREATE TABLE IF NOT EXISTS worker (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(run_id),\n"
    "  worker INTEGER NOT NULL,\n"
    "  state TEXT NOT NULL,\n"
    "  phase TEXT,\n"
    "  step INTEGER,\n"
    "  chunk INTEGER,\n"
    "  waiting TEXT,\n"
    "  peer INTEGER,\n"
    "  transfers_sent INTEGER NOT NULL,\n"
    "  bytes_sent INTEGER NOT NULL,\n"
    "  bytes_received INTEGER NOT NULL,\n"
    "  wait_ns INTEGER NOT NULL,\n"
    "  PRIMARY KEY (run_id, worker)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE IF NOT EXISTS result (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(run_id),\n"
    "  param_idx INTEGER NOT NULL,\n"
    "  param TEXT NOT NULL,\n"
    "  max_abs_err REAL NOT NULL,\n"
    "  max_rel_err REAL NOT NULL,\n"
    "  bound REAL NOT NULL,\n"
    "  worst_ratio REAL,\n"
    "  differing INTEGER NOT NULL,\n"
    "  wrong INTEGER NOT NULL,\n"
    "  order_differing INTEGER,\n"
    "  order_max_ulps INTEGER,\n"
    "  identical INTEGER NOT NULL,\n"
    "  PRIMARY KEY (run_id, param_idx)\n"
    ") WITHOUT ROWID;\n";

/* Added after schema version 1 without changing it: a trace from before
 * gets the table when it is opened (CREATE ... IF NOT EXISTS), and an older
 * ringsim still reads and appends to a trace that has it. One row per
 * bucket: the algorithm it ran (--algo auto chooses per bucket) and, for
 * auto, every algorithm's predicted time (JSON; null: not eligible). */
static const char bucket_algo_sql[] =
    "CREATE TABLE IF NOT EXISTS bucket_algo (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(run_id),\n"
    "  bucket INTEGER NOT NULL,\n"
    "  elem_offset INTEGER NOT NULL,\n"
    "  elems INTEGER NOT NULL,\n"
    "  algo TEXT NOT NULL,\n"
    "  predicted_json TEXT,\n"
    "  PRIMARY KEY (run_id, bucket)\n"
    ") WITHOUT ROWID;\n";

const char *rs_trace_path(const rs_trace_t *trace) { return trace->path; }

sqlite3 *rs__trace_db(rs_trace_t *trace) { return trace->db; }

void rs_trace_close(rs_trace_t *trace) {
  if (!trace)
    return;
  sqlite3_close(trace->db);
  free(trace->path);
  free(trace);
}

/* ---- waiting for the lock ----------------------------------------------
 *
 * Many ringsim processes may append to one trace at once (a sweep script).
 * SQLite lets one writer in at a time; the others wait in the busy handler
 * below, polling with a short sleep, until the trace's wait (RS_TRACE_WAIT_S,
 * or RINGSIM_TRACE_WAIT seconds) has passed. A few statements can return
 * SQLITE_BUSY without calling the handler (changing the journal mode; in
 * WAL mode a BEGIN whose snapshot went stale, or a recovery in progress):
 * exec_retry runs those again until the same deadline. */

static void sleep_ms(unsigned ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Sleep a little longer each time (1, 2, 4, ... up to 50 ms), so a queue
 * of writers costs no CPU and each sees the lock soon after it is free. */
static unsigned backoff_ms(int attempt) {
  return attempt >= 6 ? 50u : 1u << attempt;
}

static int busy_handler(void *arg, int count) {
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
static int exec_retry(rs_trace_t *t, const char *sql) {
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
static int open_failed(rs_trace_t *t, const char *what, char *errmsg) {
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

/* The file's application_id, user_version and number of schema objects,
 * read in one statement: one snapshot, so a trace another process creates
 * meanwhile is seen whole or not at all. */
static int read_header(sqlite3 *db, int64_t *app_id, int64_t *version,
                       int64_t *objects) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(
      db,
      "SELECT (SELECT application_id FROM pragma_application_id), "
      "(SELECT user_version FROM pragma_user_version), "
      "(SELECT count(*) FROM sqlite_schema)",
      -1, &st, NULL);
  if (rc != SQLITE_OK)
    return rc;
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    *app_id = sqlite3_column_int64(st, 0);
    *version = sqlite3_column_int64(st, 1);
    *objects = sqlite3_column_int64(st, 2);
    rc = SQLITE_OK;
  }
  sqlite3_finalize(st);
  return rc;
}

/* Decide, reading only, what the file is: a ringsim trace of our version,
 * an empty database to initialize, or something to leave alone. */
static int classify(rs_trace_t *t, int *fresh, char *errmsg) {
  int64_t app_id = 0, version = 0, objects = 0;
  int rc = read_header(t->db, &app_id, &version, &objects);
  if (rc == SQLITE_NOTADB)
    return rs__err(errmsg, RS_EINVAL,
                   "trace %s: not a SQLite database; refusing to touch it",
                   t->path);
  if ((rc & 0xff) == SQLITE_CORRUPT)
    return rs__err(errmsg, RS_EINVAL,
                   "trace %s: damaged (%s); refusing to touch it", t->path,
                   sqlite3_errmsg(t->db));
  if (rc != SQLITE_OK)
    return open_failed(t, "cannot read: ", errmsg);
  *fresh = app_id == 0 && objects == 0;
  if (*fresh)
    return RS_OK;
  if (app_id != RS_TRACE_APPLICATION_ID)
    return rs__err(errmsg, RS_EINVAL,
                   "trace %s: a SQLite database but not a ringsim trace; "
                   "refusing to touch it",
                   t->path);
  if (version != RS_TRACE_SCHEMA_VERSION)
    return rs__err(errmsg, RS_EINVAL,
                   "trace %s: schema version %lld, this ringsim writes "
                   "version %d",
                   t->path, (long long)version, RS_TRACE_SCHEMA_VERSION);
  return RS_OK;
}

/* Check, reading only, the pages a run's append will touch: the schema and
 * the small tables (run, param, worker, result) by PRAGMA quick_check, and
 * the transfer table's last rows (the path down to its last page, checked
 * as loaded with cell_size_check on). The rest of the transfer table, most
 * of a large file, is not read: a full quick_check costs about a second
 * per 200 MB, every run. */
/* A pragma's one integer, or -1. */
static int64_t pragma_int(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st;
  int64_t value = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    return -1;
  if (sqlite3_step(st) == SQLITE_ROW)
    value = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return value;
}

/* Up to this size a trace gets a full PRAGMA quick_check before a run is
 * appended (about a tenth of a second); a larger one, the pages a run will
 * touch, and a check that the file holds every page its header counts. */
#define FULL_CHECK_BYTES (16 << 20)

static int check_integrity(rs_trace_t *t, char *errmsg) {
  /* Every table of the schema but bucket_algo (which traces older than it
   * lack, and get): a file that claims to be a trace without one is not
   * one to add tables and columns to. */
  static const char *const tables[] = {"run", "param", "transfer", "worker",
                                       "result"};
  for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
    char sql[128];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND "
             "name = '%s'",
             tables[i]);
    int64_t found = pragma_int(t->db, sql);
    if (found < 0)
      return open_failed(t, "cannot read: ", errmsg);
    if (found == 0)
      return rs__err(errmsg, RS_EINVAL,
                     "trace %s: damaged (no %s table); refusing to touch it",
                     t->path, tables[i]);
  }
  struct stat st_file, st_wal;
  char wal[PATH_MAX];
  int full =
      stat(t->path, &st_file) == 0 && st_file.st_size <= FULL_CHECK_BYTES;
  int has_wal =
      snprintf(wal, sizeof wal, "%s-wal", t->path) < (int)sizeof wal &&
      stat(wal, &st_wal) == 0;
  if (!full && !has_wal) {
    int64_t pages = pragma_int(t->db, "PRAGMA page_count");
    int64_t page_size = pragma_int(t->db, "PRAGMA page_size");
    if (pages > 0 && page_size > 0 &&
        (int64_t)st_file.st_size < pages * page_size)
      return rs__err(errmsg, RS_EINVAL,
                     "trace %s: damaged (truncated: %lld bytes, its header "
                     "counts %lld pages of %lld); refusing to touch it",
                     t->path, (long long)st_file.st_size, (long long)pages,
                     (long long)page_size);
  }
  static const char *const whole[] = {"PRAGMA quick_check"};
  static const char *const checks[] = {
      "PRAGMA quick_check(sqlite_schema)",
      "PRAGMA quick_check(run)",
      "PRAGMA quick_check(param)",
      "PRAGMA quick_check(worker)",
      "PRAGMA quick_check(result)",
      ("SELECT count(*) FROM (SELECT * FROM transfer ORDER BY rowid DESC "
       "LIMIT 1024)")};
  const char *const *list = full ? whole : checks;
  size_t count = full ? 1 : sizeof checks / sizeof *checks;
  for (size_t i = 0; i < count; i++) {
    sqlite3_stmt *st;
    const char *problem = NULL;
    int rc = sqlite3_prepare_v2(t->db, list[i], -1, &st, NULL);
    if (rc == SQLITE_OK) {
      rc = sqlite3_step(st);
      /* quick_check answers "ok", or rows naming each problem. */
      if (rc == SQLITE_ROW && strncmp(list[i], "PRAGMA", 6) == 0) {
        const char *text = (const char *)sqlite3_column_text(st, 0);
        static const char prefix[] = "*** in database main ***\n";
        if (text && strncmp(text, prefix, sizeof prefix - 1) == 0)
          text += sizeof prefix - 1;
        if (!text || strcmp(text, "ok"))
          problem = text ? text : "?";
      }
      if (rc == SQLITE_ROW || rc == SQLITE_DONE)
        rc = SQLITE_OK;
    }
    if (problem || rc != SQLITE_OK) {
      int corrupt = problem || (rc & 0xff) == SQLITE_CORRUPT ||
                    (rc & 0xff) == SQLITE_NOTADB;
      if (corrupt)
        rs__err(errmsg, RS_EINVAL,
                "trace %s: damaged (%s); refusing to touch it", t->path,
                problem ? problem : sqlite3_errmsg(t->db));
      int failed = corrupt ? RS_EINVAL
                           : open_failed(t, "cannot read: ", errmsg);
      sqlite3_finalize(st);
      return failed;
    }
    sqlite3_finalize(st);
  }
  return RS_OK;
}

static int exec(rs_trace_t *t, const char *sql, char *errmsg) {
  int rc = exec_retry(t, sql);
  if (rc != SQLITE_OK)
    return open_failed(t, "", errmsg);
  return RS_OK;
}

/* Names SQLite would not take as a file: "" (a temporary database),
 * ":memory:", and URIs ("file:...", which this SQLite interprets when built
 * with SQLITE_USE_URI, as Debian's is). A trace must be kept. */
static int check_name(const char *path, char *errmsg) {
  if (path[0] == '\0' || strcmp(path, ":memory:") == 0)
    return rs__err(errmsg, RS_EINVAL,
                   "trace '%s': not a file name, and an in-memory trace keeps "
                   "nothing (use --no-trace for no trace)",
                   path);
  if (strncmp(path, "file:", 5) == 0)
    return rs__err(errmsg, RS_EINVAL,
                   "trace '%s': SQLite would read this as a URI; give a "
                   "plain file name (./%s for a file of that name)",
                   path, path);
  return RS_OK;
}

/* Can we write the trace, and the -wal and -shm files SQLite keeps beside
 * it? Asked before SQLite opens anything: SQLite would open a read-only
 * file read-only and leave -wal and -shm files of the same mode behind. */
static int check_writable(const char *path, char *errmsg) {
  struct stat st;
  char side[PATH_MAX + 8];
  if (stat(path, &st) == 0) {
    /* A directory, or a device such as /dev/null (which would keep nothing,
     * and beside which SQLite would create its journal). */
    if (!S_ISREG(st.st_mode))
      return rs__err(errmsg, RS_EINVAL, "trace %s: cannot open: %s", path,
                     S_ISDIR(st.st_mode) ? "a directory"
                                         : "not a regular file");
    if (access(path, R_OK | W_OK) != 0)
      return rs__err(errmsg, RS_EINVAL,
                     "trace %s: cannot open: the file is not writable (%s); "
                     "refusing to touch it",
                     path, strerror(errno));
    for (int i = 0; i < 2; i++) {
      snprintf(side, sizeof side, "%s%s", path, i ? "-shm" : "-wal");
      if (access(side, F_OK) == 0 && access(side, R_OK | W_OK) != 0)
        return rs__err(errmsg, RS_EINVAL,
                       "trace %s: cannot open: %s is not writable (%s); "
                       "refusing to touch the trace",
                       path, side, strerror(errno));
    }
  } else if (errno != ENOENT) {
    return rs__err(errmsg, RS_EINVAL, "trace %s: cannot open: %s", path,
                   strerror(errno));
  }
  if (snprintf(side, sizeof side, "%s", path) >= (int)sizeof side)
    return rs__err(errmsg, RS_EINVAL, "trace %s: cannot open: name too long",
                   path);
  const char *dir = dirname(side);
  if (access(dir, W_OK | X_OK) != 0)
    return rs__err(errmsg, RS_EINVAL,
                   errno == ENOENT
                       ? "trace %s: cannot open: %s: %s"
                       : "trace %s: cannot open: its directory %s is not "
                         "writable (%s), and SQLite keeps -wal and -shm "
                         "files there",
                   path, dir, strerror(errno));
  return RS_OK;
}

/* How long a writer waits for the trace's lock: RINGSIM_TRACE_WAIT seconds
 * if set, else RS_TRACE_WAIT_S. */
static int wait_seconds(double *wait_s, char *errmsg) {
  const char *text = getenv("RINGSIM_TRACE_WAIT");
  *wait_s = RS_TRACE_WAIT_S;
  if (!text)
    return RS_OK;
  char *end;
  errno = 0;
  double s = strtod(text, &end);
  if (errno || end == text || *end || !(s >= 0 && s <= 1e6))
    return rs__err(errmsg, RS_EINVAL,
                   "RINGSIM_TRACE_WAIT '%s': expected seconds in [0, 1e6]",
                   text);
  *wait_s = s;
  return RS_OK;
}

/* Make an empty file a trace: WAL mode, then the schema, in one
 * transaction that first looks again, so that of several processes
 * starting together on a new file one creates the schema and the others
 * find it made. */
static int create_schema(rs_trace_t *t, char *errmsg) {
  /* The page size holds only if set before the first table (and WAL). */
  int rc = exec(t,
                "PRAGMA page_size=16384; PRAGMA journal_mode=WAL; "
                "PRAGMA synchronous=NORMAL;",
                errmsg);
  if (rc)
    return rc;
  if (exec_retry(t, "BEGIN IMMEDIATE") != SQLITE_OK)
    return rs__err(errmsg, RS_EIO, "trace %s: cannot begin a transaction: %s",
                   t->path, sqlite3_errmsg(t->db));
  int fresh = 0;
  rc = classify(t, &fresh, errmsg);
  if (rc == RS_OK && fresh) {
    char sql[sizeof schema_sql + 256];
    snprintf(sql, sizeof sql,
             "%s PRAGMA application_id=%d; "
             "PRAGMA user_version=%d;",
             schema_sql, RS_TRACE_APPLICATION_ID, RS_TRACE_SCHEMA_VERSION);
    rc = exec(t, sql, errmsg);
  }
  if (rc == RS_OK && exec_retry(t, "COMMIT") != SQLITE_OK)
    rc = rs__err(errmsg, RS_EIO, "trace %s: cannot commit the schema: %s",
                 t->path, sqlite3_errmsg(t->db));
  if (rc)
    sqlite3_exec(t->db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

/* A trace from before --transport mpi gets its columns (empty in the old
 * runs), as an older one gets the bucket_algo table, and one from before
 * runs named their process gets host, pid and pid_start: the schema
 * version stays, and a reader finds every column in every trace. */
static int add_columns(rs_trace_t *t, char *errmsg) {
  static const char *const columns[][2] = {
      {"run", "procs INTEGER"},         {"run", "clock_offsets_json TEXT"},
      {"transfer", "src_rank INTEGER"}, {"transfer", "dst_rank INTEGER"},
      {"transfer", "src_host TEXT"},    {"transfer", "dst_host TEXT"},
      {"run", "trace_stream_json TEXT"}, {"run", "host TEXT"},
      {"run", "pid INTEGER"},           {"run", "pid_start INTEGER"}};
  for (size_t i = 0; i < sizeof columns / sizeof *columns; i++) {
    char name[64], sql[256];
    snprintf(name, sizeof name, "%s", columns[i][1]);
    name[strcspn(name, " ")] = '\0';
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM pragma_table_info('%s') WHERE name = '%s'",
             columns[i][0], name);
    if (pragma_int(t->db, sql) != 0)
      continue;
    snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN %s;", columns[i][0],
             columns[i][1]);
    int rc = exec(t, sql, errmsg);
    if (rc)
      return rc;
  }
  return RS_OK;
}

/* ---- abandoned runs -----------------------------------------------------
 *
 * A run's row says `running` until its process writes the outcome. A
 * process killed outright (SIGKILL, a crash, the machine's power) never
 * does: the next run to begin on that trace, on the same host, finds such
 * a row whose process is gone (no process has its pid, or the one that has
 * it started at another time: the pid was used again) and marks it
 * `abandoned`. A row from another host, or from before rows named their
 * process (host NULL), is left as it is: its process cannot be asked. */

/* When process pid started, in clock ticks after boot (the 22nd field of
 * /proc/PID/stat), or -1 if it cannot be read. */
static int64_t process_start(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "re");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* The command's name (field 2, in parentheses) may hold blanks and
   * parentheses: the fields are counted from its last ')'. */
  const char *p = strrchr(buf, ')');
  if (!p)
    return -1;
  p++;
  for (int field = 3; field < 22; field++) {
    while (*p == ' ')
      p++;
    while (*p && *p != ' ')
      p++;
  }
  char *end;
  long long start = strtoll(p, &end, 10);
  return end != p && start >= 0 ? (int64_t)start : -1;
}

/* SQL rs_process_gone(pid, pid_start): 1 if no process has that pid, or
 * the one that has it started at another time than pid_start (when known);
 * 0 if it may still be the run's, or pid is NULL. */
static void sql_process_gone(sqlite3_context *ctx, int argc,
                             sqlite3_value **argv) {
  (void)argc;
  if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER) {
    sqlite3_result_int(ctx, 0);
    return;
  }
  int64_t pid = sqlite3_value_int64(argv[0]);
  int gone = 0;
  if (pid > 0 && pid <= INT_MAX) {
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
      gone = 1;
    } else if (sqlite3_value_type(argv[1]) == SQLITE_INTEGER) {
      int64_t now = process_start((pid_t)pid);
      gone = now >= 0 && now != sqlite3_value_int64(argv[1]);
    }
  }
  sqlite3_result_int(ctx, gone);
}

int rs_trace_open(const char *path, rs_trace_t **out, char *errmsg) {
  *out = NULL;
  int rc = check_name(path, errmsg);
  if (rc)
    return rc;
  rc = check_writable(path, errmsg);
  if (rc)
    return rc;
  rs_trace_t *t = calloc(1, sizeof *t);
  if (!t || !(t->path = strdup(path))) {
    free(t);
    return rs__err(errmsg, RS_ENOMEM, "trace %s: out of memory", path);
  }
  int fresh = 0;
  rc = wait_seconds(&t->wait_s, errmsg);
  if (rc)
    goto fail;
  if (sqlite3_open_v2(path, &t->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                      NULL) != SQLITE_OK) {
    rc = rs__err(errmsg, RS_EIO, "trace %s: cannot open: %s", path,
                 t->db ? sqlite3_errmsg(t->db) : "out of memory");
    goto fail;
  }
  sqlite3_busy_handler(t->db, busy_handler, t);
  rc = classify(t, &fresh, errmsg);
  /* Catch a damaged page as it is read, before anything is written. */
  if (rc == RS_OK)
    rc =
        exec(t, "PRAGMA cell_size_check=ON; PRAGMA cache_size=-65536;", errmsg);
  if (rc == RS_OK && !fresh)
    rc = check_integrity(t, errmsg);
  if (rc)
    goto fail;
  /* Only now, knowing the file is ours (or empty) and sound, do we write.
   * A trace is in WAL mode from its creation on: this changes nothing. */
  if (fresh)
    rc = create_schema(t, errmsg);
  else
    rc = exec(t, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", errmsg);
  if (rc == RS_OK)
    rc = exec(t, bucket_algo_sql, errmsg);
  if (rc == RS_OK)
    rc = add_columns(t, errmsg);
  if (rc == RS_OK &&
      sqlite3_create_function(t->db, "rs_process_gone", 2,
                              SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL,
                              sql_process_gone, NULL, NULL) != SQLITE_OK)
    rc = rs__err(errmsg, RS_ENOMEM, "trace %s: %s", path,
                 sqlite3_errmsg(t->db));
  if (rc)
    goto fail;
  if (gethostname(t->host, sizeof t->host) != 0)
    t->host[0] = '\0';
  t->host[sizeof t->host - 1] = '\0';
  t->pid = (int64_t)getpid();
  t->pid_start = process_start(getpid());
  *out = t;
  return RS_OK;
fail:
  rs_trace_close(t);
  return rc;
}

/* ---- writing a run ------------------------------------------------------ */

static int fail_sql(rs_run_t *run, const char *what) {
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

#ifndef NDEBUG
/* How many '?' parameters sql has (our statements quote no '?'). */
static int placeholders(const char *sql) {
  int n = 0;
  for (; *sql; sql++)
    n += *sql == '?';
  return n;
}
#endif

/* Prepare sql, bind one value per letter of types, step once, finalize.
 * 'i' int64; 'I' int64, NULL if negative; 'd' double; 'D' double, NULL if
 * not finite; 't' text, NULL if the pointer is NULL. */
static int exec_bound(sqlite3 *db, const char *sql, const char *types, ...) {
  sqlite3_stmt *st;
  /* One value per placeholder: anything else is a bug in this file. */
  assert((size_t)placeholders(sql) == strlen(types));
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK)
    return rc;
  va_list ap;
  va_start(ap, types);
  for (int i = 0; types[i]; i++) {
    int64_t n;
    double x;
    switch (types[i]) {
    case 'i':
    case 'I':
      n = va_arg(ap, int64_t);
      if (types[i] == 'I' && n < 0)
        sqlite3_bind_null(st, i + 1);
      else
        sqlite3_bind_int64(st, i + 1, n);
      break;
    case 'd':
    case 'D':
      x = va_arg(ap, double);
      if (types[i] == 'D' && !isfinite(x))
        sqlite3_bind_null(st, i + 1);
      else
        sqlite3_bind_double(st, i + 1, x);
      break;
    case 't':
      /* a NULL pointer binds SQL NULL */
      sqlite3_bind_text(st, i + 1, va_arg(ap, const char *), -1,
                        SQLITE_TRANSIENT);
      break;
    }
  }
  va_end(ap);
  rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static void shape_json(const rs_param_t *p, char *buf, size_t size) {
  size_t len = (size_t)snprintf(buf, size, "[");
  for (int d = 0; d < p->ndim && len < size; d++)
    len += (size_t)snprintf(buf + len, size - len, "%s%lld", d ? ", " : "",
                            (long long)p->shape[d]);
  if (len < size)
    snprintf(buf + len, size - len, "]");
}

/* The network model as the run table stores it: JSON, integers in ns and
 * bytes per second (overrides: at most a few listed; the rest counted). */
static const char *net_json(const rs_netmodel_t *m, char *buf, size_t size) {
  snprintf(
      buf, size,
      "{\"latency_ns\": %llu, \"bandwidth_Bps\": %llu, \"reduce_Bps\": %llu, "
      "\"links\": %d, \"stragglers\": %d}",
      (unsigned long long)m->link.latency_ns,
      (unsigned long long)m->link.bandwidth, (unsigned long long)m->reduce_rate,
      m->link_count, m->straggler_count);
  return buf;
}

/* In the transaction that begins a run: mark abandoned this host's rows
 * left running by a process that is gone. */
static int mark_abandoned(rs_trace_t *t) {
  if (!t->host[0])
    return SQLITE_OK;
  return exec_bound(
      t->db,
      "UPDATE run SET status = 'abandoned', error = printf('abandoned: "
      "its process (pid %d on %s) ended before the run did; a later run "
      "found it gone', pid, host) WHERE status = 'running' AND host = ? "
      "AND rs_process_gone(pid, pid_start)",
      "t", t->host);
}

int rs__trace_begin(rs_run_t *run) {
  sqlite3 *db = run->trace->db;
  run->trace->cancel = &run->abort_flag; /* an interrupt ends any wait */
  const rs_config_t *c = &run->config;
  char started[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", &tm);
  char net_buf[1024];
  const char *net_text =
      c->net.enabled ? net_json(&c->net, net_buf, sizeof net_buf) : NULL;
  if (exec_retry(run->trace, "BEGIN IMMEDIATE") != SQLITE_OK)
    return fail_sql(run, "begin a transaction");
  int rc = mark_abandoned(run->trace);
  if (rc != SQLITE_OK) {
    fail_sql(run, "mark abandoned runs");
    goto rollback;
  }
  rc = exec_bound(
      db,
      "INSERT INTO run (started_at, version, model, workers, algo, "
      "collective, dtype, op, elems, bytes, buckets, segment_bytes, "
      "segs_per_chunk, segment_elems, channel_slots, timeout_s, net_model, "
      "status, config_json, host, pid, pid_start) VALUES (?, ?, ?, ?, ?, ?, "
      "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)",
      "tttittttiiiiiiidtttiI", started, RS_VERSION, rs_model_name(run->model),
      (int64_t)c->workers, rs_algorithm_name(c->algo),
      c->collective == RS_COLL_ALLREDUCE ? "all_reduce" : "reduce_scatter",
      rs_dtype_name(run->dtype), rs_op_name(c->op), (int64_t)run->elems,
      (int64_t)(run->elems * run->elem_size), (int64_t)run->result.buckets,
      (int64_t)c->segment_bytes, (int64_t)run->result.segs_per_chunk,
      (int64_t)run->result.seg_elems, (int64_t)c->slots, c->timeout_s, net_text,
      run->trace_config_json, run->trace->host[0] ? run->trace->host : NULL,
      run->trace->pid, run->trace->pid_start);
  if (rc != SQLITE_OK) {
    fail_sql(run, "insert the run");
    goto rollback;
  }
  run->trace_run_id = sqlite3_last_insert_rowid(db);
  for (size_t b = 0; b < run->result.buckets; b++) {
    char pred[RS_ALGO_COUNT * 40 + 4];
    size_t len = 0;
    for (int a = 0; a < RS_ALGO_COUNT && run->bucket_predicted; a++) {
      uint64_t ns = run->bucket_predicted[b * RS_ALGO_COUNT + a];
      char value[24] = "null";
      if (ns != UINT64_MAX)
        snprintf(value, sizeof value, "%llu", (unsigned long long)ns);
      len += (size_t)snprintf(pred + len, sizeof pred - len, "%s\"%s\": %s",
                              a ? ", " : "{", rs_algorithm_name(a), value);
    }
    if (len)
      snprintf(pred + len, sizeof pred - len, "}");
    rc = exec_bound(
        db,
        "INSERT INTO bucket_algo (run_id, bucket, elem_offset, "
        "elems, algo, predicted_json) VALUES (?, ?, ?, ?, ?, ?)",
        "iiiitt", run->trace_run_id, (int64_t)b,
        (int64_t)run->buckets[b].elem_offset, (int64_t)run->buckets[b].elems,
        rs_algorithm_name(run->bucket_choice[b]), len ? pred : NULL);
    if (rc != SQLITE_OK) {
      fail_sql(run, "insert the buckets' algorithms");
      goto rollback;
    }
  }
  for (size_t b = 0; b < run->result.buckets; b++)
    for (size_t i = run->buckets[b].first_param;
         i < run->buckets[b].first_param + run->buckets[b].params; i++) {
      const rs_param_t *p = rs_model_param(run->model, i);
      char shape[RS_MAX_DIMS * 24 + 4];
      shape_json(p, shape, sizeof shape);
      rc =
          exec_bound(db,
                     "INSERT INTO param (run_id, idx, name, shape, "
                     "elem_offset, elems, bucket) VALUES (?, ?, ?, ?, ?, ?, ?)",
                     "iittiii", run->trace_run_id, (int64_t)i, p->name, shape,
                     (int64_t)p->elem_offset, (int64_t)p->elems, (int64_t)b);
      if (rc != SQLITE_OK) {
        fail_sql(run, "insert the params");
        goto rollback;
      }
    }
  if (exec_retry(run->trace, "COMMIT") != SQLITE_OK) {
    fail_sql(run, "commit the run");
    goto rollback;
  }
  return RS_OK;
rollback:
  sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  run->trace_run_id = 0;
  return RS_EIO;
}

static int insert_transfer(rs_run_t *run, sqlite3_stmt *st, const rs_event_t *e,
                           int dst, int received) {
  const int64_t t0 = (int64_t)run->t0_ns;
  int i = 1;
  sqlite3_bind_int64(st, i++, run->trace_run_id);
  sqlite3_bind_int64(st, i++, e->iter);
  sqlite3_bind_int64(st, i++, e->bucket);
  sqlite3_bind_text(st, i++, rs__phase_name((rs_phase_t)e->phase), -1,
                    SQLITE_STATIC);
  sqlite3_bind_int64(st, i++, e->step);
  sqlite3_bind_int64(st, i++, e->src);
  sqlite3_bind_int64(st, i++, dst);
  sqlite3_bind_int64(st, i++, e->chunk);
  sqlite3_bind_int64(st, i++, e->segment);
  sqlite3_bind_int64(st, i++, (int64_t)e->elem_offset);
  sqlite3_bind_int64(st, i++, e->elems);
  sqlite3_bind_int64(st, i++, (int64_t)e->elems * (int64_t)run->elem_size);
  sqlite3_bind_int64(st, i++, (int64_t)e->seq);
  if (run->edge_count && run->edges[0].chan.checksum)
    sqlite3_bind_int64(st, i++, (int64_t)e->checksum);
  else
    sqlite3_bind_null(st, i++);
  sqlite3_bind_int64(st, i++, (int64_t)e->send_begin_ns - t0);
  sqlite3_bind_int64(st, i++, (int64_t)e->send_end_ns - t0);
  if (received) {
    sqlite3_bind_int64(st, i++, (int64_t)e->recv_begin_ns - t0);
    sqlite3_bind_int64(st, i++, (int64_t)e->recv_end_ns - t0);
    sqlite3_bind_int64(st, i++, (int64_t)e->wait_ns);
  } else {
    for (int k = 0; k < 3; k++)
      sqlite3_bind_null(st, i++);
  }
  /* provenance, as the message carried it */
  sqlite3_bind_int64(st, i++, e->contrib_first);
  sqlite3_bind_int64(st, i++, e->contrib_count);
  if (run->config.net.enabled) {
    sqlite3_bind_int64(st, i++, (int64_t)e->sim_send_ns);
    if (received)
      sqlite3_bind_int64(st, i++, (int64_t)e->sim_recv_ns);
    else
      sqlite3_bind_null(st, i++);
  } else {
    sqlite3_bind_null(st, i++);
    sqlite3_bind_null(st, i++);
  }
  if (run->mpi) { /* which process, on which host, each side was */
    const int W = run->config.workers;
    int src_rank = rs__mpi_owner(W, run->procs, e->src);
    int dst_rank = rs__mpi_owner(W, run->procs, dst);
    sqlite3_bind_int64(st, i++, src_rank);
    sqlite3_bind_int64(st, i++, dst_rank);
    sqlite3_bind_text(st, i++, rs__mpi_host(run, src_rank), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, i++, rs__mpi_host(run, dst_rank), -1, SQLITE_STATIC);
  } else {
    for (int k = 0; k < 4; k++)
      sqlite3_bind_null(st, i++);
  }
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int prepare_insert(rs_run_t *run, sqlite3_stmt **st) {
  if (sqlite3_prepare_v2(
          run->trace->db,
          "INSERT INTO transfer (run_id, iter, bucket, phase, step, src, dst, "
          "chunk, segment, elem_offset, elems, bytes, seq, checksum, "
          "send_begin_ns, send_end_ns, recv_begin_ns, recv_end_ns, wait_ns, "
          "contrib_first, contrib_count, sim_send_ns, sim_recv_ns, src_rank, "
          "dst_rank, src_host, dst_host) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
          "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          -1, st, NULL) != SQLITE_OK)
    return fail_sql(run, "prepare the transfer insert");
  return RS_OK;
}

static int write_transfers(rs_run_t *run) {
  sqlite3_stmt *st = run->trace->stream;
  /* (streamed: the received records are in already, mpi.c) */
  const int streamed = st != NULL;
  if (!streamed && prepare_insert(run, &st) != RS_OK)
    return RS_EIO;
  int rc = SQLITE_OK;
  /* Receiver by receiver, in the order the algorithm's edges first reach
   * them (for the ring, sender 0's transfers first, as (src, seq) keys
   * run), each receiver's record once, in the order it received. */
  unsigned char *done = calloc((size_t)run->config.workers, 1);
  if (!done) {
    if (!streamed)
      sqlite3_finalize(st);
    return rs__err(run->trace_errmsg, RS_ENOMEM, "trace %s: out of memory",
                   run->trace->path);
  }
  for (int i = 0; i < run->edge_count && rc == SQLITE_OK && !streamed; i++) {
    const int dst = run->edges[i].to;
    if (done[dst])
      continue;
    done[dst] = 1;
    const rs_event_buf_t *buf = &run->workers[dst].events;
    for (size_t k = 0; k < buf->count && rc == SQLITE_OK; k++) {
      rc = insert_transfer(run, st, &buf->events[k], dst, 1);
      run->result.trace_rows++;
    }
  }
  free(done);
  /* Messages still on an edge were sent but never received: a failed run's
   * trace keeps them, with no receive times. */
  for (int i = 0; i < run->edge_count && rc == SQLITE_OK; i++) {
    const rs_edge_t *edge = &run->edges[i];
    const rs_chan_t *ch = &edge->chan;
    for (uint64_t idx = ch->head; idx < ch->tail && rc == SQLITE_OK; idx++) {
      rs_event_t e =
          rs__event_of(rs__chan_peek(ch, idx), run->workers[edge->from].iter);
      rc = insert_transfer(run, st, &e, edge->to, 0);
      run->result.trace_rows++;
    }
  }
  if (!streamed)
    sqlite3_finalize(st);
  return rc == SQLITE_OK ? RS_OK : fail_sql(run, "insert transfers");
}

int rs__trace_stream_open(rs_run_t *run) {
  rs_trace_t *t = run->trace;
  t->stream_rc = RS_OK;
  if (exec_retry(t, "BEGIN IMMEDIATE") != SQLITE_OK)
    return fail_sql(run, "begin a transaction");
  if (prepare_insert(run, &t->stream) != RS_OK) {
    sqlite3_exec(t->db, "ROLLBACK", NULL, NULL, NULL);
    return RS_EIO;
  }
  return RS_OK;
}

int rs__trace_stream_write(rs_run_t *run, int dst, const rs_event_t *events,
                           size_t n) {
  rs_trace_t *t = run->trace;
  if (!t || !t->stream || t->stream_rc)
    return RS_EIO; /* (no stream, or a write failed: the rest is dropped) */
  int rc = SQLITE_OK;
  for (size_t k = 0; k < n && rc == SQLITE_OK; k++) {
    rc = insert_transfer(run, t->stream, &events[k], dst, 1);
    run->result.trace_rows++;
  }
  if (rc != SQLITE_OK)
    t->stream_rc = fail_sql(run, "insert transfers");
  return t->stream_rc;
}

/* Finalize the stream's statement (its transaction goes on). */
static void stream_close(rs_trace_t *t) {
  sqlite3_finalize(t->stream);
  t->stream = NULL;
}

void rs__trace_stream_abandon(rs_run_t *run) {
  rs_trace_t *t = run->trace;
  if (!t || !t->stream)
    return;
  stream_close(t);
  sqlite3_exec(t->db, "ROLLBACK", NULL, NULL, NULL);
}

static int write_totals(rs_run_t *run) {
  sqlite3 *db = run->trace->db;
  const rs_result_t *res = &run->result;
  const int W = run->config.workers;
  for (int r = 0; r < W; r++) {
    const rs_worker_t *w = &run->workers[r];
    rs_worker_state_t ws;
    rs_run_worker_state(run, r, &ws);
    /* Where the worker was last: its final step, or where it stopped. */
    int moved = W > 1;
    int rc = exec_bound(
        db,
        "INSERT INTO worker (run_id, worker, state, phase, step, chunk, "
        "waiting, peer, transfers_sent, bytes_sent, bytes_received, wait_ns) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        "iittIItIiiii", run->trace_run_id, (int64_t)r, ws.state, ws.phase,
        moved ? (int64_t)ws.step : -1, moved ? (int64_t)ws.chunk : -1,
        ws.waiting, ws.waiting ? (int64_t)ws.peer : -1,
        (int64_t)w->stats.transfers_sent, (int64_t)w->stats.bytes_sent,
        (int64_t)w->stats.bytes_received, (int64_t)w->stats.wait_ns);
    if (rc != SQLITE_OK)
      return fail_sql(run, "insert worker totals");
  }
  for (size_t p = 0; run->checked && p < rs_model_param_count(run->model);
       p++) {
    const rs_param_check_t *c = &run->checks[p];
    int rc = exec_bound(
        db,
        "INSERT INTO result (run_id, param_idx, param, max_abs_err, "
        "max_rel_err, bound, worst_ratio, differing, wrong, order_differing, "
        "order_max_ulps, identical) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
        "?)",
        "iitdddDiiIIi", run->trace_run_id, (int64_t)p,
        rs_model_param(run->model, p)->name, c->max_abs_err, c->max_rel_err,
        c->bound, c->worst_ratio, (int64_t)c->differing, (int64_t)c->wrong,
        run->fixed ? (int64_t)c->order_differing : -1,
        run->fixed ? (int64_t)c->order_max_ulps : -1, (int64_t)res->identical);
    if (rc != SQLITE_OK)
      return fail_sql(run, "insert check results");
  }
  const double bytes = (double)run->elems * (double)run->elem_size;
  double seconds = (double)res->wall_ns / 1e9;
  /* A run that did not complete has no bandwidth nor simulated time. */
  double algbw = !run->checked ? NAN : seconds > 0 ? bytes / seconds / 1e9 : 0;
  const char *status = rs_status_name(res->status);
  int rc = exec_bound(
      db,
      "UPDATE run SET status = ?, error = ?, transfers = ?, wall_ns = ?, "
      "ref_ns = ?, algbw_gbs = ?, busbw_gbs = ?, identical = ?, "
      "max_abs_err = ?, bound = ?, sim_ns = ? WHERE run_id = ?",
      "ttiiiDDIDDIi", status, res->status ? run->errmsg : NULL,
      (int64_t)res->transfers, (int64_t)res->wall_ns, (int64_t)res->ref_ns,
      algbw, rs_busbw(algbw, W), run->checked ? (int64_t)res->identical : -1,
      run->checked ? res->max_abs_err : NAN, run->checked ? res->bound : NAN,
      run->config.net.enabled && run->checked ? (int64_t)res->sim_ns : -1,
      run->trace_run_id);
  if (rc == SQLITE_OK && run->mpi) {
    /* every process's host, first worker, and clock against rank 0's */
    size_t cap = (size_t)run->procs * 400 + 8, len = 0;
    char *json = malloc(cap);
    if (!json)
      return fail_sql(run, "update the run");
    len += (size_t)snprintf(json + len, cap - len, "[");
    for (int p = 0; p < run->procs; p++) {
      char host[200];
      snprintf(host, sizeof host, "%s", rs__mpi_host(run, p));
      for (char *h = host; *h; h++)
        if (*h == '"' || *h == '\\' || (unsigned char)*h < 0x20)
          *h = '?';
      len += (size_t)snprintf(
          json + len, cap - len,
          "%s{\"rank\": %d, \"host\": \"%s\", \"first_worker\": %d, "
          "\"workers\": %d, \"offset_ns\": %lld, \"rtt_ns\": %llu}",
          p ? ", " : "", p, host, rs__mpi_first(W, run->procs, p),
          rs__mpi_first(W, run->procs, p + 1) - rs__mpi_first(W, run->procs, p),
          (long long)rs__mpi_offset(run, p),
          (unsigned long long)rs__mpi_rtt(run, p));
    }
    snprintf(json + len, cap - len, "]");
    /* how the records came to rank 0 during the run (mpi.c's tracer) */
    size_t stream_cap = (size_t)run->procs * 320 + 160;
    char *stream = malloc(stream_cap);
    if (stream && !rs__mpi_trace_json(run, stream, stream_cap)) {
      free(stream); /* (not traced during the run) */
      stream = NULL;
    }
    rc = exec_bound(db,
                    "UPDATE run SET procs = ?, clock_offsets_json = ?, "
                    "trace_stream_json = ? WHERE run_id = ?",
                    "itti", (int64_t)run->procs, json, stream,
                    run->trace_run_id);
    free(json);
    free(stream);
  }
  return rc == SQLITE_OK ? RS_OK : fail_sql(run, "update the run");
}

/* After the run's rows could not be written (and were rolled back), record
 * the failure in its row, in a transaction of its own: a small UPDATE may
 * succeed where the big insert did not (a full disk). */
static int mark_failed(rs_run_t *run, const char *error) {
  return rs__trace_mark(run, "failed", error);
}

int rs__trace_mark(rs_run_t *run, const char *status, const char *error) {
  rs_trace_t *t = run->trace;
  int rc = exec_retry(t, "BEGIN IMMEDIATE");
  if (rc != SQLITE_OK)
    return rc;
  rc = exec_bound(t->db,
                  "UPDATE run SET status = ?, error = ?, transfers = ?, "
                  "wall_ns = ? WHERE run_id = ?",
                  "ttiii", status, error, (int64_t)run->result.transfers,
                  (int64_t)run->result.wall_ns, run->trace_run_id);
  if (rc == SQLITE_OK)
    rc = exec_retry(t, "COMMIT");
  if (rc != SQLITE_OK)
    sqlite3_exec(t->db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

void rs__trace_detach(rs_run_t *run) {
  if (run->trace && run->trace->cancel == &run->abort_flag)
    run->trace->cancel = NULL; /* the run is about to go */
}

int rs__trace_finish(rs_run_t *run) {
  rs_trace_t *t = run->trace;
  int rc = RS_OK;
  /* Streamed (over MPI): the transaction is open, the transfers received
   * in, unless a write failed. */
  const int streamed = t->stream != NULL;
  if (streamed ? t->stream_rc != RS_OK
               : exec_retry(t, "BEGIN IMMEDIATE") != SQLITE_OK) {
    rc = streamed ? RS_EIO : fail_sql(run, "begin a transaction");
    if (streamed) {
      stream_close(t);
      sqlite3_exec(t->db, "ROLLBACK", NULL, NULL, NULL);
    }
  } else {
    rc = write_transfers(run);
    if (rc == RS_OK)
      rc = write_totals(run);
    if (streamed)
      stream_close(t);
    if (rc == RS_OK && exec_retry(t, "COMMIT") != SQLITE_OK)
      rc = fail_sql(run, "commit");
    if (rc != RS_OK)
      sqlite3_exec(t->db, "ROLLBACK", NULL, NULL, NULL);
  }
  if (rc == RS_OK)
    return RS_OK;
  /* The run's row stays, marked running: mark it failed, saying why, unless
   * the lock could not be had (that wait would only be repeated). */
  char error[RS_ERRMSG_MAX];
  size_t len = strlen(run->trace_errmsg);
  const int ran_ok =
      run->result.status == RS_OK || run->result.status == RS_ECHECK;
  snprintf(error, sizeof error,
           ran_ok ? "%s%s" : "%s (its trace rows were not written: %s)",
           ran_ok ? "" : run->errmsg, run->trace_errmsg);
  int marked = !t->busy && mark_failed(run, error) == SQLITE_OK;
  snprintf(run->trace_errmsg + len, sizeof run->trace_errmsg - len,
           marked ? "; run %lld is marked failed in the trace, without its "
                    "rows"
                  : "; run %lld is left marked running in the trace",
           (long long)run->trace_run_id);
  return RS_EIO;
}
