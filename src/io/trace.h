/* trace.h - per-worker transfer records, and the SQLite trace writer.
 *
 * DESIGN
 * - The hot path only appends: each worker owns one event buffer
 *   (xfer.h's rs_event_t), sized before the run for every transfer it will
 *   receive, so recording takes no lock and no allocation.
 * - The receiver records a transfer when it has reduced or copied it (the
 *   transfer primitive does); the message header carries the sender's send
 *   times and the payload's provenance, so one record holds the whole
 *   transfer.
 * - After the workers are joined, one writer (the main thread) inserts every
 *   record through one prepared statement inside one transaction, along with
 *   per-worker totals, per-param check results and the run's outcome. A run
 *   that failed still writes every transfer that happened, including
 *   messages sent but never received (left in a queue).
 * - Over MPI the records reach rank 0 during the run (mpi/stream.c's
 *   tracer, from per-worker rings of one batch): its tracer thread inserts
 *   them through the same statement into the transaction
 *   rs__trace_stream_open began, and rs__trace_finish adds the rest and
 *   commits it.
 */
#ifndef RINGSIM_TRACE_H
#define RINGSIM_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "ringsim/ringsim.h"

#define RS_TRACE_SCHEMA_VERSION 1
/* PRAGMA application_id of a ringsim trace: "RSim". */
#define RS_TRACE_APPLICATION_ID 0x5253696d

/* How long a writer waits for the trace's lock before it gives up, in
 * seconds (rs_trace_open_waiting's overrides): long enough for the writers
 * queued ahead of it to write big runs (about a million rows a second). */
#define RS_TRACE_WAIT_S 300.0

struct rs_run;
struct rs_event;
struct sqlite3;
/* The trace's connection (for tests that set limits on it). */
struct sqlite3 *rs__trace_db(rs_trace_t *trace);
/* Write the run's header rows before the ring runs (status "running"). */
int rs__trace_begin(struct rs_run *run);
/* Write every transfer, the totals and the outcome, in one transaction.
 * If that fails, it is rolled back and the run's row is marked failed in a
 * transaction of its own (if that can be written); trace_errmsg says which. */
int rs__trace_finish(struct rs_run *run);
/* Over MPI, rank 0 writes transfers while the run goes on (mpi/stream.c's
 * tracer): stream_open begins the transaction rs__trace_finish will commit
 * (after rs__trace_begin, before the workers start) and prepares the
 * transfer insert; stream_write inserts n records received by worker dst,
 * in order, times absolute in this process's clock (from any one thread
 * at a time, the tracer's); after a failed write the rest are dropped and
 * rs__trace_finish rolls the run's rows back, as for any failed write.
 * stream_abandon rolls back a stream whose run never started. */
int rs__trace_stream_open(struct rs_run *run);
int rs__trace_stream_write(struct rs_run *run, int dst,
                           const struct rs_event *events, size_t n);
void rs__trace_stream_abandon(struct rs_run *run);
/* Forget the run (its abort flag ends the trace's waits while it runs):
 * the trace may outlive it. */
void rs__trace_detach(struct rs_run *run);
/* Set the run's row's status and error, in a transaction of its own (the
 * run failed after its rows were written, or they could not be). Returns
 * the SQLite code. */
int rs__trace_mark(struct rs_run *run, const char *status, const char *error);

#endif /* RINGSIM_TRACE_H */
