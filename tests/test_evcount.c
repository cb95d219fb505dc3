/* test_evcount.c - the event count: no lost wake-up, deadlines, one signal
 * wakes every sleeper, and a signal nobody sleeps through stays out of the
 * kernel. */
#include "test.h"

#include <pthread.h>
#include <stdio.h>

#include "net/evcount.h"
#include "base/util.h"

#define SECOND 1000000000u

/* Two threads pass a token back and forth; each waits for its turn on its
 * own event count. */
typedef struct relay {
  rs_ev_t ev[2];
  atomic_int turn;
  int rounds;
  uint64_t spin_ns;
  rs_ev_spin_t spins[2];
  int missed[2]; /* waits that reached their deadline */
} relay_t;

typedef struct side {
  relay_t *relay;
  int me;
} side_t;

static int my_turn(void *arg) {
  side_t *s = arg;
  return atomic_load_explicit(&s->relay->turn, memory_order_acquire) == s->me;
}

static void *relay_main(void *arg) {
  side_t *s = arg;
  relay_t *r = s->relay;
  for (int i = 0; i < r->rounds; i++) {
    if (!rs__ev_await(&r->ev[s->me], my_turn, s, rs__now_ns() + 10u * SECOND,
                      r->spin_ns, &r->spins[s->me])) {
      r->missed[s->me]++;
      return NULL; /* a lost wake-up: the other side waits too */
    }
    atomic_store_explicit(&r->turn, !s->me, memory_order_release);
    rs__ev_signal(&r->ev[!s->me]);
  }
  return NULL;
}

static void relay(int rounds, uint64_t spin_ns, int busy) {
  relay_t r = {.rounds = rounds, .spin_ns = spin_ns};
  r.spins[0].busy = r.spins[1].busy = busy;
  rs__ev_init(&r.ev[0]);
  rs__ev_init(&r.ev[1]);
  atomic_init(&r.turn, 0);
  side_t sides[2] = {{&r, 0}, {&r, 1}};
  pthread_t t[2];
  uint64_t t0 = rs__now_ns();
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_create(&t[i], NULL, relay_main, &sides[i]), 0);
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_join(t[i], NULL), 0);
  double us = (double)(rs__now_ns() - t0) / 1e3 / (2.0 * rounds);
  printf("# %d round trips, spin %llu ns%s: %.2f us per hand-off\n", rounds,
         (unsigned long long)spin_ns, busy ? " (busy)" : "", us);
  assert_int_equal(r.missed[0], 0);
  assert_int_equal(r.missed[1], 0);
  assert_int_equal(atomic_load(&r.turn), 0); /* every round completed */
}

/* Hand-offs per relay: fewer under a sanitizer, which slows each. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define RELAY_ROUNDS 2000
#else
#define RELAY_ROUNDS 20000
#endif

/* evcount-1: hand-offs that always sleep (no spin), and hand-offs that
 * yield first, never lose a wake-up: no wait reaches its 10 s deadline. */
static void test_no_lost_wakeup(void **state) {
  (void)state;
  relay(RELAY_ROUNDS, 0, 0);
  relay(RELAY_ROUNDS, RS_EV_SPIN_NS, 0);
}

static int never(void *arg) {
  (void)arg;
  return 0;
}

/* evcount-2: with nothing signalled, a wait ends at its deadline (not
 * before, and not long after), whether it spins first or not. */
static void test_deadline(void **state) {
  (void)state;
  rs_ev_t ev;
  rs__ev_init(&ev);
  for (int spin = 0; spin < 2; spin++) {
    uint64_t t0 = rs__now_ns();
    assert_int_equal(rs__ev_await(&ev, never, NULL, t0 + 30000000u,
                                  spin ? RS_EV_SPIN_NS : 0, NULL),
                     0);
    uint64_t waited = rs__now_ns() - t0;
    assert_true(waited >= 30000000u);
    assert_true(waited < 5u * SECOND);
  }
}

/* evcount-5: a busy spin (spin->busy: no yield) loses no wake-up either,
 * whether the other side's turn comes within the spin or after it (a
 * spin of 1 us ends in a sleep at almost every hand-off), and still ends
 * a wait that nothing signals at its deadline. */
static void test_busy_spin(void **state) {
  (void)state;
  relay(RELAY_ROUNDS, RS_EV_SPIN_NS, 1);
  relay(RELAY_ROUNDS, 1000, 1);
  rs_ev_t ev;
  rs__ev_init(&ev);
  rs_ev_spin_t spin = {0, 0, 1};
  uint64_t t0 = rs__now_ns();
  assert_int_equal(
      rs__ev_await(&ev, never, NULL, t0 + 30000000u, 50000000u, &spin), 0);
  uint64_t waited = rs__now_ns() - t0;
  assert_true(waited >= 30000000u);
  assert_true(waited < 5u * SECOND);
}

typedef struct crowd {
  rs_ev_t ev;
  atomic_int go;
  atomic_int woken;
} crowd_t;

static int go_set(void *arg) {
  crowd_t *c = arg;
  return atomic_load_explicit(&c->go, memory_order_acquire);
}

static void *crowd_main(void *arg) {
  crowd_t *c = arg;
  if (rs__ev_await(&c->ev, go_set, c, rs__now_ns() + 60u * SECOND, 0, NULL))
    atomic_fetch_add(&c->woken, 1);
  return NULL;
}

/* evcount-3: one signal wakes every sleeper (an abort must reach them
 * all), and it clears the word's sleeper bit. */
static void test_one_signal_wakes_all(void **state) {
  (void)state;
  crowd_t c;
  rs__ev_init(&c.ev);
  atomic_init(&c.go, 0);
  atomic_init(&c.woken, 0);
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    assert_int_equal(pthread_create(&t[i], NULL, crowd_main, &c), 0);
  /* Let them fall asleep (a late one finds go set and does not sleep). */
  struct timespec pause = {0, 50000000};
  nanosleep(&pause, NULL);
  uint64_t t0 = rs__now_ns();
  atomic_store_explicit(&c.go, 1, memory_order_release);
  rs__ev_signal(&c.ev);
  for (int i = 0; i < 4; i++)
    assert_int_equal(pthread_join(t[i], NULL), 0);
  assert_int_equal(atomic_load(&c.woken), 4);
  assert_true(rs__now_ns() - t0 < 10u * SECOND);
  assert_int_equal(atomic_load(&c.ev.word) & RS_EV_SLEEPERS, 0);
}

/* evcount-4: a signal with nobody asleep only counts (the sleeper bit
 * stays clear, so it made no system call), and a sleep on a value the
 * word no longer holds returns at once. */
static void test_signal_without_sleepers(void **state) {
  (void)state;
  rs_ev_t ev;
  rs__ev_init(&ev);
  uint32_t seen = rs__ev_seen(&ev);
  rs__ev_signal(&ev);
  rs__ev_signal(&ev);
  uint32_t now = rs__ev_seen(&ev);
  assert_int_equal(now & RS_EV_SLEEPERS, 0);
  assert_int_not_equal(now, seen);
  uint64_t t0 = rs__now_ns();
  rs__ev_sleep(&ev, seen, t0 + 10u * SECOND);
  assert_true(rs__now_ns() - t0 < SECOND);
  assert_int_equal(rs__ev_seen(&ev), now); /* it did not mark a sleeper */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_lost_wakeup),
      cmocka_unit_test(test_deadline),
      cmocka_unit_test(test_one_signal_wakes_all),
      cmocka_unit_test(test_signal_without_sleepers),
      cmocka_unit_test(test_busy_spin),
  };
  return cmocka_run_group_tests_name("evcount", tests, NULL, NULL);
}
