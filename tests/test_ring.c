/* test_ring.c - the whole all-reduce through the library: results against
 * an independent reference, the ring's invariants, failures.
 *
 *   test_ring            the named cases (ring-1 ... ring-20)
 *   test_ring matrix W   the input matrix for W workers (ring-0.W)
 */
#include "test.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/schedule.h"
#include "check/check.h"
#include "core/runstate.h"
#include "ringsim/ringsim.h"

typedef enum { KIND_INLINE, KIND_NORMAL, KIND_EXACT } kind_t;
/* Worker w's buffer of an f32 (or f16/bf16) run, as floats. */
static float *f32_buffer(rs_run_t *run, int w) { return rs_run_buffer(run, w); }

static const char *const kind_names[] = {"inline", "normal", "exact"};

/* Fail, printing both values, unless two doubles are exactly equal. */
#define assert_double_same(actual, expected)                                   \
  do {                                                                         \
    double actual_ = (actual), expected_ = (expected);                         \
    if (!(actual_ == expected_))                                               \
      fail_msg("%s is %.17g, expected %.17g", #actual, actual_, expected_);    \
  } while (0)

/* A model with params "a" (most elements) and "b" (the rest), so the run
 * crosses a param boundary. */
static rs_model_t *make_model(size_t elems, kind_t kind, int workers,
                              rs_dtype_t dtype) {
  size_t b = elems > 3 ? 3 : 0, a = elems - b;
  size_t cap = 256 + (size_t)workers * (elems * 32 + 64);
  char *text = malloc(cap);
  assert_non_null(text);
  const char *name = rs_dtype_name(dtype);
  int len = snprintf(text, cap,
                     "{\"params\": [{\"name\": \"a\", \"shape\": [%zu], "
                     "\"dtype\": \"%s\"}, {\"name\": \"b\", \"shape\": [%zu], "
                     "\"dtype\": \"%s\"}]",
                     a, name, b, name);
  if (kind == KIND_INLINE && elems <= 4096) {
    /* Values with no exact sum in f32: the check must rely on the bound. */
    len += snprintf(text + len, cap - (size_t)len, ", \"grads\": [");
    for (int w = 0; w < workers; w++) {
      for (size_t i = 0; i < elems; i++) {
        double x = sin((double)(i * 31 + (size_t)w * 17)) * (1 + w % 5) / 3.0;
        const char *pre = i == 0   ? (w ? ", {\"a\": [" : "{\"a\": [")
                          : i == a ? "], \"b\": ["
                                   : ", ";
        len += snprintf(text + len, cap - (size_t)len, "%s%.17g", pre, x);
      }
      len += snprintf(text + len, cap - (size_t)len,
                      a == elems ? "], \"b\": []}" : "]}");
    }
    len += snprintf(text + len, cap - (size_t)len, "]");
  }
  snprintf(text + len, cap - (size_t)len, "}");
  char err[RS_ERRMSG_MAX];
  rs_model_t *m;
  if (rs_model_parse(text, strlen(text), "matrix.json", &m, err))
    fail_msg("model: %s", err);
  free(text);
  return m;
}

/* Fill the run's buffers by hand (inline inputs too big for JSON). */
static void fill_by_hand(rs_run_t *run, int W, size_t n, rs_dtype_t dtype) {
  for (int w = 0; w < W; w++)
    for (size_t i = 0; i < n; i++) {
      double x = sin((double)(i * 31 + (size_t)w * 17)) * (1 + w % 5) / 3.0;
      if (dtype == RS_DTYPE_F64)
        ((double *)rs_run_buffer(run, w))[i] = x;
      else
        f32_buffer(run, w)[i] = (float)x;
    }
  rs_run_mark_filled(run);
}

/* Element i of worker w's buffer, whatever its type. */
static double elem(rs_run_t *run, int w, size_t i, rs_dtype_t dtype) {
  if (dtype == RS_DTYPE_F64)
    return ((const double *)rs_run_buffer(run, w))[i];
  return f32_buffer(run, w)[i];
}

/* Run W workers over n elements with the given inputs and check, without
 * trusting src/check/: the test keeps its own copy of the inputs and
 * computes its own reference. */
static void run_case(int W, size_t n, kind_t kind, rs_op_t op, int direct,
                     int slices, rs_dtype_t dtype) {
  rs_model_t *m = make_model(n, kind, W, dtype);
  const size_t es = rs_dtype_buffer_size(dtype); /* bytes per element */
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = W;
  cfg.op = op;
  cfg.segment_bytes = 4096 * 4; /* several segments per chunk at 1000003 */
  cfg.direct = direct;
  cfg.slices = slices;
  char err[RS_ERRMSG_MAX];
  rs_run_t *run;
  if (rs_run_create(&cfg, m, &run, err))
    fail_msg("create: %s", err);
  int rc;
  if (kind == KIND_EXACT)
    rc = rs_run_fill(run, RS_INIT_EXACT, 7);
  else if (kind == KIND_NORMAL)
    rc = rs_run_fill(run, RS_INIT_NORMAL, 7);
  else if (rs_model_inline_workers(m))
    rc = rs_run_fill_inline(run);
  else {
    fill_by_hand(run, W, n, dtype);
    rc = RS_OK;
  }
  assert_int_equal(rc, RS_OK);

  /* The test's own reference: sum and sum of |x| in long double. */
  long double *sum = calloc(n + 1, sizeof *sum),
              *abs_sum = calloc(n + 1, sizeof *abs_sum);
  assert_non_null(sum);
  assert_non_null(abs_sum);
  for (int w = 0; w < W; w++)
    for (size_t i = 0; i < n; i++) {
      sum[i] += elem(run, w, i, dtype);
      abs_sum[i] += fabs(elem(run, w, i, dtype));
    }
  rc = rs_run_execute(run);
  if (rc != RS_OK)
    fail_msg("W=%d n=%zu %s: %s: %s", W, n, kind_names[kind], rs_errname(rc),
             rs_run_errmsg(run));

  const void *r0 = rs_run_buffer(run, 0);
  for (int w = 1; w < W; w++)
    if (n && memcmp(rs_run_buffer(run, w), r0, n * es))
      fail_msg("W=%d n=%zu %s %s: worker %d differs from worker 0", W, n,
               rs_dtype_name(dtype), kind_names[kind], w);
  const int f64 = dtype == RS_DTYPE_F64;
  const long double u = ldexpl(1, f64 ? -53 : -24);
  const long double tiny = f64 ? 0x1p-1074L : 0x1p-149L;
  const long double div = op == RS_OP_AVG ? W : 1;
  for (size_t i = 0; i < n; i++) {
    long double want = sum[i] / div, got = elem(run, 0, i, dtype);
    if (kind == KIND_EXACT) {
      /* the exact mean, rounded once to the dtype */
      if (got != (f64 ? (double)want : (float)want))
        fail_msg("W=%d n=%zu %s exact: element %zu is %.17Lg, want %.17Lg", W,
                 n, rs_dtype_name(dtype), i, got, want);
    } else {
      long double bound =
          (W + 1) * u * abs_sum[i] / div + u * fabsl(want) + tiny;
      if (fabsl(got - want) > bound)
        fail_msg("W=%d n=%zu %s %s: element %zu is %.17Lg, want %.17Lg +- "
                 "%.3Lg",
                 W, n, rs_dtype_name(dtype), kind_names[kind], i, got, want,
                 bound);
    }
  }

  /* The ring's traffic invariants. */
  const rs_result_t *res = rs_run_result(run);
  assert_true(res->identical);
  assert_int_equal(res->transfers,
                   (uint64_t)W * 2 * (uint64_t)(W - 1) * res->segs_per_chunk);
  double theory = 2.0 * (W - 1) / W * (double)n * (double)es;
  for (int w = 0; w < W; w++) {
    const rs_worker_stats_t *s = rs_run_worker_stats(run, w);
    assert_int_equal(s->transfers_sent,
                     2 * (uint64_t)(W - 1) * res->segs_per_chunk);
    /* Exactly: r sends every chunk but (r+1) in reduce-scatter and every
     * chunk but (r+2) in all-gather; it receives all but r, then r+1. */
    uint64_t len[3];
    for (int k = 0; k < 3; k++)
      len[k] = es * rs__chunk_elems(n, W, (w + k) % W);
    if (W > 1) {
      assert_int_equal(s->bytes_sent, 2 * es * n - len[1] - len[2]);
      assert_int_equal(s->bytes_received, 2 * es * n - len[0] - len[1]);
    }
    if (fabs((double)s->bytes_sent - theory) > 2.0 * (W - 1) * (double)es)
      fail_msg("W=%d n=%zu: worker %d sent %llu bytes, theory %.1f", W, n, w,
               (unsigned long long)s->bytes_sent, theory);
  }
  free(sum);
  free(abs_sum);
  rs_run_free(run);
  rs_model_free(m);
}

static int matrix_workers;

#define LARGE RS_TEST_LARGE(100003)
/* W=64's large count: 525571, about half of 1000003 (W=64's run, 64 buffers
 * of it, is the matrix's longest), with what 1000003 has there: prime, 3
 * left over (64 x 8212 + 3: three chunks of 8213 elements, 61 of 8212), and
 * several segments per chunk that do not divide it (16 KiB: 3 of 4096 f32
 * elements, 5 of 2048 f64), so the near-equal segments differ in length in
 * every chunk, as at 1000003 (4 and 8 segments). */
#define LARGE_W64 (LARGE < 525571 ? LARGE : 525571)

/* ring-0.W: W workers against element counts 1, W-1, W, W+1 and 1000003
 * (525571 at W=64), with inline, normal and exact inputs, through copying
 * and direct queues, in the step and the slice loop order, in f32 and
 * f64; exact bit for bit, the rest within the bound,
 * all workers bitwise identical, traffic as the theory says. */
static void test_matrix(void **state) {
  (void)state;
  const int W = matrix_workers;
  const size_t counts[] = {1, (size_t)W - 1, (size_t)W, (size_t)W + 1,
                           W == 64 ? LARGE_W64 : LARGE};
  for (size_t c = 0; c < 5; c++) {
    if (counts[c] == 0)
      continue;
    for (int kind = 0; kind < 3; kind++)
      run_case(W, counts[c], (kind_t)kind, RS_OP_AVG, 0, 0, RS_DTYPE_F32);
    /* the copy-free queues, on the same inputs */
    run_case(W, counts[c], KIND_EXACT, RS_OP_AVG, 1, 0, RS_DTYPE_F32);
    /* NCCL's slice order, copying and direct */
    run_case(W, counts[c], (kind_t)(c % 3), RS_OP_AVG, (int)(c % 2), 1,
             RS_DTYPE_F32);
    /* and in double: a typed ring of 8-byte elements */
    run_case(W, counts[c], (kind_t)(c % 3), RS_OP_AVG, (int)(c % 2), 0,
             RS_DTYPE_F64);
  }
  run_case(W, 1000, KIND_EXACT, RS_OP_SUM, 0, 0, RS_DTYPE_F32);
  run_case(W, 1000, KIND_NORMAL, RS_OP_SUM, 0, 0, RS_DTYPE_F32);
  run_case(W, 100003, KIND_NORMAL, RS_OP_SUM, 1, 0, RS_DTYPE_F32);
  run_case(W, 100003, KIND_EXACT, RS_OP_SUM, 1, 1, RS_DTYPE_F32);
  run_case(W, 100003, KIND_NORMAL, RS_OP_SUM, 0, 0, RS_DTYPE_F64);
  run_case(W, 1000, KIND_INLINE, RS_OP_AVG, 0, 0, RS_DTYPE_F64);
  run_case(W, 100003, KIND_EXACT, RS_OP_AVG, 1, 1, RS_DTYPE_F64);
}

/* ring-1: the two-worker example: w=[1,2] and w=[3,4] average to [2,3]. */
static void test_two_worker_example(void **state) {
  (void)state;
  const char text[] = "{\"params\": [{\"name\": \"w\", \"shape\": [2]}], "
                      "\"grads\": [{\"w\": [1, 2]}, {\"w\": [3, 4]}]}";
  char err[RS_ERRMSG_MAX];
  rs_model_t *m;
  rs_run_t *run;
  assert_int_equal(rs_model_parse(text, strlen(text), "t", &m, err), RS_OK);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = 2;
  assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
  assert_int_equal(rs_run_fill_inline(run), RS_OK);
  assert_int_equal(rs_run_execute(run), RS_OK);
  for (int w = 0; w < 2; w++) {
    assert_true(f32_buffer(run, w)[0] == 2.0f);
    assert_true(f32_buffer(run, w)[1] == 3.0f);
  }
  assert_int_equal(rs_run_result(run)->transfers, 4);
  assert_double_same(rs_run_result(run)->max_abs_err, 0.0);
  rs_run_free(run);
  rs_model_free(m);
}

/* ring-2: after reduce-scatter alone, worker r holds the full sum of chunk
 * (r+1) mod W: the ring's intermediate invariant. */
static void test_reduce_scatter_invariant(void **state) {
  (void)state;
  const int workers[] = {2, 3, 4, 5, 8, 13};
  for (size_t k = 0; k < sizeof workers / sizeof *workers; k++) {
    const int W = workers[k];
    const size_t n = 1001;
    rs_model_t *m = model_of(n);
    rs_config_t cfg;
    rs_config_init(&cfg);
    cfg.workers = W;
    cfg.op = RS_OP_SUM;
    cfg.collective = RS_COLL_REDUCE_SCATTER;
    cfg.segment_bytes = 64;
    char err[RS_ERRMSG_MAX];
    rs_run_t *run;
    assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
    assert_int_equal(rs_run_fill(run, RS_INIT_EXACT, 1), RS_OK);
    double *sum = calloc(n, sizeof *sum);
    for (int w = 0; w < W; w++)
      for (size_t i = 0; i < n; i++)
        sum[i] += f32_buffer(run, w)[i];
    assert_int_equal(rs_run_execute(run), RS_OK);
    for (int r = 0; r < W; r++) {
      int c = (r + 1) % W;
      size_t off = rs__chunk_offset(n, W, c), len = rs__chunk_elems(n, W, c);
      for (size_t i = off; i < off + len; i++)
        if (f32_buffer(run, r)[i] != (float)sum[i])
          fail_msg("W=%d: worker %d chunk %d element %zu is %g, sum %g", W, r,
                   c, i, (double)f32_buffer(run, r)[i], sum[i]);
    }
    assert_int_equal(rs_run_result(run)->transfers,
                     (uint64_t)W * (uint64_t)(W - 1) *
                         rs_run_result(run)->segs_per_chunk);
    free(sum);
    rs_run_free(run);
    rs_model_free(m);
  }
}

static void run_simple(int W, size_t n, size_t segment_bytes, int slots) {
  rs_model_t *m = model_of(n);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = W;
  cfg.segment_bytes = segment_bytes;
  cfg.slots = slots;
  cfg.timeout_s = 120;
  char err[RS_ERRMSG_MAX];
  rs_run_t *run;
  assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
  assert_int_equal(rs_run_fill(run, RS_INIT_EXACT, (uint64_t)W), RS_OK);
  int rc = rs_run_execute(run);
  if (rc)
    fail_msg("W=%d n=%zu: %s", W, n, rs_run_errmsg(run));
  assert_true(rs_run_result(run)->identical);
  assert_double_same(rs_run_result(run)->worst_ratio, 0.0);
  rs_run_free(run);
  rs_model_free(m);
}

/* ring-3: 256 workers on this 2-core machine finish (blocking does not
 * burn the cores), and so do 1024. A property of scheduling, not a race:
 * under TSan, where 1024 threads' 2046 steps cost minutes, 256 workers on
 * a smaller buffer. */
static void test_many_workers_finish(void **state) {
  (void)state;
  if (RS_TEST_TSAN) {
    run_simple(256, 1 << 14, 64 * 1024, 8);
    return;
  }
  run_simple(256, 1 << 20, 64 * 1024, 8);
  run_simple(1024, 5000, 64 * 1024, 8);
}

/* ring-4: one slot per queue and one-element segments still complete:
 * the send-then-receive order cannot deadlock. */
static void test_smallest_queue_and_segments(void **state) {
  (void)state;
  run_simple(5, 97, 4, 1);
  run_simple(2, 1, 4, 1);
}

/* ring-5: a worker that dies mid-ring makes a neighbour time out; the run
 * ends with RS_ETIMEDOUT and a message naming a worker, phase, step and
 * peer, and every thread is joined. */
static void test_dead_worker_times_out(void **state) {
  (void)state;
  rs_model_t *m = model_of(4000);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = 4;
  cfg.timeout_s = 0.2;
  cfg.fault_count = 1;
  cfg.faults[0] = (rs_fault_t){.kind = RS_FAULT_CRASH, .worker = 2, .step = 1};
  char err[RS_ERRMSG_MAX];
  rs_run_t *run;
  assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
  assert_int_equal(rs_run_fill(run, RS_INIT_NORMAL, 0), RS_OK);
  assert_int_equal(rs_run_execute(run), RS_ETIMEDOUT);
  const char *msg = rs_run_errmsg(run);
  if (!strstr(msg, "timed out after 0.2 s in") || !strstr(msg, "step") ||
      !strstr(msg, "waiting to") || !strstr(msg, "worker"))
    fail_msg("unexpected message: %s", msg);
  assert_int_equal(rs_run_result(run)->status, RS_ETIMEDOUT);
  assert_true(rs_run_result(run)->wall_ns < 30000000000u);
  rs_worker_state_t ws;
  rs_run_worker_state(run, 2, &ws);
  assert_int_equal(ws.wstate, RS_WSTATE_CRASHED);
  assert_string_equal(ws.state, "crashed");
  assert_string_equal(rs_wstate_name(RS_WSTATE_TIMED_OUT), "timed_out");
  rs_run_free(run);
  rs_model_free(m);
}

/* ring-6: W = 1 is the identity, with no transfers. */
static void test_one_worker_is_identity(void **state) {
  (void)state;
  rs_model_t *m = model_of(10);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = 1;
  char err[RS_ERRMSG_MAX];
  rs_run_t *run;
  assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
  assert_int_equal(rs_run_fill(run, RS_INIT_NORMAL, 3), RS_OK);
  float before[10];
  memcpy(before, rs_run_buffer(run, 0), sizeof before);
  assert_int_equal(rs_run_execute(run), RS_OK);
  assert_memory_equal(rs_run_buffer(run, 0), before, sizeof before);
  assert_int_equal(rs_run_result(run)->transfers, 0);
  rs_run_free(run);
  rs_model_free(m);
}

/* One of ring-7's runs, on its own thread. The thread only records what
 * happened: cmocka's asserts longjmp and must run on the main thread. */
typedef struct concurrent_case {
  int workers;
  int create_rc, fill_rc, execute_rc;
  int identical;
  double worst_ratio;
  char errmsg[RS_ERRMSG_MAX];
} concurrent_case_t;

static void *concurrent_run(void *arg) {
  concurrent_case_t *c = arg;
  c->create_rc = c->fill_rc = c->execute_rc = RS_EINVAL;
  rs_model_t *m;
  const char text[] = "{\"params\": [{\"name\": \"g\", \"shape\": [100003]}]}";
  if (rs_model_parse(text, strlen(text), "m.json", &m, c->errmsg))
    return NULL;
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = c->workers;
  cfg.segment_bytes = 8192;
  cfg.slots = 4;
  cfg.timeout_s = 120;
  rs_run_t *run;
  c->create_rc = rs_run_create(&cfg, m, &run, c->errmsg);
  if (c->create_rc == RS_OK) {
    c->fill_rc = rs_run_fill(run, RS_INIT_EXACT, (uint64_t)c->workers);
    if (c->fill_rc == RS_OK)
      c->execute_rc = rs_run_execute(run);
    snprintf(c->errmsg, sizeof c->errmsg, "%s", rs_run_errmsg(run));
    c->identical = rs_run_result(run)->identical;
    c->worst_ratio = rs_run_result(run)->worst_ratio;
    rs_run_free(run);
  }
  rs_model_free(m);
  return NULL;
}

/* ring-7: two runs at once in one process do not interfere (no global
 * state). */
static void test_two_runs_at_once(void **state) {
  (void)state;
  pthread_t threads[2];
  concurrent_case_t cases[2] = {{.workers = 3}, {.workers = 6}};
  for (int k = 0; k < 2; k++)
    assert_int_equal(
        pthread_create(&threads[k], NULL, concurrent_run, &cases[k]), 0);
  for (int k = 0; k < 2; k++)
    assert_int_equal(pthread_join(threads[k], NULL), 0);
  for (int k = 0; k < 2; k++) {
    const concurrent_case_t *c = &cases[k];
    if (c->create_rc || c->fill_rc || c->execute_rc)
      fail_msg("W=%d: create %d, fill %d, execute %d: %s", c->workers,
               c->create_rc, c->fill_rc, c->execute_rc, c->errmsg);
    assert_true(c->identical);
    assert_double_same(c->worst_ratio, 0.0);
  }
}

/* ring-8: bad settings and misuse are refused with a message. */
static void test_bad_config_and_misuse(void **state) {
  (void)state;
  rs_model_t *m = model_of(10);
  rs_config_t cfg;
  char err[RS_ERRMSG_MAX];
  rs_run_t *run;
  const struct {
    int workers, slots;
    size_t segment_bytes;
    double timeout_s;
    const char *message;
  } bad[] = {{0, 8, 64, 1, "workers: 0 is not in 1..4096"},
             {5000, 8, 64, 1, "workers: 5000"},
             {2, 0, 64, 1, "slots: 0"},
             {2, 8, 2, 1, "segment bytes: 2"},
             {2, 8, 64, 0, "timeout: 0 s"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    rs_config_init(&cfg);
    cfg.workers = bad[i].workers;
    cfg.slots = bad[i].slots;
    cfg.segment_bytes = bad[i].segment_bytes;
    cfg.timeout_s = bad[i].timeout_s;
    assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_EINVAL);
    assert_null(run);
    if (!strstr(err, bad[i].message))
      fail_msg("case %zu: \"%s\"", i, err);
  }
  rs_config_init(&cfg);
  assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
  assert_non_null(rs_run_buffer(run, 0)); /* a getter: fills nothing */
  assert_null(rs_run_buffer(run, cfg.workers));
  assert_int_equal(rs_run_execute(run), RS_EINVAL);
  assert_non_null(strstr(rs_run_errmsg(run), "not filled"));
  assert_int_equal(rs_run_execute(run), RS_EINVAL);
  assert_non_null(strstr(rs_run_errmsg(run), "only once"));
  assert_int_equal(rs_run_fill_inline(run), RS_EINVAL);
  rs_run_free(run);
  rs_model_free(m);
}

/* ring-10: warm-up and timed iterations run on the same threads: each
 * iteration moves the same traffic, the first is checked, and it is timed. */
static void test_iterations_on_one_pool(void **state) {
  (void)state;
  for (int direct = 0; direct < 2; direct++) {
    rs_model_t *m = model_of(30001);
    rs_config_t cfg;
    rs_config_init(&cfg);
    cfg.workers = 5;
    cfg.warmup = 2;
    cfg.iterations = 3;
    cfg.ref_reps = 2;
    cfg.direct = direct;
    cfg.segment_bytes = 4096;
    char err[RS_ERRMSG_MAX];
    rs_run_t *run;
    assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
    assert_int_equal(rs_run_fill(run, RS_INIT_EXACT, 5), RS_OK);
    assert_int_equal(rs_run_execute(run), RS_OK);
    const rs_result_t *res = rs_run_result(run);
    assert_true(res->identical);
    assert_int_equal(rs_run_param_check(run, 0)->differing, 0);
    assert_int_equal(res->transfers, 5 * 5 * 2 * 4 * res->segs_per_chunk);
    assert_true(res->wall_min_ns > 0 && res->wall_min_ns <= res->wall_ns);
    assert_true(res->ref_ns > 0);
    rs_run_free(run);
    rs_model_free(m);
  }
}

/* ring-11: a model in several buckets is all-reduced bucket by bucket:
 * still the exact mean on every worker, with 2(W-1) x segments transfers per
 * bucket, and the simulated time the sum of the buckets' formulas. */
static void test_buckets(void **state) {
  (void)state;
  const char text[] =
      "{\"params\": [{\"name\": \"a\", \"shape\": [1000]}, {\"name\": "
      "\"b\", \"shape\": [3001]}, {\"name\": \"c\", \"shape\": [7]}, "
      "{\"name\": \"d\", \"shape\": [500]}]}";
  char err[RS_ERRMSG_MAX];
  rs_model_t *m;
  assert_int_equal(rs_model_parse(text, strlen(text), "m", &m, err), RS_OK);
  for (int direct = 0; direct < 2; direct++) {
    rs_config_t cfg;
    rs_config_init(&cfg);
    cfg.workers = 3;
    cfg.first_bucket_bytes = 1024;
    cfg.bucket_bytes = 8192;
    cfg.segment_bytes = 1024;
    cfg.direct = direct;
    assert_int_equal(
        rs_netmodel_parse("latency=1us,bandwidth=1GB/s", &cfg.net, err), RS_OK);
    rs_run_t *run;
    assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
    const rs_result_t *res = rs_run_result(run);
    /* d (2000 B) closes bucket 0; c + b reach 8192 B; a is the last */
    assert_int_equal(res->buckets, 3);
    assert_int_equal(rs_run_bucket(run, 0)->elem_offset, 4008);
    assert_int_equal(rs_run_bucket(run, 1)->elems, 3008);
    assert_int_equal(rs_run_bucket(run, 2)->elems, 1000);
    assert_int_equal(rs_run_fill(run, RS_INIT_EXACT, 3), RS_OK);
    assert_int_equal(rs_run_execute(run), RS_OK);
    assert_true(res->identical);
    assert_int_equal(rs_run_param_check(run, 1)->differing, 0);
    size_t segs = 0;
    uint64_t predicted = 0;
    for (size_t b = 0; b < 3; b++) {
      size_t k = rs_segs_per_chunk(rs_run_bucket(run, b)->elems, 3, 1024, 4);
      segs += k;
      predicted += rs_netmodel_predict_algo(
          RS_ALGO_RING, &cfg.net, 3, rs_run_bucket(run, b)->elems, k, 1024, 4);
    }
    assert_int_equal(res->segs_per_chunk, segs);
    assert_int_equal(res->transfers, 3 * 2 * 2 * segs);
    assert_int_equal(res->predicted_ns, predicted);
    assert_int_equal(res->sim_ns, rs_netmodel_simulate_algo(
                                      RS_ALGO_RING, &cfg.net, 3,
                                      rs_run_bucket(run, 0), 3, 1024, 4));
    rs_run_free(run);
  }
  rs_model_free(m);
}

/* ring-12: every reduction op, checked here against the test's own
 * reference: min and max exactly, prod and a pre-divided average within
 * their rounding bounds; all workers identical. */
static void test_ops(void **state) {
  (void)state;
  const rs_op_t ops[] = {RS_OP_MIN, RS_OP_MAX, RS_OP_PROD, RS_OP_AVG};
  const int workers[] = {2, 3, 5, 8};
  const size_t n = 1001;
  rs_model_t *m = model_of(n);
  for (size_t oi = 0; oi < 4; oi++)
    for (size_t wi = 0; wi < 4; wi++)
      for (int init = RS_INIT_NORMAL; init <= RS_INIT_EXACT; init++) {
        const int W = workers[wi];
        rs_config_t cfg;
        rs_config_init(&cfg);
        cfg.workers = W;
        cfg.op = ops[oi];
        cfg.average = ops[oi] == RS_OP_AVG;
        cfg.segment_bytes = 256;
        char err[RS_ERRMSG_MAX];
        rs_run_t *run;
        assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
        assert_int_equal(rs_run_fill(run, (rs_init_t)init, 11), RS_OK);
        double want[1001], scale[1001];
        for (size_t i = 0; i < n; i++) {
          double acc = f32_buffer(run, 0)[i], mag = fabs(acc);
          for (int w = 1; w < W; w++) {
            double x = f32_buffer(run, w)[i];
            acc = ops[oi] == RS_OP_MIN    ? fmin(acc, x)
                  : ops[oi] == RS_OP_MAX  ? fmax(acc, x)
                  : ops[oi] == RS_OP_PROD ? acc * x
                                          : acc + x;
            mag += fabs(x);
          }
          want[i] = ops[oi] == RS_OP_AVG ? acc / W : acc;
          scale[i] = ops[oi] == RS_OP_AVG ? mag / W : fabs(want[i]);
        }
        int rc = rs_run_execute(run);
        if (rc)
          fail_msg("op %s W=%d init %d: %s", rs_op_name(ops[oi]), W, init,
                   rs_run_errmsg(run));
        assert_true(rs_run_result(run)->identical);
        const float *got = rs_run_buffer(run, 0);
        const double u = ldexp(1, -24);
        for (size_t i = 0; i < n; i++) {
          double diff = fabs(got[i] - want[i]);
          double bound = ops[oi] == RS_OP_MIN || ops[oi] == RS_OP_MAX
                             ? 0
                             : (W + 2) * u * scale[i] + 1e-44;
          if (diff > bound)
            fail_msg("op %s W=%d init %d: element %zu is %.9g, want %.9g",
                     rs_op_name(ops[oi]), W, init, i, (double)got[i], want[i]);
        }
        rs_run_free(run);
      }
  rs_model_free(m);
}

/* ring-13: the summation order. The ring adds chunk c's contributions
 * starting from worker c: ((x_c + x_c+1) + x_c+2) + ... in float, so the
 * result is bitwise what that order gives, and the order report counts the
 * elements where it differs from worker 0's order: none for exact inputs,
 * none for W = 2 (addition commutes), none in chunk 0. */
static void test_summation_order(void **state) {
  (void)state;
  const size_t n = 3000;
  rs_model_t *m = model_of(n);
  for (int W = 2; W <= 5; W++)
    for (int init = RS_INIT_NORMAL; init <= RS_INIT_EXACT; init += 2) {
      rs_config_t cfg;
      rs_config_init(&cfg);
      cfg.workers = W;
      cfg.op = RS_OP_SUM;
      cfg.order_report = 1;
      char err[RS_ERRMSG_MAX];
      rs_run_t *run;
      assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
      assert_int_equal(rs_run_fill(run, (rs_init_t)init, 2), RS_OK);
      float ring_order[3000];
      uint64_t differ = 0, differ_chunk0 = 0;
      for (int c = 0; c < W; c++)
        for (size_t i = rs__chunk_offset(n, W, c);
             i < rs__chunk_offset(n, W, c) + rs__chunk_elems(n, W, c); i++) {
          float acc = f32_buffer(run, c)[i], fixed = f32_buffer(run, 0)[i];
          for (int k = 1; k < W; k++) {
            acc = f32_buffer(run, (c + k) % W)[i] + acc;
            fixed = fixed + f32_buffer(run, k)[i];
          }
          ring_order[i] = acc;
          int d = memcmp(&acc, &fixed, sizeof acc) != 0;
          differ += (uint64_t)d;
          differ_chunk0 += (uint64_t)(d && c == 0);
        }
      assert_int_equal(rs_run_execute(run), RS_OK);
      assert_memory_equal(rs_run_buffer(run, 0), ring_order, sizeof ring_order);
      assert_int_equal(rs_run_param_check(run, 0)->order_differing, differ);
      assert_int_equal(differ_chunk0, 0);
      if (init == RS_INIT_EXACT || W == 2)
        assert_int_equal(differ, 0);
      else
        assert_true(differ > 0);
      rs_run_free(run);
    }
  rs_model_free(m);
}

/* ring-14: f16 and bf16 runs, as NCCL reduces them (float32 sum per hop,
 * rounded to the dtype): exact inputs give the exactly rounded mean where
 * the dtype can hold every partial sum; random ones stay within the dtype's
 * bound; the wire counts 2 bytes an element. */
static void test_low_precision(void **state) {
  (void)state;
  const size_t n = 2000;
  for (int dt = RS_DTYPE_F16; dt <= RS_DTYPE_BF16; dt++) {
    char text[160], err[RS_ERRMSG_MAX];
    snprintf(text, sizeof text,
             "{\"params\": [{\"name\": \"g\", \"shape\": [%zu], "
             "\"dtype\": \"%s\"}]}",
             n, rs_dtype_name((rs_dtype_t)dt));
    rs_model_t *m;
    assert_int_equal(rs_model_parse(text, strlen(text), "m", &m, err), RS_OK);
    const int workers[] = {2, 3, 8, 16};
    for (size_t wi = 0; wi < 4; wi++)
      for (int init = RS_INIT_NORMAL; init <= RS_INIT_EXACT; init += 2) {
        const int W = workers[wi];
        rs_config_t cfg;
        rs_config_init(&cfg);
        cfg.workers = W;
        cfg.segment_bytes = 512;
        rs_run_t *run;
        assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
        assert_int_equal(rs_run_fill(run, (rs_init_t)init, 5), RS_OK);
        double want[2000], scale[2000];
        for (size_t i = 0; i < n; i++) {
          double sum = 0, mag = 0;
          for (int w = 0; w < W; w++) {
            float x = f32_buffer(run, w)[i];
            assert_true(rs_dtype_round((rs_dtype_t)dt, x) == x);
            sum += x;
            mag += fabs(x);
          }
          want[i] = sum / W;
          scale[i] = mag / W;
        }
        assert_int_equal(rs_run_execute(run), RS_OK);
        const float *got = rs_run_buffer(run, 0);
        int exact = init == RS_INIT_EXACT &&
                    W * 128 <= (dt == RS_DTYPE_F16 ? 1024 : 128);
        double u = ldexp(1, -rs_dtype_mantissa_bits((rs_dtype_t)dt));
        for (size_t i = 0; i < n; i++) {
          float rounded = rs_dtype_round((rs_dtype_t)dt, (float)want[i]);
          if (exact ? got[i] != rounded
                    : fabs(got[i] - want[i]) >
                          (W + 2) * u * scale[i] + u * fabs(want[i]))
            fail_msg("%s W=%d init %d: element %zu is %.9g, mean %.9g",
                     rs_dtype_name((rs_dtype_t)dt), W, init, i, (double)got[i],
                     want[i]);
          assert_true(rs_dtype_round((rs_dtype_t)dt, got[i]) == got[i]);
        }
        /* worker 0 sends every chunk but 1 in reduce-scatter and every
         * chunk but 2 in all-gather, at 2 bytes an element */
        assert_int_equal(rs_run_worker_stats(run, 0)->bytes_sent,
                         2 * (2 * n - rs__chunk_elems(n, W, 1 % W) -
                              rs__chunk_elems(n, W, 2 % W)));
        rs_run_free(run);
      }
    rs_model_free(m);
  }
}

/* ring-9: a non-finite input is refused before the ring runs, naming the
 * worker, the param and the element. */
static void test_non_finite_input_is_refused(void **state) {
  (void)state;
  rs_model_t *m = model_of(10);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = 3;
  char err[RS_ERRMSG_MAX];
  rs_run_t *run;
  assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
  assert_int_equal(rs_run_fill(run, RS_INIT_UNIFORM, 0), RS_OK);
  f32_buffer(run, 1)[7] = NAN;
  assert_int_equal(rs_run_execute(run), RS_EINVAL);
  assert_non_null(
      strstr(rs_run_errmsg(run),
             "worker 1's gradient of \"g\" holds nan at element 7"));
  assert_int_equal(rs_run_result(run)->transfers, 0);
  rs_run_free(run);
  rs_model_free(m);
}

/* ring-9b: finite inputs whose product overflows even the reference's
 * range (ten workers of 1e38 in float at flat element 2, which is "b"[1]:
 * 1e380 is past double's 1.8e308) are refused with a message naming it, not
 * checked against a garbage reference. In f64 the reference (long double) holds
 * 1e380, beyond double's range: the ring's product overflows to inf, and the
 * check fails naming the overflow (a result that is not finite never
 * passes, as an f32 sum beyond float's range does not). */
static void test_product_beyond_the_reference_is_refused(void **state) {
  (void)state;
  for (int f64 = 0; f64 <= 1; f64++) {
    rs_model_t *m =
        make_model(4, KIND_NORMAL, 10, f64 ? RS_DTYPE_F64 : RS_DTYPE_F32);
    rs_config_t cfg;
    rs_config_init(&cfg);
    cfg.workers = 10;
    cfg.op = RS_OP_PROD;
    char err[RS_ERRMSG_MAX];
    rs_run_t *run;
    assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
    for (int w = 0; w < 10; w++)
      for (size_t i = 0; i < 4; i++)
        if (f64)
          ((double *)rs_run_buffer(run, w))[i] = i == 2 ? 1e38 : 1.5;
        else
          f32_buffer(run, w)[i] = i == 2 ? 1e38f : 1.5f;
    rs_run_mark_filled(run);
    int rc = rs_run_execute(run);
    if (f64) {
      assert_int_equal(rc, RS_ECHECK);
      assert_non_null(strstr(rs_run_errmsg(run),
                             ": the product overflowed to inf in f64, at 1 "
                             "element(s), the first \"b\"[1] (element 2)"));
      assert_true(isinf(((double *)rs_run_buffer(run, 3))[2]));
      assert_true(((double *)rs_run_buffer(run, 3))[1] == pow(1.5, 10));
    } else {
      assert_int_equal(rc, RS_EINVAL);
      assert_non_null(strstr(rs_run_errmsg(run),
                             "element 1 of \"b\": the prod of the workers' "
                             "values overflows the check's reference"));
      assert_int_equal(rs_run_result(run)->transfers, 0);
    }
    rs_run_free(run);
    rs_model_free(m);
  }
}

/* ring-15: NCCL's slice order sends the same messages and computes the
 * same sums as the step order: with random inputs, many segments and every
 * op, the results are identical bit for bit, copying or direct, and so are
 * the transfer counts. */
static void test_slice_order_is_bitwise_the_step_order(void **state) {
  (void)state;
  const size_t n = 20011;
  const rs_op_t ops[] = {RS_OP_AVG, RS_OP_SUM, RS_OP_MAX, RS_OP_PROD};
  float *want = malloc(n * sizeof *want);
  assert_non_null(want);
  for (int W = 2; W <= 5; W += 3)
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
      for (int mode = 0; mode < 3; mode++) { /* steps; slices; slices+direct */
        rs_model_t *m = model_of(n);
        rs_config_t cfg;
        rs_config_init(&cfg);
        cfg.workers = W;
        cfg.op = ops[k];
        cfg.segment_bytes = 1024;
        cfg.slices = mode > 0;
        cfg.direct = mode == 2;
        char err[RS_ERRMSG_MAX];
        rs_run_t *run;
        assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
        assert_int_equal(rs_run_fill(run, RS_INIT_NORMAL, 5), RS_OK);
        assert_int_equal(rs_run_execute(run), RS_OK);
        if (mode == 0)
          memcpy(want, rs_run_buffer(run, W - 1), n * sizeof *want);
        else if (memcmp(want, rs_run_buffer(run, W - 1), n * sizeof *want))
          fail_msg("W=%d op %s mode %d: differs from the step order", W,
                   rs_op_name(ops[k]), mode);
        assert_true(rs_run_result(run)->segs_per_chunk > 1);
        assert_int_equal(rs_run_result(run)->transfers,
                         (uint64_t)W * 2 * (uint64_t)(W - 1) *
                             rs_run_result(run)->segs_per_chunk);
        rs_run_free(run);
        rs_model_free(m);
      }
  free(want);
}

/* ring-16: f16 and bf16 at many workers. Exact inputs shrink their range
 * so every partial sum stays representable (bf16 up to 256 workers, f16 up
 * to 2048) and the result is checked bit for bit; beyond that, and for
 * random inputs past the range where Higham's gamma(W-1) is defined
 * ((W-1) u >= 1: bf16 from 257 workers), the bound (1+u)^(W-1) - 1 still
 * holds and the run passes. */
static void test_low_precision_many_workers(void **state) {
  (void)state;
  const struct {
    rs_dtype_t dtype;
    int workers;
    rs_init_t init;
    int exact; /* the check is bitwise */
  } cases[] = {{RS_DTYPE_BF16, 3, RS_INIT_EXACT, 1},
               {RS_DTYPE_BF16, 256, RS_INIT_EXACT, 1},
               {RS_DTYPE_F16, 300, RS_INIT_EXACT, 1},
               {RS_DTYPE_BF16, 300, RS_INIT_EXACT, 0},
               {RS_DTYPE_BF16, 300, RS_INIT_UNIFORM, 0}};
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    rs_model_t *m =
        make_model(600, KIND_NORMAL, cases[k].workers, cases[k].dtype);
    rs_config_t cfg;
    rs_config_init(&cfg);
    cfg.workers = cases[k].workers;
    char err[RS_ERRMSG_MAX];
    rs_run_t *run;
    assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
    assert_int_equal(rs_run_fill(run, cases[k].init, 3), RS_OK);
    int rc = rs_run_execute(run);
    if (rc != RS_OK)
      fail_msg("%s W=%d: %s", rs_dtype_name(cases[k].dtype), cases[k].workers,
               rs_run_errmsg(run));
    assert_int_equal(rs_run_result(run)->exact, cases[k].exact);
    assert_true(rs_run_result(run)->identical);
    rs_run_free(run);
    rs_model_free(m);
  }
}

/* ring-17: f16 and bf16 cross copying queues packed in 2 bytes (and
 * direct ones as the sender's floats): both give the same bits, so the
 * packing loses nothing, and the bytes counted are 2 an element. */
static void test_half_precision_wire_is_exact(void **state) {
  (void)state;
  const size_t n = 5003;
  float *want = malloc(n * sizeof *want);
  assert_non_null(want);
  for (int d = 0; d < 2; d++)
    for (int direct = 1; direct >= 0; direct--) {
      rs_dtype_t dtype = d ? RS_DTYPE_BF16 : RS_DTYPE_F16;
      rs_model_t *m = make_model(n, KIND_NORMAL, 5, dtype);
      rs_config_t cfg;
      rs_config_init(&cfg);
      cfg.workers = 5;
      cfg.segment_bytes = 512;
      cfg.direct = direct;
      char err[RS_ERRMSG_MAX];
      rs_run_t *run;
      assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
      assert_int_equal(rs_run_fill(run, RS_INIT_NORMAL, 9), RS_OK);
      assert_int_equal(rs_run_execute(run), RS_OK);
      if (direct)
        memcpy(want, rs_run_buffer(run, 2), n * sizeof *want);
      else if (memcmp(want, rs_run_buffer(run, 2), n * sizeof *want))
        fail_msg("%s: the packed wire changed the result",
                 rs_dtype_name(dtype));
      uint64_t bytes = 0;
      for (int w = 0; w < 5; w++)
        bytes += rs_run_worker_stats(run, w)->bytes_received;
      assert_int_equal(bytes, 2 * 5 * 2 * n - 2 * 2 * n); /* 2(W-1) n x 2 */
      rs_run_free(run);
      rs_model_free(m);
    }
  free(want);
}

/* The ring-18 model: params at odd offsets, across the check's blocks. */
static rs_model_t *odd_model(rs_dtype_t dtype) {
  char text[512], err[RS_ERRMSG_MAX];
  const char *dt = rs_dtype_name(dtype);
  snprintf(text, sizeof text,
           "{\"params\": [{\"name\": \"a\", \"shape\": [3], \"dtype\": "
           "\"%s\"}, {\"name\": \"b\", \"shape\": [70001], \"dtype\": "
           "\"%s\"}, {\"name\": \"c\", \"shape\": [7, 587], \"dtype\": "
           "\"%s\"}]}",
           dt, dt, dt);
  rs_model_t *m;
  assert_int_equal(rs_model_parse(text, strlen(text), "t", &m, err), RS_OK);
  return m;
}

/* ring-18: the check of generated inputs makes its reference after the
 * run, block by block from the inputs generated again, and keeps none
 * (ref_ns 0); it must say exactly what the reference kept from before the
 * run says (taking a buffer before the run keeps one: the caller may have
 * changed the inputs): every param's every field, bit for bit, over
 * dtypes, ops, both averages, the inputs' kinds and the order report, on a
 * model whose params start at odd offsets and cross the check's blocks. */
static void test_streamed_check_is_the_kept_one(void **state) {
  (void)state;
  static const struct {
    rs_dtype_t dtype;
    rs_op_t op;
    int pre;
    rs_init_t init;
  } cases[] = {
      {RS_DTYPE_F32, RS_OP_AVG, 0, RS_INIT_NORMAL},
      {RS_DTYPE_F32, RS_OP_AVG, 1, RS_INIT_UNIFORM},
      {RS_DTYPE_F32, RS_OP_SUM, 0, RS_INIT_EXACT},
      {RS_DTYPE_F32, RS_OP_MAX, 0, RS_INIT_NORMAL},
      {RS_DTYPE_F64, RS_OP_AVG, 0, RS_INIT_NORMAL},
      {RS_DTYPE_F64, RS_OP_MIN, 0, RS_INIT_EXACT},
      {RS_DTYPE_F16, RS_OP_AVG, 0, RS_INIT_EXACT},
      {RS_DTYPE_BF16, RS_OP_SUM, 0, RS_INIT_UNIFORM},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const int W = k % 2 ? 3 : 5;
    char err[RS_ERRMSG_MAX];
    rs_model_t *m = odd_model(cases[k].dtype);
    rs_config_t cfg;
    rs_config_init(&cfg);
    cfg.workers = W;
    cfg.op = cases[k].op;
    cfg.average = cases[k].pre;
    cfg.order_report = 1;
    cfg.segment_bytes = 8192;
    rs_run_t *run[2];
    for (int kept = 0; kept < 2; kept++) {
      assert_int_equal(rs_run_create(&cfg, m, &run[kept], err), RS_OK);
      assert_int_equal(rs_run_fill(run[kept], cases[k].init, 42), RS_OK);
      if (kept)
        assert_non_null(rs_run_buffer(run[kept], 0));
      assert_int_equal(rs_run_execute(run[kept]), RS_OK);
    }
    const rs_result_t *a = rs_run_result(run[0]), *b = rs_run_result(run[1]);
    if (a->ref_ns != 0 || a->check_ns == 0 || b->ref_ns == 0)
      fail_msg("case %zu, W=%d: streamed ref_ns %llu check_ns %llu, kept "
               "ref_ns %llu",
               k, W, (unsigned long long)a->ref_ns,
               (unsigned long long)a->check_ns, (unsigned long long)b->ref_ns);
    assert_true(a->checked && b->checked && a->identical && b->identical);
    assert_int_equal(a->exact, b->exact);
    assert_double_same(a->max_abs_err, b->max_abs_err);
    assert_double_same(a->bound, b->bound);
    assert_double_same(a->worst_ratio, b->worst_ratio);
    size_t n = rs_model_elems(m);
    size_t bytes = cases[k].dtype == RS_DTYPE_F64 ? 8 : 4;
    assert_memory_equal(rs_run_buffer(run[0], 0), rs_run_buffer(run[1], 0),
                        n * bytes);
    for (size_t p = 0; p < 3; p++) {
      const rs_param_check_t *ca = rs_run_param_check(run[0], p);
      const rs_param_check_t *cb = rs_run_param_check(run[1], p);
      if (memcmp(ca, cb, sizeof *ca) != 0)
        fail_msg("case %zu, W=%d, param %zu: streamed max_abs_err %g "
                 "bound %g worst %g differing %llu order_differing %llu "
                 "ulps %llu; kept %g %g %g %llu %llu %llu",
                 k, W, p, ca->max_abs_err, ca->bound, ca->worst_ratio,
                 (unsigned long long)ca->differing,
                 (unsigned long long)ca->order_differing,
                 (unsigned long long)ca->order_max_ulps, cb->max_abs_err,
                 cb->bound, cb->worst_ratio, (unsigned long long)cb->differing,
                 (unsigned long long)cb->order_differing,
                 (unsigned long long)cb->order_max_ulps);
    }
    rs_run_free(run[0]);
    rs_run_free(run[1]);
    rs_model_free(m);
  }
}

/* ring-19: an f32 run's check compares in vectorised loops
 * (check_compare.c's compare_f32_*); they must give every field of every
 * param exactly as the general loop does, element by element
 * (run->check_general), over ops, both kinds of reference (within a bound;
 * exact inputs, bitwise), kept and streamed. */
static void test_fast_check_is_the_general_one(void **state) {
  (void)state;
  static const struct {
    rs_op_t op;
    rs_init_t init;
    int workers, kept;
  } cases[] = {
      {RS_OP_AVG, RS_INIT_NORMAL, 5, 0},   {RS_OP_SUM, RS_INIT_UNIFORM, 3, 0},
      {RS_OP_AVG, RS_INIT_EXACT, 4, 0},    {RS_OP_SUM, RS_INIT_EXACT, 7, 1},
      {RS_OP_MAX, RS_INIT_NORMAL, 3, 0},   {RS_OP_AVG, RS_INIT_NORMAL, 2, 1},
      {RS_OP_PROD, RS_INIT_UNIFORM, 3, 0},
  };
  rs_model_t *m = odd_model(RS_DTYPE_F32);
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char err[RS_ERRMSG_MAX];
    rs_config_t cfg;
    rs_config_init(&cfg);
    cfg.workers = cases[k].workers;
    cfg.op = cases[k].op;
    cfg.segment_bytes = 8192;
    rs_run_t *run[2];
    for (int general = 0; general < 2; general++) {
      assert_int_equal(rs_run_create(&cfg, m, &run[general], err), RS_OK);
      run[general]->check_general = general;
      assert_int_equal(rs_run_fill(run[general], cases[k].init, 7), RS_OK);
      if (cases[k].kept)
        assert_non_null(rs_run_buffer(run[general], 0));
      assert_int_equal(rs_run_execute(run[general]), RS_OK);
    }
    const rs_result_t *a = rs_run_result(run[0]), *b = rs_run_result(run[1]);
    assert_true(a->checked && b->checked);
    assert_int_equal(a->exact, b->exact);
    assert_double_same(a->max_abs_err, b->max_abs_err);
    assert_double_same(a->bound, b->bound);
    assert_double_same(a->worst_ratio, b->worst_ratio);
    for (size_t p = 0; p < 3; p++) {
      const rs_param_check_t *ca = rs_run_param_check(run[0], p);
      const rs_param_check_t *cb = rs_run_param_check(run[1], p);
      if (memcmp(ca, cb, sizeof *ca) != 0)
        fail_msg(
            "case %zu, param %zu: fast max_abs_err %.17g max_rel_err "
            "%.17g bound %.17g worst %.17g differing %llu wrong %llu; "
            "general %.17g %.17g %.17g %.17g %llu %llu",
            k, p, ca->max_abs_err, ca->max_rel_err, ca->bound, ca->worst_ratio,
            (unsigned long long)ca->differing, (unsigned long long)ca->wrong,
            cb->max_abs_err, cb->max_rel_err, cb->bound, cb->worst_ratio,
            (unsigned long long)cb->differing, (unsigned long long)cb->wrong);
    }
    rs_run_free(run[0]);
    rs_run_free(run[1]);
  }
  rs_model_free(m);
}

/* Check a run's result again, as its first check did (on a fresh
 * result). */
static void check_again(rs_run_t *run) {
  run->result.status = RS_OK;
  run->result.max_abs_err = run->result.bound = run->result.worst_ratio = 0;
  rs__check_result(run);
}

/* Set element at of the result to value in the workers from first_worker
 * on, check again and expect the check to fail saying want; then put the
 * result back, and expect it to pass. */
static void expect_caught(rs_run_t *run, int first_worker, size_t at,
                          float value, const char *want) {
  const int W = rs_run_config(run)->workers;
  float saved = f32_buffer(run, 0)[at];
  for (int w = first_worker; w < W; w++)
    f32_buffer(run, w)[at] = value;
  check_again(run);
  const rs_result_t *res = rs_run_result(run);
  if (res->status != RS_ECHECK || !strstr(rs_run_errmsg(run), want))
    fail_msg("element %zu set to %g in workers %d..%d: status %d (\"%s\"), "
             "expected %d saying \"%s\"",
             at, (double)value, first_worker, W - 1, res->status,
             rs_run_errmsg(run), RS_ECHECK, want);
  for (int w = first_worker; w < W; w++)
    f32_buffer(run, w)[at] = saved;
  check_again(run);
  assert_int_equal(rs_run_result(run)->status, RS_OK);
}

/* ring-20: a wrong result is caught by the check of generated inputs made
 * again after the run, in the fast loops and the general one: a result a
 * little beyond its bound, a NaN (in the middle of a param: nothing later
 * may hide it), one worker differing by one ulp; exact inputs off by one
 * step. */
static void test_wrong_result_is_caught(void **state) {
  (void)state;
  rs_model_t *m = odd_model(RS_DTYPE_F32);
  const size_t at = 3 + 5000; /* "b", element 5000, in the third block */
  for (int init = 0; init < 2; init++)
    for (int general = 0; general < 2; general++) {
      char err[RS_ERRMSG_MAX];
      rs_config_t cfg;
      rs_config_init(&cfg);
      cfg.workers = 4;
      rs_run_t *run;
      assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
      run->check_general = general;
      assert_int_equal(
          rs_run_fill(run, init ? RS_INIT_EXACT : RS_INIT_NORMAL, 3), RS_OK);
      assert_int_equal(rs_run_execute(run), RS_OK);
      float v = f32_buffer(run, 0)[at];
      const char *outside = "outside the error bound";
      expect_caught(run, 0, at, init ? v + 0.0625f : v * (1 + 0x1p-10f),
                    outside);
      expect_caught(run, 0, at, NAN, outside);
      expect_caught(run, 3, at, nextafterf(v, INFINITY),
                    "do not hold identical results");
      rs_run_free(run);
    }
  rs_model_free(m);
}

/* The culprit of a timeout, from the workers' last states: a worker that
 * never began its steps, or one that had finished them, waits on nobody,
 * whatever its progress last said (a stale wait is not a deadlock). */
static void test_culprit_from_states(void **state) {
  (void)state;
  rs_model_t *m = model_of(30);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = 3;
  cfg.timeout_s = 0.005;
  char err[RS_ERRMSG_MAX];
  static const char noticed[] =
      "timed out after 0.005 s in reduce_scatter step 0, waiting to receive "
      "chunk 0 from worker %d";
  struct {
    int begun; /* worker 0: finished its steps, or never began them */
    const char *want;
  } cases[] = {
      {0, "worker 0 had not begun its steps (its thread had not run within "
          "--timeout 0.005 s); worker 1 noticed: it timed out after 0.005 s"},
      {1, "worker 0 had finished its steps; worker 1 noticed: it timed out "
          "after 0.005 s"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    rs_run_t *run;
    assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
    run->result.status = RS_ETIMEDOUT;
    run->fault_worker = 1;
    snprintf(run->errmsg, sizeof run->errmsg, "worker 1 ");
    snprintf(run->errmsg + 9, sizeof run->errmsg - 9, noticed, 0);
    for (int w = 0; w < 3; w++) { /* each waits to receive from w - 1 */
      run->workers[w].progress.activity = RS_ACT_RECEIVING;
      run->workers[w].progress.peer = (w + 2) % 3;
      run->workers[w].rc = RS_EABORTED;
    }
    run->workers[1].rc = RS_ETIMEDOUT;
    run->workers[0].rc = cases[i].begun ? RS_OK : RS_WORKER_NOT_STARTED;
    rs__run_name_culprit(run);
    if (strncmp(run->errmsg, cases[i].want, strlen(cases[i].want)) != 0)
      fail_msg("case %zu: %s", i, run->errmsg);
    rs_run_free(run);
  }
  rs_model_free(m);
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "matrix") == 0) {
    matrix_workers = atoi(argv[2]);
    char name[32];
    snprintf(name, sizeof name, "ring-matrix-W%d", matrix_workers);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_matrix)};
    return _cmocka_run_group_tests(name, tests, 1, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_two_worker_example),
      cmocka_unit_test(test_reduce_scatter_invariant),
      cmocka_unit_test(test_many_workers_finish),
      cmocka_unit_test(test_smallest_queue_and_segments),
      cmocka_unit_test(test_dead_worker_times_out),
      cmocka_unit_test(test_one_worker_is_identity),
      cmocka_unit_test(test_two_runs_at_once),
      cmocka_unit_test(test_bad_config_and_misuse),
      cmocka_unit_test(test_non_finite_input_is_refused),
      cmocka_unit_test(test_product_beyond_the_reference_is_refused),
      cmocka_unit_test(test_slice_order_is_bitwise_the_step_order),
      cmocka_unit_test(test_low_precision_many_workers),
      cmocka_unit_test(test_half_precision_wire_is_exact),
      cmocka_unit_test(test_iterations_on_one_pool),
      cmocka_unit_test(test_buckets),
      cmocka_unit_test(test_ops),
      cmocka_unit_test(test_summation_order),
      cmocka_unit_test(test_low_precision),
      cmocka_unit_test(test_streamed_check_is_the_kept_one),
      cmocka_unit_test(test_fast_check_is_the_general_one),
      cmocka_unit_test(test_wrong_result_is_caught),
      cmocka_unit_test(test_culprit_from_states),
  };
  return cmocka_run_group_tests_name("ring", tests, NULL, NULL);
}
