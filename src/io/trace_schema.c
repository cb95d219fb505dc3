/* trace_schema.c - the trace's schema, and what a file is: a trace of our
 * version, an empty database to make one of, or something to leave alone
 * (not a database, not a trace, another version, damaged). A trace from
 * before a table or column was added gets it, the version unchanged.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/util.h"
#include "io/trace_internal.h"

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
    "  queue_slots INTEGER NOT NULL,\n"
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
    "  dst_host TEXT,\n"
    "  link TEXT,\n"
    "  share INTEGER,\n"
    "  wire_bytes INTEGER,\n"
    "  channel INTEGER\n"
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

/* Added likewise: a training step's intervals (ringsim step --trace,
 * rs_trace_add_step), in simulated ns from the start of the step: each
 * worker's forward and backward (bucket NULL) and each bucket's
 * all-reduce, per iteration of the run whose transfers they hold. */
static const char step_interval_sql[] =
    "CREATE TABLE IF NOT EXISTS step_interval (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(run_id),\n"
    "  iter INTEGER NOT NULL,\n"
    "  worker INTEGER NOT NULL,\n"
    "  kind TEXT NOT NULL,\n"
    "  bucket INTEGER,\n"
    "  start_ns INTEGER NOT NULL,\n"
    "  end_ns INTEGER NOT NULL\n"
    ");\n";

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
int rs__trace_classify(rs_trace_t *t, int *fresh, char *errmsg) {
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
    return rs__trace_open_failed(t, "cannot read: ", errmsg);
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
 * touch; and any, a check that the file holds every page its header
 * counts. */
#define FULL_CHECK_BYTES (16 << 20)

int rs__trace_check_integrity(rs_trace_t *t, char *errmsg) {
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
      return rs__trace_open_failed(t, "cannot read: ", errmsg);
    if (found == 0)
      return rs__err(errmsg, RS_EINVAL,
                     "trace %s: damaged (no %s table); refusing to touch it",
                     t->path, tables[i]);
  }
  struct stat st_file, st_wal;
  char wal[PATH_MAX];
  const int sized = stat(t->path, &st_file) == 0;
  int full = sized && st_file.st_size <= FULL_CHECK_BYTES;
  int has_wal =
      snprintf(wal, sizeof wal, "%s-wal", t->path) < (int)sizeof wal &&
      stat(wal, &st_wal) == 0;
  /* Any size, WAL or not: a file that is not whole pages is truncated,
   * even where the bytes cut off were zeros (an empty table's page, which
   * a quick_check reads back as zeros and passes); and without a WAL, one
   * shorter than its header's page count. */
  int64_t pages = pragma_int(t->db, "PRAGMA page_count");
  int64_t page_size = pragma_int(t->db, "PRAGMA page_size");
  if (sized && page_size > 0 && (int64_t)st_file.st_size % page_size != 0)
    return rs__err(errmsg, RS_EINVAL,
                   "trace %s: damaged (truncated: %lld bytes, not whole "
                   "pages of %lld); refusing to touch it",
                   t->path, (long long)st_file.st_size, (long long)page_size);
  if (sized && !full && !has_wal) {
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
                           : rs__trace_open_failed(t, "cannot read: ", errmsg);
      sqlite3_finalize(st);
      return failed;
    }
    sqlite3_finalize(st);
  }
  return RS_OK;
}

/* Make an empty file a trace: WAL mode, then the schema, in one
 * transaction that first looks again, so that of several processes
 * starting together on a new file one creates the schema and the others
 * find it made. */
int rs__trace_create_schema(rs_trace_t *t, char *errmsg) {
  /* The page size holds only if set before the first table (and WAL). */
  int rc = rs__trace_exec(t,
                          "PRAGMA page_size=16384; PRAGMA journal_mode=WAL; "
                          "PRAGMA synchronous=NORMAL;",
                          errmsg);
  if (rc)
    return rc;
  if (rs__trace_exec_retry(t, "BEGIN IMMEDIATE") != SQLITE_OK)
    return rs__err(errmsg, RS_EIO, "trace %s: cannot begin a transaction: %s",
                   t->path, sqlite3_errmsg(t->db));
  int fresh = 0;
  rc = rs__trace_classify(t, &fresh, errmsg);
  if (rc == RS_OK && fresh) {
    char sql[sizeof schema_sql + 256];
    snprintf(sql, sizeof sql,
             "%s PRAGMA application_id=%d; "
             "PRAGMA user_version=%d;",
             schema_sql, RS_TRACE_APPLICATION_ID, RS_TRACE_SCHEMA_VERSION);
    rc = rs__trace_exec(t, sql, errmsg);
  }
  if (rc == RS_OK && rs__trace_exec_retry(t, "COMMIT") != SQLITE_OK)
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
  static const char *const columns[][2] = {{"run", "procs INTEGER"},
                                           {"run", "clock_offsets_json TEXT"},
                                           {"transfer", "src_rank INTEGER"},
                                           {"transfer", "dst_rank INTEGER"},
                                           {"transfer", "src_host TEXT"},
                                           {"transfer", "dst_host TEXT"},
                                           {"run", "trace_stream_json TEXT"},
                                           {"run", "host TEXT"},
                                           {"run", "pid INTEGER"},
                                           {"run", "pid_start INTEGER"},
                                           {"transfer", "link TEXT"},
                                           {"transfer", "share INTEGER"},
                                           {"run", "queue_slots INTEGER"},
                                           {"transfer", "wire_bytes INTEGER"},
                                           {"transfer", "channel INTEGER"}};
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
    int rc = rs__trace_exec(t, sql, errmsg);
    if (rc)
      return rc;
  }
  return RS_OK;
}

/* ringsim took NCCL's meaning of "channel" (one of C parallel rings, each
 * over its share of the data), so the bounded FIFO on an edge is a queue
 * (net/queue.h) and a new trace's --slots column queue_slots, where it
 * was channel_slots. A trace from before keeps channel_slots (NOT NULL:
 * an older ringsim still appends to it, naming that column) and gets
 * queue_slots as add_columns adds any column; here every run whose
 * queue_slots is NULL (those from before, and any an older ringsim
 * appended since) gets its channel_slots, and t remembers that a new
 * run's row must fill both. A reader reads queue_slots, in every trace. */
static int fill_queue_slots(rs_trace_t *t, char *errmsg) {
  t->channel_slots =
      pragma_int(t->db, "SELECT count(*) FROM pragma_table_info('run') "
                        "WHERE name = 'channel_slots'") > 0;
  if (!t->channel_slots ||
      !pragma_int(t->db, "SELECT count(*) FROM run WHERE queue_slots IS NULL"))
    return RS_OK; /* (a read only: nothing to fill, nothing written) */
  return rs__trace_exec(
      t, "UPDATE run SET queue_slots = channel_slots WHERE queue_slots IS NULL",
      errmsg);
}

/* The tables and columns added after schema version 1: bucket_algo,
 * step_interval, add_columns' columns, and queue_slots' values. */
int rs__trace_upgrade(rs_trace_t *t, char *errmsg) {
  int rc = rs__trace_exec(t, bucket_algo_sql, errmsg);
  if (rc == RS_OK)
    rc = rs__trace_exec(t, step_interval_sql, errmsg);
  if (rc == RS_OK)
    rc = add_columns(t, errmsg);
  if (rc == RS_OK)
    rc = fill_queue_slots(t, errmsg);
  return rc;
}
