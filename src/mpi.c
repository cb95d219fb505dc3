/* mpi.c - a run over the processes of an MPI job (mpi_run.h): the MPI
 * transport, the fault listener, clock offsets, and gathering to rank 0.
 *
 * Four communicators per run, duplicated from MPI_COMM_WORLD, keep the
 * traffic apart: data (the edges: tag from * W + to), ctrl (faults),
 * trace (the tracers' batches of records, during the run) and coll
 * (clocks, the gather, the check's merge).
 */
#include "mpi_run.h"

#include <errno.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "runstate.h"
#include "trace.h"
#include "util.h"

enum { TAG_FAULT = 1, TAG_PING = 2, TAG_STATE = 3, TAG_TRACE = 4 };

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

/* ---- the job -------------------------------------------------------- */

int rs_mpi_init(int *rank, int *procs, char *errmsg) {
  int inited = 0, provided = 0;
  MPI_Initialized(&inited);
  if (!inited && MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) !=
                     MPI_SUCCESS)
    return rs__err(errmsg, RS_EINVAL, "transport mpi: MPI_Init failed");
  if (inited)
    MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE)
    return rs__err(errmsg, RS_EINVAL,
                   "transport mpi: this MPI does not give "
                   "MPI_THREAD_MULTIPLE (it gives level %d)",
                   provided);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, procs);
  return RS_OK;
}

void rs_mpi_finalize(void) {
  int inited = 0, done = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&done);
  if (inited && !done)
    MPI_Finalize();
}

int rs_mpi_agree(int code, char *msg, size_t size) {
  int most = code, rank, from = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Allreduce(&code, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  int mine = code == most ? rank : 1 << 30;
  MPI_Allreduce(&mine, &from, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  char text[RS_ERRMSG_MAX] = "";
  if (rank == from)
    snprintf(text, sizeof text, "%s", msg);
  MPI_Bcast(text, (int)sizeof text, MPI_CHAR, from, MPI_COMM_WORLD);
  if (code != most && size)
    snprintf(msg, size, "%s", text);
  return most;
}

/* ---- a run joins the job --------------------------------------------- */

int rs__mpi_open(rs_run_t *run, char *errmsg) {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited)
    return rs__err(errmsg, RS_EINVAL,
                   "transport mpi: MPI is not initialised (rs_mpi_init)");
  const int W = run->config.workers;
  int rank, procs;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &procs);
  if (procs > W)
    return rs__err(errmsg, RS_EINVAL,
                   "workers: %d cannot be spread over %d MPI processes "
                   "(each process needs a worker: give --workers %d or "
                   "more)",
                   W, procs, procs);
  int *tag_ub = NULL, flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
  if (flag && (int64_t)W * W > *tag_ub)
    return rs__err(errmsg, RS_EINVAL,
                   "workers: %d workers need %lld MPI tags; this MPI has %d", W,
                   (long long)W * W, *tag_ub);
  /* Records per trace batch: every process must agree (rank 0 receives
   * whole batches), so each says what it was given. */
  long batch = BATCH_DEFAULT;
  const char *text = getenv("RINGSIM_MPI_TRACE_BATCH");
  if (text) {
    char *end;
    errno = 0;
    batch = strtol(text, &end, 10);
    if (errno || end == text || *end || batch < 1 || batch > BATCH_MAX)
      batch = -1;
  }
  long lo = batch, hi = batch;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
  if (batch < 0)
    return rs__err(errmsg, RS_EINVAL,
                   "RINGSIM_MPI_TRACE_BATCH '%s': expected records per trace "
                   "batch, 1 to %d",
                   text, BATCH_MAX);
  if (lo != hi)
    return rs__err(errmsg, RS_EINVAL,
                   lo < 0 ? "RINGSIM_MPI_TRACE_BATCH: another MPI process "
                            "was given a bad value"
                          : "RINGSIM_MPI_TRACE_BATCH differs between the MPI "
                            "processes (%ld here, %ld to %ld in all)",
                   batch, lo, hi);
  struct rs_mpi *m = calloc(1, sizeof *m);
  if (!m || !(m->hosts = calloc((size_t)procs, sizeof *m->hosts)) ||
      !(m->offsets = calloc((size_t)procs, sizeof *m->offsets)) ||
      !(m->rtt_ns = calloc((size_t)procs, sizeof *m->rtt_ns)) ||
      !(m->tell = calloc((size_t)procs, sizeof *m->tell)) ||
      !(m->counts = calloc((size_t)procs, sizeof *m->counts))) {
    if (m) {
      free(m->hosts);
      free(m->offsets);
      free(m->rtt_ns);
      free(m->tell);
    }
    free(m);
    return rs__err(errmsg, RS_ENOMEM, "out of memory");
  }
  m->batch = (size_t)batch;
  /* the tracer's one message: a batch to send, or (rank 0) to receive */
  if (run->config.traced &&
      !(m->msg = malloc(sizeof *m->msg + m->batch * sizeof(rs_event_t)))) {
    free(m->hosts);
    free(m->offsets);
    free(m->rtt_ns);
    free(m->tell);
    free(m->counts);
    free(m);
    return rs__err(errmsg, RS_ENOMEM, "out of memory for a trace batch");
  }
  for (int p = 0; p < procs; p++)
    m->tell[p] = MPI_REQUEST_NULL;
  atomic_init(&m->stop, 0);
  atomic_init(&m->told, 0);
  atomic_init(&m->workers_done, 0);
  MPI_Comm_dup(MPI_COMM_WORLD, &m->data);
  MPI_Comm_dup(MPI_COMM_WORLD, &m->ctrl);
  MPI_Comm_dup(MPI_COMM_WORLD, &m->coll);
  MPI_Comm_dup(MPI_COMM_WORLD, &m->trace);
  host_t me = "";
  int len = 0;
  MPI_Get_processor_name(me, &len);
  MPI_Allgather(me, (int)sizeof me, MPI_CHAR, m->hosts, (int)sizeof me,
                MPI_CHAR, m->coll);
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
  for (int p = 0; p < run->procs; p++)
    if (m->tell[p] != MPI_REQUEST_NULL)
      MPI_Wait(&m->tell[p], MPI_STATUS_IGNORE);
  MPI_Comm_free(&m->data);
  MPI_Comm_free(&m->ctrl);
  MPI_Comm_free(&m->coll);
  MPI_Comm_free(&m->trace);
  free(m->msg);
  free(m->counts);
  free(m->hosts);
  free(m->offsets);
  free(m->rtt_ns);
  free(m->tell);
  free(m);
  run->mpi = NULL;
}

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

static void sleep_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  nanosleep(&ts, NULL);
}

/* Wait for req to complete, up to timeout_ns, or until the run aborts.
 * MPI_Test drives MPI's progress; between tests the thread yields for
 * YIELD_NS (a message between processes takes microseconds), then
 * sleeps, from 10 us doubling up to NAP_MAX_NS: a wait must not burn a
 * core that another worker needs, nor oversleep a message by much. */
#define YIELD_NS 100000
#define NAP_MAX_NS 200000
static int wait_req(mpi_edge_t *m, MPI_Request *req, uint64_t timeout_ns,
                    uint64_t *wait_ns) {
  int done = 0;
  if (*req == MPI_REQUEST_NULL)
    return RS_OK;
  MPI_Test(req, &done, MPI_STATUS_IGNORE);
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
    MPI_Test(req, &done, MPI_STATUS_IGNORE);
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
  int rc = wait_req(m, req, timeout_ns, wait_ns);
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
  int rc =
      wait_req(m, &m->req[m->used % (uint64_t)m->slots], timeout_ns, wait_ns);
  if (rc)
    return rc;
  rs_msg_t *msg = slot(m, m->used);
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

static void *listen_main(void *arg) {
  rs_run_t *run = arg;
  struct rs_mpi *m = run->mpi;
  MPI_Request req;
  MPI_Status st;
  MPI_Irecv(&m->in, sizeof m->in, MPI_BYTE, MPI_ANY_SOURCE, TAG_FAULT, m->ctrl,
            &req);
  while (!atomic_load(&m->stop)) {
    int done = 0;
    MPI_Test(&req, &done, &st);
    if (!done) {
      sleep_ns(1000000);
      continue;
    }
    int64_t shift = m->offsets[run->proc] - m->offsets[st.MPI_SOURCE];
    m->in.message[sizeof m->in.message - 1] = '\0';
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

/* A batch to rank 0, in one message. */
static void take_send(rs_run_t *run, int worker, const rs_event_t *a, size_t na,
                      const rs_event_t *b, size_t nb) {
  struct rs_mpi *m = run->mpi;
  trace_msg_t *msg = m->msg;
  memcpy(msg->events, a, na * sizeof *a);
  memcpy(msg->events + na, b, nb * sizeof *b);
  msg->dst = worker;
  msg->count = (int32_t)(na + nb);
  MPI_Send(msg, (int)(sizeof *msg + (na + nb) * sizeof(rs_event_t)), MPI_BYTE,
           0, TAG_TRACE, m->trace);
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
  MPI_Send(msg, (int)sizeof *msg, MPI_BYTE, 0, TAG_TRACE, m->trace);
}

/* Rank 0's tracer: its own rings and every other process's batches into
 * the trace, until every process has ended its stream. */
static void trace_write(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  trace_msg_t *in = m->msg;
  trace_count_t *c = &m->counts[0];
  const int L = run->local_end - run->first_local;
  uint64_t *last = calloc((size_t)L, sizeof *last), nap = 20000;
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
      int got = 0;
      MPI_Status st;
      MPI_Test(&req, &got, &st);
      if (!got)
        break;
      moved = 1;
      if (in->dst < 0) {
        m->counts[st.MPI_SOURCE] = in->counts;
        ends++;
      } else {
        shift_times(m, st.MPI_SOURCE, in->events, (size_t)in->count);
        rs__trace_stream_write(run, in->dst, in->events, (size_t)in->count);
        c->received_during += !finishing;
      }
      if (ends < run->procs - 1)
        MPI_Irecv(in, bytes, MPI_BYTE, MPI_ANY_SOURCE, TAG_TRACE, m->trace,
                  &req);
    }
    moved |= drain_due(run, last, finishing, c, take_write);
    done = finishing && !moved && ends == run->procs - 1;
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
  for (int p = 1; p < run->procs; p++) {
    if (run->proc == 0) {
      uint64_t best = UINT64_MAX;
      for (int i = 0; i < PINGS; i++) {
        uint64_t there, t1 = rs__now_ns();
        MPI_Send(NULL, 0, MPI_BYTE, p, TAG_PING, m->coll);
        MPI_Recv(&there, 1, MPI_UINT64_T, p, TAG_PING, m->coll,
                 MPI_STATUS_IGNORE);
        uint64_t t2 = rs__now_ns();
        if (t2 - t1 < best) {
          best = t2 - t1;
          m->offsets[p] = (int64_t)(there - (t1 + (t2 - t1) / 2));
          m->rtt_ns[p] = best;
        }
      }
    } else if (run->proc == p) {
      for (int i = 0; i < PINGS; i++) {
        MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_PING, m->coll, MPI_STATUS_IGNORE);
        uint64_t now = rs__now_ns();
        MPI_Send(&now, 1, MPI_UINT64_T, 0, TAG_PING, m->coll);
      }
    }
  }
  MPI_Bcast(m->offsets, run->procs, MPI_INT64_T, 0, m->coll);
  MPI_Bcast(m->rtt_ns, run->procs, MPI_UINT64_T, 0, m->coll);
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

static void send_worker(rs_run_t *run, const rs_worker_t *w) {
  struct rs_mpi *m = run->mpi;
  const rs_progress_t *p = &w->progress;
  worker_state_t s = {.rc = w->rc,
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
  MPI_Send(&s, sizeof s, MPI_BYTE, 0, TAG_STATE, m->coll);
}

static void recv_worker(rs_run_t *run, rs_worker_t *w, int from) {
  struct rs_mpi *m = run->mpi;
  worker_state_t s;
  MPI_Recv(&s, sizeof s, MPI_BYTE, from, TAG_STATE, m->coll, MPI_STATUS_IGNORE);
  /* its times, into rank 0's clock */
  const int64_t shift = -m->offsets[from];
  rs_progress_t *p = &w->progress;
  w->rc = s.rc;
  w->iter = s.iter;
  p->phase = (rs_phase_t)s.phase;
  p->step = s.step;
  p->chunk = s.chunk;
  p->activity = (rs_activity_t)s.activity;
  p->peer = s.peer;
  p->mismatch = s.mismatch;
  p->edge = s.edge >= 0 ? &run->edges[s.edge] : NULL;
  p->stall_ms = s.stall_ms;
  p->stall_phase = (rs_phase_t)s.stall_phase;
  p->stall_step = s.stall_step;
  p->stall_end_ns =
      s.stall_end_ns ? (uint64_t)((int64_t)s.stall_end_ns + shift) : 0;
  w->sim.clock = s.sim_clock;
  w->stats = s.stats;
}

void rs__mpi_finish(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  if (m->listening) {
    atomic_store(&m->stop, 1);
    RS_PTHREAD_CHECK(pthread_join(m->listener, NULL));
    m->listening = 0;
  }
  trace_finish(run); /* every record is in rank 0's trace (if traced) */
  /* Every process learns the run's first failure: a fault told while a
   * process's workers were finishing may have come after its listener
   * stopped. The lowest-ranked failed process's fault stands for all. */
  int failed = run->result.status != RS_OK ? run->proc : INT32_MAX, first;
  MPI_Allreduce(&failed, &first, 1, MPI_INT, MPI_MIN, m->coll);
  if (first != INT32_MAX) {
    fault_msg_t f = {0};
    if (run->proc == first) {
      f.code = run->result.status;
      f.worker = run->fault_worker;
      f.fault_ns = run->fault_ns;
      snprintf(f.message, sizeof f.message, "%s", run->errmsg);
    }
    MPI_Bcast(&f, sizeof f, MPI_BYTE, first, m->coll);
    f.message[sizeof f.message - 1] = '\0';
    int64_t shift = m->offsets[run->proc] - m->offsets[first];
    rs__run_fail_from(run, f.worker, f.code,
                      (uint64_t)((int64_t)f.fault_ns + shift), f.message);
  }
  /* Rank 0 takes the state of every other process's workers, in worker
   * order. */
  const int W = run->config.workers;
  for (int r = 0; r < W; r++) {
    int owner = rs__mpi_owner(W, run->procs, r);
    if (owner == 0)
      continue;
    if (run->proc == 0)
      recv_worker(run, &run->workers[r], owner);
    else if (run->proc == owner)
      send_worker(run, &run->workers[r]);
  }
}

int rs__mpi_all(rs_run_t *run, int ok) {
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, ctx(run)->coll);
  return all;
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
  MPI_Allreduce(MPI_IN_PLACE, differ, (int)blocks, MPI_UNSIGNED_CHAR, MPI_MAX,
                m->coll);
  for (size_t b = 0; b < blocks; b++) {
    if (!differ[b])
      continue;
    size_t start = b * HASH_ELEMS;
    size_t len = n - start < HASH_ELEMS ? n - start : HASH_ELEMS;
    if (run->proc == 0)
      memcpy(block, run->bufs[0] + start * size, len * size);
    MPI_Bcast(block, (int)(len * size), MPI_BYTE, 0, m->coll);
    rs__check_list_block(run, start, len, block, run->mismatches, mine,
                         &mine_listed);
  }
  MPI_Allreduce(MPI_IN_PLACE, run->mismatches, W, MPI_UINT64_T, MPI_SUM,
                m->coll);
  uint64_t count = mine_listed;
  MPI_Gather(&count, 1, MPI_UINT64_T, listed, 1, MPI_UINT64_T, 0, m->coll);
  MPI_Gather(mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE,
             0, m->coll);
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
  MPI_Allreduce(MPI_IN_PLACE, lo, (int)blocks, MPI_UINT64_T, MPI_MIN, m->coll);
  MPI_Allreduce(MPI_IN_PLACE, hi, (int)blocks, MPI_UINT64_T, MPI_MAX, m->coll);
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
  MPI_Allreduce(MPI_IN_PLACE, worst, (int)(4 * params), MPI_DOUBLE, MPI_MAX,
                m->coll);
  MPI_Allreduce(MPI_IN_PLACE, counts, (int)(4 * params), MPI_UINT64_T, MPI_MAX,
                m->coll);
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
  MPI_Barrier(m->coll);
  uint64_t t0 = rs__now_ns();
  for (int i = 0; i < iterations; i++)
    MPI_Allreduce(in, out, (int)n, type, op, m->coll);
  uint64_t mine = (rs__now_ns() - t0) /
                  (uint64_t)(iterations > 0 ? iterations : 1),
           slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_UINT64_T, MPI_MAX, m->coll);
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
  MPI_Allreduce(MPI_IN_PLACE, acc, (int)len, type, acc_op, ctx(run)->coll);
  MPI_Allreduce(MPI_IN_PLACE, amp, (int)len, type, amp_op, ctx(run)->coll);
}
