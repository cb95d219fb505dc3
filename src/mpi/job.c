/* job.c - the job table of a run over the processes of an MPI job
 * (core/job.h): mpi_run.h's calls, made by MPI's files or, in a build
 * without MPI, refused at open by mpi_none.c. */
#include "mpi/mpi_run.h"

#include "core/runstate.h"

/* An edge that leaves or enters this process: MPI's side of it; between
 * two other processes' workers, never used here, only named. */
static int mpi_edge_open(rs_run_t *run, rs_edge_t *e, size_t payload_bytes,
                         int slots) {
  if (!rs__run_local(run, e->from) && !rs__run_local(run, e->to)) {
    e->tp = &rs__transport_mpi;
    return RS_OK;
  }
  return rs__mpi_edge_open(run, e, payload_bytes, slots);
}

static void mpi_edge_close(rs_run_t *run, rs_edge_t *e) {
  (void)run;
  rs__mpi_edge_close(e);
}

const rs_job_ops_t rs__job_mpi = {
    .all_here = 0,         /* each process holds its block */
    .own_cores = 0,        /* other processes may run on this host */
    .collective_check = 1, /* rs__mpi_check_merge */
    .ordered_check = 1,    /* rs__mpi_reduce_sums */
    .streams_trace = 1,    /* mpi/stream.c's tracers */
    .trace_places = 1,
    .open = rs__mpi_open,
    .close = rs__mpi_close,
    .edge_open = mpi_edge_open,
    .edge_close = mpi_edge_close,
    .inputs = rs__mpi_inputs,
    .start = rs__mpi_start,
    .trace_batch = rs__mpi_trace_batch,
    .trace_start = rs__mpi_trace_start,
    .finish = rs__mpi_finish,
    .trace_json = rs__mpi_trace_json,
    .tell_fault = rs__mpi_tell_fault,
    .all = rs__mpi_all,
    .check_merge = rs__mpi_check_merge,
    .reduce_sums = rs__mpi_reduce_sums,
    .host = rs__mpi_host,
    .offset = rs__mpi_offset,
    .rtt = rs__mpi_rtt,
};
