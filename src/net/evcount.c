/* evcount.c - the event count (evcount.h) over Linux futex(2). */
#include "net/evcount.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

void rs__ev_sleep(rs_ev_t *ev, uint32_t seen, uint64_t deadline_ns) {
  /* Say that someone sleeps (the low bit), unless a signal came since
   * seen was read: then there is something new to look at. */
  if (!(seen & RS_EV_SLEEPERS)) {
    if (!atomic_compare_exchange_strong_explicit(
            &ev->word, &seen, seen | RS_EV_SLEEPERS, memory_order_acquire,
            memory_order_acquire))
      return;
    seen |= RS_EV_SLEEPERS;
  }
#ifdef __linux__
  struct timespec ts, *at = NULL;
  if (deadline_ns != RS_EV_FOREVER) {
    ts = rs__deadline(deadline_ns);
    at = &ts;
  }
  /* WAIT_BITSET takes an absolute CLOCK_MONOTONIC time, as our deadlines
   * are. EAGAIN: the word changed already; ETIMEDOUT; EINTR: a signal. */
  if (syscall(SYS_futex, &ev->word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG,
              seen, at, NULL, FUTEX_BITSET_MATCH_ANY) != 0 &&
      errno != EAGAIN && errno != ETIMEDOUT && errno != EINTR) {
    fprintf(stderr, "ringsim: futex wait failed (%d)\n", errno);
    abort();
  }
#else
  if (atomic_load_explicit(&ev->word, memory_order_acquire) == seen) {
    uint64_t now = rs__now_ns(), ns = 50000;
    if (deadline_ns != RS_EV_FOREVER && deadline_ns - now < ns)
      ns = deadline_ns > now ? deadline_ns - now : 0;
    struct timespec pause = {0, (long)ns};
    nanosleep(&pause, NULL);
  }
#endif
}

void rs__ev_signal(rs_ev_t *ev) {
  /* One step: count the signal and clear the sleepers' bit, (old | 1) + 1
   * (the count lives above the bit). Only a signal that finds the bit set
   * enters the kernel, so a hand-off to a thread already awake, or woken
   * by an earlier signal, costs no system call. */
  uint32_t old = atomic_load_explicit(&ev->word, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(
      &ev->word, &old, (old | RS_EV_SLEEPERS) + 1, memory_order_acq_rel,
      memory_order_relaxed))
    ;
#ifdef __linux__
  if ((old & RS_EV_SLEEPERS) &&
      syscall(SYS_futex, &ev->word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX,
              NULL, NULL, 0) < 0) {
    fprintf(stderr, "ringsim: futex wake failed (%d)\n", errno);
    abort();
  }
#endif
}

int rs__ev_cores_idle(void) {
  FILE *f = fopen("/proc/loadavg", "r");
  int running = 0, total = 0;
  if (!f)
    return 0;
  int n = fscanf(f, "%*f %*f %*f %d/%d", &running, &total);
  fclose(f);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  /* running counts the thread that reads it */
  return n == 2 && cores > 0 && running - 1 < cores;
}

/* Let the core's sibling hyperthread (or the memory system) breathe while
 * a busy waiter looks again. */
static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* A yield that kept this thread off the core for longer than
 * RS_EV_BACKOFF_AFTER_NS (ten times the whole spin): a thread outside this
 * run (another process) had the core, and a thread that yields to it waits out
 * its time slice, while a sleeper woken by a signal preempts it. Sleep at once
 * for a while, twice as long each time it happens again (never shorter:
 * a process that took the cores once will take them again). */
static void back_off(rs_ev_spin_t *spin, uint64_t now) {
  spin->backoff_ns =
      spin->backoff_ns ? 2 * spin->backoff_ns : RS_EV_BACKOFF_MIN_NS;
  if (spin->backoff_ns > RS_EV_BACKOFF_MAX_NS)
    spin->backoff_ns = RS_EV_BACKOFF_MAX_NS;
  spin->calm_ns = now + spin->backoff_ns;
}

int rs__ev_await(rs_ev_t *ev, int (*ready)(void *), void *arg,
                 uint64_t deadline_ns, uint64_t spin_ns, rs_ev_spin_t *spin) {
  uint64_t spin_until = 0;
  int decided = 0;
  for (;;) {
    uint32_t seen = rs__ev_seen(ev);
    if (ready(arg))
      return 1;
    uint64_t now = rs__now_ns();
    if (deadline_ns != RS_EV_FOREVER && now >= deadline_ns)
      return 0;
    if (!decided) {
      decided = 1;
      if (!spin || now >= spin->calm_ns)
        spin_until = now + spin_ns;
    }
    if (now < spin_until && spin && spin->busy) {
      for (int i = 0; i < 32; i++)
        cpu_relax();
      continue;
    }
    if (now < spin_until) {
      sched_yield();
      uint64_t after = rs__now_ns();
      if (after - now > RS_EV_BACKOFF_AFTER_NS) {
        if (spin)
          back_off(spin, after);
        spin_until = 0; /* sleep from now on */
      }
      continue;
    }
    rs__ev_sleep(ev, seen, deadline_ns);
  }
}
