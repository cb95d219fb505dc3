/* transport.c - the MPI transport (rs__transport_mpi): one directed edge
 * between two processes, with the contract of a shared-memory queue
 * (net/transport.h): K slots in flight, sequence numbers, checksums, the
 * end of stream, timeouts and abort, over nonblocking MPI point-to-point
 * on the run's data communicator, called by the worker threads themselves
 * (MPI_THREAD_MULTIPLE). Message order on an edge is MPI's non-overtaking
 * rule for one (source, tag, communicator), so every edge has a tag of
 * its own: (channel W + from) W + to, each of NCCL's channels (the ring's
 * --channels) its own queue between the same two workers, as in one
 * process. Tags rather than a communicator per channel: a tag costs
 * nothing, where each communicator is a collective to make and holds one
 * of MPI's limited context ids, up to 64 more per run; C W^2 tags fit
 * Open MPI's MPI_TAG_UB (rs__mpi_open refuses, in one line, what an MPI
 * with fewer cannot tag).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "mpi/mpi_internal.h"

/* The end of an iteration's stream on an edge: a message of this phase,
 * whose seq is how many messages the sender sent. */
#define PHASE_FIN (-1)

/* The MPI side of an edge (rs_edge_t's mpi). */
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
      rs__mpi_sleep(nap);
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
  m->peer = rs__job_owner(W, run->procs, m->sending ? e->to : e->from);
  m->tag = (e->channel * W + e->from) * W + e->to; /* (< C W^2: open.c) */
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
 * with hdr (its seq and send_begin_ns the sender's) and its payload from
 * src (corrupted on the wire: corrupt), and send it. */
static int post_send(rs_edge_t *e, const rs_msg_t *hdr, const void *src,
                     int corrupt, uint64_t timeout_ns, uint64_t *wait_ns) {
  mpi_edge_t *m = e->mpi;
  rs_queue_t *q = &e->queue;
  MPI_Request *req = &m->req[m->used % (uint64_t)m->slots];
  int rc = wait_req(m, req, timeout_ns, wait_ns, NULL);
  if (rc)
    return rc;
  rs_msg_t *msg = slot(m, m->used++);
  size_t bytes = hdr->phase == PHASE_FIN ? 0 : hdr->elems * q->elem_bytes;
  unsigned char *payload = rs__msg_slot_payload(msg);
  *msg = *hdr;
  msg->data = NULL;
  if (q->pack && bytes && src)
    q->pack(payload, src, hdr->elems);
  else if (bytes && src)
    memcpy(payload, src, bytes);
  msg->checksum = q->checksum ? rs__checksum(payload, bytes) : 0;
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
  rs_queue_t *q = &e->queue;
  rs_msg_t sent = *hdr;
  sent.send_begin_ns = rs__now_ns();
  sent.seq = q->send_seq++;
  if (wire == RS_WIRE_DROP)
    return RS_OK; /* its sequence number is never delivered */
  int rc =
      post_send(e, &sent, src, wire == RS_WIRE_CORRUPT, timeout_ns, wait_ns);
  if (rc == RS_OK && wire == RS_WIRE_DUP)
    rc = post_send(e, &sent, src, 0, timeout_ns, wait_ns);
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
                         (e->queue.elem_bytes ? e->queue.elem_bytes : 1) ||
        sizeof *msg + msg->elems * e->queue.elem_bytes != got))) {
    e->queue.bad_seq = e->queue.recv_seq; /* (not a sequence fault) */
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
  rs_queue_t *q = &e->queue;
  rs_msg_t *msg;
  int rc = next_message(e, &msg, timeout_ns, wait_ns);
  if (rc)
    return rc;
  if (msg->phase == PHASE_FIN) { /* finished without sending it: lost */
    q->bad_end = 1;
    q->bad_seq = msg->seq;
    return RS_EPROTO;
  }
  if (msg->seq != q->recv_seq) {
    q->bad_seq = msg->seq;
    return RS_EPROTO;
  }
  if (q->checksum &&
      rs__checksum(msg->data, msg->elems * q->elem_bytes) != msg->checksum)
    return RS_ECORRUPT;
  q->recv_seq++;
  *out = msg;
  return RS_OK;
}

static void mpi_release(rs_edge_t *e) { repost(e->mpi); }

static void mpi_finish(rs_edge_t *e) {
  rs_queue_t *q = &e->queue;
  rs_msg_t fin = {
      .phase = PHASE_FIN, .seq = q->send_seq, .send_begin_ns = rs__now_ns()};
  /* (a run that aborts meanwhile sends no end: nobody waits for it) */
  post_send(e, &fin, NULL, 0, UINT64_MAX, NULL);
}

static int mpi_end(rs_edge_t *e, uint64_t timeout_ns, uint64_t *wait_ns) {
  rs_queue_t *q = &e->queue;
  rs_msg_t *msg;
  int rc = next_message(e, &msg, timeout_ns, wait_ns);
  if (rc)
    return rc;
  q->bad_end = 1;
  if (msg->phase != PHASE_FIN) { /* one left over: delivered twice */
    q->bad_seq = msg->seq;
    return RS_EPROTO;
  }
  if (msg->seq != q->recv_seq) { /* the last one was lost */
    q->bad_seq = msg->seq;
    return RS_EPROTO;
  }
  q->bad_end = 0;
  q->ends_seen++;
  repost(e->mpi);
  return RS_OK;
}

static int mpi_pause(rs_edge_t *e, uint64_t ns) {
  mpi_edge_t *m = e->mpi;
  uint64_t end = rs__now_ns() + ns;
  for (uint64_t now; (now = rs__now_ns()) < end;) {
    if (atomic_load_explicit(m->abort_flag, memory_order_acquire))
      return RS_EABORTED;
    rs__mpi_sleep(end - now < 1000000 ? end - now : 1000000);
  }
  return RS_OK;
}

/* Waiters poll the abort flag: nothing to wake. */
static void mpi_wake(rs_edge_t *e) { (void)e; }

const rs_transport_t rs__transport_mpi = {"mpi",       mpi_send,   mpi_recv,
                                          mpi_release, mpi_finish, mpi_end,
                                          mpi_pause,   mpi_wake};
