/* mpi_run.h - a run spread over the processes of an MPI job (docs/mpi.md):
 * what src/mpi/ implements, and the job table rs__job_mpi (core/job.h,
 * mpi/job.c) hands to the run; nothing outside src/mpi/ includes it.
 *
 * DESIGN
 * - Process p of P hosts workers rs__job_first(p) .. rs__job_first(p+1)-1,
 *   contiguous blocks whose sizes differ by at most one (P <= W). It
 *   allocates and fills only its own workers' buffers and runs only their
 *   threads.
 * - An edge between two workers of one process stays a shared-memory
 *   queue (transport.h); an edge between processes is the MPI transport
 *   (rs__transport_mpi): the same contract (K slots, sequence numbers,
 *   checksums, end of stream, timeouts, abort) over nonblocking MPI
 *   point-to-point, called by the worker threads themselves
 *   (MPI_THREAD_MULTIPLE). Message order per edge is MPI's
 *   non-overtaking rule for one (source, tag, communicator).
 * - The first fault a process finds is sent to every other process (a
 *   listener thread per process takes it), which aborts its workers too,
 *   so every process ends within the timeout.
 * - Clocks: rank 0 measures every process's CLOCK_MONOTONIC offset at the
 *   start (the ping-pong of least round trip); every time a process sends
 *   or records is turned into rank 0's clock with it.
 * - Trace records flow to rank 0 while the run goes on: each worker
 *   records into a ring of `batch` records (xfer.h) that a tracer thread
 *   per process drains; the tracers of the other processes send them to
 *   rank 0 in batches of at most `batch` records (one receiver's each) on
 *   a communicator of their own, and rank 0's tracer writes them, and its
 *   own workers', into the trace's open transaction as they come. A
 *   worker whose ring is full waits for the tracer, so no process holds
 *   more than (its workers + 1) x batch records. Each tracer ends its
 *   stream with a message of its counts, once its workers stopped.
 * - After the workers stop, every process sends its workers' state and
 *   statistics to rank 0, which then holds what a one-process run would
 *   (the records aside): it writes the rest of the trace and reports.
 * Without MPI (mpi_none.c) every call here fails or does nothing.
 */
#ifndef RINGSIM_MPI_RUN_H
#define RINGSIM_MPI_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "core/job.h"
#include "net/transport.h"

typedef struct rs_run rs_run_t;

extern const rs_transport_t rs__transport_mpi;

/* Join the run to the MPI job: its communicators, this process's rank and
 * block (run->proc, procs, first_local, local_end), every host's name.
 * RS_EINVAL with errmsg when MPI is absent or not initialised, or the
 * workers are fewer than the processes. */
int rs__mpi_open(rs_run_t *run, char *errmsg);
void rs__mpi_close(rs_run_t *run);

/* Edge e has exactly one end in this process: set up its MPI side, with
 * slots messages of up to payload_bytes each in flight. */
int rs__mpi_edge_open(rs_run_t *run, rs_edge_t *e, size_t payload_bytes,
                      int slots);
void rs__mpi_edge_close(rs_edge_t *e);

/* After the fill, before anything else of rs_run_execute (collective):
 * every process's inputs were made alike (generated with the same init
 * and seed, or given); RS_EINVAL, the run failed saying what differs,
 * if not. */
int rs__mpi_inputs(rs_run_t *run);
/* Before the workers start (collective): measure the clock offsets, start
 * the listener for other processes' faults. */
int rs__mpi_start(rs_run_t *run);
/* Records per trace batch, and per worker's ring (RINGSIM_MPI_TRACE_BATCH,
 * or 8192). */
size_t rs__mpi_trace_batch(const rs_run_t *run);
/* After t0_ns is set, before the workers are released: start this
 * process's tracer (when tracing). If it cannot start, the run fails and
 * its workers record nothing; rs__mpi_finish then drains in its stead. */
int rs__mpi_trace_start(rs_run_t *run);
/* After this process's workers stopped (collective): stop the listener,
 * end the trace stream (rank 0: every process's), then every worker's
 * state and statistics to rank 0. */
void rs__mpi_finish(rs_run_t *run);
/* Rank 0, after rs__mpi_finish: how the records came (JSON for the run's
 * trace_stream_json, docs/trace-schema.md) into buf; 0 if they were not
 * traced during the run. */
int rs__mpi_trace_json(const rs_run_t *run, char *buf, size_t cap);
/* This process found the run's first fault: tell every other process. */
void rs__mpi_tell_fault(rs_run_t *run, int worker, int code,
                        const char *message);
/* Collective: is ok true in every process? */
int rs__mpi_all(rs_run_t *run, int ok);
/* After each process checked its own workers (collective): merge the
 * checks (the worst of every process's), and compare the processes'
 * results by per-block hashes; *identical is set to whether every
 * worker everywhere holds the same bits. If not, the blocks where workers
 * differ go from rank 0 (worker 0's) to every process, one at a time, and
 * rank 0 gets the listing (rs_run_mismatches) of every worker. */
void rs__mpi_check_merge(rs_run_t *run, int *identical);

/* The reference of inputs that are not generated (collective, one
 * block, in block order): acc and amp hold this process's workers' sums
 * (check_reference.c's accumulate: double, or long double for f64) of len
 * elements; make them every process's, by the run's op (sum, min, max or
 * prod for acc; sum, or prod, for amp). */
void rs__mpi_reduce_sums(const rs_run_t *run, void *acc, void *amp, size_t len,
                         int f64);

/* For the trace: process p's host, and its clock's offset against rank
 * 0's in ns (its clock minus rank 0's). */
const char *rs__mpi_host(const rs_run_t *run, int proc);
int64_t rs__mpi_offset(const rs_run_t *run, int proc);
/* ... and the round trip of the ping that measured it: the offset is
 * right to within half of it. */
uint64_t rs__mpi_rtt(const rs_run_t *run, int proc);

#endif /* RINGSIM_MPI_RUN_H */
