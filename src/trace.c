/* trace.c - the SQLite trace: schema, the run's rows, every transfer.
 *
 * One database holds many runs. It is marked as ringsim's by PRAGMA
 * application_id and versioned by PRAGMA user_version; anything else is
 * refused before a byte is written. WAL mode lets a reader query while a
 * run writes. All values go in through bound parameters. The schema is
 * documented, with example queries, in docs/trace-schema.md.
 */
#include "trace.h"

#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "run.h"
#include "util.h"

struct rs_trace {
  sqlite3 *db;
  char *path;
};

/* The transfer table has no index: with one, SQLite inserts about 40%
 * slower (measured), and a run's rows are written once and read by full
 * scans that take milliseconds per million rows. */
static const char schema_sql[] =
    "CREATE TABLE run (\n"
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
    "  config_json TEXT\n"
    ");\n"
    "CREATE TABLE param (\n"
    "  run_id INTEGER NOT NULL REFERENCES run(run_id),\n"
    "  idx INTEGER NOT NULL,\n"
    "  name TEXT NOT NULL,\n"
    "  shape TEXT NOT NULL,\n"
    "  elem_offset INTEGER NOT NULL,\n"
    "  elems INTEGER NOT NULL,\n"
    "  bucket INTEGER NOT NULL,\n"
    "  PRIMARY KEY (run_id, idx)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE transfer (\n"
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
    "  sim_recv_ns INTEGER\n"
    ");\n"
    "CREATE TABLE worker (\n"
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
    "CREATE TABLE result (\n"
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

const char *rs_trace_path(const rs_trace_t *trace) { return trace->path; }

void rs_trace_close(rs_trace_t *trace) {
  if (!trace)
    return;
  sqlite3_close(trace->db);
  free(trace->path);
  free(trace);
}

/* Run one statement returning at most one integer; *value gets it. */
static int query_int(sqlite3 *db, const char *sql, int64_t *value) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK)
    return rc;
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    *value = sqlite3_column_int64(st, 0);
    rc = SQLITE_OK;
  } else if (rc == SQLITE_DONE) {
    rc = SQLITE_OK;
  }
  sqlite3_finalize(st);
  return rc;
}

/* Decide, reading only, what the file is: a ringsim trace of our version,
 * an empty database to initialize, or something to leave alone. */
static int classify(rs_trace_t *t, int *fresh, char *errmsg) {
  int64_t app_id = 0, version = 0, objects = 0;
  int rc = query_int(t->db, "PRAGMA application_id", &app_id);
  if (rc == SQLITE_OK)
    rc = query_int(t->db, "PRAGMA user_version", &version);
  if (rc == SQLITE_OK)
    rc = query_int(t->db, "SELECT count(*) FROM sqlite_schema", &objects);
  if (rc == SQLITE_NOTADB)
    return rs__err(errmsg, RS_EINVAL,
                   "trace %s: not a SQLite database; refusing to touch it",
                   t->path);
  if (rc != SQLITE_OK)
    return rs__err(errmsg, RS_EIO, "trace %s: cannot read: %s", t->path,
                   sqlite3_errmsg(t->db));
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

static int exec(rs_trace_t *t, const char *sql, char *errmsg) {
  char *err = NULL;
  if (sqlite3_exec(t->db, sql, NULL, NULL, &err) != SQLITE_OK) {
    rs__err(errmsg, RS_EIO, "trace %s: %s", t->path,
            err ? err : sqlite3_errmsg(t->db));
    sqlite3_free(err);
    return RS_EIO;
  }
  return RS_OK;
}

int rs_trace_open(const char *path, rs_trace_t **out, char *errmsg) {
  *out = NULL;
  rs_trace_t *t = calloc(1, sizeof *t);
  if (!t || !(t->path = strdup(path))) {
    free(t);
    return rs__err(errmsg, RS_ENOMEM, "trace %s: out of memory", path);
  }
  int rc = RS_OK, fresh = 0;
  if (sqlite3_open_v2(path, &t->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                      NULL) != SQLITE_OK) {
    rc = rs__err(errmsg, RS_EIO, "trace %s: cannot open: %s", path,
                 t->db ? sqlite3_errmsg(t->db) : "out of memory");
    goto fail;
  }
  sqlite3_busy_timeout(t->db, 10000);
  rc = classify(t, &fresh, errmsg);
  if (rc)
    goto fail;
  /* Only now, knowing the file is ours (or empty), do we write to it. */
  rc = exec(t,
            "PRAGMA page_size=16384; PRAGMA cache_size=-65536; PRAGMA "
            "journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            errmsg);
  if (rc == RS_OK && fresh) {
    char sql[sizeof schema_sql + 256];
    snprintf(sql, sizeof sql,
             "BEGIN; %s PRAGMA application_id=%d; PRAGMA user_version=%d; "
             "COMMIT;",
             schema_sql, RS_TRACE_APPLICATION_ID, RS_TRACE_SCHEMA_VERSION);
    rc = exec(t, sql, errmsg);
  }
  if (rc)
    goto fail;
  *out = t;
  return RS_OK;
fail:
  rs_trace_close(t);
  return rc;
}

/* ---- writing a run ------------------------------------------------------ */

static int fail_sql(rs_run_t *run, const char *what) {
  rs_trace_t *t = run->trace;
  rs__err(run->trace_errmsg, RS_EIO, "trace %s: cannot %s: %s", t->path, what,
          sqlite3_errmsg(t->db));
  return RS_EIO;
}

/* How many '?' parameters sql has (our statements quote no '?'). */
static int placeholders(const char *sql) {
  int n = 0;
  for (; *sql; sql++)
    n += *sql == '?';
  return n;
}

/* Prepare sql, bind one value per letter of types, step once, finalize.
 * 'i' int64; 'I' int64, NULL if negative; 'd' double; 'D' double, NULL if
 * not finite; 't' text, NULL if the pointer is NULL. */
static int exec_bound(sqlite3 *db, const char *sql, const char *types, ...) {
  sqlite3_stmt *st;
  if ((size_t)placeholders(sql) != strlen(types))
    return SQLITE_MISUSE; /* a programming error: values do not match */
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

int rs__trace_begin(rs_run_t *run) {
  sqlite3 *db = run->trace->db;
  const rs_config_t *c = &run->config;
  char started[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", &tm);
  char net_buf[1024];
  const char *net_text =
      c->net.enabled ? net_json(&c->net, net_buf, sizeof net_buf) : NULL;
  if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
    return fail_sql(run, "begin a transaction");
  int rc = exec_bound(
      db,
      "INSERT INTO run (started_at, version, model, workers, algo, "
      "collective, dtype, op, elems, bytes, buckets, segment_bytes, "
      "segs_per_chunk, segment_elems, channel_slots, timeout_s, net_model, "
      "status, config_json) VALUES (?, ?, ?, ?, 'ring', ?, ?, ?, ?, ?, ?, "
      "?, ?, ?, ?, ?, ?, 'running', ?)",
      "tttitttiiiiiiidtt", started, RS_VERSION, rs_model_name(run->model),
      (int64_t)c->workers,
      c->collective == RS_COLL_ALLREDUCE ? "all_reduce" : "reduce_scatter",
      rs_dtype_name(run->dtype), rs_op_name(c->op), (int64_t)run->elems,
      (int64_t)(run->elems * run->elem_size), (int64_t)run->result.buckets,
      (int64_t)c->segment_bytes, (int64_t)run->result.segs_per_chunk,
      (int64_t)run->result.seg_elems, (int64_t)c->slots, c->timeout_s, net_text,
      run->trace_config_json);
  if (rc != SQLITE_OK) {
    fail_sql(run, "insert the run");
    goto rollback;
  }
  run->trace_run_id = sqlite3_last_insert_rowid(db);
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
  if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
    fail_sql(run, "commit the run");
    goto rollback;
  }
  return RS_OK;
rollback:
  sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  run->trace_run_id = 0;
  return RS_EIO;
}

/* Whose contributions a payload holds, as a ring range: workers first,
 * first+1, ..., first+count-1 (mod W). In reduce-scatter step s the sender
 * r has summed r-s..r; in all-gather every payload holds all W. */
static void contributors(int src, rs_phase_t phase, int step, int W, int *first,
                         int *count) {
  if (phase == RS_PHASE_REDUCE_SCATTER) {
    *first = ((src - step) % W + W) % W;
    *count = step + 1;
  } else {
    *first = 0;
    *count = W;
  }
}

static int insert_transfer(rs_run_t *run, sqlite3_stmt *st, int src,
                           const rs_event_t *e, int received) {
  const int W = run->config.workers;
  int first, count;
  contributors(src, (rs_phase_t)e->phase, (int)e->step, W, &first, &count);
  const int64_t t0 = (int64_t)run->t0_ns;
  int i = 1;
  sqlite3_bind_int64(st, i++, run->trace_run_id);
  sqlite3_bind_int64(st, i++, e->iter);
  sqlite3_bind_int64(st, i++, e->bucket);
  sqlite3_bind_text(st, i++, rs_phase_name((rs_phase_t)e->phase), -1,
                    SQLITE_STATIC);
  sqlite3_bind_int64(st, i++, e->step);
  sqlite3_bind_int64(st, i++, src);
  sqlite3_bind_int64(st, i++, (src + 1) % W);
  sqlite3_bind_int64(st, i++, e->chunk);
  sqlite3_bind_int64(st, i++, e->segment);
  sqlite3_bind_int64(st, i++, (int64_t)e->elem_offset);
  sqlite3_bind_int64(st, i++, e->elems);
  sqlite3_bind_int64(st, i++, (int64_t)e->elems * (int64_t)run->elem_size);
  sqlite3_bind_int64(st, i++, (int64_t)e->seq);
  if (run->chans && run->chans[0].checksum)
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
  sqlite3_bind_int64(st, i++, first);
  sqlite3_bind_int64(st, i++, count);
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
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int write_transfers(rs_run_t *run) {
  const int W = run->config.workers;
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(
          run->trace->db,
          "INSERT INTO transfer (run_id, iter, bucket, phase, step, src, dst, "
          "chunk, segment, elem_offset, elems, bytes, seq, checksum, "
          "send_begin_ns, send_end_ns, recv_begin_ns, recv_end_ns, wait_ns, "
          "contrib_first, contrib_count, sim_send_ns, sim_recv_ns) VALUES (?, "
          "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          -1, &st, NULL) != SQLITE_OK)
    return fail_sql(run, "prepare the transfer insert");
  int rc = SQLITE_OK;
  /* In key order (src, seq): receiver src+1 holds src's transfers. */
  for (int src = 0; src < W && rc == SQLITE_OK; src++) {
    const rs_event_buf_t *buf = &run->workers[(src + 1) % W].events;
    for (size_t k = 0; k < buf->count && rc == SQLITE_OK; k++)
      rc = insert_transfer(run, st, src, &buf->events[k], 1);
    run->result.trace_rows += buf->count;
  }
  /* Messages still in a channel were sent but never received: a failed
   * run's trace keeps them, with no receive times. */
  for (int r = 0; r < W && W > 1 && rc == SQLITE_OK; r++) {
    rs_chan_t *ch = &run->chans[r];
    for (uint64_t idx = ch->head; idx < ch->tail && rc == SQLITE_OK; idx++) {
      const rs_msg_t *m = rs_chan_peek(ch, idx);
      rs_event_t e = rs__event_of(m, run->workers[r].iter);
      rc = insert_transfer(run, st, r, &e, 0);
      run->result.trace_rows++;
    }
  }
  sqlite3_finalize(st);
  return rc == SQLITE_OK ? RS_OK : fail_sql(run, "insert transfers");
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
        "iitddDDiiIIi", run->trace_run_id, (int64_t)p,
        rs_model_param(run->model, p)->name, c->max_abs_err, c->max_rel_err,
        c->bound, c->worst_ratio, (int64_t)c->differing, (int64_t)c->wrong,
        run->fixed ? (int64_t)c->order_differing : -1,
        run->fixed ? (int64_t)c->order_max_ulps : -1, (int64_t)res->identical);
    if (rc != SQLITE_OK)
      return fail_sql(run, "insert check results");
  }
  const double bytes = (double)run->elems * (double)run->elem_size;
  double seconds = (double)res->wall_ns / 1e9;
  double algbw = seconds > 0 ? bytes / seconds / 1e9 : 0;
  const char *status = res->status == RS_OK             ? "ok"
                       : res->status == RS_ECHECK       ? "check_failed"
                       : res->status == RS_EINTERRUPTED ? "interrupted"
                                                        : "failed";
  int rc = exec_bound(
      db,
      "UPDATE run SET status = ?, error = ?, transfers = ?, wall_ns = ?, "
      "ref_ns = ?, algbw_gbs = ?, busbw_gbs = ?, identical = ?, "
      "max_abs_err = ?, bound = ?, sim_ns = ? WHERE run_id = ?",
      "ttiiiddIDDIi", status, res->status ? run->errmsg : NULL,
      (int64_t)res->transfers, (int64_t)res->wall_ns, (int64_t)res->ref_ns,
      algbw, algbw * 2.0 * (W - 1) / W,
      run->checked ? (int64_t)res->identical : -1,
      run->checked ? res->max_abs_err : NAN, run->checked ? res->bound : NAN,
      run->config.net.enabled ? (int64_t)res->sim_ns : -1, run->trace_run_id);
  return rc == SQLITE_OK ? RS_OK : fail_sql(run, "update the run");
}

int rs__trace_finish(rs_run_t *run) {
  sqlite3 *db = run->trace->db;
  if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
    return fail_sql(run, "begin a transaction");
  int rc = write_transfers(run);
  if (rc == RS_OK)
    rc = write_totals(run);
  if (rc == RS_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
    rc = fail_sql(run, "commit");
  if (rc != RS_OK)
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}
