/* mpi_internal.h - between the files of src/mpi/: a run over the
 * processes of an MPI job (mpi/mpi_run.h says what it does).
 *
 *   agree.c      the job (rs_mpi_init ... rs_mpi_finalize) and every
 *                agreement between its processes, each with a deadline;
 *                the collectives that wait as an agreement waits
 *   open.c       a run joins the job: its options and model compared, its
 *                communicators and block of workers; its inputs compared,
 *                its start
 *   transport.c  the MPI transport on one directed edge
 *   faults.c     the listener for other processes' faults; telling them
 *                this one's
 *   clock.c      every process's clock offset against rank 0's
 *   stream.c     the tracer: trace records streamed to rank 0 during the
 *                run
 *   gather.c     the run's end: its first failure agreed, every worker's
 *                state to rank 0
 *   merge.c      the check across processes: the reference's sums, the
 *                results' hashes, the workers that differ
 *   time.c       MPI_Allreduce's own time beside ringsim's (ringsim bench)
 *
 * Four communicators per run, duplicated from MPI_COMM_WORLD, keep the
 * traffic apart: data (the edges: tag (channel W + from) W + to), ctrl
 * (faults), trace (the tracers' batches of records, during the run) and
 * coll (clocks, the gather, the check's merge).
 */
#ifndef RINGSIM_MPI_INTERNAL_H
#define RINGSIM_MPI_INTERNAL_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "mpi/mpi_run.h"
#include "core/runstate.h"

enum {
  TAG_FAULT = 1,
  TAG_PING = 2,
  TAG_STATE = 3,
  TAG_TRACE = 4,
  TAG_AGREE = 5
};

typedef struct fault_msg {
  int32_t code, worker;
  uint64_t fault_ns; /* in the sender's clock */
  char message[RS_ERRMSG_MAX];
} fault_msg_t;

typedef char host_t[MPI_MAX_PROCESSOR_NAME];

/* What a tracer did (sent with its end of stream; rank 0's own too). */
typedef struct trace_count {
  uint64_t records, batches;
  uint64_t batches_during;  /* sent (rank 0: written) before this
                               process's workers all stopped */
  uint64_t received_during; /* rank 0: others' batches written before
                               its own workers all stopped */
  uint64_t held_max;        /* the most records held at once, at most */
  uint64_t bound;           /* ... and its bound: (workers + 1) x batch */
} trace_count_t;

/* A tracer's message: count records received by worker dst, or (dst -1)
 * the end of its stream, with its counts. */
typedef struct trace_msg {
  int32_t dst, count;
  trace_count_t counts;
  rs_event_t events[];
} trace_msg_t;

struct rs_mpi {
  MPI_Comm data, ctrl, coll, trace;
  host_t *hosts;    /* per process */
  int64_t *offsets; /* per process: its clock minus rank 0's */
  uint64_t *rtt_ns; /* per process: the least round trip measured */
  pthread_t listener;
  int listening;
  atomic_int stop;
  fault_msg_t in;  /* the listener's */
  fault_msg_t out; /* what this process tells the others */
  atomic_int told;
  MPI_Request *tell;
  /* The trace stream (mpi_run.h): records per batch; the tracer; set
   * when this process's workers all stopped; rank 0: every process's
   * counts. */
  size_t batch;
  int streamed, tracing;
  pthread_t tracer;
  trace_msg_t *msg;
  atomic_int workers_done;
  trace_count_t *counts;
  unsigned char *ended;      /* rank 0: process p ended its stream */
  int interrupted_elsewhere; /* a signal stopped another process's run */
  int msg_kept;              /* a send of msg never completed: MPI keeps it */
  int lost;                  /* a process that stopped answering (-1: none) */
};

/* The run's MPI state (the run keeps it opaque). */
static inline struct rs_mpi *ctx(const rs_run_t *run) { return run->mpi; }

/* ---- agreements between the processes, each with a deadline ----------
 *
 * Every agreement (the CLI's gates and its exit status, the run's setup,
 * its collective steps and its end) is one exchange on a communicator of
 * its own, with rank 0 at the centre: each process sends rank 0 where it
 * is (a stage), its status, its message and what must be the same
 * everywhere (key=value lines); rank 0 waits for each up to a deadline,
 * decides, and sends every process the outcome. So processes that are at
 * different points of the program (one stopped early for a usage error,
 * --help on one rank only) meet and end together rather than matching
 * the wrong collectives, and a process that stops answering is named,
 * not waited on: past the deadline the job ends (rs_mpi_finalize aborts
 * it). Once an agreement has ended the job, every later one returns its
 * outcome at once. */

enum {
  STAGE_TRANSPORT = 1, /* rs_mpi_init, and rs_mpi_check_alone */
  STAGE_CONFIG,        /* rs__mpi_open: the run's options and model */
  STAGE_INPUTS,        /* rs__mpi_start: the inputs */
  STAGE_ALL,           /* rs__mpi_all: a collective step of the run */
  STAGE_FINISH,        /* rs__mpi_finish: the run's first failure */
  STAGE_GATE = 100,    /* + k: the CLI's k-th gate (rs_mpi_agree) */
  STAGE_FINAL = 1000   /* the CLI's exit status (rs_mpi_agree) */
};
#define AGREE_DATA 4096
/* How long an agreement waits, unless the run says (rs__mpi_open): a
 * process may still be loading or filling its inputs. */
#define AGREE_WAIT_NS 60000000000ull
/* A process other than 0 waits this much longer, so that rank 0, which
 * knows who is missing, names it first. */
#define AGREE_GRACE_NS 2000000000ull

typedef struct agree_out {
  int32_t code, end, lost, from; /* from: the lowest rank with a code */
  int64_t aux[3];                /* ... and its aux */
  char msg[RS_ERRMSG_MAX];       /* a line as printed ("ringsim: ...") */
} agree_out_t;

/* The job, once MPI started (agree.c; one per process). */
typedef struct mpi_job {
  MPI_Comm comm;
  int rank, procs;
  int gates; /* the CLI's gates so far */
  int ended; /* an agreement ended the job: every later one is this */
  agree_out_t end;
  int lost;           /* a process that did not answer (-1: none) */
  uint64_t wait_ns;   /* how long an agreement waits */
  int said_interrupt; /* rank 0 said another process's signal */
  int err_fd;         /* stderr as it was when MPI started */
} mpi_job_t;
extern mpi_job_t rs__mpi_job;

/* ---- agree.c ---- */

/* Sleep ns nanoseconds. */
void rs__mpi_sleep(uint64_t ns);
/* Poll req until it completes (1), the deadline passes (0) or MPI says
 * it failed (-1: a message longer than its buffer; the communicators
 * return errors rather than end the job). */
int rs__mpi_poll(MPI_Request *req, uint64_t deadline, MPI_Status *st);
/* What this process brings to an agreement (above) at stage: code is
 * its status (0: fine; 1, 2, 3 as the CLI's exit status), msg its line,
 * aux three numbers the outcome carries from the process with the
 * highest code, data what must be the same everywhere (each NULL: none). */
typedef struct agree_mine {
  int stage, code;
  const char *msg;
  const int64_t *aux;
  const char *data;
} agree_mine_t;
/* One agreement on mine, waiting up to wait_ns; its outcome into *out. */
void rs__mpi_agree_on(const agree_mine_t *mine, uint64_t wait_ns,
                      agree_out_t *out);
/* A collective (or a message) that every process reached after an
 * agreement: wait for it as an agreement waits; past that the job ends,
 * from this process (it cannot tell which other did not answer). */
void rs__mpi_coll_wait_st(MPI_Request *req, MPI_Status *st, const char *what);
void rs__mpi_coll_wait(MPI_Request *req, const char *what);
/* Where a collective runs (comm: the run's coll) and what it is for,
 * which the line says if another process does not answer. */
typedef struct mpi_coll {
  MPI_Comm comm;
  const char *what;
} mpi_coll_t;
/* The collectives of the run's check and after (on coll): each waits as
 * an agreement waits, never for ever. */
void rs__mpi_allreduce(const void *in, void *out, int n, MPI_Datatype type,
                       MPI_Op op, const mpi_coll_t *on);
void rs__mpi_bcast(void *buf, int n, MPI_Datatype type, int root,
                   const mpi_coll_t *on);
void rs__mpi_gather(const void *in, int n, MPI_Datatype type, void *out,
                    int root, const mpi_coll_t *on);
/* How long, once this process's workers stopped, it waits for the
 * others to end theirs. */
uint64_t rs__mpi_finish_wait(const rs_run_t *run);
/* Process p stopped answering (for waited_ns, while doing what): this
 * run and the job end without it. */
void rs__mpi_lose(rs_run_t *run, int p, uint64_t waited_ns, const char *what);

/* ---- open.c ---- */

/* An agreement's failure as a run's error message (without "ringsim: "):
 * before the run exists (errmsg), or as the run's failure. */
int rs__mpi_agree_err(const agree_out_t *out, char *errmsg);
int rs__mpi_fail_agreed(rs_run_t *run, const agree_out_t *out);

/* ---- faults.c ---- */

/* Start and stop this process's listener for other processes' faults. */
int rs__mpi_listen_start(rs_run_t *run);
void rs__mpi_listen_stop(rs_run_t *run);
/* A signal stopped this process's run: tell the others (once). */
void rs__mpi_tell_interrupt(rs_run_t *run);

/* ---- clock.c ---- */

/* Every process's clock offset against rank 0's, and the round trip that
 * measured it (collective). */
void rs__mpi_measure_offsets(rs_run_t *run);

/* ---- stream.c ---- */

/* The workers stopped: the tracer drains what is left, ends its stream
 * (rank 0: takes every process's end), and stops. */
void rs__mpi_trace_finish(rs_run_t *run);

#endif /* RINGSIM_MPI_INTERNAL_H */
