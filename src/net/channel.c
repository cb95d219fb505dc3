/* channel.c - the bounded SPSC FIFO between ring neighbours (see channel.h
 * for its guarantees). */
#include "net/channel.h"

#include <string.h>

#include "base/util.h"

int rs__chan_init(rs_chan_t *ch, int slots, size_t payload_bytes,
                  const atomic_int *abort_flag) {
  memset(ch, 0, sizeof *ch);
  rs__ev_init(&ch->ev);
  atomic_init(&ch->head, 0);
  atomic_init(&ch->tail, 0);
  atomic_init(&ch->fin_seq, 0);
  atomic_init(&ch->fins, 0);
  ch->slots = slots;
  ch->elem_bytes = sizeof(float);
  ch->spin_ns = RS_EV_SPIN_NS;
  ch->slot_stride = (sizeof(rs_msg_t) + payload_bytes + 63) & ~(size_t)63;
  ch->abort_flag = abort_flag;
  ch->mem = rs__aligned_alloc(ch->slot_stride * (size_t)slots);
  if (!ch->mem)
    return RS_ENOMEM;
  return RS_OK;
}

void rs__chan_destroy(rs_chan_t *ch) {
  free(ch->mem);
  ch->mem = NULL;
}

static rs_msg_t *slot_at(rs_chan_t *ch, uint64_t index) {
  return (rs_msg_t *)rs__chan_peek(ch, index);
}

static int aborted(const rs_chan_t *ch) {
  return atomic_load_explicit(ch->abort_flag, memory_order_acquire);
}

/* What a waiter waits for; each also ends the wait when the run aborts.
 * Only the side that waits calls its own: the producer may fill a slot;
 * the consumer has a message waiting, or has learned that none will come
 * (the sender finished before sending the next one: fin_seq is read first,
 * so a tail read after it holds every message sent before that finish);
 * the consumer's end-of-stream check has something to look at. */
static int can_send(void *arg) {
  rs_chan_t *ch = arg;
  return aborted(ch) ||
         atomic_load_explicit(&ch->tail, memory_order_relaxed) -
                 atomic_load_explicit(&ch->head, memory_order_acquire) <
             (uint64_t)ch->slots;
}

static int can_recv(void *arg) {
  rs_chan_t *ch = arg;
  uint64_t fin_seq = atomic_load_explicit(&ch->fin_seq, memory_order_acquire);
  return aborted(ch) ||
         atomic_load_explicit(&ch->tail, memory_order_acquire) !=
             atomic_load_explicit(&ch->head, memory_order_relaxed) ||
         fin_seq > ch->recv_seq;
}

static int can_end(void *arg) {
  rs_chan_t *ch = arg;
  return aborted(ch) ||
         atomic_load_explicit(&ch->fins, memory_order_acquire) >
             ch->ends_seen ||
         atomic_load_explicit(&ch->tail, memory_order_acquire) !=
             atomic_load_explicit(&ch->head, memory_order_relaxed);
}

/* Wait until ready() (or an abort), for at most timeout_ns: RS_OK,
 * RS_EABORTED or RS_ETIMEDOUT. The time spent blocked is added to
 * *wait_ns; a call that need not wait reads no clock. */
static int wait_until(rs_chan_t *ch, int (*ready)(void *), rs_ev_spin_t *spin,
                      uint64_t timeout_ns, uint64_t *wait_ns) {
  if (ready(ch))
    return aborted(ch) ? RS_EABORTED : RS_OK;
  uint64_t begin = rs__now_ns();
  int ok =
      rs__ev_await(&ch->ev, ready, ch, begin + timeout_ns, ch->spin_ns, spin);
  *wait_ns += rs__now_ns() - begin;
  if (aborted(ch))
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
static int publish(rs_chan_t *ch, const send_t *s, int corrupt) {
  const rs_msg_t *hdr = s->hdr;
  const void *src = s->src;
  int rc = wait_until(ch, can_send, &ch->send_spin, s->timeout_ns, s->wait_ns);
  if (rc)
    return rc;
  uint64_t index = atomic_load_explicit(&ch->tail, memory_order_relaxed);

  /* The slot is ours until we publish it. */
  rs_msg_t *msg = slot_at(ch, index);
  size_t bytes = hdr->elems * ch->elem_bytes;
  *msg = *hdr;
  msg->seq = s->seq;
  msg->send_begin_ns = s->begin;
  if (s->by_ref) {
    msg->data = src;
    msg->checksum = ch->checksum ? rs__checksum(src, bytes) : 0;
    if (corrupt) /* no wire copy to damage: damage what travels */
      msg->checksum ^= 1;
  } else {
    unsigned char *payload = rs__msg_slot_payload(msg);
    if (ch->pack)
      ch->pack(payload, src, hdr->elems);
    else if (bytes)
      memcpy(payload, src, bytes);
    msg->data = payload;
    msg->checksum = ch->checksum ? rs__checksum(payload, bytes) : 0;
    if (corrupt && bytes)
      payload[bytes / 2] ^= 0x10;
    else if (corrupt)
      msg->checksum ^= 1; /* an empty segment: damage what there is */
  }
  msg->send_end_ns = rs__now_ns();

  /* Publish: the release makes the slot's contents visible with it. */
  atomic_store_explicit(&ch->tail, index + 1, memory_order_release);
  rs__ev_signal(&ch->ev);
  return RS_OK;
}

/* Send by copy (by_ref 0) or by reference; wire faults happen here. */
static int send_msg(rs_chan_t *ch, const rs_msg_t *hdr, const void *src,
                    int by_ref, rs_wire_t wire, uint64_t timeout_ns,
                    uint64_t *wait_ns) {
  const send_t s = {.hdr = hdr,
                    .src = src,
                    .by_ref = by_ref,
                    .begin = rs__now_ns(),
                    .seq = ch->send_seq++,
                    .timeout_ns = timeout_ns,
                    .wait_ns = wait_ns};
  int rc;
  switch (wire) {
  case RS_WIRE_DROP:
    return RS_OK; /* the number is spent; the message never arrives */
  case RS_WIRE_DUP:
    rc = publish(ch, &s, 0);
    if (rc == RS_OK) /* once out, twice out: the second may time out */
      return publish(ch, &s, 0);
    break;
  default:
    rc = publish(ch, &s, wire == RS_WIRE_CORRUPT);
    break;
  }
  /* A send that timed out or was aborted before its message went out gives
   * its number back: only a number spent and never published is a message
   * the wire lost (which the watchdog reports as such). */
  if (rc)
    ch->send_seq--;
  return rc;
}

int rs__chan_send(rs_chan_t *ch, const rs_msg_t *hdr, const void *src,
                  rs_wire_t wire, uint64_t timeout_ns, uint64_t *wait_ns) {
  return send_msg(ch, hdr, src, 0, wire, timeout_ns, wait_ns);
}

int rs__chan_send_ref(rs_chan_t *ch, const rs_msg_t *hdr, const void *src,
                      rs_wire_t wire, uint64_t timeout_ns, uint64_t *wait_ns) {
  return send_msg(ch, hdr, src, 1, wire, timeout_ns, wait_ns);
}

int rs__chan_recv(rs_chan_t *ch, rs_msg_t **msg, uint64_t timeout_ns,
                  uint64_t *wait_ns) {
  int rc = wait_until(ch, can_recv, &ch->recv_spin, timeout_ns, wait_ns);
  if (rc)
    return rc;
  /* fin_seq first: a tail read after it holds every message sent before
   * the finish it counts. */
  uint64_t fin_seq = atomic_load_explicit(&ch->fin_seq, memory_order_acquire);
  uint64_t index = atomic_load_explicit(&ch->head, memory_order_relaxed);
  uint64_t tail = atomic_load_explicit(&ch->tail, memory_order_acquire);
  if (index == tail) { /* the sender finished: the message was lost */
    *msg = NULL;
    ch->bad_seq = fin_seq;
    ch->bad_end = 1;
    return RS_EPROTO;
  }
  *msg = slot_at(ch, index);
  if ((*msg)->seq != ch->recv_seq) {
    ch->bad_seq = (*msg)->seq;
    return RS_EPROTO;
  }
  if (ch->checksum &&
      rs__checksum((*msg)->data, (*msg)->elems * ch->elem_bytes) !=
          (*msg)->checksum)
    return RS_ECORRUPT;
  ch->recv_seq++;
  return RS_OK;
}

void rs__chan_release(rs_chan_t *ch) {
  /* The release: the consumer is done reading the slot. */
  atomic_fetch_add_explicit(&ch->head, 1, memory_order_release);
  rs__ev_signal(&ch->ev);
}

void rs__chan_finish(rs_chan_t *ch) {
  atomic_store_explicit(&ch->fin_seq, ch->send_seq, memory_order_release);
  atomic_fetch_add_explicit(&ch->fins, 1, memory_order_release);
  rs__ev_signal(&ch->ev);
}

int rs__chan_end(rs_chan_t *ch, uint64_t timeout_ns, uint64_t *wait_ns) {
  /* A message left over shows as soon as it is there; otherwise wait for
   * the sender's end of stream. */
  int rc = wait_until(ch, can_end, &ch->recv_spin, timeout_ns, wait_ns);
  if (rc)
    return rc;
  uint64_t fin_seq = atomic_load_explicit(&ch->fin_seq, memory_order_acquire);
  uint64_t head = atomic_load_explicit(&ch->head, memory_order_relaxed);
  if (atomic_load_explicit(&ch->tail, memory_order_acquire) != head) {
    ch->bad_seq = rs__chan_peek(ch, head)->seq; /* one too many */
    ch->bad_end = 1;
    return RS_EPROTO;
  }
  if (fin_seq != ch->recv_seq) {
    ch->bad_seq = fin_seq; /* cannot happen: recv() saw it first */
    ch->bad_end = 1;
    return RS_EPROTO;
  }
  ch->ends_seen++;
  return RS_OK;
}

/* rs__chan_pause's wait: the run aborted or the pause is over. */
typedef struct pause_wait {
  rs_chan_t *ch;
  uint64_t until_ns;
} pause_t;

static int pause_over(void *arg) {
  pause_t *p = arg;
  return aborted(p->ch) || rs__now_ns() >= p->until_ns;
}

int rs__chan_pause(rs_chan_t *ch, uint64_t ns) {
  pause_t p = {ch, rs__now_ns() + ns};
  rs__ev_await(&ch->ev, pause_over, &p, p.until_ns, 0, NULL);
  return aborted(ch) ? RS_EABORTED : RS_OK;
}

const rs_msg_t *rs__chan_peek(const rs_chan_t *ch, uint64_t index) {
  return (const rs_msg_t *)(const void *)(ch->mem +
                                          (index % (uint64_t)ch->slots) *
                                              ch->slot_stride);
}

uint64_t rs__chan_spin_for(size_t message_bytes) {
  return message_bytes <= RS_CHAN_SPIN_MAX_BYTES ? RS_EV_SPIN_NS : 0;
}

void rs__chan_wake(rs_chan_t *ch) { rs__ev_signal(&ch->ev); }
