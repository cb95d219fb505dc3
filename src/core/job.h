/* job.h - where a run's workers live: in this process alone, or spread
 * over the processes of a job (MPI's, docs/mpi.md), as a table of
 * operations the run calls, so that no layer above asks which.
 *
 * DESIGN
 * - A run has one job table (run->job), chosen once when it is created
 *   (run.c's run_new): rs__job_one, this process alone (core/job.c), or
 *   rs__job_mpi, the processes of an MPI job (mpi/job.c, over
 *   mpi/mpi_run.h; a build without MPI refuses it at open). A table lower
 *   layers own and mpi/ implements, as an algorithm calls a transport
 *   through net/transport.h's.
 * - Process p of procs hosts workers rs__job_first(W, procs, p) ..
 *   rs__job_first(W, procs, p + 1) - 1 (run->proc, procs, first_local,
 *   local_end; alone: 0 of 1, all W). Every operation is called by every
 *   process at the same point; those marked "collective" wait for the
 *   others. Alone, each does nothing, or says what this process says.
 * - What differs between the two and is not an operation is a field,
 *   named for why the run asks.
 */
#ifndef RINGSIM_JOB_H
#define RINGSIM_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "net/transport.h"
#include "ringsim/ringsim.h" /* rs_run_t */

/* The first worker of process p of procs, for W workers (p = procs: W):
 * contiguous blocks whose sizes differ by at most one (procs <= W). */
static inline int rs__job_first(int workers, int procs, int p) {
  return (int)((int64_t)p * workers / procs);
}

/* The process that hosts worker r. */
static inline int rs__job_owner(int workers, int procs, int r) {
  return (int)(((int64_t)(r + 1) * procs - 1) / workers);
}

typedef struct rs_job_ops {
  /* This process holds every worker (its inputs, buffers and state):
   * what needs them all in one place (the fill's reference, the fixed
   * order of --order-report, a reference before the run, the check's
   * listing of differing workers) may be done here, alone. */
  int all_here;
  /* The cores are this process's alone: where its workers are no more
   * than the cores, each keeps one, spinning (evcount.h). Not so where
   * other processes of the job may share them. */
  int own_cores;
  /* The check is collective: a process whose workers never went joins it
   * all the same (check_result merges every process's). */
  int collective_check;
  /* The check's reference of inputs that are not generated is made on
   * one thread, so that every process reduces in the same order. */
  int ordered_check;
  /* Trace records flow to one process during the run (trace_start): each
   * worker records into a ring of trace_batch records, not a buffer for
   * all it receives, and a process without the trace records too. */
  int streams_trace;
  /* The trace says which process, on which host, each side of a
   * transfer was, and every process's clock against rank 0's (host,
   * offset, rtt). */
  int trace_places;

  /* Join the job: this process's rank and block (run->proc, procs,
   * first_local, local_end), what the operations below need.
   * RS_EINVAL with errmsg when the job cannot hold the run. */
  int (*open)(rs_run_t *run, char *errmsg);
  void (*close)(rs_run_t *run);
  /* Edge e has an end outside this process: its transport, and where the
   * other end is here, its side, with slots messages of up to
   * payload_bytes each in flight. */
  int (*edge_open)(rs_run_t *run, rs_edge_t *e, size_t payload_bytes,
                   int slots);
  void (*edge_close)(rs_run_t *run, rs_edge_t *e);
  /* After the fill (collective): every process's inputs made alike;
   * RS_EINVAL, the run failed saying what differs, if not. */
  int (*inputs)(rs_run_t *run);
  /* Before the workers start (collective): what the job needs running
   * while they do. */
  int (*start)(rs_run_t *run);
  /* streams_trace: records per batch, and per worker's ring. */
  size_t (*trace_batch)(const rs_run_t *run);
  /* After t0_ns is set, before the workers are released. If it fails
   * the run fails, and finish drains in its stead. */
  int (*trace_start)(rs_run_t *run);
  /* After this process's workers stopped (collective): every worker's
   * state and statistics (and the trace's records) where the run's
   * report is made. */
  void (*finish)(rs_run_t *run);
  /* After finish, where the trace is: how its records came (JSON for the
   * run's trace_stream_json) into buf; 0 if they were not streamed. */
  int (*trace_json)(const rs_run_t *run, char *buf, size_t cap);
  /* This process found the run's first fault (worker's): tell the
   * others. */
  void (*tell_fault)(rs_run_t *run, int worker, int code, const char *message);
  /* Collective: is ok true in every process? */
  int (*all)(rs_run_t *run, int ok);
  /* After each process checked its own workers (collective): the worst
   * check of every process's, and *identical whether every worker
   * everywhere holds the same bits (the listing of differing workers
   * where the report is made). */
  void (*check_merge)(rs_run_t *run, int *identical);
  /* The reference of inputs that are not generated (collective, block by
   * block): acc and amp hold this process's workers' sums of len
   * elements (double, or long double for f64); make them every
   * process's, by the run's op. */
  void (*reduce_sums)(const rs_run_t *run, void *acc, void *amp, size_t len,
                      int f64);
  /* trace_places: process p's host, its clock's offset against rank 0's
   * (ns, its clock minus rank 0's) and the round trip that measured it. */
  const char *(*host)(const rs_run_t *run, int proc);
  int64_t (*offset)(const rs_run_t *run, int proc);
  uint64_t (*rtt)(const rs_run_t *run, int proc);
} rs_job_ops_t;

/* This process alone (core/job.c). */
extern const rs_job_ops_t rs__job_one;
/* The processes of an MPI job (mpi/job.c). */
extern const rs_job_ops_t rs__job_mpi;

#endif /* RINGSIM_JOB_H */
