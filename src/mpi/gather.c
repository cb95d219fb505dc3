/* gather.c - the end of a run over MPI: the listener and the tracer
 * stopped, the run's first failure agreed by every process, and every
 * worker's state and statistics (and every edge's sequence numbers) sent
 * to rank 0, which then holds what a one-process run would.
 */
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "mpi/mpi_internal.h"

/* What rank 0 learns of one worker of another process. */
typedef struct worker_state {
  int32_t rc, iter, phase, step, chunk, activity, peer, mismatch, edge;
  int32_t stall_ms, stall_phase, stall_step;
  uint64_t stall_end_ns, sim_clock;
  rs_worker_stats_t stats;
} worker_state_t;

static void pack_worker(const rs_run_t *run, const rs_worker_t *w,
                        worker_state_t *s) {
  const rs_progress_t *p = &w->progress;
  *s = (worker_state_t){.rc = w->rc,
                        .iter = w->iter,
                        .phase = (int32_t)p->phase,
                        .step = p->step,
                        .chunk = p->chunk,
                        .activity = (int32_t)p->activity,
                        .peer = p->peer,
                        .mismatch = p->mismatch,
                        .edge = p->edge ? (int32_t)(p->edge - run->edges) : -1,
                        .stall_ms = p->stall_ms,
                        .stall_phase = (int32_t)p->stall_phase,
                        .stall_step = p->stall_step,
                        .stall_end_ns = p->stall_end_ns,
                        .sim_clock = w->sim.clock,
                        .stats = w->stats};
}

static void unpack_worker(rs_run_t *run, rs_worker_t *w, int from,
                          const worker_state_t *s) {
  struct rs_mpi *m = run->mpi;
  /* its times, into rank 0's clock */
  const int64_t shift = -m->offsets[from];
  rs_progress_t *p = &w->progress;
  w->rc = s->rc;
  w->iter = s->iter;
  p->phase = (rs_phase_t)s->phase;
  p->step = s->step;
  p->chunk = s->chunk;
  p->activity = (rs_activity_t)s->activity;
  p->peer = s->peer >= -1 && s->peer < run->config.workers ? s->peer : -1;
  p->mismatch = s->mismatch;
  /* (whatever a peer sent: an edge of this run, or none) */
  p->edge =
      s->edge >= 0 && s->edge < run->edge_count ? &run->edges[s->edge] : NULL;
  p->stall_ms = s->stall_ms;
  p->stall_phase = (rs_phase_t)s->stall_phase;
  p->stall_step = s->stall_step;
  p->stall_end_ns =
      s->stall_end_ns ? (uint64_t)((int64_t)s->stall_end_ns + shift) : 0;
  w->sim.clock = s->sim_clock;
  w->stats = s->stats;
}

/* Rank 0 takes every other process's workers' states, and the sequence
 * numbers of every edge with an end there: an edge between processes
 * has its sender's count in one and its receiver's in the other, and the
 * culprit (runstate.c) compares the two. */
static void gather_states(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  const int W = run->config.workers, E = run->edge_count;
  const size_t seq_bytes = 2 * (size_t)(E ? E : 1) * sizeof(uint64_t);
  uint64_t *seqs = malloc(seq_bytes);
  worker_state_t *states = malloc((size_t)W * sizeof *states);
  int ok = seqs && states;
  if (run->proc != 0) {
    if (ok && m->lost != 0) {
      for (int i = 0; i < E; i++) {
        const rs_edge_t *e = &run->edges[i];
        seqs[2 * i] = rs__run_local(run, e->from) ? e->queue.send_seq : 0;
        seqs[2 * i + 1] = rs__run_local(run, e->to) ? e->queue.recv_seq : 0;
      }
      for (int r = run->first_local; r < run->local_end; r++)
        pack_worker(run, &run->workers[r], &states[r]);
    }
    if (m->lost != 0) { /* (out of memory: empty, the states unknown) */
      MPI_Request req[2];
      const int L = run->local_end - run->first_local;
      MPI_Isend(ok ? &states[run->first_local] : NULL,
                ok ? (int)((size_t)L * sizeof *states) : 0, MPI_BYTE, 0,
                TAG_STATE, m->coll, &req[0]);
      MPI_Isend(seqs, ok ? (int)seq_bytes : 0, MPI_BYTE, 0, TAG_STATE, m->coll,
                &req[1]);
      rs__mpi_coll_wait(&req[0], "sending the workers' states");
      rs__mpi_coll_wait(&req[1], "sending the workers' states");
    }
  } else {
    for (int p = 1; p < run->procs && ok; p++) {
      if (p == m->lost)
        continue;
      const int first = rs__job_first(W, run->procs, p);
      const int L = rs__job_first(W, run->procs, p + 1) - first;
      MPI_Request req[2];
      MPI_Status st[2];
      int got[2] = {0, 0};
      MPI_Irecv(&states[first], (int)((size_t)L * sizeof *states), MPI_BYTE, p,
                TAG_STATE, m->coll, &req[0]);
      MPI_Irecv(seqs, (int)seq_bytes, MPI_BYTE, p, TAG_STATE, m->coll, &req[1]);
      rs__mpi_coll_wait_st(&req[0], &st[0], "taking the workers' states");
      rs__mpi_coll_wait_st(&req[1], &st[1], "taking the workers' states");
      MPI_Get_count(&st[0], MPI_BYTE, &got[0]);
      MPI_Get_count(&st[1], MPI_BYTE, &got[1]);
      if (got[0] != (int)((size_t)L * sizeof *states) ||
          got[1] != (int)seq_bytes)
        continue; /* (it had no memory for them: unknown) */
      for (int r = first; r < first + L; r++)
        unpack_worker(run, &run->workers[r], p, &states[r]);
      for (int i = 0; i < E; i++) {
        rs_edge_t *e = &run->edges[i];
        if (rs__job_owner(W, run->procs, e->from) == p)
          e->queue.send_seq = seqs[2 * i];
        if (rs__job_owner(W, run->procs, e->to) == p)
          e->queue.recv_seq = seqs[2 * i + 1];
      }
    }
  }
  free(seqs);
  free(states);
}

void rs__mpi_finish(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  rs__mpi_listen_stop(run);
  /* (a signal here stopped the run: the others wait for no timeout) */
  rs__mpi_tell_interrupt(run);
  rs__run_take_interrupt(run);
  rs__mpi_trace_finish(run); /* every record is in rank 0's trace (if traced) */
  /* Every process learns the run's first failure: a fault told while a
   * process's workers were finishing may have come after its listener
   * stopped. The lowest-ranked failed process's fault stands for all. */
  const int failed = run->result.status != RS_OK;
  const int64_t aux[3] = {run->fault_worker, (int64_t)run->fault_ns,
                          run->result.status};
  agree_out_t out;
  if (m->lost < 0) {
    rs__mpi_agree_on(&(agree_mine_t){.stage = STAGE_FINISH,
                                     .code = failed ? 3 : 0,
                                     .msg = failed ? run->errmsg : NULL,
                                     .aux = aux},
                     rs__mpi_finish_wait(run), &out);
    if (out.lost >= 0)
      m->lost = out.lost;
  }
  if (m->lost < 0 && out.code && out.from >= 0 && out.from < run->procs &&
      out.aux[2] != RS_OK) {
    const int from = (int)out.from;
    const int worker = out.aux[0] >= -1 && out.aux[0] < run->config.workers
                           ? (int)out.aux[0]
                           : -1;
    int64_t shift = m->offsets[run->proc] - m->offsets[from];
    rs__run_fail_from(run, worker, (int)out.aux[2],
                      (uint64_t)(out.aux[1] + shift), out.msg);
  }
  if (m->lost >= 0 && run->proc == 0) {
    /* the run's error names the process that stopped answering first */
    rs__run_fail(run, RS_ETIMEDOUT, "%s", rs__mpi_job.end.msg + 9);
    RS_PTHREAD_CHECK(pthread_mutex_lock(&run->err_mu));
    if (strncmp(run->errmsg, rs__mpi_job.end.msg + 9,
                strlen(rs__mpi_job.end.msg + 9))) {
      char both[3 * RS_ERRMSG_MAX];
      snprintf(both, sizeof both, "%s; before that: %s",
               rs__mpi_job.end.msg + 9, run->errmsg);
      memcpy(run->errmsg, both, sizeof run->errmsg - 1); /* (truncated) */
      run->errmsg[sizeof run->errmsg - 1] = '\0';
    }
    run->fault_worker = -1; /* (no chain of waits to follow to it) */
    RS_PTHREAD_CHECK(pthread_mutex_unlock(&run->err_mu));
  }
  if (run->result.status == RS_EINTERRUPTED && m->interrupted_elsewhere)
    rs__mpi_job.said_interrupt = 1; /* (rank 0 says it, naming the rank) */
  gather_states(run);
}
