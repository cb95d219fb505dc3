/* util.h - small helpers shared by the modules: errors, clocks, allocation. */
#ifndef RINGSIM_UTIL_H
#define RINGSIM_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ringsim/ringsim.h"
/* rs_one_line (util.c), which every message goes through, and the other
 * calls for the command alone, which libringsim.so does not export */
#include "ringsim/internal/command.h"

/* Format a one-line message into errmsg (RS_ERRMSG_MAX bytes, may be NULL)
 * and return code, so callers can write `return rs__err(e, RS_EINVAL, ...)`. */
int rs__err(char *errmsg, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Where in the user's input a fault is: bytes at .. at+len of input,
 * given to option (its name as the user typed it, "--topo"). */
typedef struct rs_err_where {
  const char *option, *input;
  size_t at, len;
} rs_err_where_t;

/* rs__err for a fault where says: "OPTION 'INPUT': PROBLEM" when the
 * input has at most RS_QUOTE_MAX bytes, as every message quotes its
 * input; else the problem first, then where and an excerpt (rs_excerpt),
 * "OPTION: PROBLEM (at byte AT of N: '...EXCERPT...')", so a long input
 * never crowds out what is wrong. */
int rs__err_where(char *errmsg, int code, const rs_err_where_t *where,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* rs__err_where with the place's four parts in a row:
 * rs__err_at(errmsg, code, option, input, at, len, fmt, ...). */
#define rs__err_at(errmsg, code, option, input, at, len, ...)                  \
  rs__err_where((errmsg), (code),                                              \
                &(const rs_err_where_t){(option), (input), (at), (len)},       \
                __VA_ARGS__)

static inline uint64_t rs__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* An absolute CLOCK_MONOTONIC time in ns as a timespec, for
 * pthread_cond_timedwait on a condition variable set to that clock. */
static inline struct timespec rs__deadline(uint64_t at_ns) {
  struct timespec ts = {.tv_sec = (time_t)(at_ns / 1000000000u),
                        .tv_nsec = (long)(at_ns % 1000000000u)};
  return ts;
}

/* A pthread call that cannot fail unless the program is broken: abort with
 * the call and its error (NCCL's PTHREADCHECK). */
#define RS_PTHREAD_CHECK(call)                                                 \
  do {                                                                         \
    int rs__rc = (call);                                                       \
    if (rs__rc != 0) {                                                         \
      fprintf(stderr, "ringsim: %s failed (%d) at %s:%d\n", #call, rs__rc,     \
              __FILE__, __LINE__);                                             \
      abort();                                                                 \
    }                                                                          \
  } while (0)

/* A loop's function compiled as well for AVX-512 and AVX2 machines and
 * picked at load time for the machine (GCC's function multiversioning:
 * the generator's and the check's loops). Not under a sanitizer, nor with
 * RS_NO_CLONES (the baseline build generator_paths compares with). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&         \
    !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__) &&         \
    !defined(RS_NO_CLONES)
#define RS_CLONES                                                              \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define RS_CLONES
#endif

/* fopen(path, "rb") that does not wait for a writer: a FIFO nobody
 * writes to opens at once and reads as empty (open(2) would block, and no
 * signal would stop it); a pipe with a writer (-p <(...)) reads as
 * usual. NULL with errno on failure. */
FILE *rs__fopen_read(const char *path);

/* 64-byte aligned allocation of n bytes (at least one cache line); NULL on
 * failure. Free with free(). From RS_HUGE_ALLOC bytes on, on 2 MiB
 * boundaries, in whole 2 MiB pages, marked for transparent huge pages. */
void *rs__aligned_alloc(size_t n);
#define RS_HUGE_ALLOC ((size_t)4 << 20)
/* Ask the kernel to back p[0 .. n) with zeroed pages now (Linux 5.14's
 * MADV_POPULATE_WRITE, on whole pages around it: only within one
 * rs__aligned_alloc buffer of RS_HUGE_ALLOC bytes or more, which ends on
 * a 2 MiB boundary). Returns 1 if it did; 0 if it could not, and then the first
 * writes fault the pages in as ever. */
int rs__populate(void *p, size_t n);

#endif /* RINGSIM_UTIL_H */
