/* queue.c - the bounded SPSC FIFO between ring neighbours (see queue.h
 * for its guarantees). */
#include "net/queue.h"

#include <string.h>

#include "base/util.h"

int rs__queue_init(rs_queue_t *q, int slots, size_t payload_bytes,
                   const atomic_int *abort_flag) {
  memset(q, 0, sizeof *q);
  rs__ev_init(&q->ev);
  atomic_init(&q->head, 0);
  atomic_init(&q->tail, 0);
  atomic_init(&q->fin_seq, 0);
  atomic_init(&q->fins, 0);
  q->slots = slots;
  q->elem_bytes = sizeof(float);
  q->spin_ns = RS_EV_SPIN_NS;
  q->slot_stride = (sizeof(rs_msg_t) + payload_bytes + 63) & ~(size_t)63;
  q->abort_flag = abort_flag;
  q->mem = rs__aligned_alloc(q->slot_stride * (size_t)slots);
  if (!q->mem)
    return RS_ENOMEM;
  return RS_OK;
}

void rs__queue_destroy(rs_queue_t *q) {
  free(q->mem);
  q->mem = NULL;
}

static rs_msg_t *slot_at(rs_queue_t *q, uint64_t index) {
  return (rs_msg_t *)rs__queue_peek(q, index);
}

static int aborted(const rs_queue_t *q) {
  return atomic_load_explicit(q->abort_flag, memory_order_acquire);
}

/* What a waiter waits for; each also ends the wait when the run aborts.
 * Only the side that waits calls its own: the producer may fill a slot;
 * the consumer has a message waiting, or has learned that none will come
 * (the sender finished before sending the next one: fin_seq is read first,
 * so a tail read after it holds every message sent before that finish);
 * the consumer's end-of-stream check has something to look at. */
static int can_send(void *arg) {
  rs_queue_t *q = arg;
  return aborted(q) ||
         atomic_load_explicit(&q->tail, memory_order_relaxed) -
                 atomic_load_explicit(&q->head, memory_order_acquire) <
             (uint64_t)q->slots;
}

static int can_recv(void *arg) {
  rs_queue_t *q = arg;
  uint64_t fin_seq = atomic_load_explicit(&q->fin_seq, memory_order_acquire);
  return aborted(q) ||
         atomic_load_explicit(&q->tail, memory_order_acquire) !=
             atomic_load_explicit(&q->head, memory_order_relaxed) ||
         fin_seq > q->recv_seq;
}

static int can_end(void *arg) {
  rs_queue_t *q = arg;
  return aborted(q) ||
         atomic_load_explicit(&q->fins, memory_order_acquire) > q->ends_seen ||
         atomic_load_explicit(&q->tail, memory_order_acquire) !=
             atomic_load_explicit(&q->head, memory_order_relaxed);
}

/* Wait until ready() (or an abort), for at most timeout_ns: RS_OK,
 * RS_EABORTED or RS_ETIMEDOUT. The time spent blocked is added to
 * *wait_ns; a call that need not wait reads no clock. */
static int wait_until(rs_queue_t *q, int (*ready)(void *), rs_ev_spin_t *spin,
                      uint64_t timeout_ns, uint64_t *wait_ns) {
  if (ready(q))
    return aborted(q) ? RS_EABORTED : RS_OK;
  uint64_t begin = rs__now_ns();
  int ok = rs__ev_await(&q->ev, ready, q, begin + timeout_ns, q->spin_ns, spin);
  *wait_ns += rs__now_ns() - begin;
  if (aborted(q))
    return RS_EABORTED;
  return ok ? RS_OK : RS_ETIMEDOUT;
}

uint64_t rs__checksum(const void *data, size_t n) {
  /* Each step (h ^ word) * odd is a bijection of h, so changing one word
   * always changes the result. */
  const unsigned char *p = data;
  uint64_t h = 0x9e3779b97f4a7c15u ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    memcpy(&word, p + i, 8);
    h = (h ^ word) * 0xff51afd7ed558ccdu;
    h ^= h >> 29;
  }
  for (; i < n; i++)
    h = (h ^ p[i]) * 0xc4ceb9fe1a85ec53u;
  return h;
}

/* One send, as send_msg was given it: the message's header and data, by
 * reference or by copy, its number, when it began, and how long it may
 * wait for a slot (the wait is added to *wait_ns). */
typedef struct send {
  const rs_msg_t *hdr;
  const void *src;
  int by_ref;
  uint64_t seq;
  uint64_t begin;
  uint64_t timeout_ns;
  uint64_t *wait_ns;
} send_t;

/* Wait for a free slot, fill it from the send (its payload damaged if
 * corrupt), publish it. */
static int publish(rs_queue_t *q, const send_t *s, int corrupt) {
  const rs_msg_t *hdr = s->hdr;
  const void *src = s->src;
  int rc = wait_until(q, can_send, &q->send_spin, s->timeout_ns, s->wait_ns);
  if (rc)
    return rc;
  uint64_t index = atomic_load_explicit(&q->tail, memory_order_relaxed);

  /* The slot is ours until we publish it. */
  rs_msg_t *msg = slot_at(q, index);
  size_t bytes = hdr->elems * q->elem_bytes;
  *msg = *hdr;
  msg->seq = s->seq;
  msg->send_begin_ns = s->begin;
  if (s->by_ref) {
    msg->data = src;
    msg->checksum = q->checksum ? rs__checksum(src, bytes) : 0;
    if (corrupt) /* no wire copy to damage: damage what travels */
      msg->checksum ^= 1;
  } else {
    unsigned char *payload = rs__msg_slot_payload(msg);
    if (q->pack)
      q->pack(payload, src, hdr->elems);
    else if (bytes)
      memcpy(payload, src, bytes);
    msg->data = payload;
    msg->checksum = q->checksum ? rs__checksum(payload, bytes) : 0;
    if (corrupt && bytes)
      payload[bytes / 2] ^= 0x10;
    else if (corrupt)
      msg->checksum ^= 1; /* an empty segment: damage what there is */
  }
  msg->send_end_ns = rs__now_ns();

  /* Publish: the release makes the slot's contents visible with it. */
  atomic_store_explicit(&q->tail, index + 1, memory_order_release);
  rs__ev_signal(&q->ev);
  return RS_OK;
}

/* Send by copy (by_ref 0) or by reference; wire faults happen here. */
static int send_msg(rs_queue_t *q, const rs_msg_t *hdr, const void *src,
                    int by_ref, rs_wire_t wire, uint64_t timeout_ns,
                    uint64_t *wait_ns) {
  const send_t s = {.hdr = hdr,
                    .src = src,
                    .by_ref = by_ref,
                    .begin = rs__now_ns(),
                    .seq = q->send_seq++,
                    .timeout_ns = timeout_ns,
                    .wait_ns = wait_ns};
  int rc;
  switch (wire) {
  case RS_WIRE_DROP:
    return RS_OK; /* the number is spent; the message never arrives */
  case RS_WIRE_DUP:
    rc = publish(q, &s, 0);
    if (rc == RS_OK) /* once out, twice out: the second may time out */
      return publish(q, &s, 0);
    break;
  default:
    rc = publish(q, &s, wire == RS_WIRE_CORRUPT);
    break;
  }
  /* A send that timed out or was aborted before its message went out gives
   * its number back: only a number spent and never published is a message
   * the wire lost (which the watchdog reports as such). */
  if (rc)
    q->send_seq--;
  return rc;
}

int rs__queue_send(rs_queue_t *q, const rs_msg_t *hdr, const void *src,
                   rs_wire_t wire, uint64_t timeout_ns, uint64_t *wait_ns) {
  return send_msg(q, hdr, src, 0, wire, timeout_ns, wait_ns);
}

int rs__queue_send_ref(rs_queue_t *q, const rs_msg_t *hdr, const void *src,
                       rs_wire_t wire, uint64_t timeout_ns, uint64_t *wait_ns) {
  return send_msg(q, hdr, src, 1, wire, timeout_ns, wait_ns);
}

int rs__queue_recv(rs_queue_t *q, rs_msg_t **msg, uint64_t timeout_ns,
                   uint64_t *wait_ns) {
  int rc = wait_until(q, can_recv, &q->recv_spin, timeout_ns, wait_ns);
  if (rc)
    return rc;
  /* fin_seq first: a tail read after it holds every message sent before
   * the finish it counts. */
  uint64_t fin_seq = atomic_load_explicit(&q->fin_seq, memory_order_acquire);
  uint64_t index = atomic_load_explicit(&q->head, memory_order_relaxed);
  uint64_t tail = atomic_load_explicit(&q->tail, memory_order_acquire);
  if (index == tail) { /* the sender finished: the message was lost */
    *msg = NULL;
    q->bad_seq = fin_seq;
    q->bad_end = 1;
    return RS_EPROTO;
  }
  *msg = slot_at(q, index);
  if ((*msg)->seq != q->recv_seq) {
    q->bad_seq = (*msg)->seq;
    return RS_EPROTO;
  }
  if (q->checksum &&
      rs__checksum((*msg)->data, (*msg)->elems * q->elem_bytes) !=
          (*msg)->checksum)
    return RS_ECORRUPT;
  q->recv_seq++;
  return RS_OK;
}

void rs__queue_release(rs_queue_t *q) {
  /* The release: the consumer is done reading the slot. */
  atomic_fetch_add_explicit(&q->head, 1, memory_order_release);
  rs__ev_signal(&q->ev);
}

void rs__queue_finish(rs_queue_t *q) {
  atomic_store_explicit(&q->fin_seq, q->send_seq, memory_order_release);
  atomic_fetch_add_explicit(&q->fins, 1, memory_order_release);
  rs__ev_signal(&q->ev);
}

int rs__queue_end(rs_queue_t *q, uint64_t timeout_ns, uint64_t *wait_ns) {
  /* A message left over shows as soon as it is there; otherwise wait for
   * the sender's end of stream. */
  int rc = wait_until(q, can_end, &q->recv_spin, timeout_ns, wait_ns);
  if (rc)
    return rc;
  uint64_t fin_seq = atomic_load_explicit(&q->fin_seq, memory_order_acquire);
  uint64_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
  if (atomic_load_explicit(&q->tail, memory_order_acquire) != head) {
    q->bad_seq = rs__queue_peek(q, head)->seq; /* one too many */
    q->bad_end = 1;
    return RS_EPROTO;
  }
  if (fin_seq != q->recv_seq) {
    q->bad_seq = fin_seq; /* cannot happen: recv() saw it first */
    q->bad_end = 1;
    return RS_EPROTO;
  }
  q->ends_seen++;
  return RS_OK;
}

/* rs__queue_pause's wait: the run aborted or the pause is over. */
typedef struct pause_wait {
  rs_queue_t *q;
  uint64_t until_ns;
} pause_t;

static int pause_over(void *arg) {
  pause_t *p = arg;
  return aborted(p->q) || rs__now_ns() >= p->until_ns;
}

int rs__queue_pause(rs_queue_t *q, uint64_t ns) {
  pause_t p = {q, rs__now_ns() + ns};
  rs__ev_await(&q->ev, pause_over, &p, p.until_ns, 0, NULL);
  return aborted(q) ? RS_EABORTED : RS_OK;
}

const rs_msg_t *rs__queue_peek(const rs_queue_t *q, uint64_t index) {
  return (const rs_msg_t *)(const void *)(q->mem +
                                          (index % (uint64_t)q->slots) *
                                              q->slot_stride);
}

uint64_t rs__queue_spin_for(size_t message_bytes) {
  return message_bytes <= RS_QUEUE_SPIN_MAX_BYTES ? RS_EV_SPIN_NS : 0;
}

void rs__queue_wake(rs_queue_t *q) { rs__ev_signal(&q->ev); }
