/* test_queue.c - the bounded SPSC queue: FIFO order, blocking,
 * sequence numbers, timeouts and abort. */
#include "test.h"

#include <pthread.h>
#include <string.h>

#include "net/queue.h"
#include "base/reduce.h"
#include "base/util.h"

#define SEG 5

typedef struct pair {
  rs_queue_t q;
  atomic_int abort_flag;
  int messages;
  int rc;
} pair_t;

static void *producer(void *arg) {
  pair_t *p = arg;
  uint64_t wait = 0;
  for (int m = 0; m < p->messages; m++) {
    float seg[SEG];
    for (int i = 0; i < SEG; i++)
      seg[i] = (float)(m * SEG + i);
    rs_msg_t hdr = {.chunk = m, .elems = SEG};
    int rc = rs__queue_send(&p->q, &hdr, seg, RS_WIRE_OK, 5000000000u, &wait);
    if (rc) {
      p->rc = rc;
      return NULL;
    }
  }
  return NULL;
}

/* queue-1: a producer thread and this consumer pass many messages through
 * K slots; they arrive complete, in order, numbered 0, 1, 2, ... */
static void fifo_order_with_k_slots(int slots) {
  pair_t p = {.messages = 2000};
  atomic_init(&p.abort_flag, 0);
  assert_int_equal(
      rs__queue_init(&p.q, slots, SEG * sizeof(float), &p.abort_flag), RS_OK);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, producer, &p), 0);
  uint64_t wait = 0;
  for (int m = 0; m < p.messages; m++) {
    rs_msg_t *msg;
    assert_int_equal(rs__queue_recv(&p.q, &msg, 5000000000u, &wait), RS_OK);
    assert_int_equal(msg->seq, m);
    assert_int_equal(msg->chunk, m);
    assert_int_equal(msg->elems, SEG);
    assert_true(msg->send_end_ns >= msg->send_begin_ns);
    for (int i = 0; i < SEG; i++)
      assert_int_equal((int)((const float *)msg->data)[i], m * SEG + i);
    rs__queue_release(&p.q);
  }
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_int_equal(p.rc, RS_OK);
  rs__queue_destroy(&p.q);
}

static void test_fifo_1_slot(void **state) {
  (void)state;
  fifo_order_with_k_slots(1);
}
static void test_fifo_3_slots(void **state) {
  (void)state;
  fifo_order_with_k_slots(3);
}
static void test_fifo_8_slots(void **state) {
  (void)state;
  fifo_order_with_k_slots(8);
}

/* queue-2: a full queue makes send wait, then time out, spending no
 * sequence number. */
static void test_send_blocks_when_full_then_times_out(void **state) {
  (void)state;
  atomic_int abort_flag;
  atomic_init(&abort_flag, 0);
  rs_queue_t q;
  assert_int_equal(rs__queue_init(&q, 2, 4, &abort_flag), RS_OK);
  float x = 1;
  rs_msg_t hdr = {.elems = 1};
  uint64_t wait = 0;
  assert_int_equal(rs__queue_send(&q, &hdr, &x, RS_WIRE_OK, 1000000, &wait),
                   RS_OK);
  assert_int_equal(rs__queue_send(&q, &hdr, &x, RS_WIRE_OK, 1000000, &wait),
                   RS_OK);
  assert_int_equal(wait, 0);
  uint64_t t0 = rs__now_ns();
  assert_int_equal(rs__queue_send(&q, &hdr, &x, RS_WIRE_OK, 50000000, &wait),
                   RS_ETIMEDOUT);
  uint64_t waited = rs__now_ns() - t0;
  assert_true(waited >= 50000000u);
  assert_true(wait >= 50000000u);
  /* the send that timed out gave its number back: two were spent, two
   * went out, so nothing looks lost on the wire */
  assert_int_equal(q.send_seq, 2);
  assert_int_equal(q.tail, 2);
  rs__queue_destroy(&q);
}

/* queue-3: an empty queue makes recv time out. */
static void test_recv_times_out_when_empty(void **state) {
  (void)state;
  atomic_int abort_flag;
  atomic_init(&abort_flag, 0);
  rs_queue_t q;
  assert_int_equal(rs__queue_init(&q, 4, 4, &abort_flag), RS_OK);
  rs_msg_t *msg;
  uint64_t wait = 0;
  assert_int_equal(rs__queue_recv(&q, &msg, 20000000, &wait), RS_ETIMEDOUT);
  assert_true(wait >= 20000000u);
  rs__queue_destroy(&q);
}

typedef struct waiter {
  rs_queue_t *q;
  int rc;
} waiter_t;

static void *blocked_receiver(void *arg) {
  waiter_t *w = arg;
  rs_msg_t *msg;
  uint64_t wait = 0;
  w->rc = rs__queue_recv(w->q, &msg, 60000000000u, &wait);
  return NULL;
}

/* Start waiter on q in a thread, let it block for 20 ms, abort the run
 * and wake the queue: the waiter must return RS_EABORTED, long before
 * the minute it would otherwise wait. */
static void abort_releases(rs_queue_t *q, atomic_int *abort_flag,
                           void *(*waiter)(void *)) {
  waiter_t w = {q, 12345};
  pthread_t t;
  uint64_t t0 = rs__now_ns();
  assert_int_equal(pthread_create(&t, NULL, waiter, &w), 0);
  struct timespec pause = {0, 20000000};
  nanosleep(&pause, NULL);
  atomic_store(abort_flag, 1);
  rs__queue_wake(q);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_int_equal(w.rc, RS_EABORTED);
  assert_true(rs__now_ns() - t0 < 10000000000u);
}

/* queue-4: setting the abort flag and waking the queue releases a
 * receiver that would otherwise wait a minute. */
static void test_abort_wakes_a_blocked_receiver(void **state) {
  (void)state;
  atomic_int abort_flag;
  atomic_init(&abort_flag, 0);
  rs_queue_t q;
  assert_int_equal(rs__queue_init(&q, 4, 4, &abort_flag), RS_OK);
  abort_releases(&q, &abort_flag, blocked_receiver);
  rs__queue_destroy(&q);
}

/* queue-5: a message whose sequence number is not the next expected one
 * (as a lost or repeated message would be) is refused, not summed. */
static void test_out_of_sequence_message_is_refused(void **state) {
  (void)state;
  atomic_int abort_flag;
  atomic_init(&abort_flag, 0);
  rs_queue_t q;
  assert_int_equal(rs__queue_init(&q, 4, 4, &abort_flag), RS_OK);
  float x = 1;
  rs_msg_t hdr = {.elems = 1};
  uint64_t wait = 0;
  assert_int_equal(rs__queue_send(&q, &hdr, &x, RS_WIRE_OK, 1000000, &wait),
                   RS_OK);
  q.send_seq++; /* as if message 1 were lost on the way */
  assert_int_equal(rs__queue_send(&q, &hdr, &x, RS_WIRE_OK, 1000000, &wait),
                   RS_OK);
  rs_msg_t *msg;
  assert_int_equal(rs__queue_recv(&q, &msg, 1000000, &wait), RS_OK);
  assert_int_equal(msg->seq, 0);
  rs__queue_release(&q);
  assert_int_equal(rs__queue_recv(&q, &msg, 1000000, &wait), RS_EPROTO);
  rs__queue_destroy(&q);
}

/* queue-8: the end of stream. A clean stream ends with nothing left; a
 * message repeated at the end is found left over, a message lost at the
 * end is reported to the waiting receiver at once (no timeout). */
static void test_end_of_stream_catches_lost_and_repeated(void **state) {
  (void)state;
  atomic_int abort_flag;
  atomic_init(&abort_flag, 0);
  rs_queue_t q;
  assert_int_equal(rs__queue_init(&q, 4, 4, &abort_flag), RS_OK);
  float x = 1;
  rs_msg_t hdr = {.elems = 1}, *msg;
  uint64_t wait = 0, minute = 60000000000u;
  /* iteration 1: one message, received; the end is clean */
  assert_int_equal(rs__queue_send(&q, &hdr, &x, RS_WIRE_OK, minute, &wait),
                   RS_OK);
  rs__queue_finish(&q);
  assert_int_equal(rs__queue_recv(&q, &msg, minute, &wait), RS_OK);
  rs__queue_release(&q);
  assert_int_equal(rs__queue_end(&q, minute, &wait), RS_OK);
  /* iteration 2: the last message delivered twice */
  assert_int_equal(rs__queue_send(&q, &hdr, &x, RS_WIRE_DUP, minute, &wait),
                   RS_OK);
  rs__queue_finish(&q);
  assert_int_equal(rs__queue_recv(&q, &msg, minute, &wait), RS_OK);
  rs__queue_release(&q);
  assert_int_equal(rs__queue_end(&q, minute, &wait), RS_EPROTO);
  assert_int_equal(q.bad_seq, 1);
  assert_int_equal(q.recv_seq, 2);
  assert_true(q.bad_end);
  rs__queue_destroy(&q);

  /* the last message lost: the receiver learns it without waiting */
  assert_int_equal(rs__queue_init(&q, 4, 4, &abort_flag), RS_OK);
  assert_int_equal(rs__queue_send(&q, &hdr, &x, RS_WIRE_DROP, minute, &wait),
                   RS_OK);
  rs__queue_finish(&q);
  uint64_t t0 = rs__now_ns();
  assert_int_equal(rs__queue_recv(&q, &msg, minute, &wait), RS_EPROTO);
  assert_true(rs__now_ns() - t0 < 10000000000u);
  assert_int_equal(q.bad_seq, 1);
  assert_int_equal(q.recv_seq, 0);
  assert_true(q.bad_end);
  rs__queue_destroy(&q);
}

static void *pausing_sender(void *arg) {
  waiter_t *s = arg;
  s->rc = rs__queue_pause(s->q, 60000000000u);
  return NULL;
}

/* queue-9: a pause (an injected stall) lasts its length, and an abort
 * ends it early, as it ends a queue wait. */
static void test_abort_ends_a_pause(void **state) {
  (void)state;
  atomic_int abort_flag;
  atomic_init(&abort_flag, 0);
  rs_queue_t q;
  assert_int_equal(rs__queue_init(&q, 4, 4, &abort_flag), RS_OK);
  uint64_t t0 = rs__now_ns();
  assert_int_equal(rs__queue_pause(&q, 20000000), RS_OK);
  assert_true(rs__now_ns() - t0 >= 20000000u);
  abort_releases(&q, &abort_flag, pausing_sender);
  rs__queue_destroy(&q);
}

/* queue-6: a zero-element message (an empty chunk) still travels. */
static void test_empty_message_travels(void **state) {
  (void)state;
  atomic_int abort_flag;
  atomic_init(&abort_flag, 0);
  rs_queue_t q;
  assert_int_equal(rs__queue_init(&q, 1, 0, &abort_flag), RS_OK);
  rs_msg_t hdr = {.chunk = 3, .elems = 0};
  uint64_t wait = 0;
  assert_int_equal(rs__queue_send(&q, &hdr, NULL, RS_WIRE_OK, 1000000, &wait),
                   RS_OK);
  rs_msg_t *msg;
  assert_int_equal(rs__queue_recv(&q, &msg, 1000000, &wait), RS_OK);
  assert_int_equal(msg->chunk, 3);
  assert_int_equal(msg->elems, 0);
  rs__queue_release(&q);
  rs__queue_destroy(&q);
}

/* queue-7: a packing queue carries f16 as 2 bytes an element: the slot
 * holds the binary16 encodings, the checksum covers them, unpacking gives
 * back the float values bit for bit, and a flipped bit on the wire is
 * caught. */
static void test_half_precision_travels_packed(void **state) {
  (void)state;
  atomic_int abort_flag;
  atomic_init(&abort_flag, 0);
  rs_queue_t q;
  const float values[4] = {1.0f, -0.0999755859375f, 65504.0f, 0x1p-24f};
  const uint16_t encoded[4] = {0x3c00, 0xae66, 0x7bff, 0x0001};
  assert_int_equal(rs__queue_init(&q, 2, sizeof encoded, &abort_flag), RS_OK);
  q.elem_bytes = 2;
  q.pack = rs__pack_f16;
  q.checksum = 1;
  rs_msg_t hdr = {.elems = 4};
  uint64_t wait = 0;
  assert_int_equal(rs__queue_send(&q, &hdr, values, RS_WIRE_OK, 1000000, &wait),
                   RS_OK);
  assert_int_equal(
      rs__queue_send(&q, &hdr, values, RS_WIRE_CORRUPT, 1000000, &wait), RS_OK);
  rs_msg_t *msg;
  assert_int_equal(rs__queue_recv(&q, &msg, 1000000, &wait), RS_OK);
  assert_memory_equal(msg->data, encoded, sizeof encoded);
  assert_true(msg->checksum == rs__checksum(encoded, sizeof encoded));
  float back[4];
  rs__unpack_f16(back, msg->data, 4);
  assert_memory_equal(back, values, sizeof values);
  rs__queue_release(&q);
  assert_int_equal(rs__queue_recv(&q, &msg, 1000000, &wait), RS_ECORRUPT);
  rs__queue_destroy(&q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fifo_1_slot),
      cmocka_unit_test(test_fifo_3_slots),
      cmocka_unit_test(test_fifo_8_slots),
      cmocka_unit_test(test_send_blocks_when_full_then_times_out),
      cmocka_unit_test(test_recv_times_out_when_empty),
      cmocka_unit_test(test_abort_wakes_a_blocked_receiver),
      cmocka_unit_test(test_out_of_sequence_message_is_refused),
      cmocka_unit_test(test_empty_message_travels),
      cmocka_unit_test(test_half_precision_travels_packed),
      cmocka_unit_test(test_end_of_stream_catches_lost_and_repeated),
      cmocka_unit_test(test_abort_ends_a_pause),
  };
  return cmocka_run_group_tests_name("queue", tests, NULL, NULL);
}
