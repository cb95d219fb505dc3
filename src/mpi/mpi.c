/* mpi.c - a run over the processes of an MPI job (mpi_run.h): the MPI
 * transport, the fault listener, clock offsets, and gathering to rank 0.
 *
 * Four communicators per run, duplicated from MPI_COMM_WORLD, keep the
 * traffic apart: data (the edges: tag from * W + to), ctrl (faults),
 * trace (the tracers' batches of records, during the run) and coll
 * (clocks, the gather, the check's merge).
 */
#include "core/mpi_run.h"

#include <errno.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check/check.h"
#include "core/runstate.h"
#include "io/trace.h"
#include "base/util.h"

enum {
  TAG_FAULT = 1,
  TAG_PING = 2,
  TAG_STATE = 3,
  TAG_TRACE = 4,
  TAG_AGREE = 5
};

/* How many times rank 0 pings each process to find its clock offset. */
#define PINGS 32
/* Trace records per batch, and per worker's ring (the test knob
 * RINGSIM_MPI_TRACE_BATCH sets it, up to BATCH_MAX). */
#define BATCH_DEFAULT 8192
#define BATCH_MAX (1 << 20)
/* A tracer sends a ring's records once it holds half a batch, or once
 * they waited this long, or when the workers stopped. */
#define BATCH_AGE_NS 10000000u
/* Elements per hash of the cross-process comparison. */
#define HASH_ELEMS ((size_t)1 << 16)
/* The end of an iteration's stream on an edge: a message of this phase,
 * whose seq is how many messages the sender sent. */
#define PHASE_FIN (-1)

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
static struct rs_mpi *ctx(const rs_run_t *run) { return run->mpi; }

typedef struct mpi_edge {
  MPI_Comm comm;
  int peer; /* the other end's process */
  int tag;
  int sending; /* this process holds the sender */
  int slots;
  size_t slot_bytes;
  unsigned char *mem;
  MPI_Request *req;
  uint64_t used; /* sender: slots filled so far; receiver: messages taken */
  const atomic_int *abort_flag;
  const int64_t *offsets;
  int me;
  int leaked; /* a send never completed: its slot stays allocated */
} mpi_edge_t;

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

typedef struct agree_in {
  int32_t stage, code;
  int64_t aux[3];
  char msg[RS_ERRMSG_MAX];
  char data[AGREE_DATA];
} agree_in_t;

typedef struct agree_out {
  int32_t code, end, lost, from; /* from: the lowest rank with a code */
  int64_t aux[3];                /* ... and its aux */
  char msg[RS_ERRMSG_MAX];       /* a line as printed ("ringsim: ...") */
} agree_out_t;

static struct {
  MPI_Comm comm;
  int rank, procs;
  int gates; /* the CLI's gates so far */
  int ended; /* an agreement ended the job: every later one is this */
  agree_out_t end;
  int lost;           /* a process that did not answer (-1: none) */
  uint64_t wait_ns;   /* how long an agreement waits */
  int said_interrupt; /* rank 0 said another process's signal */
  int err_fd;         /* stderr as it was when MPI started */
} job = {MPI_COMM_NULL, 0, 1, 0, 0, {0}, -1, AGREE_WAIT_NS, 0, -1};

static void sleep_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  nanosleep(&ts, NULL);
}

/* Poll req until it completes (1), the deadline passes (0) or MPI says
 * it failed (-1: a message longer than its buffer; the communicators
 * return errors rather than end the job). */
static int poll_req(MPI_Request *req, uint64_t deadline, MPI_Status *st) {
  uint64_t nap = 10000;
  for (;;) {
    int done = 0;
    if (MPI_Test(req, &done, st ? st : MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return -1;
    if (done)
      return 1;
    if (rs__now_ns() >= deadline)
      return 0;
    sleep_ns(nap);
    nap = nap < 1000000 ? 2 * nap : 1000000;
  }
}

/* A line on this process's own stderr (a rank other than 0's is kept in
 * a file by the CLI; this one is for a job that ends without rank 0). */
static void say(const char *line) {
  int fd = job.err_fd >= 0 ? job.err_fd : STDERR_FILENO;
  size_t len = strlen(line);
  if (write(fd, line, len) != (ssize_t)len || write(fd, "\n", 1) != 1)
    return;
}

static const char *stage_name(int stage) {
  static _Thread_local char gate[32];
  switch (stage) {
  case STAGE_TRANSPORT:
    return "joining the job";
  case STAGE_CONFIG:
    return "comparing the run's options";
  case STAGE_INPUTS:
    return "comparing the run's inputs";
  case STAGE_ALL:
    return "a collective step of the run";
  case STAGE_FINISH:
    return "the end of the run";
  case STAGE_FINAL:
    return "the exit status";
  default:
    snprintf(gate, sizeof gate, "setup step %d", stage - STAGE_GATE);
    return gate;
  }
}

/* The first key=value line of a that differs in b: "rank p's KEY (b's)
 * differs from rank 0's (a's)". 0 if they are the same. */
static int differ(const char *a, const char *b, int p, char *out, size_t size) {
  while (*a || *b) {
    size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
    if (la != lb || memcmp(a, b, la)) {
      size_t key = strcspn(a, "=");
      if (key > la)
        key = la;
      const char *va = a[key] == '=' ? a + key + 1 : "";
      const char *vb = b + (strcspn(b, "=") < lb ? strcspn(b, "=") + 1 : lb);
      snprintf(out, size,
               "ringsim: rank %d's %.*s (%.*s) differs from rank "
               "0's (%.*s)",
               p, (int)key, a, (int)(b + lb - vb), vb, (int)(a + la - va), va);
      return 1;
    }
    a += la + (a[la] == '\n');
    b += lb + (b[lb] == '\n');
  }
  return 0;
}

/* Rank 0: the outcome of every process's part (lost: the lowest rank that
 * did not answer, or -1). */
static void decide(const agree_in_t *in, int procs, int lost, uint64_t wait_ns,
                   agree_out_t *out) {
  memset(out, 0, sizeof *out);
  out->lost = lost;
  out->from = -1;
  int finals = 0, apart = -1, ended_ok = -1;
  for (int p = 0; p < procs; p++) {
    if (p == lost)
      continue;
    finals += in[p].stage == STAGE_FINAL;
    if (in[p].stage != in[0].stage && apart < 0)
      apart = p;
    if (in[p].stage == STAGE_FINAL && !in[p].code && ended_ok < 0)
      ended_ok = p;
    if (in[p].code > out->code) {
      out->code = in[p].code;
      out->from = p;
    }
  }
  if (out->from >= 0) {
    memcpy(out->aux, in[out->from].aux, sizeof out->aux);
    memcpy(out->msg, in[out->from].msg, sizeof out->msg);
    out->msg[sizeof out->msg - 1] = '\0';
  }
  if (lost >= 0) {
    out->end = 1;
    out->code = out->code > 3 ? out->code : 3;
    snprintf(out->msg, sizeof out->msg,
             "ringsim: rank %d did not answer within %.3g s (%s): the job "
             "ends",
             lost, (double)wait_ns / 1e9, stage_name(in[0].stage));
    return;
  }
  out->end = finals > 0;
  if (apart >= 0) { /* not at the same point of the program */
    out->code = out->code > 2 ? out->code : 2;
    if (!out->msg[0] && ended_ok >= 0)
      snprintf(out->msg, sizeof out->msg,
               "ringsim: rank %d ended before the run (exit 0: was it given "
               "--help or -V?) while rank %d went on: give every rank the "
               "same options",
               ended_ok, ended_ok ? 0 : apart);
    else if (!out->msg[0])
      snprintf(out->msg, sizeof out->msg,
               "ringsim: rank %d was at %s while rank 0 was at %s: give "
               "every rank the same options",
               apart, stage_name(in[apart].stage), stage_name(in[0].stage));
    return;
  }
  /* what differs is why a process refused, if one did */
  for (int p = 1; p < procs; p++)
    if (differ(in[0].data, in[p].data, p, out->msg, sizeof out->msg)) {
      out->code = out->code > 2 ? out->code : 2;
      out->from = p;
      out->end = out->end || in[0].stage == STAGE_TRANSPORT;
      break;
    }
}

/* One agreement (above): code is this process's status (0: fine; 1, 2,
 * 3 as the CLI's exit status), msg its line, data what must be the same
 * everywhere. */
static void agree(int stage, int code, const char *msg, const int64_t *aux,
                  const char *data, uint64_t wait_ns, agree_out_t *out) {
  if (job.ended) {
    *out = job.end;
    return;
  }
  agree_in_t *mine = calloc(1, sizeof *mine);
  if (!mine) { /* (no memory for 5 KB: end the job rather than hang it) */
    say("ringsim: out of memory agreeing with the other MPI processes");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  mine->stage = stage;
  mine->code = code;
  if (aux)
    memcpy(mine->aux, aux, sizeof mine->aux);
  if (msg)
    snprintf(mine->msg, sizeof mine->msg, "%s", msg);
  if (data)
    snprintf(mine->data, sizeof mine->data, "%s", data);
  if (job.procs == 1 || job.comm == MPI_COMM_NULL) {
    decide(mine, 1, -1, wait_ns, out);
  } else if (job.rank == 0) {
    const int P = job.procs;
    agree_in_t *in = calloc((size_t)P, sizeof *in);
    MPI_Request *req = calloc((size_t)P, sizeof *req);
    if (!in || !req) {
      say("ringsim: out of memory agreeing with the other MPI processes");
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    in[0] = *mine;
    req[0] = MPI_REQUEST_NULL;
    for (int p = 1; p < P; p++)
      MPI_Irecv(&in[p], (int)sizeof *in, MPI_BYTE, p, TAG_AGREE, job.comm,
                &req[p]);
    const uint64_t deadline = rs__now_ns() + wait_ns;
    int lost = -1;
    unsigned char *got = calloc((size_t)P, 1);
    if (!got) {
      say("ringsim: out of memory agreeing with the other MPI processes");
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    for (int p = 1; p < P; p++)
      if (!(got[p] = poll_req(&req[p], deadline, NULL) == 1) && lost < 0)
        lost = p;
    for (int p = 1; p < P; p++)
      if (req[p] != MPI_REQUEST_NULL) { /* (it never came) */
        MPI_Cancel(&req[p]);
        MPI_Wait(&req[p], MPI_STATUS_IGNORE);
      }
    for (int p = 1; p < P; p++) { /* (whatever a peer sent, one line) */
      in[p].msg[sizeof in[p].msg - 1] = '\0';
      in[p].data[sizeof in[p].data - 1] = '\0';
    }
    decide(in, P, lost, wait_ns, out);
    for (int p = 1; p < P; p++) { /* to every process that answered */
      req[p] = MPI_REQUEST_NULL;
      if (got[p])
        MPI_Isend(out, (int)sizeof *out, MPI_BYTE, p, TAG_AGREE, job.comm,
                  &req[p]);
    }
    const uint64_t sent_by = rs__now_ns() + wait_ns;
    for (int p = 1; p < P; p++)
      if (req[p] != MPI_REQUEST_NULL && poll_req(&req[p], sent_by, NULL) != 1)
        MPI_Request_free(&req[p]); /* (the job is ending: MPI keeps it) */
    free(got);
    free(in);
    free(req);
  } else {
    MPI_Request req[2];
    MPI_Isend(mine, (int)sizeof *mine, MPI_BYTE, 0, TAG_AGREE, job.comm,
              &req[0]);
    MPI_Irecv(out, (int)sizeof *out, MPI_BYTE, 0, TAG_AGREE, job.comm, &req[1]);
    if (poll_req(&req[1], rs__now_ns() + wait_ns + AGREE_GRACE_NS, NULL) == 1) {
      MPI_Wait(&req[0], MPI_STATUS_IGNORE); /* (rank 0 took it) */
      out->msg[sizeof out->msg - 1] = '\0';
    } else {
      MPI_Cancel(&req[1]);
      MPI_Wait(&req[1], MPI_STATUS_IGNORE);
      MPI_Request_free(&req[0]);
      memset(out, 0, sizeof *out);
      out->code = 3;
      out->end = 1;
      out->from = -1;
      out->lost = 0;
      snprintf(out->msg, sizeof out->msg,
               "ringsim: rank 0 did not answer rank %d within %.3g s (%s): "
               "the job ends",
               job.rank, (double)(wait_ns + AGREE_GRACE_NS) / 1e9,
               stage_name(stage));
      say(out->msg); /* (rank 0 cannot say it) */
    }
  }
  free(mine);
  if (out->lost >= 0 && job.lost < 0)
    job.lost = out->lost;
  if (out->end) {
    job.ended = 1;
    job.end = *out;
  }
}

/* A collective (or a message) that every process reached after an
 * agreement: wait for it as an agreement waits; past that the job ends,
 * from this process (it cannot tell which other did not answer). */
static void coll_wait_st(MPI_Request *req, MPI_Status *st, const char *what) {
  int rc = poll_req(req, rs__now_ns() + job.wait_ns, st);
  if (rc > 0)
    return;
  char line[RS_ERRMSG_MAX];
  if (rc < 0)
    snprintf(line, sizeof line,
             "ringsim: rank %d: a message from another MPI process did not "
             "fit (%s): the job ends",
             job.rank, what);
  else
    snprintf(line, sizeof line,
             "ringsim: rank %d: another MPI process did not answer within "
             "%.3g s (%s): the job ends",
             job.rank, (double)job.wait_ns / 1e9, what);
  say(line);
  fflush(NULL);
  MPI_Abort(MPI_COMM_WORLD, 3);
}

static void coll_wait(MPI_Request *req, const char *what) {
  coll_wait_st(req, NULL, what);
}

/* ---- the job -------------------------------------------------------- */

/* The job's size from mpirun's environment, before MPI starts (0: not
 * started by mpirun, or alone). */
static int launched_procs(void) {
  const char *names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    const char *v = getenv(names[i]);
    if (v && atoi(v) > 1)
      return atoi(v);
  }
  return 0;
}

static int start_mpi(char *errmsg) {
  int inited = 0, provided = 0;
  MPI_Initialized(&inited);
  if (!inited && MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) !=
                     MPI_SUCCESS)
    return rs__err(errmsg, RS_EINVAL, "transport mpi: MPI_Init failed");
  if (inited)
    MPI_Query_thread(&provided);
  if (job.comm == MPI_COMM_NULL) {
    MPI_Comm_rank(MPI_COMM_WORLD, &job.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &job.procs);
    MPI_Comm_dup(MPI_COMM_WORLD, &job.comm);
    /* a peer's error returns (and is said) rather than killing the job */
    MPI_Comm_set_errhandler(job.comm, MPI_ERRORS_RETURN);
    if (job.err_fd < 0)
      job.err_fd = dup(STDERR_FILENO);
  }
  return RS_OK;
}

int rs_mpi_init(int *rank, int *procs, char *errmsg) {
  int first = job.comm == MPI_COMM_NULL;
  int rc = start_mpi(errmsg);
  if (rc)
    return rc;
  int provided = 0;
  MPI_Query_thread(&provided);
  *rank = job.rank;
  *procs = job.procs;
  if (first) { /* every process was given --transport mpi, or none */
    agree_out_t out;
    agree(STAGE_TRANSPORT, 0, NULL, NULL, "--transport=mpi", job.wait_ns, &out);
    if (out.code) {
      rs__err(errmsg, RS_EINVAL, "%s",
              strncmp(out.msg, "ringsim: ", 9) ? out.msg : out.msg + 9);
      rs_mpi_finalize();
      return RS_EINVAL;
    }
  }
  if (provided < MPI_THREAD_MULTIPLE)
    return rs__err(errmsg, RS_EINVAL,
                   "transport mpi: this MPI does not give "
                   "MPI_THREAD_MULTIPLE (it gives level %d)",
                   provided);
  return RS_OK;
}

int rs_mpi_check_alone(char *errmsg) {
  if (errmsg)
    errmsg[0] = '\0';
  if (!launched_procs())
    return RS_OK;
  char err[RS_ERRMSG_MAX];
  if (start_mpi(err))
    return RS_OK; /* (no MPI to ask: run alone, as before) */
  agree_out_t out;
  agree(STAGE_TRANSPORT, 0, NULL, NULL, "--transport=shm", job.wait_ns, &out);
  int code = out.code;
  if (code && job.rank == 0)
    rs__err(errmsg, RS_EINVAL, "%s",
            strncmp(out.msg, "ringsim: ", 9) ? out.msg : out.msg + 9);
  rs_mpi_finalize();
  return code ? RS_EINVAL : RS_OK;
}

void rs_mpi_finalize(void) {
  int inited = 0, done = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&done);
  if (!inited || done)
    return;
  if (job.lost >= 0) { /* a process did not answer: MPI_Finalize would wait */
    fflush(NULL);
    MPI_Abort(MPI_COMM_WORLD, job.end.code ? job.end.code : 3);
  }
  if (job.comm != MPI_COMM_NULL)
    MPI_Comm_free(&job.comm);
  MPI_Finalize();
}

int rs_mpi_agree(int code, char *msg, size_t size) {
  agree_out_t out;
  int stage = msg ? STAGE_FINAL : STAGE_GATE + ++job.gates;
  agree(stage, code, msg, NULL, NULL, job.wait_ns, &out);
  if (out.code != code && msg && size)
    snprintf(msg, size, "%s",
             job.said_interrupt && out.code > 128 ? "" : out.msg);
  return out.code > code ? out.code : code;
}

/* How long, once this process's workers stopped, it waits for the others
 * to end theirs: after a failure every worker stops within the timeout
 * of it (a neighbour times out, or the fault is told); after a run that
 * went well, as long as any agreement. */
static uint64_t finish_wait(const rs_run_t *run) {
  if (run->result.status == RS_OK)
    return job.wait_ns;
  return (uint64_t)(run->config.timeout_s * 1e9) + 1000000000u;
}

/* Process p stopped answering: this run and the job end without it
 * (rs_mpi_finalize aborts the job). A process other than 0 says so
 * itself (rank 0 names it in the run's error). */
static void lose(rs_run_t *run, int p, uint64_t waited_ns, const char *what) {
  struct rs_mpi *m = run->mpi;
  if (m->lost >= 0)
    return;
  m->lost = p;
  if (job.lost < 0)
    job.lost = p;
  if (!job.ended) {
    job.ended = 1;
    memset(&job.end, 0, sizeof job.end);
    job.end.code = 3;
    job.end.end = 1;
    job.end.lost = p;
    job.end.from = -1;
    const int W = run->config.workers;
    snprintf(job.end.msg, sizeof job.end.msg,
             "ringsim: rank %d (workers %d to %d, on %s) did not answer "
             "within %.3g s (%s): the job ends",
             p, rs__mpi_first(W, run->procs, p),
             rs__mpi_first(W, run->procs, p + 1) - 1, m->hosts[p],
             (double)waited_ns / 1e9, what);
    if (run->proc != 0)
      say(job.end.msg);
  }
}

/* ---- a run joins the job --------------------------------------------- */

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* The model as every process must have it: its params' names, shapes and
 * dtype, and its inline grads. */
static uint64_t model_digest(const rs_model_t *model) {
  uint64_t h = 14695981039346656037ull;
  const size_t params = rs_model_param_count(model);
  for (size_t i = 0; i < params; i++) {
    const rs_param_t *p = rs_model_param(model, i);
    h = fnv(h, p->name, strlen(p->name) + 1);
    h = fnv(h, &p->ndim, sizeof p->ndim);
    h = fnv(h, p->shape, (size_t)p->ndim * sizeof *p->shape);
  }
  rs_dtype_t dtype = rs_model_dtype(model);
  h = fnv(h, &dtype, sizeof dtype);
  const int inline_workers = rs_model_inline_workers(model);
  h = fnv(h, &inline_workers, sizeof inline_workers);
  for (int r = 0; r < inline_workers; r++)
    h = fnv(h, rs_model_inline_grads(model, r),
            rs_model_elems(model) * sizeof(double));
  return h;
}

/* What every process of a run must have the same (key=value lines, keys
 * named as the options that set them): the options that shape the
 * collective, and the model. */
static void describe_config(const rs_run_t *run, const char *batch, char *buf,
                            size_t cap) {
  const rs_config_t *c = &run->config;
  static const char *const kinds[] = {"crash", "stall", "corrupt", "drop",
                                      "dup"};
  char faults[1024] = "none";
  size_t len = 0;
  for (int i = 0; i < c->fault_count && i < RS_MAX_FAULTS; i++) {
    const rs_fault_t *f = &c->faults[i];
    const char *kind =
        (unsigned)f->kind < sizeof kinds / sizeof *kinds ? kinds[f->kind] : "?";
    len += (size_t)snprintf(
        faults + len, len < sizeof faults ? sizeof faults - len : 0,
        "%s%s:worker=%d,step=%d", i ? " " : "", kind, f->worker, f->step);
    if (f->kind == RS_FAULT_STALL && len < sizeof faults)
      len +=
          (size_t)snprintf(faults + len, sizeof faults - len, ",ms=%d", f->ms);
  }
  /* (the model's fields, up to its overrides' end: what follows is not
   * the model) */
  uint64_t net =
      fnv(14695981039346656037ull, &c->net,
          offsetof(rs_netmodel_t, stragglers) + sizeof c->net.stragglers);
  const rs_model_t *m = run->model;
  snprintf(
      buf, cap,
      "--workers=%d\n--algo=%s\n--op=%s\n--average=%d\n--segment-bytes=%zu\n"
      "--slots=%d\n--timeout=%g\n--inject=%s\n--checksum=%s\n--direct=%s\n"
      "--loop=%s\n--bucket-bytes=%zu\n--first-bucket-bytes=%zu\n"
      "--warmup=%d\n--iterations=%d\n--warmup-budget=%g\n--budget=%g\n"
      "--trace or --no-trace=%s\n--order-report=%s\n--like's bucket "
      "layout=%s\n--net=%s%.0llx\ncollective=%d\nref reps=%d\n"
      "model=%s, %zu params, %zu elements, %s, digest %016llx\n"
      "RINGSIM_MPI_TRACE_BATCH=%s\n",
      c->workers, rs_algorithm_name(c->algo), rs_op_name(c->op), c->average_pre,
      c->segment_bytes, c->slots, c->timeout_s, faults,
      c->checksum ? "on" : "off", c->direct ? "on" : "off",
      c->slices ? "slices" : "steps", c->bucket_bytes, c->first_bucket_bytes,
      c->warmup, c->iterations, c->warmup_budget_s, c->timed_budget_s,
      c->traced ? "--trace" : "--no-trace", c->order_report ? "on" : "off",
      c->ddp_layout ? "ddp" : "none", c->net.enabled ? "on, digest " : "off",
      c->net.enabled ? (unsigned long long)net : 0ull, (int)c->collective,
      c->ref_reps, rs_model_name(m), rs_model_param_count(m), rs_model_elems(m),
      rs_dtype_name(rs_model_dtype(m)), (unsigned long long)model_digest(m),
      batch ? batch : "unset");
}

/* An agreement's failure as a run's error message (without "ringsim: "). */
static int agree_err(const agree_out_t *out, char *errmsg) {
  const char *msg = out->msg;
  if (strncmp(msg, "ringsim: ", 9) == 0)
    msg += 9;
  return rs__err(errmsg, out->code == 2 ? RS_EINVAL : RS_EABORTED, "%s",
                 msg[0] ? msg : "another MPI process could not set up the run");
}

/* Free a run's MPI state (NULL: nothing) once MPI holds none of it. */
static void free_state(struct rs_mpi *m) {
  if (!m)
    return;
  free(m->msg);
  free(m->counts);
  free(m->ended);
  free(m->hosts);
  free(m->offsets);
  free(m->rtt_ns);
  free(m->tell);
  free(m);
}

int rs__mpi_open(rs_run_t *run, char *errmsg) {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited || job.comm == MPI_COMM_NULL)
    return rs__err(errmsg, RS_EINVAL,
                   "transport mpi: MPI is not initialised (rs_mpi_init)");
  const int W = run->config.workers;
  const int rank = job.rank, procs = job.procs;
  /* Agreements wait up to the longest a worker waits, or a minute. */
  job.wait_ns = run->config.timeout_s * 1e9 > (double)AGREE_WAIT_NS
                    ? (uint64_t)(run->config.timeout_s * 1e9)
                    : AGREE_WAIT_NS;
  /* Records per trace batch: every process must agree (rank 0 receives
   * whole batches). */
  long batch = BATCH_DEFAULT;
  const char *text = getenv("RINGSIM_MPI_TRACE_BATCH");
  if (text) {
    char *end;
    errno = 0;
    batch = strtol(text, &end, 10);
    if (errno || end == text || *end || batch < 1 || batch > BATCH_MAX)
      batch = -1;
  }
  /* Before anything else, and before this process refuses anything: every
   * process must have the same options and model, or the collectives fall
   * out of step. Then each refuses what it refuses alike. */
  char local[RS_ERRMSG_MAX] = "";
  int code = 0;
  if (batch < 0)
    code = rs__err(local, RS_EINVAL,
                   "RINGSIM_MPI_TRACE_BATCH '%s': expected records per trace "
                   "batch, 1 to %d",
                   text, BATCH_MAX);
  else if (procs > W)
    code = rs__err(local, RS_EINVAL,
                   "workers: %d cannot be spread over %d MPI processes "
                   "(each process needs a worker: give --workers %d or "
                   "more)",
                   W, procs, procs);
  int *tag_ub = NULL, flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
  if (!code && flag && (int64_t)W * W > *tag_ub)
    code = rs__err(local, RS_EINVAL,
                   "workers: %d workers need %lld MPI tags; this MPI has %d", W,
                   (long long)W * W, *tag_ub);
  char *desc = malloc(AGREE_DATA);
  if (!desc)
    code = rs__err(local, RS_ENOMEM, "out of memory");
  else
    describe_config(run, text, desc, AGREE_DATA);
  char line[RS_ERRMSG_MAX + 16] = "";
  if (code)
    snprintf(line, sizeof line, "ringsim: %s", local);
  agree_out_t out;
  agree(STAGE_CONFIG, code ? (code == RS_EINVAL ? 2 : 3) : 0, line, NULL, desc,
        job.wait_ns, &out);
  free(desc);
  if (out.code && code && out.from == rank)
    return rs__err(errmsg, code, "%s", local); /* (said once, by rank 0) */
  if (out.code)
    return agree_err(&out, errmsg);
  struct rs_mpi *m = calloc(1, sizeof *m);
  if (!m || !(m->hosts = calloc((size_t)procs, sizeof *m->hosts)) ||
      !(m->offsets = calloc((size_t)procs, sizeof *m->offsets)) ||
      !(m->rtt_ns = calloc((size_t)procs, sizeof *m->rtt_ns)) ||
      !(m->tell = calloc((size_t)procs, sizeof *m->tell)) ||
      !(m->counts = calloc((size_t)procs, sizeof *m->counts)) ||
      !(m->ended = calloc((size_t)procs, sizeof *m->ended)) ||
      (run->config.traced &&
       !(m->msg =
             malloc(sizeof *m->msg + (size_t)batch * sizeof(rs_event_t))))) {
    free_state(m);
    m = NULL;
    code = RS_ENOMEM;
  }
  /* (out of memory here: every process learns it, and none goes on) */
  agree(STAGE_ALL, code ? 3 : 0,
        code ? "ringsim: out of memory for the run's MPI state" : NULL, NULL,
        NULL, job.wait_ns, &out);
  if (code || out.code) {
    free_state(m);
    return code ? rs__err(errmsg, RS_ENOMEM, "out of memory")
                : agree_err(&out, errmsg);
  }
  m->batch = (size_t)batch;
  m->lost = -1;
  for (int p = 0; p < procs; p++)
    m->tell[p] = MPI_REQUEST_NULL;
  atomic_init(&m->stop, 0);
  atomic_init(&m->told, 0);
  atomic_init(&m->workers_done, 0);
  /* (every process is here: the agreement above said so) */
  MPI_Comm_dup(MPI_COMM_WORLD, &m->data);
  MPI_Comm_dup(MPI_COMM_WORLD, &m->ctrl);
  MPI_Comm_dup(MPI_COMM_WORLD, &m->coll);
  MPI_Comm_dup(MPI_COMM_WORLD, &m->trace);
  /* a bad message returns an error here, rather than killing the job */
  MPI_Comm_set_errhandler(m->data, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(m->trace, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(m->ctrl, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(m->coll, MPI_ERRORS_RETURN);
  host_t me = "";
  int len = 0;
  MPI_Get_processor_name(me, &len);
  MPI_Request req;
  MPI_Iallgather(me, (int)sizeof me, MPI_CHAR, m->hosts, (int)sizeof me,
                 MPI_CHAR, m->coll, &req);
  coll_wait(&req, "gathering the hosts' names");
  for (int p = 0; p < procs; p++)
    m->hosts[p][sizeof *m->hosts - 1] = '\0';
  run->mpi = m;
  run->proc = rank;
  run->procs = procs;
  run->first_local = rs__mpi_first(W, procs, rank);
  run->local_end = rs__mpi_first(W, procs, rank + 1);
  return RS_OK;
}

void rs__mpi_close(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  if (!m)
    return;
  int kept = m->msg_kept; /* (a send MPI still holds: its memory stays) */
  for (int p = 0; p < run->procs; p++) /* (a process gone: MPI keeps it) */
    if (m->tell[p] != MPI_REQUEST_NULL &&
        poll_req(&m->tell[p], rs__now_ns() + 1000000000u, NULL) != 1) {
      MPI_Request_free(&m->tell[p]);
      kept = 1;
    }
  MPI_Comm_free(&m->data);
  MPI_Comm_free(&m->ctrl);
  MPI_Comm_free(&m->coll);
  MPI_Comm_free(&m->trace);
  run->mpi = NULL;
  if (kept) /* the job is ending (rs_mpi_finalize aborts it) */
    return;
  free_state(m);
}

int rs_run_procs(const rs_run_t *run) { return run->procs; }

const char *rs__mpi_host(const rs_run_t *run, int proc) {
  return run->mpi ? ctx(run)->hosts[proc] : "";
}

int64_t rs__mpi_offset(const rs_run_t *run, int proc) {
  return run->mpi ? ctx(run)->offsets[proc] : 0;
}

uint64_t rs__mpi_rtt(const rs_run_t *run, int proc) {
  return run->mpi ? ctx(run)->rtt_ns[proc] : 0;
}

/* ---- the transport --------------------------------------------------- */

/* Wait for req to complete, up to timeout_ns, or until the run aborts.
 * MPI_Test drives MPI's progress; between tests the thread yields for
 * YIELD_NS (a message between processes takes microseconds), then
 * sleeps, from 10 us doubling up to NAP_MAX_NS: a wait must not burn a
 * core that another worker needs, nor oversleep a message by much. */
#define YIELD_NS 100000
#define NAP_MAX_NS 200000
static int wait_req(mpi_edge_t *m, MPI_Request *req, uint64_t timeout_ns,
                    uint64_t *wait_ns, MPI_Status *st) {
  int done = 0;
  if (*req == MPI_REQUEST_NULL)
    return RS_OK;
  /* (an error, a message longer than its slot: a protocol error) */
  if (MPI_Test(req, &done, st ? st : MPI_STATUS_IGNORE) != MPI_SUCCESS)
    return RS_EPROTO;
  if (done)
    return RS_OK;
  uint64_t begin = rs__now_ns(), nap = 10000;
  int rc = RS_OK;
  for (;;) {
    if (atomic_load_explicit(m->abort_flag, memory_order_acquire)) {
      rc = RS_EABORTED;
      break;
    }
    uint64_t waited = rs__now_ns() - begin;
    if (waited >= timeout_ns) {
      rc = RS_ETIMEDOUT;
      break;
    }
    if (waited < YIELD_NS) {
      sched_yield();
    } else {
      sleep_ns(nap);
      nap = nap < NAP_MAX_NS ? 2 * nap : NAP_MAX_NS;
    }
    if (MPI_Test(req, &done, st ? st : MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      rc = RS_EPROTO;
      break;
    }
    if (done)
      break;
  }
  if (wait_ns)
    *wait_ns += rs__now_ns() - begin;
  return rc;
}

static rs_msg_t *slot(mpi_edge_t *m, uint64_t index) {
  return (rs_msg_t *)(void *)(m->mem +
                              (index % (uint64_t)m->slots) * m->slot_bytes);
}

static void post_recv(mpi_edge_t *m, uint64_t index) {
  MPI_Irecv(slot(m, index), (int)m->slot_bytes, MPI_BYTE, m->peer, m->tag,
            m->comm, &m->req[index % (uint64_t)m->slots]);
}

int rs__mpi_edge_open(rs_run_t *run, rs_edge_t *e, size_t payload_bytes,
                      int slots) {
  struct rs_mpi *ctx = run->mpi;
  const int W = run->config.workers;
  mpi_edge_t *m = calloc(1, sizeof *m);
  size_t stride = (sizeof(rs_msg_t) + payload_bytes + 63) / 64 * 64;
  if (!m || stride > (size_t)1 << 30)
    goto fail;
  m->comm = ctx->data;
  m->sending = rs__run_local(run, e->from);
  m->peer = rs__mpi_owner(W, run->procs, m->sending ? e->to : e->from);
  m->tag = e->from * W + e->to;
  m->slots = slots;
  m->slot_bytes = stride;
  m->abort_flag = &run->abort_flag;
  m->offsets = ctx->offsets;
  m->me = run->proc;
  m->mem = rs__aligned_alloc((size_t)slots * stride);
  m->req = malloc((size_t)slots * sizeof *m->req);
  if (!m->mem || !m->req)
    goto fail;
  for (int i = 0; i < slots; i++)
    m->req[i] = MPI_REQUEST_NULL;
  e->tp = &rs__transport_mpi;
  e->mpi = m;
  if (!m->sending)
    for (int i = 0; i < slots; i++)
      post_recv(m, (uint64_t)i);
  return RS_OK;
fail:
  if (m) {
    free(m->mem);
    free(m->req);
  }
  free(m);
  return RS_ENOMEM;
}

void rs__mpi_edge_close(rs_edge_t *e) {
  mpi_edge_t *m = e->mpi;
  if (!m)
    return;
  for (int i = 0; i < m->slots; i++) {
    if (m->req[i] == MPI_REQUEST_NULL)
      continue;
    int done = 0;
    if (!m->sending) { /* a receive nobody will match */
      MPI_Cancel(&m->req[i]);
      MPI_Wait(&m->req[i], MPI_STATUS_IGNORE);
      continue;
    }
    MPI_Test(&m->req[i], &done, MPI_STATUS_IGNORE);
    if (!done) { /* a failed run: its receiver stopped; MPI keeps it */
      MPI_Request_free(&m->req[i]);
      m->leaked = 1;
    }
  }
  if (!m->leaked)
    free(m->mem);
  free(m->req);
  free(m);
  e->mpi = NULL;
}

/* Take the next slot (waiting for its last send to complete), fill it
 * with hdr and its payload, and send it. */
static int post_send(rs_edge_t *e, const rs_msg_t *hdr, uint64_t seq,
                     const void *src, int corrupt, uint64_t begin,
                     uint64_t timeout_ns, uint64_t *wait_ns) {
  mpi_edge_t *m = e->mpi;
  rs_chan_t *ch = &e->chan;
  MPI_Request *req = &m->req[m->used % (uint64_t)m->slots];
  int rc = wait_req(m, req, timeout_ns, wait_ns, NULL);
  if (rc)
    return rc;
  rs_msg_t *msg = slot(m, m->used++);
  size_t bytes = hdr->phase == PHASE_FIN ? 0 : hdr->elems * ch->elem_bytes;
  unsigned char *payload = rs__msg_slot_payload(msg);
  *msg = *hdr;
  msg->seq = seq;
  msg->send_begin_ns = begin;
  msg->data = NULL;
  if (ch->pack && bytes && src)
    ch->pack(payload, src, hdr->elems);
  else if (bytes && src)
    memcpy(payload, src, bytes);
  msg->checksum = ch->checksum ? rs__checksum(payload, bytes) : 0;
  if (corrupt && bytes)
    payload[bytes / 2] ^= 0x10;
  else if (corrupt)
    msg->checksum ^= 1;
  msg->send_end_ns = rs__now_ns();
  MPI_Isend(msg, (int)(sizeof *msg + bytes), MPI_BYTE, m->peer, m->tag, m->comm,
            req);
  return RS_OK;
}

static int mpi_send(rs_edge_t *e, const rs_msg_t *hdr, const void *src,
                    rs_wire_t wire, uint64_t timeout_ns, uint64_t *wait_ns) {
  rs_chan_t *ch = &e->chan;
  uint64_t begin = rs__now_ns();
  uint64_t seq = ch->send_seq++;
  if (wire == RS_WIRE_DROP)
    return RS_OK; /* its sequence number is never delivered */
  int rc = post_send(e, hdr, seq, src, wire == RS_WIRE_CORRUPT, begin,
                     timeout_ns, wait_ns);
  if (rc == RS_OK && wire == RS_WIRE_DUP)
    rc = post_send(e, hdr, seq, src, 0, begin, timeout_ns, wait_ns);
  return rc;
}

/* The next message on e, received whole into its slot. */
static int next_message(rs_edge_t *e, rs_msg_t **out, uint64_t timeout_ns,
                        uint64_t *wait_ns) {
  mpi_edge_t *m = e->mpi;
  MPI_Status st;
  int rc = wait_req(m, &m->req[m->used % (uint64_t)m->slots], timeout_ns,
                    wait_ns, &st);
  if (rc)
    return rc;
  rs_msg_t *msg = slot(m, m->used);
  /* Whatever a peer sent, nothing is read past what arrived: a message is
   * its header and exactly the payload it says (MPI wrote at most the
   * slot: a longer one failed above). */
  int count = 0;
  MPI_Get_count(&st, MPI_BYTE, &count);
  const size_t got = count > 0 ? (size_t)count : 0;
  if (got < sizeof *msg ||
      (msg->phase != PHASE_FIN &&
       (msg->elems > (got - sizeof *msg) /
                         (e->chan.elem_bytes ? e->chan.elem_bytes : 1) ||
        sizeof *msg + msg->elems * e->chan.elem_bytes != got))) {
    e->chan.bad_seq = e->chan.recv_seq; /* (not a sequence fault) */
    return RS_EPROTO;
  }
  /* The sender's times, into this process's clock. */
  int64_t shift = m->offsets[m->me] - m->offsets[m->peer];
  msg->send_begin_ns = (uint64_t)((int64_t)msg->send_begin_ns + shift);
  msg->send_end_ns = (uint64_t)((int64_t)msg->send_end_ns + shift);
  msg->data = rs__msg_slot_payload(msg);
  *out = msg;
  return RS_OK;
}

/* Give the slot of the message just read back to MPI for a later one. */
static void repost(mpi_edge_t *m) { post_recv(m, m->used++); }

static int mpi_recv(rs_edge_t *e, rs_msg_t **out, uint64_t timeout_ns,
                    uint64_t *wait_ns) {
  rs_chan_t *ch = &e->chan;
  rs_msg_t *msg;
  int rc = next_message(e, &msg, timeout_ns, wait_ns);
  if (rc)
    return rc;
  if (msg->phase == PHASE_FIN) { /* finished without sending it: lost */
    ch->bad_end = 1;
    ch->bad_seq = msg->seq;
    return RS_EPROTO;
  }
  if (msg->seq != ch->recv_seq) {
    ch->bad_seq = msg->seq;
    return RS_EPROTO;
  }
  if (ch->checksum &&
      rs__checksum(msg->data, msg->elems * ch->elem_bytes) != msg->checksum)
    return RS_ECORRUPT;
  ch->recv_seq++;
  *out = msg;
  return RS_OK;
}

static void mpi_release(rs_edge_t *e) { repost(e->mpi); }

static void mpi_finish(rs_edge_t *e) {
  rs_chan_t *ch = &e->chan;
  rs_msg_t fin = {.phase = PHASE_FIN};
  /* (a run that aborts meanwhile sends no end: nobody waits for it) */
  post_send(e, &fin, ch->send_seq, NULL, 0, rs__now_ns(), UINT64_MAX, NULL);
}

static int mpi_end(rs_edge_t *e, uint64_t timeout_ns, uint64_t *wait_ns) {
  rs_chan_t *ch = &e->chan;
  rs_msg_t *msg;
  int rc = next_message(e, &msg, timeout_ns, wait_ns);
  if (rc)
    return rc;
  ch->bad_end = 1;
  if (msg->phase != PHASE_FIN) { /* one left over: delivered twice */
    ch->bad_seq = msg->seq;
    return RS_EPROTO;
  }
  if (msg->seq != ch->recv_seq) { /* the last one was lost */
    ch->bad_seq = msg->seq;
    return RS_EPROTO;
  }
  ch->bad_end = 0;
  ch->ends_seen++;
  repost(e->mpi);
  return RS_OK;
}

static int mpi_pause(rs_edge_t *e, uint64_t ns) {
  mpi_edge_t *m = e->mpi;
  uint64_t end = rs__now_ns() + ns;
  for (uint64_t now; (now = rs__now_ns()) < end;) {
    if (atomic_load_explicit(m->abort_flag, memory_order_acquire))
      return RS_EABORTED;
    sleep_ns(end - now < 1000000 ? end - now : 1000000);
  }
  return RS_OK;
}

/* Waiters poll the abort flag: nothing to wake. */
static void mpi_wake(rs_edge_t *e) { (void)e; }

const rs_transport_t rs__transport_mpi = {"mpi",       mpi_send,   mpi_recv,
                                          mpi_release, mpi_finish, mpi_end,
                                          mpi_pause,   mpi_wake};

/* ---- faults from other processes ------------------------------------- */

/* A signal stopped this process's run: the others stop too, and rank 0
 * marks the run interrupted (docs/mpi.md). */
static void tell_interrupt(rs_run_t *run) {
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
    tell_interrupt(run);
    int done = 0;
    MPI_Test(&req, &done, &st);
    if (!done) {
      sleep_ns(1000000);
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

/* ---- the trace stream: records to rank 0 during the run --------------
 *
 * Each worker records into its ring (xfer.h); the process's tracer takes
 * a ring's records in order, at most a batch at a time, once it holds half
 * a batch, or its oldest waited BATCH_AGE_NS, or the workers stopped. Rank
 * 0's tracer writes its own workers' records straight from their rings,
 * and every batch that comes from another process, into the trace's open
 * transaction (trace.h), in the order they come: each receiver's records
 * in the order it received them. Another process's tracer sends its
 * batches with MPI_Send on the trace communicator: a tracer that rank 0
 * has not yet drained waits, its workers' rings fill, and they wait too
 * (back-pressure, not memory). */

static size_t ring_held(rs_event_buf_t *buf) {
  return atomic_load_explicit(&buf->written, memory_order_acquire) -
         atomic_load_explicit(&buf->taken, memory_order_relaxed);
}

/* Should the tracer take ring's records now? */
static int due(const struct rs_mpi *m, size_t held, int finishing,
               uint64_t last_ns, uint64_t now) {
  return held && (finishing || held >= (m->batch + 1) / 2 ||
                  now - last_ns >= BATCH_AGE_NS);
}

/* Times recorded in process from, into rank 0's clock. */
static void shift_times(const struct rs_mpi *m, int from, rs_event_t *ev,
                        size_t n) {
  const int64_t shift = -m->offsets[from];
  for (size_t i = 0; i < n; i++) {
    ev[i].send_begin_ns = (uint64_t)((int64_t)ev[i].send_begin_ns + shift);
    ev[i].send_end_ns = (uint64_t)((int64_t)ev[i].send_end_ns + shift);
    ev[i].recv_begin_ns = (uint64_t)((int64_t)ev[i].recv_begin_ns + shift);
    ev[i].recv_end_ns = (uint64_t)((int64_t)ev[i].recv_end_ns + shift);
  }
}

/* This process's held records at most: its rings' fullest, plus a batch
 * in hand (sent, or for rank 0 received) if there was one. */
static void count_held(rs_run_t *run, trace_count_t *c, int in_hand) {
  struct rs_mpi *m = run->mpi;
  c->held_max = in_hand ? m->batch : 0;
  for (int r = run->first_local; r < run->local_end; r++)
    c->held_max += run->workers[r].events.held_max;
  c->bound = (uint64_t)(run->local_end - run->first_local + 1) * m->batch;
}

static void nap_ns(uint64_t *nap, int moved) {
  if (moved) {
    *nap = 20000;
    return;
  }
  sleep_ns(*nap);
  *nap = *nap < 1000000 ? 2 * *nap : 1000000;
}

/* The due rings of this process's workers, each emptied of at most one
 * batch through take (the records in at most two pieces, in place: a
 * worker writes none of those slots until taken passes them), counted in
 * c; returns whether any moved. */
typedef void take_fn(rs_run_t *run, int worker, const rs_event_t *a, size_t na,
                     const rs_event_t *b, size_t nb);

static int drain_due(rs_run_t *run, uint64_t *last, int finishing,
                     trace_count_t *c, take_fn *take) {
  struct rs_mpi *m = run->mpi;
  const int L = run->local_end - run->first_local;
  const uint64_t now = rs__now_ns();
  int moved = 0;
  for (int i = 0; i < L; i++) {
    rs_event_buf_t *buf = &run->workers[run->first_local + i].events;
    if (!buf->ring ||
        !due(m, ring_held(buf), finishing, last ? last[i] : 0, now))
      continue;
    size_t h = atomic_load_explicit(&buf->taken, memory_order_relaxed);
    size_t n = ring_held(buf) < m->batch ? ring_held(buf) : m->batch;
    size_t at = h % buf->capacity;
    size_t first = n < buf->capacity - at ? n : buf->capacity - at;
    take(run, run->first_local + i, buf->events + at, first, buf->events,
         n - first);
    atomic_store_explicit(&buf->taken, h + n, memory_order_release);
    c->records += n;
    c->batches++;
    c->batches_during += !finishing;
    if (last)
      last[i] = now;
    moved = 1;
  }
  return moved;
}

/* The tracer's message to rank 0. A rank 0 that has not taken it when
 * this process's workers have stopped, for finish_wait, has stopped
 * answering: the stream ends there. */
static void send_batch(rs_run_t *run, int bytes) {
  struct rs_mpi *m = run->mpi;
  if (m->lost >= 0)
    return;
  MPI_Request req;
  MPI_Isend(m->msg, bytes, MPI_BYTE, 0, TAG_TRACE, m->trace, &req);
  uint64_t nap = 10000, since = 0;
  for (;;) {
    int done = 0;
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done)
      return;
    if (atomic_load_explicit(&m->workers_done, memory_order_acquire)) {
      uint64_t now = rs__now_ns();
      if (!since)
        since = now;
      else if (now - since >= finish_wait(run)) {
        MPI_Request_free(&req); /* (the job ends: m->msg is kept for it) */
        m->msg_kept = 1;
        lose(run, 0, now - since, "taking this process's trace records");
        return;
      }
    }
    sleep_ns(nap);
    nap = nap < 1000000 ? 2 * nap : 1000000;
  }
}

/* A batch to rank 0, in one message. */
static void take_send(rs_run_t *run, int worker, const rs_event_t *a, size_t na,
                      const rs_event_t *b, size_t nb) {
  struct rs_mpi *m = run->mpi;
  trace_msg_t *msg = m->msg;
  memcpy(msg->events, a, na * sizeof *a);
  memcpy(msg->events + na, b, nb * sizeof *b);
  msg->dst = worker;
  msg->count = (int32_t)(na + nb);
  send_batch(run, (int)(sizeof *msg + (na + nb) * sizeof(rs_event_t)));
}

/* A batch of rank 0's own into the trace. */
static void take_write(rs_run_t *run, int worker, const rs_event_t *a,
                       size_t na, const rs_event_t *b, size_t nb) {
  rs__trace_stream_write(run, worker, a, na);
  rs__trace_stream_write(run, worker, b, nb);
}

/* Another process's tracer: its rings to rank 0, then its end. */
static void trace_send(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  trace_msg_t *msg = m->msg;
  trace_count_t c = {0};
  const int L = run->local_end - run->first_local;
  uint64_t *last = calloc((size_t)L, sizeof *last), nap = 20000;
  for (int done = 0; !done;) {
    const int finishing =
        atomic_load_explicit(&m->workers_done, memory_order_acquire);
    int moved = drain_due(run, last, finishing, &c, take_send);
    done = finishing && !moved; /* (finishing: every ring is due) */
    if (!done)
      nap_ns(&nap, moved);
  }
  free(last);
  count_held(run, &c, c.batches > 0);
  msg->dst = -1;
  msg->count = 0;
  msg->counts = c;
  send_batch(run, (int)sizeof *msg);
}

/* Rank 0's tracer: its own rings and every other process's batches into
 * the trace, until every process has ended its stream. */
/* Is a batch that came from process from whole and its own: one of its
 * workers' records, at most a batch, and exactly as long as it says? */
static int batch_ok(const rs_run_t *run, const trace_msg_t *in, int from,
                    int bytes) {
  const struct rs_mpi *m = run->mpi;
  if (bytes < (int)sizeof *in || in->count < 0 ||
      (size_t)in->count > m->batch ||
      (size_t)bytes != sizeof *in + (size_t)in->count * sizeof(rs_event_t))
    return 0;
  const int W = run->config.workers;
  return in->dst < 0
             ? in->dst == -1 && in->count == 0
             : in->dst < W && rs__mpi_owner(W, run->procs, in->dst) == from;
}

static void trace_write(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  trace_msg_t *in = m->msg;
  trace_count_t *c = &m->counts[0];
  const int L = run->local_end - run->first_local;
  uint64_t *last = calloc((size_t)L, sizeof *last), nap = 20000, since = 0;
  int ends = 0;
  MPI_Request req = MPI_REQUEST_NULL;
  const int bytes = (int)(sizeof *in + m->batch * sizeof(rs_event_t));
  if (run->procs > 1)
    MPI_Irecv(in, bytes, MPI_BYTE, MPI_ANY_SOURCE, TAG_TRACE, m->trace, &req);
  for (int done = 0; !done;) {
    const int finishing =
        atomic_load_explicit(&m->workers_done, memory_order_acquire);
    int moved = 0;
    while (ends < run->procs - 1) {
      int got = 0, count = 0;
      MPI_Status st;
      int rc = MPI_Test(&req, &got, &st);
      if (rc == MPI_SUCCESS && !got)
        break;
      moved = 1;
      MPI_Get_count(&st, MPI_BYTE, &count);
      const int from = st.MPI_SOURCE;
      if (rc != MPI_SUCCESS || from <= 0 || from >= run->procs ||
          m->ended[from] || !batch_ok(run, in, from, count)) {
        /* (whatever a peer sends, nothing is written past its batch) */
        rs__run_fail(run, RS_EPROTO,
                     "rank 0 received a damaged trace batch from rank %d",
                     from);
      } else if (in->dst < 0) {
        m->counts[from] = in->counts;
        m->ended[from] = 1;
        ends++;
      } else {
        shift_times(m, from, in->events, (size_t)in->count);
        rs__trace_stream_write(run, in->dst, in->events, (size_t)in->count);
        c->received_during += !finishing;
      }
      if (ends < run->procs - 1)
        MPI_Irecv(in, bytes, MPI_BYTE, MPI_ANY_SOURCE, TAG_TRACE, m->trace,
                  &req);
    }
    moved |= drain_due(run, last, finishing, c, take_write);
    done = finishing && !moved && ends == run->procs - 1;
    if (!done && finishing && ends < run->procs - 1) {
      /* every process ends its stream once its workers stopped */
      uint64_t now = rs__now_ns();
      if (moved || !since)
        since = now;
      else if (now - since >= finish_wait(run)) {
        int p = 1;
        while (p < run->procs && m->ended[p])
          p++;
        lose(run, p, now - since, "ending its trace stream");
        MPI_Cancel(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        done = 1;
      }
    }
    if (!done)
      nap_ns(&nap, moved);
  }
  free(last);
  count_held(run, c, run->procs > 1);
}

static void *tracer_main(void *arg) {
  rs_run_t *run = arg;
  if (run->proc == 0)
    trace_write(run);
  else
    trace_send(run);
  return NULL;
}

size_t rs__mpi_trace_batch(const rs_run_t *run) { return ctx(run)->batch; }

int rs__mpi_trace_start(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  if (!run->config.traced)
    return RS_OK;
  m->streamed = 1;
  if (pthread_create(&m->tracer, NULL, tracer_main, run) == 0) {
    m->tracing = 1;
    return RS_OK;
  }
  /* No tracer: the workers record nothing (rs__mpi_finish ends the
   * stream), and the run fails before they start. */
  for (int r = run->first_local; r < run->local_end; r++) {
    rs_event_buf_t *buf = &run->workers[r].events;
    free(buf->events);
    buf->events = NULL;
    buf->ring = 0;
  }
  return rs__run_fail(run, RS_ESYS, "cannot start the MPI trace's thread");
}

/* The workers stopped: the tracer drains what is left, ends its stream
 * (rank 0: takes every process's end), and stops. */
static void trace_finish(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  if (!m->streamed)
    return;
  atomic_store_explicit(&m->workers_done, 1, memory_order_release);
  if (m->tracing) {
    RS_PTHREAD_CHECK(pthread_join(m->tracer, NULL));
    m->tracing = 0;
  } else {
    tracer_main(run);
  }
}

int rs__mpi_trace_json(const rs_run_t *run, char *buf, size_t cap) {
  const struct rs_mpi *m = run->mpi;
  if (!m || !m->streamed || run->proc != 0)
    return 0;
  size_t len = (size_t)snprintf(
      buf, cap,
      "{\"batch_records\": %zu, "
      "\"received_during_run\": %llu, "
      "\"procs\": [",
      m->batch, (unsigned long long)m->counts[0].received_during);
  for (int p = 0; p < run->procs && len < cap; p++) {
    const trace_count_t *c = &m->counts[p];
    len += (size_t)snprintf(
        buf + len, cap - len,
        "%s{\"rank\": %d, \"records\": %llu, \"batches\": %llu, "
        "\"batches_during_run\": %llu, \"records_held_max\": %llu, "
        "\"records_bound\": %llu}",
        p ? ", " : "", p, (unsigned long long)c->records,
        (unsigned long long)c->batches, (unsigned long long)c->batches_during,
        (unsigned long long)c->held_max, (unsigned long long)c->bound);
  }
  if (len + 3 > cap)
    return 0; /* (cap too small: a bug) */
  snprintf(buf + len, cap - len, "]}");
  return 1;
}

/* ---- start and finish ------------------------------------------------ */

/* Rank 0 pings each process PINGS times; the exchange with the least
 * round trip gives the offset: the other clock read at the midpoint of
 * rank 0's send and receipt, within half that round trip. */
static void measure_offsets(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  MPI_Request req[2];
  for (int p = 1; p < run->procs; p++) {
    if (run->proc == 0) {
      uint64_t best = UINT64_MAX;
      for (int i = 0; i < PINGS; i++) {
        uint64_t there, t1 = rs__now_ns();
        MPI_Isend(NULL, 0, MPI_BYTE, p, TAG_PING, m->coll, &req[0]);
        MPI_Irecv(&there, 1, MPI_UINT64_T, p, TAG_PING, m->coll, &req[1]);
        coll_wait(&req[1], "measuring the clocks");
        uint64_t t2 = rs__now_ns();
        coll_wait(&req[0], "measuring the clocks");
        if (t2 - t1 < best) {
          best = t2 - t1;
          m->offsets[p] = (int64_t)(there - (t1 + (t2 - t1) / 2));
          m->rtt_ns[p] = best;
        }
      }
    } else if (run->proc == p) {
      for (int i = 0; i < PINGS; i++) {
        MPI_Irecv(NULL, 0, MPI_BYTE, 0, TAG_PING, m->coll, &req[0]);
        coll_wait(&req[0], "measuring the clocks");
        uint64_t now = rs__now_ns();
        MPI_Isend(&now, 1, MPI_UINT64_T, 0, TAG_PING, m->coll, &req[1]);
        coll_wait(&req[1], "measuring the clocks");
      }
    }
  }
  MPI_Ibcast(m->offsets, run->procs, MPI_INT64_T, 0, m->coll, &req[0]);
  coll_wait(&req[0], "measuring the clocks");
  MPI_Ibcast(m->rtt_ns, run->procs, MPI_UINT64_T, 0, m->coll, &req[0]);
  coll_wait(&req[0], "measuring the clocks");
}

/* An agreement's refusal as the run's failure. */
static int fail_agreed(rs_run_t *run, const agree_out_t *out) {
  const char *msg = out->msg;
  if (strncmp(msg, "ringsim: ", 9) == 0)
    msg += 9;
  return rs__run_fail(run, out->code == 2 ? RS_EINVAL : RS_EABORTED, "%s",
                      msg[0] ? msg : "another MPI process could not go on");
}

int rs__mpi_inputs(rs_run_t *run) {
  /* The inputs, as the options were (rs__mpi_open): the check's
   * collectives depend on how they were made. */
  char desc[256];
  if (run->generated)
    snprintf(desc, sizeof desc, "grads=generated: init %d, seed %llu\n",
             (int)run->init, (unsigned long long)run->seed);
  else
    snprintf(desc, sizeof desc, "grads=given: --grads files or inline\n");
  agree_out_t out;
  agree(STAGE_INPUTS, 0, NULL, NULL, desc, job.wait_ns, &out);
  return out.code ? fail_agreed(run, &out) : RS_OK;
}

int rs__mpi_start(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  measure_offsets(run);
  if (pthread_create(&m->listener, NULL, listen_main, run) != 0)
    return rs__run_fail(run, RS_ESYS, "cannot start the MPI fault listener");
  m->listening = 1;
  return RS_OK;
}

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
        seqs[2 * i] = rs__run_local(run, e->from) ? e->chan.send_seq : 0;
        seqs[2 * i + 1] = rs__run_local(run, e->to) ? e->chan.recv_seq : 0;
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
      coll_wait(&req[0], "sending the workers' states");
      coll_wait(&req[1], "sending the workers' states");
    }
  } else {
    for (int p = 1; p < run->procs && ok; p++) {
      if (p == m->lost)
        continue;
      const int first = rs__mpi_first(W, run->procs, p);
      const int L = rs__mpi_first(W, run->procs, p + 1) - first;
      MPI_Request req[2];
      MPI_Status st[2];
      int got[2] = {0, 0};
      MPI_Irecv(&states[first], (int)((size_t)L * sizeof *states), MPI_BYTE, p,
                TAG_STATE, m->coll, &req[0]);
      MPI_Irecv(seqs, (int)seq_bytes, MPI_BYTE, p, TAG_STATE, m->coll, &req[1]);
      coll_wait_st(&req[0], &st[0], "taking the workers' states");
      coll_wait_st(&req[1], &st[1], "taking the workers' states");
      MPI_Get_count(&st[0], MPI_BYTE, &got[0]);
      MPI_Get_count(&st[1], MPI_BYTE, &got[1]);
      if (got[0] != (int)((size_t)L * sizeof *states) ||
          got[1] != (int)seq_bytes)
        continue; /* (it had no memory for them: unknown) */
      for (int r = first; r < first + L; r++)
        unpack_worker(run, &run->workers[r], p, &states[r]);
      for (int i = 0; i < E; i++) {
        rs_edge_t *e = &run->edges[i];
        if (rs__mpi_owner(W, run->procs, e->from) == p)
          e->chan.send_seq = seqs[2 * i];
        if (rs__mpi_owner(W, run->procs, e->to) == p)
          e->chan.recv_seq = seqs[2 * i + 1];
      }
    }
  }
  free(seqs);
  free(states);
}

void rs__mpi_finish(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  if (m->listening) {
    atomic_store(&m->stop, 1);
    RS_PTHREAD_CHECK(pthread_join(m->listener, NULL));
    m->listening = 0;
  }
  /* (a signal here stopped the run: the others wait for no timeout) */
  tell_interrupt(run);
  rs__run_take_interrupt(run);
  trace_finish(run); /* every record is in rank 0's trace (if traced) */
  /* Every process learns the run's first failure: a fault told while a
   * process's workers were finishing may have come after its listener
   * stopped. The lowest-ranked failed process's fault stands for all. */
  const int failed = run->result.status != RS_OK;
  const int64_t aux[3] = {run->fault_worker, (int64_t)run->fault_ns,
                          run->result.status};
  agree_out_t out;
  if (m->lost < 0) {
    agree(STAGE_FINISH, failed ? 3 : 0, failed ? run->errmsg : NULL, aux, NULL,
          finish_wait(run), &out);
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
    rs__run_fail(run, RS_ETIMEDOUT, "%s", job.end.msg + 9);
    RS_PTHREAD_CHECK(pthread_mutex_lock(&run->err_mu));
    if (strncmp(run->errmsg, job.end.msg + 9, strlen(job.end.msg + 9))) {
      char both[3 * RS_ERRMSG_MAX];
      snprintf(both, sizeof both, "%s; before that: %s", job.end.msg + 9,
               run->errmsg);
      memcpy(run->errmsg, both, sizeof run->errmsg - 1); /* (truncated) */
      run->errmsg[sizeof run->errmsg - 1] = '\0';
    }
    run->fault_worker = -1; /* (no chain of waits to follow to it) */
    RS_PTHREAD_CHECK(pthread_mutex_unlock(&run->err_mu));
  }
  if (run->result.status == RS_EINTERRUPTED && m->interrupted_elsewhere)
    job.said_interrupt = 1; /* (rank 0 says it, naming the rank) */
  gather_states(run);
}

int rs__mpi_all(rs_run_t *run, int ok) {
  (void)run;
  agree_out_t out;
  agree(STAGE_ALL, ok ? 0 : 3, NULL, NULL, NULL, job.wait_ns, &out);
  return out.code == 0;
}

/* The collectives of the run's check and after (on coll): each waits as
 * an agreement waits (coll_wait), never for ever. */
static void allreduce(const void *in, void *out, int n, MPI_Datatype type,
                      MPI_Op op, MPI_Comm comm, const char *what) {
  MPI_Request req;
  MPI_Iallreduce(in, out, n, type, op, comm, &req);
  coll_wait(&req, what);
}

static void bcast(void *buf, int n, MPI_Datatype type, int root, MPI_Comm comm,
                  const char *what) {
  MPI_Request req;
  MPI_Ibcast(buf, n, type, root, comm, &req);
  coll_wait(&req, what);
}

static void gather(const void *in, int n, MPI_Datatype type, void *out,
                   int root, MPI_Comm comm, const char *what) {
  MPI_Request req;
  MPI_Igather(in, n, type, out, n, type, root, comm, &req);
  coll_wait(&req, what);
}

/* Workers not identical: list them as one process does (check.h). Every
 * block whose hash differs between processes, or whose elements differ
 * between a process's workers, is sent from rank 0 (worker 0's) to every
 * process, one at a time, and each compares its own workers with it; the
 * counts are summed, and rank 0 merges the first RS_MISMATCH_LIST of
 * every process's list. Only those blocks cross, and a process holds one
 * at a time. (Collective; out of memory anywhere: no listing.) */
static void list_mismatches(rs_run_t *run, const uint64_t *lo,
                            const uint64_t *hi, size_t blocks) {
  struct rs_mpi *m = run->mpi;
  const size_t n = run->elems, size = run->buf_elem_bytes;
  const int W = run->config.workers;
  unsigned char *differ = calloc(blocks, 1);
  unsigned char *block = malloc(HASH_ELEMS * size);
  rs_mismatch_t *all =
      malloc((size_t)run->procs * RS_MISMATCH_LIST * sizeof *all);
  uint64_t *listed = calloc((size_t)run->procs, sizeof *listed);
  rs_mismatch_t mine[RS_MISMATCH_LIST];
  size_t mine_listed = 0;
  if (!rs__mpi_all(run, differ && block && all && listed && run->mismatches))
    goto done;
  for (size_t b = 0; b < blocks; b++) {
    size_t start = b * HASH_ELEMS;
    size_t len = n - start < HASH_ELEMS ? n - start : HASH_ELEMS;
    differ[b] = lo[b] != hi[b];
    for (int w = run->first_local + 1; w < run->local_end && !differ[b]; w++)
      differ[b] =
          memcmp(run->bufs[w] + start * size,
                 run->bufs[run->first_local] + start * size, len * size) != 0;
  }
  allreduce(MPI_IN_PLACE, differ, (int)blocks, MPI_UNSIGNED_CHAR, MPI_MAX,
            m->coll, "the check");
  for (size_t b = 0; b < blocks; b++) {
    if (!differ[b])
      continue;
    size_t start = b * HASH_ELEMS;
    size_t len = n - start < HASH_ELEMS ? n - start : HASH_ELEMS;
    if (run->proc == 0)
      memcpy(block, run->bufs[0] + start * size, len * size);
    bcast(block, (int)(len * size), MPI_BYTE, 0, m->coll, "the check");
    rs__check_list_block(run, start, len, block, run->mismatches, mine,
                         &mine_listed);
  }
  allreduce(MPI_IN_PLACE, run->mismatches, W, MPI_UINT64_T, MPI_SUM, m->coll,
            "the check");
  uint64_t count = mine_listed;
  gather(&count, 1, MPI_UINT64_T, listed, 0, m->coll, "the check");
  gather(mine, (int)sizeof mine, MPI_BYTE, all, 0, m->coll, "the check");
  run->mismatches_listed = 0;
  for (int p = 0; run->proc == 0 && p < run->procs; p++)
    rs__check_list_merge(run->first_mismatches, &run->mismatches_listed,
                         all + (size_t)p * RS_MISMATCH_LIST, (size_t)listed[p]);
done:
  free(differ);
  free(block);
  free(all);
  free(listed);
}

void rs__mpi_check_merge(rs_run_t *run, int *identical) {
  struct rs_mpi *m = run->mpi;
  const size_t n = run->elems, size = run->buf_elem_bytes;
  const size_t blocks = n ? (n + HASH_ELEMS - 1) / HASH_ELEMS : 1;
  const size_t params = rs_model_param_count(run->model);
  uint64_t *lo = malloc(2 * blocks * sizeof *lo);
  double *worst = malloc(4 * (params ? params : 1) * sizeof *worst);
  uint64_t *counts = malloc(4 * (params ? params : 1) * sizeof *counts);
  int ok = lo && worst && counts;
  /* (out of memory anywhere: every process calls the same collectives
   * with what it has, and the result counts as not identical) */
  int same = rs__mpi_all(run, ok && *identical);
  if (!rs__mpi_all(run, ok)) {
    *identical = 0;
    goto done;
  }
  uint64_t *hi = lo + blocks;
  const unsigned char *mine = run->bufs[run->first_local];
  for (size_t b = 0; b < blocks; b++) {
    size_t start = b * HASH_ELEMS;
    size_t len = n - start < HASH_ELEMS ? n - start : HASH_ELEMS;
    lo[b] = n ? rs__checksum(mine + start * size, len * size) : 0;
  }
  memcpy(hi, lo, blocks * sizeof *hi); /* every hash's least and most */
  allreduce(MPI_IN_PLACE, lo, (int)blocks, MPI_UINT64_T, MPI_MIN, m->coll,
            "the check");
  allreduce(MPI_IN_PLACE, hi, (int)blocks, MPI_UINT64_T, MPI_MAX, m->coll,
            "the check");
  for (size_t b = 0; b < blocks; b++)
    same &= lo[b] == hi[b];
  *identical = same;
  if (!same) /* which elements, of which workers (same everywhere) */
    list_mismatches(run, lo, hi, blocks);
  /* The worst of every process's check, param by param. */
  for (size_t p = 0; p < params; p++) {
    const rs_param_check_t *c = &run->checks[p];
    worst[4 * p] = c->max_abs_err;
    worst[4 * p + 1] = c->max_rel_err;
    worst[4 * p + 2] = c->bound;
    worst[4 * p + 3] = c->worst_ratio;
    counts[4 * p] = c->differing;
    counts[4 * p + 1] = c->wrong;
    counts[4 * p + 2] = c->order_differing;
    counts[4 * p + 3] = c->order_max_ulps;
  }
  allreduce(MPI_IN_PLACE, worst, (int)(4 * params), MPI_DOUBLE, MPI_MAX,
            m->coll, "the check");
  allreduce(MPI_IN_PLACE, counts, (int)(4 * params), MPI_UINT64_T, MPI_MAX,
            m->coll, "the check");
  for (size_t p = 0; p < params; p++) {
    rs_param_check_t *c = &run->checks[p];
    c->max_abs_err = worst[4 * p];
    c->max_rel_err = worst[4 * p + 1];
    c->bound = worst[4 * p + 2];
    c->worst_ratio = worst[4 * p + 3];
    c->differing = counts[4 * p];
    c->wrong = counts[4 * p + 1];
    c->order_differing = counts[4 * p + 2];
    c->order_max_ulps = counts[4 * p + 3];
  }
done:
  free(lo);
  free(worst);
  free(counts);
}

/* ---- MPI_Allreduce beside ringsim (ringsim bench) --------------------- */

int rs_run_time_mpi_allreduce(rs_run_t *run, int warmup, int iterations,
                              uint64_t *ns, char *errmsg) {
  struct rs_mpi *m = run->mpi;
  if (!m)
    return rs__err(errmsg, RS_EINVAL, "the run is not over MPI");
  if (run->dtype != RS_DTYPE_F32 && run->dtype != RS_DTYPE_F64)
    return rs__err(errmsg, RS_EINVAL,
                   "MPI_Allreduce is timed on f32 and f64 only");
  MPI_Datatype type = run->dtype == RS_DTYPE_F64 ? MPI_DOUBLE : MPI_FLOAT;
  MPI_Op op = run->config.op == RS_OP_MIN    ? MPI_MIN
              : run->config.op == RS_OP_MAX  ? MPI_MAX
              : run->config.op == RS_OP_PROD ? MPI_PROD
                                             : MPI_SUM;
  const size_t n = run->elems, bytes = n * run->buf_elem_bytes;
  void *in = malloc(bytes ? bytes : 1), *out = malloc(bytes ? bytes : 1);
  int ok = in && out && n <= (size_t)INT32_MAX;
  if (ok)
    memcpy(in, run->bufs[run->first_local], bytes);
  if (!rs__mpi_all(run, ok)) {
    free(in);
    free(out);
    return rs__err(errmsg, RS_ENOMEM, "out of memory for MPI_Allreduce");
  }
  for (int i = 0; i < warmup; i++)
    MPI_Allreduce(in, out, (int)n, type, op, m->coll);
  {
    MPI_Request req;
    MPI_Ibarrier(m->coll, &req);
    coll_wait(&req, "timing MPI_Allreduce");
  }
  uint64_t t0 = rs__now_ns();
  for (int i = 0; i < iterations; i++)
    MPI_Allreduce(in, out, (int)n, type, op, m->coll);
  uint64_t mine = (rs__now_ns() - t0) /
                  (uint64_t)(iterations > 0 ? iterations : 1),
           slowest = 0;
  allreduce(&mine, &slowest, 1, MPI_UINT64_T, MPI_MAX, m->coll,
            "timing MPI_Allreduce");
  *ns = slowest;
  free(in);
  free(out);
  return RS_OK;
}

void rs__mpi_reduce_sums(const rs_run_t *run, void *acc, void *amp, size_t len,
                         int f64) {
  MPI_Datatype type = f64 ? MPI_LONG_DOUBLE : MPI_DOUBLE;
  const rs_op_t op = run->config.op;
  MPI_Op acc_op = op == RS_OP_MIN    ? MPI_MIN
                  : op == RS_OP_MAX  ? MPI_MAX
                  : op == RS_OP_PROD ? MPI_PROD
                                     : MPI_SUM;
  MPI_Op amp_op = op == RS_OP_PROD ? MPI_PROD : MPI_SUM;
  allreduce(MPI_IN_PLACE, acc, (int)len, type, acc_op, ctx(run)->coll,
            "the reference of the inputs");
  allreduce(MPI_IN_PLACE, amp, (int)len, type, amp_op, ctx(run)->coll,
            "the reference of the inputs");
}
