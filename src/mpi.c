/* mpi.c - a run over the processes of an MPI job (mpi_run.h): the MPI
 * transport, the fault listener, clock offsets, and gathering to rank 0.
 *
 * Three communicators per run, duplicated from MPI_COMM_WORLD, keep the
 * traffic apart: data (the edges: tag from * W + to), ctrl (faults) and
 * coll (clocks, the gather, the check's merge).
 */
#include "mpi_run.h"

#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runstate.h"
#include "util.h"

enum { TAG_FAULT = 1, TAG_PING = 2, TAG_STATE = 3, TAG_EVENTS = 4 };

/* How many times rank 0 pings each process to find its clock offset. */
#define PINGS 32
/* Trace records per message of the gather. */
#define EVENT_BATCH 65536
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

struct rs_mpi {
  MPI_Comm data, ctrl, coll;
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
  struct rs_mpi *m = calloc(1, sizeof *m);
  if (!m || !(m->hosts = calloc((size_t)procs, sizeof *m->hosts)) ||
      !(m->offsets = calloc((size_t)procs, sizeof *m->offsets)) ||
      !(m->rtt_ns = calloc((size_t)procs, sizeof *m->rtt_ns)) ||
      !(m->tell = calloc((size_t)procs, sizeof *m->tell))) {
    if (m) {
      free(m->hosts);
      free(m->offsets);
      free(m->rtt_ns);
    }
    free(m);
    return rs__err(errmsg, RS_ENOMEM, "out of memory");
  }
  for (int p = 0; p < procs; p++)
    m->tell[p] = MPI_REQUEST_NULL;
  atomic_init(&m->stop, 0);
  atomic_init(&m->told, 0);
  MPI_Comm_dup(MPI_COMM_WORLD, &m->data);
  MPI_Comm_dup(MPI_COMM_WORLD, &m->ctrl);
  MPI_Comm_dup(MPI_COMM_WORLD, &m->coll);
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
  uint64_t stall_end_ns, sim_clock, events;
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
                      .events = w->events.count,
                      .stats = w->stats};
  MPI_Send(&s, sizeof s, MPI_BYTE, 0, TAG_STATE, m->coll);
  for (size_t at = 0; at < w->events.count; at += EVENT_BATCH) {
    size_t n =
        w->events.count - at < EVENT_BATCH ? w->events.count - at : EVENT_BATCH;
    MPI_Send(w->events.events + at, (int)(n * sizeof(rs_event_t)), MPI_BYTE, 0,
             TAG_EVENTS, m->coll);
  }
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
  rs_event_buf_t *buf = &w->events;
  for (size_t at = 0; at < s.events; at += EVENT_BATCH) {
    size_t n = s.events - at < EVENT_BATCH ? s.events - at : EVENT_BATCH;
    rs_event_t *into =
        buf->events && at + n <= buf->capacity ? buf->events + at : NULL;
    rs_event_t *discard = into ? NULL : malloc(n * sizeof *discard);
    MPI_Recv(into ? into : discard, (int)(n * sizeof(rs_event_t)), MPI_BYTE,
             from, TAG_EVENTS, m->coll, MPI_STATUS_IGNORE);
    free(discard); /* (no room: rank 0 does not trace) */
    for (size_t i = 0; into && i < n; i++) {
      rs_event_t *ev = &into[i];
      ev->send_begin_ns = (uint64_t)((int64_t)ev->send_begin_ns + shift);
      ev->send_end_ns = (uint64_t)((int64_t)ev->send_end_ns + shift);
      ev->recv_begin_ns = (uint64_t)((int64_t)ev->recv_begin_ns + shift);
      ev->recv_end_ns = (uint64_t)((int64_t)ev->recv_end_ns + shift);
    }
    if (into)
      buf->count = at + n;
  }
}

void rs__mpi_finish(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  if (m->listening) {
    atomic_store(&m->stop, 1);
    RS_PTHREAD_CHECK(pthread_join(m->listener, NULL));
    m->listening = 0;
  }
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
  /* Rank 0 takes the workers of every other process, in worker order. */
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

void rs__mpi_check_merge(rs_run_t *run, int *identical) {
  struct rs_mpi *m = run->mpi;
  const size_t n = run->elems, size = run->buf_elem_bytes;
  const size_t blocks = n ? (n + HASH_ELEMS - 1) / HASH_ELEMS : 1;
  const size_t params = rs_model_param_count(run->model);
  uint64_t *lo = malloc(2 * blocks * sizeof *lo);
  double *worst = malloc(8 * (params ? params : 1) * sizeof *worst);
  uint64_t *counts = malloc(8 * (params ? params : 1) * sizeof *counts);
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
  MPI_Allreduce(MPI_IN_PLACE, lo, (int)blocks, MPI_UINT64_T, MPI_MIN, m->coll);
  for (size_t b = 0; b < blocks; b++) {
    size_t start = b * HASH_ELEMS;
    size_t len = n - start < HASH_ELEMS ? n - start : HASH_ELEMS;
    hi[b] = n ? rs__checksum(mine + start * size, len * size) : 0;
  }
  MPI_Allreduce(MPI_IN_PLACE, hi, (int)blocks, MPI_UINT64_T, MPI_MAX, m->coll);
  for (size_t b = 0; b < blocks; b++)
    same &= lo[b] == hi[b];
  *identical = same;
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
