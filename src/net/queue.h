/* queue.h - a bounded single-producer/single-consumer FIFO between two
 * ring neighbours: the simulated network link from worker r to worker r+1.
 *
 * DESIGN
 * - K slots of one segment each. send() copies a segment into the next free
 *   slot, blocking while all K are full; recv() hands the receiver the oldest
 *   full slot, which it reads in place and then gives back with release().
 * - Messages leave in the order they were sent (FIFO) and each carries a
 *   sequence number, 0, 1, 2, ... per queue; recv() checks it, so a lost or
 *   repeated message is an error (RS_EPROTO), never silently summed. With
 *   checksums on, each payload carries one too, and a damaged message is an
 *   error (RS_ECORRUPT).
 * - The queue is the simulated wire, so injected wire faults happen here:
 *   send() can drop a message, deliver it twice, or flip one of its bits.
 * - No lock: head (the consumer's), tail and the end of stream (the
 *   producer's) are atomics, each written by one side only. Taking a free
 *   slot, filling it and publishing it (tail + 1, a release) belong to the
 *   producer alone; releasing it (head + 1) to the consumer. Every change
 *   then signals the queue's event count (evcount.h), which wakes the
 *   other side if it sleeps: the data and the wake-up go in one step, and
 *   a hand-off costs a system call only when someone is asleep.
 * - Waiting yields the core for up to q->spin_ns (RS_EV_SPIN_NS, on
 *   queues whose messages are small: rs__queue_spin_for; backing off
 *   while other processes take the cores, evcount.h), then sleeps on
 *   the event count until a deadline; past it the call returns
 *   RS_ETIMEDOUT. Setting the run's abort flag and calling rs__queue_wake()
 *   on every queue makes every waiter return RS_EABORTED.
 * - A queue may pack what it carries (f16 and bf16 values, held as float
 *   in the buffers, travel as 2 bytes): the sender converts into the slot,
 *   the receiver converts back (both exact). The checksum covers what
 *   travels.
 * - End of stream: after its last send of an iteration the sender calls
 *   rs__queue_finish(), which publishes how many messages it sent. A receiver
 *   waiting for a message that the sender has finished without delivering
 *   (one dropped at the last step) learns at once that it was lost, and
 *   rs__queue_end() checks, after the receiver's last step, that nothing is
 *   left over (one delivered twice at the last step). So a lost or repeated
 *   message is caught at every step, without waiting for a timeout.
 * - rs__queue_pause() sleeps for a while on the queue's event count, so
 *   the abort that wakes queue waiters wakes a sleeping sender too (an
 *   injected stall ends when the run does).
 * - By reference (rs__queue_send_ref, as NCCL's direct/P2P read): no copy;
 *   the message points at the sender's buffer and the receiver reduces
 *   straight from it. The sender must not write a region it has sent until
 *   the receiver has released it (see transport.h).
 */
#ifndef RINGSIM_QUEUE_H
#define RINGSIM_QUEUE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "net/evcount.h"

/* The header of one message; the payload (elems elements of the queue's
 * elem_bytes) follows it. */
typedef struct rs_msg {
  uint64_t seq;
  int32_t bucket;
  int32_t phase; /* rs_phase_t of the sending step */
  int32_t step;
  int32_t chunk;
  int32_t segment;
  int32_t src; /* the sender's rank */
  /* Provenance: whose contributions the payload holds, as the sender's
   * schedule says: workers contrib_first, contrib_first+1, ... (mod W),
   * contrib_count of them. */
  int32_t contrib_first;
  int32_t contrib_count;
  uint64_t elem_offset;
  uint64_t elems;
  uint64_t send_begin_ns; /* when the sender called send */
  uint64_t send_end_ns;   /* when the payload was in the slot */
  uint64_t checksum;      /* of the payload, when the queue checks */
  const void *data;       /* the payload: in the slot, or (direct mode) the
                             sender's own buffer */
  uint64_t sim_send_ns;   /* simulated departure and arrival (net model) */
  uint64_t sim_arrive_ns;
  uint64_t sim_wire_ns;
  uint32_t sim_share; /* the sender's clock's last_share (netmodel.h) */
  int32_t channel;    /* NCCL's channel that carries it (xfer.h's rs_tag_t) */
} rs_msg_t;

/* What the wire does to one message (fault injection). */
typedef enum rs_wire {
  RS_WIRE_OK,
  RS_WIRE_CORRUPT, /* flip one bit after the checksum was taken */
  RS_WIRE_DROP,    /* lose it: its sequence number is never delivered */
  RS_WIRE_DUP      /* deliver it twice, with the same sequence number */
} rs_wire_t;

/* Where a copying queue keeps a slot's payload: right after its header. */
static inline void *rs__msg_slot_payload(rs_msg_t *msg) {
  return (void *)(msg + 1);
}

typedef struct rs_queue {
  /* Bumped after every change below, and by rs__queue_wake(). */
  _Alignas(64) rs_ev_t ev;
  _Alignas(64) _Atomic uint64_t head; /* next message to receive; the
                                         consumer's */
  _Alignas(64) _Atomic uint64_t tail; /* next slot to fill; the producer's */
  /* What the sender published with rs__queue_finish(); the producer's. */
  _Atomic uint64_t fin_seq; /* messages sent when it last finished */
  _Atomic uint64_t fins;    /* times it finished (one per iteration) */
  _Alignas(64) int slots;
  uint64_t spin_ns; /* how long a waiter yields before it sleeps */
  size_t slot_stride;
  unsigned char *mem;
  const atomic_int *abort_flag;
  int checksum;      /* compute and verify payload checksums */
  size_t elem_bytes; /* bytes per element in a payload: 4 (float, the
                       default), 8, or 2 (f16/bf16 packed) */
  /* When set, rs__queue_send() packs elems elements from the
   * sender's buffer into the slot with it instead of copying them: f16 and
   * bf16 travel as 2 bytes, as on a real wire. */
  void (*pack)(void *dst, const void *src, size_t elems);
  /* Owned by one side each; never read by the other while threads run. */
  _Alignas(64) uint64_t send_seq;
  rs_ev_spin_t send_spin; /* the producer's waits' back-off */
  _Alignas(64) uint64_t recv_seq;
  rs_ev_spin_t recv_spin; /* the consumer's waits' back-off */
  uint64_t bad_seq;       /* the sequence number recv() refused, for reports */
  int bad_end;        /* 1: bad_seq is the sender's end of stream (fin_seq) or
                         a message found left over at the end (rs__queue_end) */
  uint64_t ends_seen; /* rs__queue_end() calls that returned RS_OK */
} rs_queue_t;

/* Set up q with slots slots of up to payload_bytes each. abort_flag is the
 * run's; the queue only reads it. RS_ENOMEM if allocation fails. */
int rs__queue_init(rs_queue_t *q, int slots, size_t payload_bytes,
                   const atomic_int *abort_flag);
void rs__queue_destroy(rs_queue_t *q);

/* Copy hdr (its seq is set here) and hdr->elems elements from src into the
 * next free slot, doing to it what wire says. Adds the time spent blocked to
 * *wait_ns. Returns RS_OK, RS_ETIMEDOUT after timeout_ns of waiting, or
 * RS_EABORTED. */
int rs__queue_send(rs_queue_t *q, const rs_msg_t *hdr, const void *src,
                   rs_wire_t wire, uint64_t timeout_ns, uint64_t *wait_ns);
/* The same, but the message points at src instead of holding a copy (the
 * checksum is taken of src; a corrupting wire damages the checksum). */
int rs__queue_send_ref(rs_queue_t *q, const rs_msg_t *hdr, const void *src,
                       rs_wire_t wire, uint64_t timeout_ns, uint64_t *wait_ns);
/* Point *msg at the oldest message, valid until rs__queue_release(). Returns
 * RS_OK, RS_ETIMEDOUT, RS_EABORTED, RS_EPROTO if its sequence number is not
 * the next expected one (q->bad_seq holds it; q->recv_seq the expected)
 * or the sender finished without sending it (bad_end set, bad_seq the
 * number of messages it sent: one was lost), or RS_ECORRUPT if its checksum
 * does not match its payload. */
int rs__queue_recv(rs_queue_t *q, rs_msg_t **msg, uint64_t timeout_ns,
                   uint64_t *wait_ns);
void rs__queue_release(rs_queue_t *q);

/* Sender: this iteration's last message is sent (the end of the stream). */
void rs__queue_finish(rs_queue_t *q);
/* Receiver, after its last step of an iteration: wait (up to timeout_ns)
 * for the sender's rs__queue_finish, then check that every message sent was
 * received once. RS_OK; RS_EPROTO with bad_seq set when a message is left
 * over (bad_seq < recv_seq: delivered twice) or was never delivered
 * (bad_seq = fin_seq > recv_seq: lost); RS_ETIMEDOUT; RS_EABORTED. */
int rs__queue_end(rs_queue_t *q, uint64_t timeout_ns, uint64_t *wait_ns);

/* Sleep ns nanoseconds on the queue (the caller is its sender), or until
 * the run aborts: RS_OK after the full pause, RS_EABORTED. */
int rs__queue_pause(rs_queue_t *q, uint64_t ns);

/* The message at absolute index (head <= index < tail), for reading what a
 * queue still holds after its threads have been joined. */
const rs_msg_t *rs__queue_peek(const rs_queue_t *q, uint64_t index);

/* A checksum of n bytes that any change of one 8-byte word alters. */
uint64_t rs__checksum(const void *data, size_t n);

/* How long a waiter on a queue whose largest message is message_bytes
 * should yield before it sleeps: RS_EV_SPIN_NS up to RS_QUEUE_SPIN_MAX_BYTES,
 * else 0. A big message keeps its sender (and a thread the waiter yields
 * to) busy for longer than the spin lasts: yielding then only delays the
 * waiter, and a sleeper woken by a signal gets the core sooner. */
#define RS_QUEUE_SPIN_MAX_BYTES (64u << 10)
uint64_t rs__queue_spin_for(size_t message_bytes);

/* Wake every waiter so it sees the abort flag. */
void rs__queue_wake(rs_queue_t *q);

#endif /* RINGSIM_QUEUE_H */
