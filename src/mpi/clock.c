/* clock.c - every process's CLOCK_MONOTONIC offset against rank 0's,
 * measured at the start of a run by a ping-pong (the exchange of least
 * round trip), so that every time a process sends or records can be put
 * in rank 0's clock.
 */
#include "base/util.h"
#include "mpi/mpi_internal.h"

/* How many times rank 0 pings each process to find its clock offset. */
#define PINGS 32

/* Rank 0 pings each process PINGS times; the exchange with the least
 * round trip gives the offset: the other clock read at the midpoint of
 * rank 0's send and receipt, within half that round trip. */
void rs__mpi_measure_offsets(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  MPI_Request req[2];
  for (int p = 1; p < run->procs; p++) {
    if (run->proc == 0) {
      uint64_t best = UINT64_MAX;
      for (int i = 0; i < PINGS; i++) {
        uint64_t there, t1 = rs__now_ns();
        MPI_Isend(NULL, 0, MPI_BYTE, p, TAG_PING, m->coll, &req[0]);
        MPI_Irecv(&there, 1, MPI_UINT64_T, p, TAG_PING, m->coll, &req[1]);
        rs__mpi_coll_wait(&req[1], "measuring the clocks");
        uint64_t t2 = rs__now_ns();
        rs__mpi_coll_wait(&req[0], "measuring the clocks");
        if (t2 - t1 < best) {
          best = t2 - t1;
          m->offsets[p] = (int64_t)(there - (t1 + (t2 - t1) / 2));
          m->rtt_ns[p] = best;
        }
      }
    } else if (run->proc == p) {
      for (int i = 0; i < PINGS; i++) {
        MPI_Irecv(NULL, 0, MPI_BYTE, 0, TAG_PING, m->coll, &req[0]);
        rs__mpi_coll_wait(&req[0], "measuring the clocks");
        uint64_t now = rs__now_ns();
        MPI_Isend(&now, 1, MPI_UINT64_T, 0, TAG_PING, m->coll, &req[1]);
        rs__mpi_coll_wait(&req[1], "measuring the clocks");
      }
    }
  }
  MPI_Ibcast(m->offsets, run->procs, MPI_INT64_T, 0, m->coll, &req[0]);
  rs__mpi_coll_wait(&req[0], "measuring the clocks");
  MPI_Ibcast(m->rtt_ns, run->procs, MPI_UINT64_T, 0, m->coll, &req[0]);
  rs__mpi_coll_wait(&req[0], "measuring the clocks");
}

int64_t rs__mpi_offset(const rs_run_t *run, int proc) {
  return run->mpi ? ctx(run)->offsets[proc] : 0;
}

uint64_t rs__mpi_rtt(const rs_run_t *run, int proc) {
  return run->mpi ? ctx(run)->rtt_ns[proc] : 0;
}
