/* test_step.c - the training step (ringsim/step.h): timelines worked out by
 * hand, exact to the nanosecond, the threaded run's simulated time equal
 * to the step's simulation, and the compute's inputs.
 *
 * The hand cases: W = 2, the ring, --net latency=1us,bandwidth=1GB/s (one
 * byte per ns), a bucket of n f32 elements in one segment: two steps, each
 * sending a chunk of n/2 elements (2n bytes: 2n ns on the wire) and 1,000
 * ns of latency, so 2 (1,000 + 2n) ns once both workers have started. */
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringsim/internal/config.h" /* stack configs */
#include "ringsim/ringsim.h"
#include "ringsim/step.h"

/* Three params of 250 elements, registered p0, p1, p2 (backward makes
 * p2's gradient first), each backward_us long, p0's forward 5 us. */
static rs_model_t *three(double backward_us) {
  char text[512], err[RS_ERRMSG_MAX];
  snprintf(text, sizeof text,
           "{\"params\": ["
           "{\"name\": \"p0\", \"shape\": [250], \"forward_us\": 5, "
           "\"backward_us\": %g},"
           "{\"name\": \"p1\", \"shape\": [250], \"backward_us\": %g},"
           "{\"name\": \"p2\", \"shape\": [250], \"backward_us\": %g}]}",
           backward_us, backward_us, backward_us);
  rs_model_t *m;
  assert_int_equal(rs_model_parse(text, strlen(text), "three", &m, err), RS_OK);
  return m;
}

typedef struct fixture {
  rs_model_t *model;
  uint64_t forward[3], backward[3];
  rs_step_config_t cfg;
} fixture_t;

/* Each param its own bucket (caps of one byte), or one bucket (cap 0). */
static void setup(fixture_t *f, double backward_us, int one_bucket) {
  char err[RS_ERRMSG_MAX];
  f->model = three(backward_us);
  assert_int_equal(
      rs_step_compute(f->model, NULL, f->forward, f->backward, err), RS_OK);
  memset(&f->cfg, 0, sizeof f->cfg);
  f->cfg.workers = 2;
  f->cfg.algo = RS_ALGO_RING;
  f->cfg.net = net_of("latency=1us,bandwidth=1GB/s", NULL);
  f->cfg.bucket_bytes = one_bucket ? 0 : 1;
  f->cfg.first_bucket_bytes = 1;
  f->cfg.segment_bytes = 256 << 10;
  f->cfg.forward_ns = f->forward;
  f->cfg.backward_ns = f->backward;
  f->cfg.slow_worker = -1;
  f->cfg.slow = 1;
}

static rs_step_time_t simulate(const fixture_t *f) {
  rs_step_time_t t;
  char err[RS_ERRMSG_MAX];
  assert_int_equal(rs_step_simulate(f->model, &f->cfg, &t, err), RS_OK);
  return t;
}

/* The threaded run of the same buckets with the step's ready times: its
 * simulated time is the last all-reduce's end. */
static uint64_t threaded(const fixture_t *f) {
  uint64_t *ready;
  rs_bucket_t *buckets;
  size_t count;
  assert_int_equal(rs_step_ready(f->model, &f->cfg, &ready, &buckets, &count),
                   RS_OK);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = f->cfg.workers;
  cfg.algo = f->cfg.algo;
  cfg.net = f->cfg.net;
  cfg.bucket_bytes = f->cfg.bucket_bytes;
  cfg.first_bucket_bytes = f->cfg.first_bucket_bytes;
  cfg.segment_bytes = f->cfg.segment_bytes;
  cfg.ready_ns = ready;
  char err[RS_ERRMSG_MAX];
  rs_run_t *run;
  if (rs_run_create(&cfg, f->model, &run, err))
    fail_msg("create: %s", err);
  assert_int_equal(rs_run_result(run)->buckets, count);
  assert_int_equal(rs_run_fill(run, RS_INIT_EXACT, 1), RS_OK);
  assert_int_equal(rs_run_execute(run), RS_OK);
  assert_int_equal(rs_run_result(run)->status, RS_OK);
  const uint64_t sim = rs_run_result(run)->sim_ns;
  rs_run_free(run);
  free(ready);
  free(buckets);
  return sim;
}

static void teardown(fixture_t *f) { rs_model_free(f->model); }

static void expect_bucket(const rs_step_bucket_t *b, uint64_t ready,
                          uint64_t start, uint64_t end, uint64_t exposed) {
  assert_int_equal(b->ready_ns, ready);
  assert_int_equal(b->start_ns, start);
  assert_int_equal(b->end_ns, end);
  assert_int_equal(b->exposed_ns, exposed);
}

/* Compute-bound: 10 us per gradient. Gradients at 15, 25 and 35 us; each
 * bucket (250 elements: 2 (1,000 + 500) = 3,000 ns) ends before the next
 * is ready, so only the last is exposed: 3 us of a 38 us step. */
static void test_compute_bound(void **state) {
  (void)state;
  fixture_t f;
  setup(&f, 10, 0);
  rs_step_time_t t = simulate(&f);
  assert_int_equal(t.bucket_count, 3);
  expect_bucket(&t.buckets[0], 15000, 15000, 18000, 0);
  expect_bucket(&t.buckets[1], 25000, 25000, 28000, 0);
  expect_bucket(&t.buckets[2], 35000, 35000, 38000, 3000);
  assert_int_equal(t.forward_ns, 5000);
  assert_int_equal(t.backward_ns, 30000);
  assert_int_equal(t.step_ns, 38000);
  assert_int_equal(t.comm_ns, 9000);
  assert_int_equal(t.exposed_ns, 3000);
  assert_int_equal(threaded(&f), 38000);
  rs_step_time_free(&t);
  teardown(&f);
}

/* Communication-bound: 1 us per gradient, ready at 6, 7 and 8 us; each
 * all-reduce waits for the one before: 6-9, 9-12, 12-15 us. After the
 * last gradient (8 us): 1 + 3 + 3 = 7 us exposed. */
static void test_comm_bound(void **state) {
  (void)state;
  fixture_t f;
  setup(&f, 1, 0);
  rs_step_time_t t = simulate(&f);
  expect_bucket(&t.buckets[0], 6000, 6000, 9000, 1000);
  expect_bucket(&t.buckets[1], 7000, 9000, 12000, 3000);
  expect_bucket(&t.buckets[2], 8000, 12000, 15000, 3000);
  assert_int_equal(t.step_ns, 15000);
  assert_int_equal(t.exposed_ns, 7000);
  assert_int_equal(t.comm_ns, 9000);
  assert_int_equal(threaded(&f), 15000);
  rs_step_time_free(&t);
  teardown(&f);
}

/* One bucket (DDP's first iteration): 750 elements, chunks of 375 (1,500
 * bytes): 2 (1,000 + 1,500) = 5,000 ns from the last gradient at 35 us:
 * nothing hidden. */
static void test_one_bucket(void **state) {
  (void)state;
  fixture_t f;
  setup(&f, 10, 1);
  rs_step_time_t t = simulate(&f);
  assert_int_equal(t.bucket_count, 1);
  assert_int_equal(t.buckets[0].params, 3);
  expect_bucket(&t.buckets[0], 35000, 35000, 40000, 5000);
  assert_int_equal(t.step_ns, 40000);
  assert_int_equal(t.exposed_ns, 5000);
  assert_int_equal(threaded(&f), 40000);
  rs_step_time_free(&t);
  teardown(&f);
}

/* Worker 1 computes 1.5 times slower: forward 7.5 us, gradients at 22.5,
 * 37.5 and 52.5 us (worker 0's at 15, 25, 35). Bucket 0: worker 0 sends
 * at 15 us (arriving at 16.5), worker 1 at 22.5 (arriving at 24); in the
 * all-gather worker 0 sends at 24 (arriving at 25.5), worker 1 at 23, its
 * link free after its 500 ns send (arriving at 24.5): 22.5-25.5 us. Bucket
 * 1 likewise from worker 1's 37.5 us: worker 0 receives at 39 and sends
 * its all-gather chunk then, arriving at 40.5. Bucket 2 from 52.5 us:
 * 55.5 us. Worker 0 waits for worker 1 in every bucket. */
static void test_straggler(void **state) {
  (void)state;
  fixture_t f;
  setup(&f, 10, 0);
  f.cfg.slow_worker = 1;
  f.cfg.slow = 1.5;
  rs_step_time_t t = simulate(&f);
  expect_bucket(&t.buckets[0], 22500, 22500, 25500, 0);
  expect_bucket(&t.buckets[1], 37500, 37500, 40500, 0);
  expect_bucket(&t.buckets[2], 52500, 52500, 55500, 3000);
  assert_int_equal(t.forward_ns, 7500);
  assert_int_equal(t.backward_ns, 45000);
  assert_int_equal(t.step_ns, 55500);
  assert_int_equal(t.exposed_ns, 3000);
  assert_int_equal(threaded(&f), 55500);
  rs_step_time_free(&t);
  teardown(&f);
}

/* The analytic compute: a param of n elements, 2 R n FLOPs forward and
 * 4 R n backward, rounded up to the ns; and what --compute refuses. */
static void test_compute(void **state) {
  (void)state;
  char err[RS_ERRMSG_MAX];
  rs_compute_t c;
  assert_int_equal(rs_compute_parse("flops=1G,rows=3", &c, err), RS_OK);
  assert_true(c.flops == 1e9 && c.rows == 3);
  assert_int_equal(rs_compute_parse("rows=8,flops=312T", &c, err), RS_OK);
  assert_true(c.flops == 312e12 && c.rows == 8);
  const char *bad[] = {
      "flops=312",          "flops=312T",        "rows=8",
      "flops=-1T,rows=8",   "flops=1T,rows=0",   "flops=1T,rows=1.5",
      "flops=1X,rows=8",    "flops=nanT,rows=8", "",
      "flops=1T,rows=8,x=1"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    err[0] = '\0';
    assert_int_equal(rs_compute_parse(bad[i], &c, err), RS_EINVAL);
    assert_non_null(strstr(err, "--compute"));
  }
  rs_model_t *m = model_of(1000);
  uint64_t fwd, bwd;
  c = (rs_compute_t){.flops = 1e9, .rows = 3};
  assert_int_equal(rs_step_compute(m, &c, &fwd, &bwd, err), RS_OK);
  assert_int_equal(fwd, 6000);  /* 2 x 3 x 1000 FLOPs at 1 GFLOP/s */
  assert_int_equal(bwd, 12000); /* 4 x 3 x 1000 */
  c = (rs_compute_t){.flops = 7e9, .rows = 1};
  assert_int_equal(rs_step_compute(m, &c, &fwd, &bwd, err), RS_OK);
  assert_int_equal(fwd, 286); /* 2000 / 7 = 285.7 ns, rounded up */
  /* Without a rate, a param without backward_us is named. */
  assert_int_equal(rs_step_compute(m, NULL, &fwd, &bwd, err), RS_EINVAL);
  assert_non_null(strstr(err, "param \"g\" has no backward_us"));
  rs_model_free(m);
}

/* model.json's compute fields: a number of microseconds from 0, named
 * with the param when it is not. */
static void test_model_fields(void **state) {
  (void)state;
  const char *bad[] = {"-1", "\"5\"", "1e10", "null", "true"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char text[256], err[RS_ERRMSG_MAX];
    snprintf(text, sizeof text,
             "{\"params\": [{\"name\": \"w\", \"shape\": [2], "
             "\"backward_us\": %s}]}",
             bad[i]);
    rs_model_t *m = NULL;
    assert_int_equal(rs_model_parse(text, strlen(text), "m.json", &m, err),
                     RS_EPARSE);
    assert_null(m);
    assert_non_null(strstr(err, "params[0].backward_us (param \"w\")"));
  }
  rs_model_t *m = three(2.5);
  const rs_param_t *p0 = rs_model_param(m, 0), *p1 = rs_model_param(m, 1);
  assert_true(p0->forward_us == 5 && p0->backward_us == 2.5);
  assert_true(p1->forward_us == -1); /* not given */
  uint64_t fwd[3], bwd[3];
  char err[RS_ERRMSG_MAX];
  assert_int_equal(rs_step_compute(m, NULL, fwd, bwd, err), RS_OK);
  assert_int_equal(fwd[0], 5000);
  assert_int_equal(fwd[1], 0);
  assert_int_equal(bwd[2], 2500);
  rs_model_free(m);
}

/* allreduce_ns for test_given_times: 3,000 ns + a ns a byte, noting the
 * bytes it was asked for; a bucket of `refuse` bytes has no time. */
typedef struct given {
  uint64_t asked[4];
  int calls;
  uint64_t refuse;
} given_t;

static uint64_t given_ns(void *ctx, uint64_t bytes) {
  given_t *g = ctx;
  if (g->calls < 4)
    g->asked[g->calls] = bytes;
  g->calls++;
  return bytes == g->refuse ? UINT64_MAX : 3000 + bytes;
}

/* Each bucket as one collective of a given time (allreduce_ns, NCCL's
 * way): it starts at the latest of its ready times over the workers and
 * the bucket before's end, and ends its time later on every worker. 1 us
 * a gradient, worker 1 computing 1.5 times as long: worker 0's gradients
 * at 6, 7 and 8 us, worker 1's at 9, 10.5 and 12 us. A bucket of 250
 * elements (1,000 bytes) takes 4,000 ns: 9-13, 13-17 (the one before's
 * end), 17-21 us. After the last gradient (12 us): 1 + 4 + 4 = 9 us
 * exposed. With the fp16 hook a bucket moves 500 bytes: 3,500 ns. */
static void test_given_times(void **state) {
  (void)state;
  fixture_t f;
  setup(&f, 1, 0);
  f.cfg.slow_worker = 1;
  f.cfg.slow = 1.5;
  f.cfg.net = (rs_netmodel_t){0}; /* (not read) */
  f.cfg.algo = RS_ALGO_AUTO;      /* (not read either) */
  given_t g = {.refuse = 1};
  f.cfg.allreduce_ns = given_ns;
  f.cfg.allreduce_ctx = &g;
  rs_step_time_t t = simulate(&f);
  assert_int_equal(g.calls, 3);
  assert_int_equal(g.asked[0], 1000);
  expect_bucket(&t.buckets[0], 9000, 9000, 13000, 1000);
  expect_bucket(&t.buckets[1], 10500, 13000, 17000, 4000);
  expect_bucket(&t.buckets[2], 12000, 17000, 21000, 4000);
  for (size_t b = 0; b < 3; b++)
    for (size_t r = 0; r < 2; r++) {
      assert_int_equal(t.worker_start[b * 2 + r], t.buckets[b].start_ns);
      assert_int_equal(t.worker_end[b * 2 + r], t.buckets[b].end_ns);
    }
  assert_int_equal(t.step_ns, 21000);
  assert_int_equal(t.comm_ns, 12000);
  assert_int_equal(t.exposed_ns, 9000);
  rs_step_time_free(&t);

  f.cfg.hook = RS_HOOK_FP16;
  g.calls = 0;
  t = simulate(&f);
  assert_int_equal(g.asked[0], 500);
  expect_bucket(&t.buckets[2], 12000, 16000, 19500, 3500);
  rs_step_time_free(&t);

  /* a bucket without a time, and the powersgd hook: RS_EINVAL, said */
  char err[RS_ERRMSG_MAX];
  g.refuse = 500;
  assert_int_equal(rs_step_simulate(f.model, &f.cfg, &t, err), RS_EINVAL);
  assert_non_null(strstr(err, "bucket 0's all-reduce of 500 bytes"));
  assert_null(t.buckets);
  f.cfg.hook = RS_HOOK_POWERSGD;
  f.cfg.powersgd_rank = 1;
  assert_int_equal(rs_step_simulate(f.model, &f.cfg, &t, err), RS_EINVAL);
  assert_non_null(strstr(err, "not supported yet"));
  teardown(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_compute_bound), cmocka_unit_test(test_comm_bound),
      cmocka_unit_test(test_one_bucket),    cmocka_unit_test(test_straggler),
      cmocka_unit_test(test_compute),       cmocka_unit_test(test_model_fields),
      cmocka_unit_test(test_given_times),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
