/* test.h - cmocka needs these headers first, in this order; then what
 * several tests share. */
#ifndef RINGSIM_TEST_H
#define RINGSIM_TEST_H

// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>
// clang-format on
#include <string.h>

#include "ringsim/ringsim.h"

/* The matrices' large element count: a million and three, or, under a
 * sanitizer (ten to twenty times slower; the threads and memory it checks
 * are the same at any size), the smaller count the test names. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define RS_TEST_LARGE(sanitized) (sanitized)
#else
#define RS_TEST_LARGE(sanitized) 1000003
#endif

/* Under either sanitizer, 1: a test whose subject runs no thread and
 * allocates the same at any size (the schedule model) runs a smaller case. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define RS_TEST_SANITIZED 1
#else
#define RS_TEST_SANITIZED 0
#endif

/* Under TSan (5-20x slower, more per thread), the tests whose subject is
 * not a race run a smaller case; RS_TEST_TSAN says so. */
#if defined(__SANITIZE_THREAD__)
#define RS_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RS_TEST_TSAN 1
#endif
#endif
#ifndef RS_TEST_TSAN
#define RS_TEST_TSAN 0
#endif

/* A network model from --net's and --reduce-rate's text (reduce may be
 * NULL); the test fails on text the parser refuses. */
static inline rs_netmodel_t net_of(const char *spec, const char *reduce) {
  rs_netmodel_t net;
  memset(&net, 0, sizeof net);
  char err[RS_ERRMSG_MAX];
  if (rs_netmodel_parse(spec, &net, err))
    fail_msg("%s", err);
  if (reduce && rs_netmodel_parse_rate(reduce, &net.reduce_rate, err))
    fail_msg("%s", err);
  return net;
}

/* A topology as --topo reads it, in a network model as the command makes
 * one (enabled, link unset), with a reduce rate (NULL: none). */
static inline rs_netmodel_t topo_of(const char *spec, const char *reduce) {
  rs_netmodel_t net;
  memset(&net, 0, sizeof net);
  char err[RS_ERRMSG_MAX];
  if (rs_topo_parse(spec, &net.topo, err))
    fail_msg("%s: %s", spec, err);
  net.enabled = 1;
  if (reduce && rs_netmodel_parse_rate(reduce, &net.reduce_rate, err))
    fail_msg("%s", err);
  return net;
}

/* A model of one f32 parameter of elems elements ("g"). */
static inline rs_model_t *model_of(size_t elems) {
  char text[128], err[RS_ERRMSG_MAX];
  snprintf(text, sizeof text,
           "{\"params\": [{\"name\": \"g\", \"shape\": [%zu]}]}", elems);
  rs_model_t *m;
  assert_int_equal(rs_model_parse(text, strlen(text), "m", &m, err), RS_OK);
  return m;
}

/* Run cfg on one bucket of elems f32 elements of exact inputs and return
 * its simulated time; the test fails unless the run's check passes (every
 * worker holds the direct result, the same bits). W and channels name it
 * in a failure. */
static inline uint64_t run_sim_ns(const rs_config_t *cfg, int W, int channels,
                                  size_t elems) {
  rs_model_t *m = model_of(elems);
  char err[RS_ERRMSG_MAX];
  rs_run_t *run;
  if (rs_run_create(cfg, m, &run, err))
    fail_msg("W=%d C=%d: create: %s", W, channels, err);
  assert_int_equal(rs_run_fill(run, RS_INIT_EXACT, 1), RS_OK);
  assert_int_equal(rs_run_execute(run), RS_OK);
  const rs_result_t *res = rs_run_result(run);
  if (res->status != RS_OK || !res->identical)
    fail_msg("W=%d C=%d n=%zu: status %d, identical %d", W, channels, elems,
             res->status, res->identical);
  const uint64_t sim = res->sim_ns;
  rs_run_free(run);
  rs_model_free(m);
  return sim;
}

#endif /* RINGSIM_TEST_H */
