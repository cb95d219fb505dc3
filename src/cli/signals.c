/* signals.c - the ringsim command's one taker of SIGINT, SIGTERM and
 * SIGHUP, by which every mode (a run, model, bench, diff) stops.
 *
 * DESIGN
 * - cli_signals_start, first in main (before any other thread, MPI's
 *   included), blocks the three signals in the calling thread, so every
 *   thread created after it inherits the block, and starts one thread that
 *   takes them with sigwait. That thread can do what a handler may not:
 *   stop the run in progress (rs_run_interrupt locks mutexes).
 * - The first signal is kept: cli_signal() is one atomic load, cheap
 *   enough for any long loop to poll (every N iterations, or between
 *   repetitions); the run registered with cli_signals_watch is
 *   interrupted at once (or as soon as it is registered); a schedule
 *   simulation whose network model's stop is cli_signal_flag() returns.
 * - SIGHUP (the terminal went away) is handled as SIGTERM. Each ends the
 *   command with 128 + its number: 130 SIGINT, 143 SIGTERM, 129 SIGHUP.
 * - A second signal gives the first one second to finish cleaning up (an
 *   --out's temporary file removed, the trace's row written), then ends
 *   the process at once with 128 + its number.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* A pthread call that cannot fail unless the program is broken. */
#define PTHREAD_CHECK(call)                                                    \
  do {                                                                         \
    int pthread_rc = (call);                                                   \
    if (pthread_rc != 0) {                                                     \
      fprintf(stderr, "ringsim: %s failed (%d)\n", #call, pthread_rc);         \
      abort();                                                                 \
    }                                                                          \
  } while (0)

static struct {
  pthread_t thread;
  int started;
  sigset_t set;
  /* the first signal taken, or 0; also the library's stop flag
   * (cli_signal_flag): a plain int (rs_stop_flag_t), so signo is loaded
   * and stored with the __atomic_ builtins */
  rs_stop_flag_t signo;
  atomic_int said;     /* a message naming it has been printed */
  atomic_int stopping; /* the command is done: the next signal stops us */
  pthread_mutex_t mu;
  rs_run_t *run; /* the run to stop, while there is one; guarded by mu */
} sig = {.mu = PTHREAD_MUTEX_INITIALIZER};

const char *cli_signal_name(int signo) {
  return signo == SIGINT    ? "SIGINT"
         : signo == SIGHUP  ? "SIGHUP"
         : signo == SIGTERM ? "SIGTERM"
                            : "a signal";
}

static void *take_signals(void *arg) {
  (void)arg;
  int signo;
  if (sigwait(&sig.set, &signo) != 0 || atomic_load(&sig.stopping))
    return NULL;
  __atomic_store_n(&sig.signo, signo, __ATOMIC_SEQ_CST);
  PTHREAD_CHECK(pthread_mutex_lock(&sig.mu));
  if (sig.run)
    rs_run_interrupt(sig.run, cli_signal_name(signo));
  PTHREAD_CHECK(pthread_mutex_unlock(&sig.mu));
  if (sigwait(&sig.set, &signo) == 0 && !atomic_load(&sig.stopping)) {
    /* The first signal is being acted on: give that a second, then stop
     * at once. */
    for (int i = 0; i < 100 && !atomic_load(&sig.stopping); i++)
      nanosleep(&(struct timespec){0, 10000000}, NULL);
    if (atomic_load(&sig.stopping))
      return NULL;
    static const char msg[] = "ringsim: a second signal: stopping at once\n";
    if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
    }
    _exit(128 + signo);
  }
  return NULL;
}

void cli_signals_start(void) {
  sigemptyset(&sig.set);
  sigaddset(&sig.set, SIGINT);
  sigaddset(&sig.set, SIGTERM);
  sigaddset(&sig.set, SIGHUP);
  PTHREAD_CHECK(pthread_sigmask(SIG_BLOCK, &sig.set, NULL));
  /* Without the thread the signals stay blocked and pending: the command
   * runs to its end (nothing is lost), as if none had come. */
  sig.started = pthread_create(&sig.thread, NULL, take_signals, NULL) == 0;
}

void cli_signals_watch(rs_run_t *run) {
  PTHREAD_CHECK(pthread_mutex_lock(&sig.mu));
  sig.run = run;
  int signo = __atomic_load_n(&sig.signo, __ATOMIC_SEQ_CST);
  if (run && signo) /* it came before the run existed */
    rs_run_interrupt(run, cli_signal_name(signo));
  PTHREAD_CHECK(pthread_mutex_unlock(&sig.mu));
}

int cli_signal(void) {
  return __atomic_load_n(&sig.signo, __ATOMIC_RELAXED);
}

const rs_stop_flag_t *cli_signal_flag(void) { return &sig.signo; }

void cli_signal_said(void) { atomic_store(&sig.said, 1); }

static void stop_taker(void) {
  if (sig.started) {
    /* Wake the taker with a signal it takes (no pthread_cancel: the
     * sanitizers' runtimes do not survive cancelling a thread in sigwait). */
    atomic_store(&sig.stopping, 1);
    PTHREAD_CHECK(pthread_kill(sig.thread, SIGTERM));
    PTHREAD_CHECK(pthread_join(sig.thread, NULL));
    sig.started = 0;
  }
}

int cli_signals_finish(int rc) {
  stop_taker();
  int signo = __atomic_load_n(&sig.signo, __ATOMIC_SEQ_CST);
  if (!signo)
    return rc;
  if (!atomic_load(&sig.said))
    fprintf(stderr, "ringsim: interrupted by %s\n", cli_signal_name(signo));
  return 128 + signo;
}

int cli_signals_finish_ended(int rc) {
  stop_taker();
  return rc;
}
