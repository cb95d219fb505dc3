/* bench/first_touch.c - what the kernel alone costs a command that writes
 * N fresh bytes: map N bytes (MADV_HUGEPAGE, as ringsim's buffers), write
 * them once on every core, then once more. The first pass pays the page
 * faults and the kernel's zeroing of each page; the second is the memory's
 * own speed. bench/whole_command.sh runs it on the bytes ringsim's buffers
 * hold, so its ratios show the floor no user-space change can go under.
 *
 *   first_touch MIB        prints: first_s second_s (wall seconds)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

struct stripe {
  char *p;
  size_t n;
  int value;
};

static void *fill(void *arg) {
  struct stripe *s = arg;
  memset(s->p, s->value, s->n);
  return NULL;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Write every byte of p[0..n) with value, on cores threads; wall seconds. */
static double pass(char *p, size_t n, int cores, int value) {
  pthread_t tid[256];
  struct stripe s[256];
  size_t per = (n / (size_t)cores + 4095) & ~(size_t)4095;
  double t0 = now();
  for (int c = 0; c < cores; c++) {
    size_t lo = per * (size_t)c < n ? per * (size_t)c : n;
    size_t hi = lo + per < n ? lo + per : n;
    s[c] = (struct stripe){p + lo, hi - lo, value};
    pthread_create(&tid[c], NULL, fill, &s[c]);
  }
  for (int c = 0; c < cores; c++)
    pthread_join(tid[c], NULL);
  return now() - t0;
}

int main(int argc, char **argv) {
  long mib = argc == 2 ? atol(argv[1]) : 0;
  if (mib <= 0) {
    fprintf(stderr, "usage: first_touch MIB (a positive size)\n");
    return 2;
  }
  size_t n = (size_t)mib << 20;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  int cores = online < 1 ? 1 : online > 256 ? 256 : (int)online;
  char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  if (p == MAP_FAILED) {
    fprintf(stderr, "first_touch: cannot map %ld MiB\n", mib);
    return 3;
  }
  madvise(p, n, MADV_HUGEPAGE);
  double first = pass(p, n, cores, 1), second = pass(p, n, cores, 2);
  printf("%.3f %.3f\n", first, second);
  munmap(p, n);
  return 0;
}
