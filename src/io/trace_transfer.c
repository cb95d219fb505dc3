/* trace_transfer.c - the transfer rows of a run: every record the
 * receivers hold and the messages still on an edge, after the run; or over
 * MPI, on rank 0, the records streamed in during it (mpi/stream.c's
 * tracer), in the transaction rs__trace_finish commits.
 */
#include <stdlib.h>

#include "base/util.h"
#include "core/runstate.h"
#include "io/trace_internal.h"
#include "net/proto.h"

/* Participant p's node (a topology's): a GPU's, or switch W + n's, n. */
static int node_of(const rs_run_t *run, int p) {
  const int W = run->config.workers;
  return p >= W ? p - W : p / run->config.net.topo.gpus;
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
  if (run->edge_count && run->edges[0].queue.checksum)
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
  /* which process, on which host, each side was (over MPI) */
  if (run->job->trace_places) {
    const int W = run->config.workers;
    int src_rank = rs__job_owner(W, run->procs, e->src);
    int dst_rank = rs__job_owner(W, run->procs, dst);
    sqlite3_bind_int64(st, i++, src_rank);
    sqlite3_bind_int64(st, i++, dst_rank);
    sqlite3_bind_text(st, i++, run->job->host(run, src_rank), -1,
                      SQLITE_STATIC);
    sqlite3_bind_text(st, i++, run->job->host(run, dst_rank), -1,
                      SQLITE_STATIC);
  } else {
    for (int k = 0; k < 4; k++)
      sqlite3_bind_null(st, i++);
  }
  const rs_topo_t *topo = &run->config.net.topo;
  if (topo->enabled) { /* its link class; between nodes, its NIC's share */
    const int nic = node_of(run, e->src) != node_of(run, dst);
    sqlite3_bind_text(st, i++, nic ? "nic" : "intra", -1, SQLITE_STATIC);
    if (nic)
      sqlite3_bind_int64(st, i++, e->share);
    else
      sqlite3_bind_null(st, i++);
  } else {
    sqlite3_bind_null(st, i++);
    sqlite3_bind_null(st, i++);
  }
  if (run->config.net.enabled) /* what the protocol put on the wire */
    sqlite3_bind_int64(
        st, i++,
        (int64_t)rs__proto_wire_bytes(run->config.net.proto,
                                      (uint64_t)e->elems * run->elem_size));
  else
    sqlite3_bind_null(st, i++);
  sqlite3_bind_int64(st, i++, e->channel); /* (NCCL's: the ring's on C) */
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
          "dst_rank, src_host, dst_host, link, share, wire_bytes, channel) "
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
          "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          -1, st, NULL) != SQLITE_OK)
    return rs__trace_fail_sql(run, "prepare the transfer insert");
  return RS_OK;
}

int rs__trace_write_transfers(rs_run_t *run) {
  sqlite3_stmt *st = run->trace->stream;
  /* (streamed: the received records are in already, mpi/stream.c) */
  const int streamed = st != NULL;
  if (!streamed && prepare_insert(run, &st) != RS_OK)
    return RS_EIO;
  int rc = SQLITE_OK;
  /* Receiver by receiver, in the order the algorithm's edges first reach
   * them (for the ring, sender 0's transfers first, as (src, seq) keys
   * run), each receiver's record once, in the order it received. */
  unsigned char *done = calloc((size_t)rs__run_participants(run), 1);
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
    const rs_queue_t *q = &edge->queue;
    for (uint64_t idx = q->head; idx < q->tail && rc == SQLITE_OK; idx++) {
      rs_event_t e =
          rs__event_of(rs__queue_peek(q, idx), run->workers[edge->from].iter);
      rc = insert_transfer(run, st, &e, edge->to, 0);
      run->result.trace_rows++;
    }
  }
  if (!streamed)
    sqlite3_finalize(st);
  return rc == SQLITE_OK ? RS_OK : rs__trace_fail_sql(run, "insert transfers");
}

int rs__trace_stream_open(rs_run_t *run) {
  rs_trace_t *t = run->trace;
  t->stream_rc = RS_OK;
  if (rs__trace_exec_retry(t, "BEGIN IMMEDIATE") != SQLITE_OK)
    return rs__trace_fail_sql(run, "begin a transaction");
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
    t->stream_rc = rs__trace_fail_sql(run, "insert transfers");
  return t->stream_rc;
}

/* Finalize the stream's statement (its transaction goes on). */
void rs__trace_stream_close(rs_trace_t *t) {
  sqlite3_finalize(t->stream);
  t->stream = NULL;
}

void rs__trace_stream_abandon(rs_run_t *run) {
  rs_trace_t *t = run->trace;
  if (!t || !t->stream)
    return;
  rs__trace_stream_close(t);
  sqlite3_exec(t->db, "ROLLBACK", NULL, NULL, NULL);
}
