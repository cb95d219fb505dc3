/* cli/parallel.c - a command's independent pieces of work (ringsim
 * model's simulations) on this machine's cores: cli.h's
 * cli_parallel_for. */
#include "cli.h"

#include <pthread.h>
#include <unistd.h>

/* The most threads a command starts. */
#define CLI_THREADS_MAX 16

typedef struct parallel {
  void (*fn)(void *ctx, int i);
  void *ctx;
  int n;
  int next; /* the next piece to take (atomically) */
} parallel_t;

/* Take pieces until none is left. */
static void *drain(void *arg) {
  parallel_t *p = arg;
  for (int i; (i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED)) < p->n;)
    p->fn(p->ctx, i);
  return NULL;
}

void cli_parallel_for(int n, void (*fn)(void *ctx, int i), void *ctx) {
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int threads = cpus < 1 ? 1 : cpus > CLI_THREADS_MAX ? CLI_THREADS_MAX
                                                      : (int)cpus;
  threads = threads < n ? threads : n;
  parallel_t p = {fn, ctx, n, 0};
  pthread_t tid[CLI_THREADS_MAX];
  int started = 0;
  /* (a thread that cannot start leaves its pieces to the others: the
   * caller drains too) */
  while (started < threads - 1 &&
         pthread_create(&tid[started], NULL, drain, &p) == 0)
    started++;
  drain(&p);
  for (int k = 0; k < started; k++)
    pthread_join(tid[k], NULL);
}
