/* channel.c - the bounded SPSC FIFO between ring neighbours (see channel.h
 * for its guarantees). */
#include "channel.h"

#include <errno.h>
#include <string.h>

#include "util.h"

int rs__chan_init(rs_chan_t *ch, int slots, size_t payload_bytes,
                  const atomic_int *abort_flag) {
  memset(ch, 0, sizeof *ch);
  ch->slots = slots;
  ch->elem_bytes = sizeof(float);
  ch->slot_stride = (sizeof(rs_msg_t) + payload_bytes + 63) & ~(size_t)63;
  ch->abort_flag = abort_flag;
  ch->mem = rs__aligned_alloc(ch->slot_stride * (size_t)slots);
  if (!ch->mem)
    return RS_ENOMEM;
  pthread_condattr_t attr;
  RS_PTHREAD_CHECK(pthread_condattr_init(&attr));
  RS_PTHREAD_CHECK(pthread_condattr_setclock(&attr, CLOCK_MONOTONIC));
  RS_PTHREAD_CHECK(pthread_mutex_init(&ch->mu, NULL));
  RS_PTHREAD_CHECK(pthread_cond_init(&ch->not_full, &attr));
  RS_PTHREAD_CHECK(pthread_cond_init(&ch->not_empty, &attr));
  RS_PTHREAD_CHECK(pthread_condattr_destroy(&attr));
  return RS_OK;
}

void rs__chan_destroy(rs_chan_t *ch) {
  if (!ch->mem)
    return;
  RS_PTHREAD_CHECK(pthread_cond_destroy(&ch->not_empty));
  RS_PTHREAD_CHECK(pthread_cond_destroy(&ch->not_full));
  RS_PTHREAD_CHECK(pthread_mutex_destroy(&ch->mu));
  free(ch->mem);
  ch->mem = NULL;
}

static rs_msg_t *slot_at(rs_chan_t *ch, uint64_t index) {
  return (rs_msg_t *)rs__chan_peek(ch, index);
}

/* With ch->mu held: may the producer fill a slot, or has the consumer a
 * message waiting (or learned that none will come: the sender finished
 * before sending the next one)? */
static int ready(const rs_chan_t *ch, int is_send) {
  return is_send ? ch->tail - ch->head < (uint64_t)ch->slots
                 : ch->tail != ch->head || ch->fin_seq > ch->recv_seq;
}

/* Wait on cond (with ch->mu held) until ready(), the run aborts, or the
 * deadline passes. */
static int wait_until(rs_chan_t *ch, pthread_cond_t *cond, int is_send,
                      uint64_t timeout_ns, uint64_t *wait_ns) {
  uint64_t begin = rs__now_ns();
  struct timespec ts = rs__deadline(begin + timeout_ns);
  int rc = RS_OK;
  for (;;) {
    if (atomic_load_explicit(ch->abort_flag, memory_order_acquire)) {
      rc = RS_EABORTED;
      break;
    }
    if (ready(ch, is_send))
      break;
    int err = pthread_cond_timedwait(cond, &ch->mu, &ts);
    if (err == ETIMEDOUT) {
      rc = ready(ch, is_send) ? RS_OK : RS_ETIMEDOUT;
      break;
    }
    if (err != 0 && err != EINTR)
      RS_PTHREAD_CHECK(err);
  }
  *wait_ns += rs__now_ns() - begin;
  return rc;
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

/* Wait for a free slot, fill it from hdr and src, publish it. */
static int publish(rs_chan_t *ch, const rs_msg_t *hdr, const void *src,
                   int by_ref, uint64_t seq, int corrupt, uint64_t begin,
                   uint64_t timeout_ns, uint64_t *wait_ns) {
  RS_PTHREAD_CHECK(pthread_mutex_lock(&ch->mu));
  int rc = RS_OK;
  if (!ready(ch, 1) ||
      atomic_load_explicit(ch->abort_flag, memory_order_relaxed))
    rc = wait_until(ch, &ch->not_full, 1, timeout_ns, wait_ns);
  uint64_t index = ch->tail;
  RS_PTHREAD_CHECK(pthread_mutex_unlock(&ch->mu));
  if (rc)
    return rc;

  /* The slot is ours until we publish it: copy without the lock. */
  rs_msg_t *msg = slot_at(ch, index);
  size_t bytes = hdr->elems * ch->elem_bytes;
  *msg = *hdr;
  msg->seq = seq;
  msg->send_begin_ns = begin;
  if (by_ref) {
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

  RS_PTHREAD_CHECK(pthread_mutex_lock(&ch->mu));
  ch->tail++;
  RS_PTHREAD_CHECK(pthread_cond_signal(&ch->not_empty));
  RS_PTHREAD_CHECK(pthread_mutex_unlock(&ch->mu));
  return RS_OK;
}

/* Send by copy (by_ref 0) or by reference; wire faults happen here. */
static int send_msg(rs_chan_t *ch, const rs_msg_t *hdr, const void *src,
                    int by_ref, rs_wire_t wire, uint64_t timeout_ns,
                    uint64_t *wait_ns) {
  uint64_t begin = rs__now_ns();
  uint64_t seq = ch->send_seq++;
  int rc;
  switch (wire) {
  case RS_WIRE_DROP:
    return RS_OK; /* the number is spent; the message never arrives */
  case RS_WIRE_DUP:
    rc = publish(ch, hdr, src, by_ref, seq, 0, begin, timeout_ns, wait_ns);
    if (rc == RS_OK) /* once out, twice out: the second may time out */
      return publish(ch, hdr, src, by_ref, seq, 0, begin, timeout_ns, wait_ns);
    break;
  default:
    rc = publish(ch, hdr, src, by_ref, seq, wire == RS_WIRE_CORRUPT, begin,
                 timeout_ns, wait_ns);
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
  RS_PTHREAD_CHECK(pthread_mutex_lock(&ch->mu));
  int rc = RS_OK;
  if (!ready(ch, 0) ||
      atomic_load_explicit(ch->abort_flag, memory_order_relaxed))
    rc = wait_until(ch, &ch->not_empty, 0, timeout_ns, wait_ns);
  uint64_t index = ch->head, tail = ch->tail, fin_seq = ch->fin_seq;
  RS_PTHREAD_CHECK(pthread_mutex_unlock(&ch->mu));
  if (rc)
    return rc;
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
  RS_PTHREAD_CHECK(pthread_mutex_lock(&ch->mu));
  ch->head++;
  RS_PTHREAD_CHECK(pthread_cond_signal(&ch->not_full));
  RS_PTHREAD_CHECK(pthread_mutex_unlock(&ch->mu));
}

void rs__chan_finish(rs_chan_t *ch) {
  RS_PTHREAD_CHECK(pthread_mutex_lock(&ch->mu));
  ch->fin_seq = ch->send_seq;
  ch->fins++;
  RS_PTHREAD_CHECK(pthread_cond_signal(&ch->not_empty));
  RS_PTHREAD_CHECK(pthread_mutex_unlock(&ch->mu));
}

int rs__chan_end(rs_chan_t *ch, uint64_t timeout_ns, uint64_t *wait_ns) {
  RS_PTHREAD_CHECK(pthread_mutex_lock(&ch->mu));
  uint64_t begin = rs__now_ns();
  struct timespec ts = rs__deadline(begin + timeout_ns);
  int rc = RS_OK;
  /* A message left over shows as soon as it is there; otherwise wait for
   * the sender's end of stream. */
  while (ch->fins <= ch->ends_seen && ch->tail == ch->head) {
    if (atomic_load_explicit(ch->abort_flag, memory_order_acquire)) {
      rc = RS_EABORTED;
      break;
    }
    int err = pthread_cond_timedwait(&ch->not_empty, &ch->mu, &ts);
    if (err == ETIMEDOUT && ch->fins <= ch->ends_seen && ch->tail == ch->head) {
      rc = RS_ETIMEDOUT;
      break;
    }
    if (err != 0 && err != EINTR && err != ETIMEDOUT)
      RS_PTHREAD_CHECK(err);
  }
  *wait_ns += rs__now_ns() - begin;
  if (rc == RS_OK && ch->tail != ch->head) {
    ch->bad_seq = rs__chan_peek(ch, ch->head)->seq; /* one too many */
    ch->bad_end = 1;
    rc = RS_EPROTO;
  } else if (rc == RS_OK && ch->fin_seq != ch->recv_seq) {
    ch->bad_seq = ch->fin_seq; /* cannot happen: recv() saw it first */
    ch->bad_end = 1;
    rc = RS_EPROTO;
  }
  if (rc == RS_OK)
    ch->ends_seen++;
  RS_PTHREAD_CHECK(pthread_mutex_unlock(&ch->mu));
  return rc;
}

int rs__chan_pause(rs_chan_t *ch, uint64_t ns) {
  RS_PTHREAD_CHECK(pthread_mutex_lock(&ch->mu));
  struct timespec ts = rs__deadline(rs__now_ns() + ns);
  int rc = RS_OK;
  for (;;) {
    if (atomic_load_explicit(ch->abort_flag, memory_order_acquire)) {
      rc = RS_EABORTED;
      break;
    }
    /* not_full: only this channel's sender waits on it. */
    int err = pthread_cond_timedwait(&ch->not_full, &ch->mu, &ts);
    if (err == ETIMEDOUT)
      break;
    if (err != 0 && err != EINTR)
      RS_PTHREAD_CHECK(err);
  }
  RS_PTHREAD_CHECK(pthread_mutex_unlock(&ch->mu));
  return rc;
}

const rs_msg_t *rs__chan_peek(const rs_chan_t *ch, uint64_t index) {
  return (const rs_msg_t *)(const void *)(ch->mem +
                                          (index % (uint64_t)ch->slots) *
                                              ch->slot_stride);
}

void rs__chan_wake(rs_chan_t *ch) {
  RS_PTHREAD_CHECK(pthread_mutex_lock(&ch->mu));
  RS_PTHREAD_CHECK(pthread_cond_broadcast(&ch->not_full));
  RS_PTHREAD_CHECK(pthread_cond_broadcast(&ch->not_empty));
  RS_PTHREAD_CHECK(pthread_mutex_unlock(&ch->mu));
}
