/* progress.c - the progress line of a run, or of a count of pieces of
 * work (ringsim step's simulations), on stderr.
 *
 * A thread looks at the run (rs_run_progress: atomics only), or at the
 * count, every tenth of a second; once one stage (generating, the
 * reference, the all-reduce, the check, writing the trace; or the counted
 * work) has taken more than a second, it draws one line, redrawn in
 * place, and clears it when the stage or the run ends.
 * Only on a terminal: a pipe or a file gets nothing, and neither does
 * --json (cli_progress_start is not called), so no output is ever mixed
 * with it; --quiet (every mode) starts none.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define PROGRESS_AFTER_S 1.0
#define PROGRESS_TICK_NS 100000000L

struct cli_progress {
  rs_run_t *run;          /* a run's stages, or */
  const char *what;       /* the counted work: what it is, */
  const char *unit;       /* what a piece is (NULL: show a percentage), */
  const atomic_int *done; /* how many pieces are done, */
  int total;              /* of how many */
  double after_s;         /* a stage's time before the line is drawn */
  pthread_mutex_t mu;
  pthread_cond_t cond;
  pthread_t thread;
  int stop; /* under mu */
};

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *stage_name(rs_stage_t stage) {
  switch (stage) {
  case RS_STAGE_GENERATE:
    return "generating the gradients";
  case RS_STAGE_REFERENCE:
    return "the reference";
  case RS_STAGE_ALLREDUCE:
    return "the all-reduce";
  case RS_STAGE_CHECK:
    return "checking the result";
  case RS_STAGE_TRACE:
    return "writing the trace";
  default:
    return NULL;
  }
}

static void *progress_main(void *arg) {
  cli_progress_t *p = arg;
  rs_stage_t shown = RS_STAGE_IDLE;
  double since = mono_s();
  int drawn = 0;
  if (pthread_mutex_lock(&p->mu))
    abort();
  while (!p->stop) {
    double fraction = -1, now = mono_s();
    rs_stage_t stage = RS_STAGE_ALLREDUCE;
    if (p->run)
      stage = rs_run_progress(p->run, &fraction);
    else if (p->total > 0)
      fraction = (double)atomic_load(p->done) / p->total;
    if (stage != shown) {
      shown = stage;
      since = now;
    }
    const char *name = p->run ? stage_name(stage) : p->what;
    if (name && now - since >= p->after_s) {
      if (!p->run && p->unit)
        fprintf(stderr, "\rringsim: %s: %d/%d %s, %.0f s\033[K", name,
                atomic_load(p->done), p->total, p->unit, now - since);
      else if (fraction >= 0)
        fprintf(stderr, "\rringsim: %s: %.0f%%, %.0f s\033[K", name,
                100 * fraction, now - since);
      else
        fprintf(stderr, "\rringsim: %s: %.0f s\033[K", name, now - since);
      drawn = 1;
    } else if (drawn) {
      fputs("\r\033[K", stderr);
      drawn = 0;
    }
    fflush(stderr);
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += PROGRESS_TICK_NS;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&p->cond, &p->mu, &until);
  }
  if (drawn) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
  }
  if (pthread_mutex_unlock(&p->mu))
    abort();
  return NULL;
}

static cli_progress_t *start(rs_run_t *run, const char *what, const char *unit,
                             const atomic_int *done, int total) {
  if (!isatty(STDERR_FILENO))
    return NULL;
  cli_progress_t *p = calloc(1, sizeof *p);
  if (!p)
    return NULL; /* no progress line; the work goes on */
  p->run = run;
  p->what = what;
  p->unit = unit;
  p->done = done;
  p->total = total;
  /* (a test's knob: 0 draws at once, so a test needs no slow machine) */
  const char *after = getenv("RINGSIM_TEST_PROGRESS_AFTER");
  p->after_s = after ? atof(after) : PROGRESS_AFTER_S;
  pthread_condattr_t attr;
  if (pthread_mutex_init(&p->mu, NULL) || pthread_condattr_init(&attr) ||
      pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) ||
      pthread_cond_init(&p->cond, &attr) || pthread_condattr_destroy(&attr))
    abort();
  if (pthread_create(&p->thread, NULL, progress_main, p) != 0) {
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->mu);
    free(p);
    return NULL;
  }
  return p;
}

cli_progress_t *cli_progress_start(rs_run_t *run) {
  return start(run, NULL, NULL, NULL, 0);
}

cli_progress_t *cli_progress_count(const char *what, const atomic_int *done,
                                   int total) {
  return start(NULL, what, NULL, done, total);
}

cli_progress_t *cli_progress_pieces(const char *what, const char *unit,
                                    const atomic_int *done, int total) {
  return start(NULL, what, unit, done, total);
}

void cli_progress_stop(cli_progress_t *p) {
  if (!p)
    return;
  if (pthread_mutex_lock(&p->mu))
    abort();
  p->stop = 1;
  pthread_cond_signal(&p->cond);
  if (pthread_mutex_unlock(&p->mu) || pthread_join(p->thread, NULL))
    abort();
  pthread_cond_destroy(&p->cond);
  pthread_mutex_destroy(&p->mu);
  free(p);
}
