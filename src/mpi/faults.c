/* faults.c - faults across processes: the first fault a process finds
 * (or a signal that stopped it) is sent to every other process on the
 * run's ctrl communicator, where a listener thread takes it, sets it as
 * the run's error (its time in this process's clock) and aborts the
 * workers, so every process ends within the timeout.
 */
#include <stdio.h>

#include "base/util.h"
#include "mpi/mpi_internal.h"

/* A signal stopped this process's run: the others stop too, and rank 0
 * marks the run interrupted (docs/mpi.md). */
void rs__mpi_tell_interrupt(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  const char *signal_name = atomic_load(&run->interrupted_by);
  if (signal_name && !atomic_load(&m->told)) {
    char said[RS_ERRMSG_MAX];
    snprintf(said, sizeof said, "interrupted by %s (rank %d)", signal_name,
             run->proc);
    rs__mpi_tell_fault(run, -1, RS_EINTERRUPTED, said);
  }
}

static void *listen_main(void *arg) {
  rs_run_t *run = arg;
  struct rs_mpi *m = run->mpi;
  MPI_Request req;
  MPI_Status st;
  MPI_Irecv(&m->in, sizeof m->in, MPI_BYTE, MPI_ANY_SOURCE, TAG_FAULT, m->ctrl,
            &req);
  while (!atomic_load(&m->stop)) {
    rs__mpi_tell_interrupt(run);
    int done = 0;
    MPI_Test(&req, &done, &st);
    if (!done) {
      rs__mpi_sleep(1000000);
      continue;
    }
    int64_t shift = m->offsets[run->proc] - m->offsets[st.MPI_SOURCE];
    m->in.message[sizeof m->in.message - 1] = '\0';
    if (m->in.worker < -1 || m->in.worker >= run->config.workers)
      m->in.worker = -1; /* (whatever a peer sent) */
    if (m->in.code == RS_EINTERRUPTED)
      m->interrupted_elsewhere = 1;
    rs__run_fail_from(run, m->in.worker, m->in.code,
                      (uint64_t)((int64_t)m->in.fault_ns + shift),
                      m->in.message);
    rs__run_abort(run);
    MPI_Irecv(&m->in, sizeof m->in, MPI_BYTE, MPI_ANY_SOURCE, TAG_FAULT,
              m->ctrl, &req);
  }
  MPI_Cancel(&req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  return NULL;
}

void rs__mpi_tell_fault(rs_run_t *run, int worker, int code,
                        const char *message) {
  struct rs_mpi *m = run->mpi;
  if (!m || atomic_exchange(&m->told, 1))
    return;
  m->out.code = code;
  m->out.worker = worker;
  m->out.fault_ns = rs__now_ns();
  snprintf(m->out.message, sizeof m->out.message, "%s", message);
  for (int p = 0; p < run->procs; p++)
    if (p != run->proc)
      MPI_Isend(&m->out, sizeof m->out, MPI_BYTE, p, TAG_FAULT, m->ctrl,
                &m->tell[p]);
}

int rs__mpi_listen_start(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  if (pthread_create(&m->listener, NULL, listen_main, run) != 0)
    return rs__run_fail(run, RS_ESYS, "cannot start the MPI fault listener");
  m->listening = 1;
  return RS_OK;
}

void rs__mpi_listen_stop(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  if (m->listening) {
    atomic_store(&m->stop, 1);
    RS_PTHREAD_CHECK(pthread_join(m->listener, NULL));
    m->listening = 0;
  }
}
