/* evcount.h - an event count: how one thread sleeps until another changes
 * something, in a few microseconds and without a lock (Linux futex(2)).
 *
 * DESIGN
 * - The shared state a waiter waits on (a queue's head and tail, a
 *   counter) is held in atomics of its own. The event count is a 32-bit
 *   sequence word beside it: whoever changes that state bumps the word
 *   afterwards (rs__ev_signal), and a waiter sleeps only while the word
 *   still holds the value it read before it last looked at the state.
 * - A waiter's loop, which is what rs__ev_await wraps:
 *       seen = rs__ev_seen(ev);       (before looking at the state)
 *       if (state is what I want) done;
 *       rs__ev_sleep(ev, seen, deadline);
 *   No wake-up is lost: a change made after the waiter read seen bumps the
 *   word, so the kernel refuses to sleep (the word is no longer seen) or
 *   wakes the sleeper; a change made before it is visible to the look.
 * - A signal is one atomic step on the word when nobody sleeps: it enters
 *   the kernel only when the word says someone does, and clears that, so
 *   the next signal does not (until someone sleeps again).
 * - Before sleeping, rs__ev_await may yield the core for a while
 *   (sched_yield, up to spin_ns): the thread that must run next gets the
 *   core at once, and a hand-off that comes soon costs no sleep and no
 *   wake-up (a sleeping hand-off costs about 10 us here, a yielding one
 *   2-3 us). The bound is in time, not in yields: with many threads on
 *   few cores a yield can take long, and a count of them would spin on.
 *   When a yield alone outlasts the bound, another process had the core:
 *   yielding to it waits out its time slice, while a sleeper woken by a
 *   signal preempts it, so the waiter backs off (sleeps at once) for a
 *   while, longer each time (rs_ev_spin_t).
 *   pause instructions do not help: they keep the core from that thread.
 * - Linux only, as ringsim is: elsewhere a sleep is a short poll (up to
 *   50 us at a time) and a signal wakes nobody, correct but slower.
 */
#ifndef RINGSIM_EVCOUNT_H
#define RINGSIM_EVCOUNT_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct rs_ev {
  /* The futex word: a count of signals above a low bit that says someone
   * sleeps (or is about to) and a signal must wake it. */
  _Atomic uint32_t word;
} rs_ev_t;

#define RS_EV_SLEEPERS 1u

/* No deadline: sleep until signalled. */
#define RS_EV_FOREVER UINT64_MAX

static inline void rs__ev_init(rs_ev_t *ev) { atomic_init(&ev->word, 0); }

/* The word's value, read before the waiter looks at the state. */
static inline uint32_t rs__ev_seen(rs_ev_t *ev) {
  return atomic_load_explicit(&ev->word, memory_order_acquire);
}

/* Sleep while the word still holds seen, until a signal or the absolute
 * CLOCK_MONOTONIC deadline_ns (RS_EV_FOREVER: none). May return early
 * (spuriously): the caller looks at its state again. */
void rs__ev_sleep(rs_ev_t *ev, uint32_t seen, uint64_t deadline_ns);

/* After changing the state: bump the word and wake every sleeper. */
void rs__ev_signal(rs_ev_t *ev);

/* One waiter's memory of its spinning, owned by the thread that waits:
 * after a yield went wrong it sleeps at once until calm_ns. */
typedef struct rs_ev_spin {
  uint64_t calm_ns;    /* no spinning before this time */
  uint64_t backoff_ns; /* the last back-off: 0, 1 ms, 2 ms, ... 1 s */
  int busy; /* spin without yielding: the waiter has a core of its own
               (no more threads than free cores), so nobody needs its
               core and a yield only adds a system call per look */
} rs_ev_spin_t;

/* Wait until ready(arg) is true: returns 1, or 0 at deadline_ns (ready
 * was false when the deadline passed). ready must read only atomics; it is
 * called after each read of the word. For the first spin_ns it yields the
 * core between looks (sched_yield) instead of sleeping, or, with
 * spin->busy, keeps it (a pause instruction between looks). A yield that
 * alone takes longer than RS_EV_BACKOFF_AFTER_NS ends the spin, and, with
 * spin (the waiter's memory; NULL: none), backs the waiter off: no
 * spinning for 1 ms, then 2, 4, ... up to 1 s while it keeps happening. */
int rs__ev_await(rs_ev_t *ev, int (*ready)(void *), void *arg,
                 uint64_t deadline_ns, uint64_t spin_ns, rs_ev_spin_t *spin);

/* How long a waiter yields before it sleeps: long enough for a hand-off
 * between threads that share the cores (a few microseconds each), short
 * enough that 256 workers on 2 cores waste little (docs/performance.md,
 * "Hand-offs"). */
#define RS_EV_SPIN_NS 20000u

/* A yield longer than this means another process held the core (its time
 * slice: milliseconds), not a worker of this run doing its step (tens of
 * microseconds when workers outnumber the cores): back off. At 20 us, the
 * spin's own length, sibling workers tripped it and W=4 at 8 B took twice
 * as long (docs/performance.md, "Hand-offs"). */
#define RS_EV_BACKOFF_AFTER_NS 200000u

/* Are the cores free for us: fewer threads runnable right now, in the
 * whole machine (/proc/loadavg), than cores? Only then does a run spin:
 * where other processes keep the cores busy, a thread that yields waits
 * out their time slices (milliseconds), and sleeping is faster. 0 where
 * it cannot tell. */
int rs__ev_cores_idle(void);

#define RS_EV_BACKOFF_MIN_NS 1000000u
#define RS_EV_BACKOFF_MAX_NS 1000000000u

#endif /* RINGSIM_EVCOUNT_H */
