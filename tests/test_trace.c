/* test_trace.c - the trace of a failed run, written through the library. */
#include "test.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ringsim/internal/config.h" /* stack configs */
#include "ringsim/ringsim.h"
#include "io/trace.h"

static int64_t query_int(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    fail_msg("%s: %s", sql, sqlite3_errmsg(db));
  int64_t v = -1;
  if (sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

/* trace-c-1: a run that fails (worker 2 dies at step 1, a neighbour times
 * out) is still written: status failed with its error, every transfer sent
 * (received or left in a queue) has its row, and the workers' states say
 * who died and who timed out. */
static void test_failed_run_is_written(void **state) {
  (void)state;
  char path[64], err[RS_ERRMSG_MAX];
  snprintf(path, sizeof path, "/tmp/ringsim_trace_%d.db", (int)getpid());
  unlink(path);
  const char text[] = "{\"params\": [{\"name\": \"g\", \"shape\": [4000]}]}";
  rs_model_t *m;
  assert_int_equal(rs_model_parse(text, strlen(text), "m", &m, err), RS_OK);
  rs_trace_t *trace;
  assert_int_equal(rs_trace_open(path, &trace, err), RS_OK);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = 4;
  cfg.segment_bytes = 400; /* 10 segments per chunk: some stay in flight */
  cfg.timeout_s = 0.2;
  cfg.fault_count = 1;
  cfg.faults[0] = (rs_fault_t){.kind = RS_FAULT_CRASH, .worker = 2, .step = 1};
  rs_run_t *run;
  assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
  assert_int_equal(rs_run_set_trace(run, trace, "{\"test\": 1}"), RS_OK);
  assert_int_equal(rs_run_fill(run, RS_INIT_NORMAL, 0), RS_OK);
  assert_int_equal(rs_run_execute(run), RS_ETIMEDOUT);
  assert_null(rs_run_trace_error(run));
  assert_int_equal(rs_run_trace_id(run), 1);
  uint64_t sent = 0;
  for (int w = 0; w < 4; w++)
    sent += rs_run_worker_stats(run, w)->transfers_sent;
  rs_run_free(run);
  rs_trace_close(trace);
  rs_model_free(m);

  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(
      query_int(db, "SELECT count(*) FROM run WHERE status = 'failed' AND "
                    "error LIKE '%timed out after 0.2 s%'"),
      1);
  assert_int_equal(query_int(db, "SELECT count(*) FROM transfer"),
                   (int64_t)sent);
  assert_int_equal(query_int(db, "SELECT sum(transfers_sent) FROM worker"),
                   (int64_t)sent);
  assert_int_equal(
      query_int(db, "SELECT count(*) FROM worker WHERE state = 'crashed' AND "
                    "worker = 2 AND phase = 'reduce_scatter' AND step = 1"),
      1);
  assert_true(
      query_int(db, "SELECT count(*) FROM worker WHERE state = 'timed_out'") >=
      1);
  /* Worker 2 died before its step-1 sends: nothing of step >= 1 from it. */
  assert_int_equal(query_int(db, "SELECT count(*) FROM transfer WHERE src = 2 "
                                 "AND (step >= 1 OR phase = 'all_gather')"),
                   0);
  /* Sequence numbers per link still run 0, 1, 2, ... without gaps. */
  assert_int_equal(
      query_int(db, "SELECT count(*) FROM (SELECT src, max(seq) + 1 AS n, "
                    "count(*) AS c FROM transfer GROUP BY src) WHERE n != c"),
      0);
  /* Rows that were never received have no receive times. */
  assert_int_equal(query_int(db, "SELECT count(*) FROM transfer WHERE "
                                 "(recv_begin_ns IS NULL) != "
                                 "(recv_end_ns IS NULL)"),
                   0);
  assert_int_equal(query_int(db, "SELECT count(*) FROM result"), 0);
  sqlite3_close(db);
  unlink(path);
  char side[80];
  snprintf(side, sizeof side, "%s-wal", path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", path);
  unlink(side);
}

static void remove_trace(const char *path) {
  char side[80];
  unlink(path);
  snprintf(side, sizeof side, "%s-wal", path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", path);
  unlink(side);
}

/* trace-c-2: a full disk while the run's rows are written (simulated by
 * PRAGMA max_page_count on the trace's connection: SQLITE_FULL, as from a
 * full disk) fails the run with RS_ETRACE; its rows are rolled back and its
 * row is marked failed with the error, so trace and result agree. */
static void test_full_disk_fails_the_run(void **state) {
  (void)state;
  char path[64], err[RS_ERRMSG_MAX];
  snprintf(path, sizeof path, "/tmp/ringsim_trace_full_%d.db", (int)getpid());
  remove_trace(path);
  const char text[] = "{\"params\": [{\"name\": \"g\", \"shape\": [4000]}]}";
  rs_model_t *m;
  assert_int_equal(rs_model_parse(text, strlen(text), "m", &m, err), RS_OK);
  rs_trace_t *trace;
  assert_int_equal(rs_trace_open(path, &trace, err), RS_OK);
  /* No page beyond the schema's: the run's row fits, its 1512 transfers
   * do not. */
  sqlite3 *db = rs__trace_db(trace);
  char sql[64];
  snprintf(sql, sizeof sql, "PRAGMA max_page_count = %lld",
           (long long)query_int(db, "PRAGMA page_count"));
  assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
  assert_int_equal(query_int(db, "PRAGMA max_page_count"),
                   query_int(db, "PRAGMA page_count"));
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = 4;
  cfg.segment_bytes = 64;
  rs_run_t *run;
  assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
  assert_int_equal(rs_run_set_trace(run, trace, NULL), RS_OK);
  assert_int_equal(rs_run_fill(run, RS_INIT_NORMAL, 0), RS_OK);
  assert_int_equal(rs_run_execute(run), RS_ETRACE);
  const char *trace_error = rs_run_trace_error(run);
  assert_non_null(trace_error);
  assert_non_null(strstr(trace_error, "database or disk is full"));
  assert_non_null(strstr(trace_error, "; run 1 is marked failed in the trace"));
  assert_string_equal(rs_run_errmsg(run), trace_error);
  assert_int_equal(rs_run_trace_id(run), 1);
  rs_run_free(run);
  rs_trace_close(trace);
  rs_model_free(m);

  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(
      query_int(db, "SELECT count(*) FROM run WHERE status = 'failed' AND "
                    "error LIKE '%database or disk is full'"),
      1);
  assert_int_equal(query_int(db, "SELECT count(*) FROM transfer"), 0);
  assert_int_equal(query_int(db, "SELECT count(*) FROM worker"), 0);
  sqlite3_close(db);
  remove_trace(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_failed_run_is_written),
      cmocka_unit_test(test_full_disk_fails_the_run),
  };
  return cmocka_run_group_tests_name("trace", tests, NULL, NULL);
}
