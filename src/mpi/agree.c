/* agree.c - the MPI job, and every agreement between its processes.
 *
 * rs_mpi_init starts MPI and joins the job; each agreement (mpi_internal.h)
 * is one exchange with rank 0 at the centre, with a deadline, so that
 * processes at different points of the program, or one that stopped
 * answering, end the job together and say why rather than hang it. The
 * collectives of a run wait as an agreement waits.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "mpi/mpi_internal.h"

mpi_job_t rs__mpi_job = {MPI_COMM_NULL, 0, 1, 0, 0, {0}, -1,
                         AGREE_WAIT_NS, 0, -1};

typedef struct agree_in {
  int32_t stage, code;
  int64_t aux[3];
  char msg[RS_ERRMSG_MAX];
  char data[AGREE_DATA];
} agree_in_t;

void rs__mpi_sleep(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  nanosleep(&ts, NULL);
}

/* Poll req until it completes (1), the deadline passes (0) or MPI says
 * it failed (-1: a message longer than its buffer; the communicators
 * return errors rather than end the job). */
int rs__mpi_poll(MPI_Request *req, uint64_t deadline, MPI_Status *st) {
  uint64_t nap = 10000;
  for (;;) {
    int done = 0;
    if (MPI_Test(req, &done, st ? st : MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return -1;
    if (done)
      return 1;
    if (rs__now_ns() >= deadline)
      return 0;
    rs__mpi_sleep(nap);
    nap = nap < 1000000 ? 2 * nap : 1000000;
  }
}

/* A line on this process's own stderr (a rank other than 0's is kept in
 * a file by the CLI; this one is for a job that ends without rank 0). */
static void say(const char *line) {
  int fd = rs__mpi_job.err_fd >= 0 ? rs__mpi_job.err_fd : STDERR_FILENO;
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

/* One agreement (above) on what this process brings (says): its code,
 * line, aux and data (agree_mine_t). */
void rs__mpi_agree_on(const agree_mine_t *says, uint64_t wait_ns,
                      agree_out_t *out) {
  const int stage = says->stage, code = says->code;
  const char *msg = says->msg, *data = says->data;
  const int64_t *aux = says->aux;
  if (rs__mpi_job.ended) {
    *out = rs__mpi_job.end;
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
  if (rs__mpi_job.procs == 1 || rs__mpi_job.comm == MPI_COMM_NULL) {
    decide(mine, 1, -1, wait_ns, out);
  } else if (rs__mpi_job.rank == 0) {
    const int P = rs__mpi_job.procs;
    agree_in_t *in = calloc((size_t)P, sizeof *in);
    MPI_Request *req = calloc((size_t)P, sizeof *req);
    if (!in || !req) {
      say("ringsim: out of memory agreeing with the other MPI processes");
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    in[0] = *mine;
    req[0] = MPI_REQUEST_NULL;
    for (int p = 1; p < P; p++)
      MPI_Irecv(&in[p], (int)sizeof *in, MPI_BYTE, p, TAG_AGREE,
                rs__mpi_job.comm, &req[p]);
    const uint64_t deadline = rs__now_ns() + wait_ns;
    int lost = -1;
    unsigned char *got = calloc((size_t)P, 1);
    if (!got) {
      say("ringsim: out of memory agreeing with the other MPI processes");
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    for (int p = 1; p < P; p++)
      if (!(got[p] = rs__mpi_poll(&req[p], deadline, NULL) == 1) && lost < 0)
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
        MPI_Isend(out, (int)sizeof *out, MPI_BYTE, p, TAG_AGREE,
                  rs__mpi_job.comm, &req[p]);
    }
    const uint64_t sent_by = rs__now_ns() + wait_ns;
    for (int p = 1; p < P; p++)
      if (req[p] != MPI_REQUEST_NULL &&
          rs__mpi_poll(&req[p], sent_by, NULL) != 1)
        MPI_Request_free(&req[p]); /* (the job is ending: MPI keeps it) */
    free(got);
    free(in);
    free(req);
  } else {
    MPI_Request req[2];
    MPI_Isend(mine, (int)sizeof *mine, MPI_BYTE, 0, TAG_AGREE, rs__mpi_job.comm,
              &req[0]);
    MPI_Irecv(out, (int)sizeof *out, MPI_BYTE, 0, TAG_AGREE, rs__mpi_job.comm,
              &req[1]);
    if (rs__mpi_poll(&req[1], rs__now_ns() + wait_ns + AGREE_GRACE_NS, NULL) ==
        1) {
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
               rs__mpi_job.rank, (double)(wait_ns + AGREE_GRACE_NS) / 1e9,
               stage_name(stage));
      say(out->msg); /* (rank 0 cannot say it) */
    }
  }
  free(mine);
  if (out->lost >= 0 && rs__mpi_job.lost < 0)
    rs__mpi_job.lost = out->lost;
  if (out->end) {
    rs__mpi_job.ended = 1;
    rs__mpi_job.end = *out;
  }
}

/* A collective (or a message) that every process reached after an
 * agreement: wait for it as an agreement waits; past that the job ends,
 * from this process (it cannot tell which other did not answer). */
void rs__mpi_coll_wait_st(MPI_Request *req, MPI_Status *st, const char *what) {
  int rc = rs__mpi_poll(req, rs__now_ns() + rs__mpi_job.wait_ns, st);
  if (rc > 0)
    return;
  char line[RS_ERRMSG_MAX];
  if (rc < 0)
    snprintf(line, sizeof line,
             "ringsim: rank %d: a message from another MPI process did not "
             "fit (%s): the job ends",
             rs__mpi_job.rank, what);
  else
    snprintf(line, sizeof line,
             "ringsim: rank %d: another MPI process did not answer within "
             "%.3g s (%s): the job ends",
             rs__mpi_job.rank, (double)rs__mpi_job.wait_ns / 1e9, what);
  say(line);
  fflush(NULL);
  MPI_Abort(MPI_COMM_WORLD, 3);
}

void rs__mpi_coll_wait(MPI_Request *req, const char *what) {
  rs__mpi_coll_wait_st(req, NULL, what);
}

/* The collectives of the run's check and after (on coll): each waits as
 * an agreement waits (coll_wait), never for ever. */
void rs__mpi_allreduce(const void *in, void *out, int n, MPI_Datatype type,
                       MPI_Op op, const mpi_coll_t *on) {
  MPI_Request req;
  MPI_Iallreduce(in, out, n, type, op, on->comm, &req);
  rs__mpi_coll_wait(&req, on->what);
}

void rs__mpi_bcast(void *buf, int n, MPI_Datatype type, int root,
                   const mpi_coll_t *on) {
  MPI_Request req;
  MPI_Ibcast(buf, n, type, root, on->comm, &req);
  rs__mpi_coll_wait(&req, on->what);
}

void rs__mpi_gather(const void *in, int n, MPI_Datatype type, void *out,
                    int root, const mpi_coll_t *on) {
  MPI_Request req;
  MPI_Igather(in, n, type, out, n, type, root, on->comm, &req);
  rs__mpi_coll_wait(&req, on->what);
}

/* The job's size from mpirun's environment, before MPI starts (0: not
 * started by mpirun, or alone). */
static int launched_procs(void) {
  const char *names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    const char *v = getenv(names[i]);
    long n;
    if (v && rs_read_int(v, 2, INT_MAX, &n) == 0)
      return (int)n;
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
  if (rs__mpi_job.comm == MPI_COMM_NULL) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rs__mpi_job.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &rs__mpi_job.procs);
    MPI_Comm_dup(MPI_COMM_WORLD, &rs__mpi_job.comm);
    /* a peer's error returns (and is said) rather than killing the job */
    MPI_Comm_set_errhandler(rs__mpi_job.comm, MPI_ERRORS_RETURN);
    if (rs__mpi_job.err_fd < 0)
      rs__mpi_job.err_fd = dup(STDERR_FILENO);
  }
  return RS_OK;
}

int rs_mpi_init(int *rank, int *procs, char *errmsg) {
  int first = rs__mpi_job.comm == MPI_COMM_NULL;
  int rc = start_mpi(errmsg);
  if (rc)
    return rc;
  int provided = 0;
  MPI_Query_thread(&provided);
  *rank = rs__mpi_job.rank;
  *procs = rs__mpi_job.procs;
  if (first) { /* every process was given --transport mpi, or none */
    agree_out_t out;
    rs__mpi_agree_on(
        &(agree_mine_t){.stage = STAGE_TRANSPORT, .data = "--transport=mpi"},
        rs__mpi_job.wait_ns, &out);
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
  rs__mpi_agree_on(
      &(agree_mine_t){.stage = STAGE_TRANSPORT, .data = "--transport=shm"},
      rs__mpi_job.wait_ns, &out);
  int code = out.code;
  if (code && rs__mpi_job.rank == 0)
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
  if (rs__mpi_job.lost >=
      0) { /* a process did not answer: MPI_Finalize would wait */
    fflush(NULL);
    MPI_Abort(MPI_COMM_WORLD, rs__mpi_job.end.code ? rs__mpi_job.end.code : 3);
  }
  if (rs__mpi_job.comm != MPI_COMM_NULL)
    MPI_Comm_free(&rs__mpi_job.comm);
  MPI_Finalize();
}

int rs_mpi_agree(int code, char *msg, size_t size) {
  agree_out_t out;
  int stage = msg ? STAGE_FINAL : STAGE_GATE + ++rs__mpi_job.gates;
  rs__mpi_agree_on(&(agree_mine_t){.stage = stage, .code = code, .msg = msg},
                   rs__mpi_job.wait_ns, &out);
  if (out.code != code && msg && size)
    snprintf(msg, size, "%s",
             rs__mpi_job.said_interrupt && out.code > 128 ? "" : out.msg);
  return out.code > code ? out.code : code;
}

/* How long, once this process's workers stopped, it waits for the others
 * to end theirs: after a failure every worker stops within the timeout
 * of it (a neighbour times out, or the fault is told); after a run that
 * went well, as long as any agreement. */
uint64_t rs__mpi_finish_wait(const rs_run_t *run) {
  if (run->result.status == RS_OK)
    return rs__mpi_job.wait_ns;
  return (uint64_t)(run->config.timeout_s * 1e9) + 1000000000u;
}

/* Process p stopped answering: this run and the job end without it
 * (rs_mpi_finalize aborts the job). A process other than 0 says so
 * itself (rank 0 names it in the run's error). */
void rs__mpi_lose(rs_run_t *run, int p, uint64_t waited_ns, const char *what) {
  struct rs_mpi *m = run->mpi;
  if (m->lost >= 0)
    return;
  m->lost = p;
  if (rs__mpi_job.lost < 0)
    rs__mpi_job.lost = p;
  if (!rs__mpi_job.ended) {
    rs__mpi_job.ended = 1;
    memset(&rs__mpi_job.end, 0, sizeof rs__mpi_job.end);
    rs__mpi_job.end.code = 3;
    rs__mpi_job.end.end = 1;
    rs__mpi_job.end.lost = p;
    rs__mpi_job.end.from = -1;
    const int W = run->config.workers;
    snprintf(rs__mpi_job.end.msg, sizeof rs__mpi_job.end.msg,
             "ringsim: rank %d (workers %d to %d, on %s) did not answer "
             "within %.3g s (%s): the job ends",
             p, rs__job_first(W, run->procs, p),
             rs__job_first(W, run->procs, p + 1) - 1, m->hosts[p],
             (double)waited_ns / 1e9, what);
    if (run->proc != 0)
      say(rs__mpi_job.end.msg);
  }
}
