/* trace.h - per-worker transfer records, and the SQLite trace writer.
 *
 * DESIGN
 * - The hot path only appends: each worker owns one event buffer, sized
 *   before the run for every transfer it will receive (2(W-1) x segments),
 *   so recording takes no lock and no allocation.
 * - The receiver records a transfer when it has reduced or copied it; the
 *   message header carries the sender's send times, so one record holds the
 *   whole transfer.
 * - After the workers are joined, one writer (the main thread) inserts every
 *   record through one prepared statement inside one transaction, along with
 *   per-worker totals, per-param check results and the run's outcome. A run
 *   that failed still writes every transfer that happened, including
 *   messages sent but never received (left in a channel).
 */
#ifndef RINGSIM_TRACE_H
#define RINGSIM_TRACE_H

#include <stdint.h>

#include "channel.h"
#include "ringsim/ringsim.h"

typedef struct rs_event {
  uint64_t seq;
  uint64_t checksum;
  uint64_t elem_offset;
  uint64_t send_begin_ns; /* absolute CLOCK_MONOTONIC */
  uint64_t send_end_ns;
  uint64_t recv_begin_ns;
  uint64_t recv_end_ns;
  uint64_t wait_ns;     /* how long the receiver waited for this message */
  uint64_t sim_send_ns; /* simulated departure and receipt (net model) */
  uint64_t sim_recv_ns;
  uint32_t elems;
  uint32_t iter;
  uint32_t bucket;
  uint32_t step;
  uint32_t chunk;
  uint32_t segment;
  uint8_t phase;
} rs_event_t;

typedef struct rs_event_buf {
  rs_event_t *events;
  size_t count;
  size_t capacity;
} rs_event_buf_t;

/* What a message says of itself: a record without its receipt. */
static inline rs_event_t rs__event_of(const rs_msg_t *msg, int iter) {
  rs_event_t e = {.seq = msg->seq,
                  .checksum = msg->checksum,
                  .elem_offset = msg->elem_offset,
                  .send_begin_ns = msg->send_begin_ns,
                  .send_end_ns = msg->send_end_ns,
                  .sim_send_ns = msg->sim_send_ns,
                  .elems = (uint32_t)msg->elems,
                  .iter = (uint32_t)iter,
                  .bucket = (uint32_t)msg->bucket,
                  .step = (uint32_t)msg->step,
                  .chunk = (uint32_t)msg->chunk,
                  .segment = (uint32_t)msg->segment,
                  .phase = (uint8_t)msg->phase};
  return e;
}

/* Append the transfer msg, just reduced or copied by its receiver, to buf.
 * The buffer was sized for every transfer of the run: no allocation here. */
static inline void rs__trace_record(rs_event_buf_t *buf, const rs_msg_t *msg,
                                    int iter, uint64_t recv_begin_ns,
                                    uint64_t wait_ns, uint64_t recv_end_ns,
                                    uint64_t sim_recv_ns) {
  if (!buf->events || buf->count == buf->capacity)
    return;
  rs_event_t *e = &buf->events[buf->count++];
  *e = rs__event_of(msg, iter);
  e->recv_begin_ns = recv_begin_ns;
  e->recv_end_ns = recv_end_ns;
  e->wait_ns = wait_ns;
  e->sim_recv_ns = sim_recv_ns;
}

#define RS_TRACE_SCHEMA_VERSION 1
/* PRAGMA application_id of a ringsim trace: "RSim". */
#define RS_TRACE_APPLICATION_ID 0x5253696d

/* How long a writer waits for the trace's lock before it gives up, in
 * seconds (RINGSIM_TRACE_WAIT overrides): long enough for the writers
 * queued ahead of it to write big runs (about a million rows a second). */
#define RS_TRACE_WAIT_S 300.0

struct rs_run;
struct sqlite3;
/* The trace's connection (for tests that set limits on it). */
struct sqlite3 *rs__trace_db(rs_trace_t *trace);
/* Write the run's header rows before the ring runs (status "running"). */
int rs__trace_begin(struct rs_run *run);
/* Write every transfer, the totals and the outcome, in one transaction.
 * If that fails, it is rolled back and the run's row is marked failed in a
 * transaction of its own (if that can be written); trace_errmsg says which. */
int rs__trace_finish(struct rs_run *run);
/* Forget the run (its abort flag ends the trace's waits while it runs):
 * the trace may outlive it. */
void rs__trace_detach(struct rs_run *run);
/* Set the run's row's status and error, in a transaction of its own (the
 * run failed after its rows were written, or they could not be). Returns
 * the SQLite code. */
int rs__trace_mark(struct rs_run *run, const char *status, const char *error);

#endif /* RINGSIM_TRACE_H */
