/* parallel.c - the helper threads that generate inputs and check results
 * (see parallel.h). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "base/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include "base/util.h"
#include "ringsim/internal/command.h"

int rs__cores(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set); /* taskset, cpusets: the cores we may use */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  return cores > 0 ? (int)cores : 1;
}

/* rs_parallel_for's pieces and the next to take (atomically). */
typedef struct pieces {
  void (*fn)(void *ctx, int i);
  void *ctx;
  int n, next;
} pieces_t;

static void *take_pieces(void *arg) {
  pieces_t *p = arg;
  for (int i; (i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED)) < p->n;)
    p->fn(p->ctx, i);
  return NULL;
}

void rs_parallel_for(int n, void (*fn)(void *ctx, int i), void *ctx) {
  pieces_t p = {fn, ctx, n, 0};
  const int cores = rs__cores();
  rs__parallel(cores < n ? cores : n, take_pieces, &p);
}

void rs__parallel(int threads, void *(*fn)(void *), void *arg) {
  pthread_t tids[RS_PARALLEL_MAX];
  int created = 0;
  threads = threads < 1                 ? 1
            : threads > RS_PARALLEL_MAX ? RS_PARALLEL_MAX
                                        : threads;
  /* small stacks: the jobs keep their blocks on them, under 256 KiB */
  pthread_attr_t attr;
  RS_PTHREAD_CHECK(pthread_attr_init(&attr));
  RS_PTHREAD_CHECK(pthread_attr_setstacksize(&attr, 1u << 20));
  for (int t = 1; t < threads; t++)
    if (pthread_create(&tids[created], &attr, fn, arg) == 0)
      created++;
  fn(arg); /* the work counter shares out whatever a missing thread left */
  for (int t = 0; t < created; t++)
    RS_PTHREAD_CHECK(pthread_join(tids[t], NULL));
  RS_PTHREAD_CHECK(pthread_attr_destroy(&attr));
}
