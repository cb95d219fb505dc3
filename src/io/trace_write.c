/* trace_write.c - a run's rows in the trace: the run, its buckets and
 * params before it runs (rs__trace_begin), its workers' totals, check
 * results and outcome after (rs__trace_finish, with the transfers of
 * trace_transfer.c, in one transaction), and its row marked on its own
 * (rs__trace_mark). All values go in through bound parameters.
 */
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/util.h"
#include "core/runstate.h"
#include "net/proto.h"
#include "io/trace_internal.h"

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
static int exec_bound_v(sqlite3 *db, const char *sql, const char *types,
                        va_list ap) {
  sqlite3_stmt *st;
  /* One value per placeholder: anything else is a bug in this file. */
  assert((size_t)placeholders(sql) == strlen(types));
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK)
    return rc;
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
  rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int exec_bound(sqlite3 *db, const char *sql, const char *types, ...) {
  va_list ap;
  va_start(ap, types);
  const int rc = exec_bound_v(db, sql, types, ap);
  va_end(ap);
  return rc;
}

/* exec_bound in a transaction of its own, waiting for the lock as every
 * write does; rolled back if it fails. Returns the SQLite code. */
static int exec_alone(rs_trace_t *t, const char *sql, const char *types, ...) {
  int rc = rs__trace_exec_retry(t, "BEGIN IMMEDIATE");
  if (rc != SQLITE_OK)
    return rc;
  va_list ap;
  va_start(ap, types);
  rc = exec_bound_v(t->db, sql, types, ap);
  va_end(ap);
  if (rc == SQLITE_OK)
    rc = rs__trace_exec_retry(t, "COMMIT");
  if (rc != SQLITE_OK)
    sqlite3_exec(t->db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
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
  int len = snprintf(
      buf, size,
      "{\"latency_ns\": %llu, \"bandwidth_Bps\": %llu, \"reduce_Bps\": %llu, "
      "\"links\": %d, \"stragglers\": %d",
      (unsigned long long)m->link.latency_ns,
      (unsigned long long)m->link.bandwidth, (unsigned long long)m->reduce_rate,
      m->link_count, m->straggler_count);
  const rs_topo_t *t = &m->topo;
  if (t->enabled && len > 0 && (size_t)len < size)
    len += snprintf(
        buf + len, size - (size_t)len,
        ", \"topo\": {\"nodes\": %d, \"gpus\": %d, \"nics\": %d, "
        "\"intra_latency_ns\": %llu, \"intra_Bps\": %llu, "
        "\"nic_latency_ns\": %llu, \"nic_Bps\": %llu}",
        t->nodes, t->gpus, t->nics, (unsigned long long)t->intra.latency_ns,
        (unsigned long long)t->intra.bandwidth,
        (unsigned long long)t->nic.latency_ns,
        (unsigned long long)t->nic.bandwidth);
  if (m->proto != RS_PROTOCOL_NONE && len > 0 && (size_t)len < size)
    len += snprintf(buf + len, size - (size_t)len, ", \"proto\": \"%s\"",
                    rs__proto_label(m->proto));
  if (len > 0 && (size_t)len < size)
    snprintf(buf + len, size - (size_t)len, "}");
  return buf;
}

/* In the transaction that begins a run: mark abandoned this host's rows
 * left running by a process that is gone (rs_process_gone, trace_open.c:
 * "abandoned runs"). */
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
  if (rs__trace_exec_retry(run->trace, "BEGIN IMMEDIATE") != SQLITE_OK)
    return rs__trace_fail_sql(run, "begin a transaction");
  int rc = mark_abandoned(run->trace);
  if (rc != SQLITE_OK) {
    rs__trace_fail_sql(run, "mark abandoned runs");
    goto rollback;
  }
  /* A trace from before queue_slots also has channel_slots, NOT NULL:
   * it gets the same value, the last argument (trace_schema.c). */
  const int old_slots = run->trace->channel_slots;
  rc = exec_bound(
      db,
      old_slots
          ? "INSERT INTO run (started_at, version, model, workers, algo, "
            "collective, dtype, op, elems, bytes, buckets, segment_bytes, "
            "segs_per_chunk, segment_elems, queue_slots, timeout_s, "
            "net_model, status, config_json, host, pid, pid_start, "
            "channel_slots) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "?, ?, ?, ?, 'running', ?, ?, ?, ?, ?)"
          : "INSERT INTO run (started_at, version, model, workers, algo, "
            "collective, dtype, op, elems, bytes, buckets, segment_bytes, "
            "segs_per_chunk, segment_elems, queue_slots, timeout_s, "
            "net_model, status, config_json, host, pid, pid_start) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', "
            "?, ?, ?, ?)",
      old_slots ? "tttittttiiiiiiidtttiIi" : "tttittttiiiiiiidtttiI", started,
      RS_VERSION, rs_model_name(run->model), (int64_t)c->workers,
      rs_algorithm_name(c->algo),
      c->collective == RS_COLL_ALLREDUCE ? "all_reduce" : "reduce_scatter",
      rs_dtype_name(run->dtype), rs_op_name(c->op), (int64_t)run->elems,
      (int64_t)(run->elems * run->elem_size), (int64_t)run->result.buckets,
      (int64_t)c->segment_bytes, (int64_t)run->result.segs_per_chunk,
      (int64_t)run->result.seg_elems, (int64_t)c->slots, c->timeout_s, net_text,
      run->trace_config_json, run->trace->host[0] ? run->trace->host : NULL,
      run->trace->pid, run->trace->pid_start, (int64_t)c->slots);
  if (rc != SQLITE_OK) {
    rs__trace_fail_sql(run, "insert the run");
    goto rollback;
  }
  run->trace_run_id = sqlite3_last_insert_rowid(db);
  if (!run->trace->first_run_id)
    run->trace->first_run_id = run->trace_run_id;
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
      rs__trace_fail_sql(run, "insert the buckets' algorithms");
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
        rs__trace_fail_sql(run, "insert the params");
        goto rollback;
      }
    }
  if (rs__trace_exec_retry(run->trace, "COMMIT") != SQLITE_OK) {
    rs__trace_fail_sql(run, "commit the run");
    goto rollback;
  }
  return RS_OK;
rollback:
  sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  run->trace_run_id = 0;
  return RS_EIO;
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
      return rs__trace_fail_sql(run, "insert worker totals");
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
      return rs__trace_fail_sql(run, "insert check results");
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
  if (rc == SQLITE_OK && run->job->trace_places) {
    /* every process's host, first worker, and clock against rank 0's */
    size_t cap = (size_t)run->procs * 400 + 8, len = 0;
    char *json = malloc(cap);
    if (!json)
      return rs__trace_fail_sql(run, "update the run");
    len += (size_t)snprintf(json + len, cap - len, "[");
    for (int p = 0; p < run->procs; p++) {
      char host[200];
      snprintf(host, sizeof host, "%s", run->job->host(run, p));
      for (char *h = host; *h; h++)
        if (*h == '"' || *h == '\\' || (unsigned char)*h < 0x20)
          *h = '?';
      len += (size_t)snprintf(
          json + len, cap - len,
          "%s{\"rank\": %d, \"host\": \"%s\", \"first_worker\": %d, "
          "\"workers\": %d, \"offset_ns\": %lld, \"rtt_ns\": %llu}",
          p ? ", " : "", p, host, rs__job_first(W, run->procs, p),
          rs__job_first(W, run->procs, p + 1) - rs__job_first(W, run->procs, p),
          (long long)run->job->offset(run, p),
          (unsigned long long)run->job->rtt(run, p));
    }
    snprintf(json + len, cap - len, "]");
    /* how the records came to rank 0 during the run (mpi/stream.c's tracer) */
    size_t stream_cap = (size_t)run->procs * 320 + 160;
    char *stream = malloc(stream_cap);
    if (stream && !run->job->trace_json(run, stream, stream_cap)) {
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
  return rc == SQLITE_OK ? RS_OK : rs__trace_fail_sql(run, "update the run");
}

/* After the run's rows could not be written (and were rolled back), record
 * the failure in its row, in a transaction of its own: a small UPDATE may
 * succeed where the big insert did not (a full disk). */
static int mark_failed(rs_run_t *run, const char *error) {
  return rs__trace_mark(run, "failed", error);
}

int rs__trace_mark(rs_run_t *run, const char *status, const char *error) {
  return exec_alone(run->trace,
                    "UPDATE run SET status = ?, error = ?, transfers = ?, "
                    "wall_ns = ? WHERE run_id = ?",
                    "ttiii", status, error, (int64_t)run->result.transfers,
                    (int64_t)run->result.wall_ns, run->trace_run_id);
}

int rs_trace_mark_written(rs_trace_t *t, const char *status,
                          const char *error, char *errmsg) {
  if (strcmp(status, "failed") != 0 && strcmp(status, "interrupted") != 0)
    return rs__err(errmsg, RS_EINVAL,
                   "rs_trace_mark_written: status '%.40s' (failed or "
                   "interrupted)",
                   status);
  if (!t->first_run_id)
    return RS_OK; /* nothing written through it */
  const int rc = exec_alone(
      t,
      "UPDATE run SET status = ?, error = ? WHERE run_id >= ? AND status = "
      "'ok' AND host IS ? AND pid = ? AND pid_start IS ?",
      "ttitiI", status, error, t->first_run_id, t->host[0] ? t->host : NULL,
      t->pid, t->pid_start);
  if (rc == SQLITE_OK)
    return RS_OK;
  return rs__err(errmsg, RS_EIO, "trace %s: cannot mark its runs %s: %s",
                 t->path, status, sqlite3_errstr(rc));
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
               : rs__trace_exec_retry(t, "BEGIN IMMEDIATE") != SQLITE_OK) {
    rc = streamed ? RS_EIO : rs__trace_fail_sql(run, "begin a transaction");
    if (streamed) {
      rs__trace_stream_close(t);
      sqlite3_exec(t->db, "ROLLBACK", NULL, NULL, NULL);
    }
  } else {
    rc = rs__trace_write_transfers(run);
    if (rc == RS_OK)
      rc = write_totals(run);
    if (streamed)
      rs__trace_stream_close(t);
    if (rc == RS_OK && rs__trace_exec_retry(t, "COMMIT") != SQLITE_OK)
      rc = rs__trace_fail_sql(run, "commit");
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
