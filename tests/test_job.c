/* test_job.c - a run asks where its workers live only through its job
 * table (core/job.h): this program links a table of its own in place of
 * src/core/job.c's rs__job_one (the linker then takes no member of
 * libringsim.a that defines it, as test_algo_table.c does for list.c), a
 * one-process table that counts its calls and, when a test says so,
 * answers as another process would. The run calls it at each point of
 * its course, and its answers are the run's. */
#include "test.h"

#include <stdlib.h>

#include "core/job.h"
#include "ringsim/internal/config.h"

enum {
  C_OPEN,
  C_CLOSE,
  C_EDGE_OPEN,
  C_EDGE_CLOSE,
  C_INPUTS,
  C_START,
  C_TRACE_START,
  C_FINISH,
  C_TELL_FAULT,
  C_ALL,
  C_CHECK_MERGE,
  C_REDUCE_SUMS,
  C_COUNT
};
static int calls[C_COUNT];
/* What the fake's other process says: the first `all` says no; each
 * process holds the same workers, so the sums are twice this one's. */
static int refuse_first_all, double_sums;
static int told_worker = -1;

static int fake_open(rs_run_t *run, char *errmsg) {
  (void)run, (void)errmsg;
  calls[C_OPEN]++;
  return RS_OK;
}
static void fake_close(rs_run_t *run) {
  (void)run;
  calls[C_CLOSE]++;
}
static int fake_edge_open(rs_run_t *run, rs_edge_t *e, size_t payload_bytes,
                          int slots) {
  (void)run, (void)e, (void)payload_bytes, (void)slots;
  calls[C_EDGE_OPEN]++;
  return RS_EINVAL;
}
static void fake_edge_close(rs_run_t *run, rs_edge_t *e) {
  (void)run, (void)e;
  calls[C_EDGE_CLOSE]++;
}
static int fake_inputs(rs_run_t *run) {
  (void)run;
  calls[C_INPUTS]++;
  return RS_OK;
}
static int fake_start(rs_run_t *run) {
  (void)run;
  calls[C_START]++;
  return RS_OK;
}
static size_t fake_trace_batch(const rs_run_t *run) {
  (void)run;
  return 0;
}
static int fake_trace_start(rs_run_t *run) {
  (void)run;
  calls[C_TRACE_START]++;
  return RS_OK;
}
static void fake_finish(rs_run_t *run) {
  (void)run;
  calls[C_FINISH]++;
}
static int fake_trace_json(const rs_run_t *run, char *buf, size_t cap) {
  (void)run, (void)buf, (void)cap;
  return 0;
}
static void fake_tell_fault(rs_run_t *run, int worker, int code,
                            const char *message) {
  (void)run, (void)code, (void)message;
  calls[C_TELL_FAULT]++; /* (a worker's thread: no cmocka assert here) */
  told_worker = worker;
}
static int fake_all(rs_run_t *run, int ok) {
  (void)run;
  return calls[C_ALL]++ == 0 && refuse_first_all ? 0 : ok;
}
static void fake_check_merge(rs_run_t *run, int *identical) {
  (void)run, (void)identical;
  calls[C_CHECK_MERGE]++;
}
static void fake_reduce_sums(const rs_run_t *run, void *acc, void *amp,
                             size_t len, int f64) {
  (void)run;
  calls[C_REDUCE_SUMS]++;
  assert_false(f64);
  for (size_t i = 0; i < len && double_sums; i++) {
    ((double *)acc)[i] *= 2;
    ((double *)amp)[i] *= 2;
  }
}
static const char *fake_host(const rs_run_t *run, int proc) {
  (void)run, (void)proc;
  return "";
}
static int64_t fake_offset(const rs_run_t *run, int proc) {
  (void)run, (void)proc;
  return 0;
}
static uint64_t fake_rtt(const rs_run_t *run, int proc) {
  (void)run, (void)proc;
  return 0;
}

const rs_job_ops_t rs__job_one = {
    .all_here = 1,
    .own_cores = 1,
    .open = fake_open,
    .close = fake_close,
    .edge_open = fake_edge_open,
    .edge_close = fake_edge_close,
    .inputs = fake_inputs,
    .start = fake_start,
    .trace_batch = fake_trace_batch,
    .trace_start = fake_trace_start,
    .finish = fake_finish,
    .trace_json = fake_trace_json,
    .tell_fault = fake_tell_fault,
    .all = fake_all,
    .check_merge = fake_check_merge,
    .reduce_sums = fake_reduce_sums,
    .host = fake_host,
    .offset = fake_offset,
    .rtt = fake_rtt,
};

static int reset(void **state) {
  (void)state;
  memset(calls, 0, sizeof calls);
  refuse_first_all = double_sums = 0;
  told_worker = -1;
  return 0;
}

static rs_run_t *make_run(rs_config_t *cfg, rs_model_t *m) {
  char err[RS_ERRMSG_MAX];
  rs_run_t *run;
  if (rs_run_create(cfg, m, &run, err))
    fail_msg("%s", err);
  return run;
}

static void print_calls(const char *what) {
  print_message("%s: open %d inputs %d all %d start %d trace_start %d "
                "finish %d check_merge %d reduce_sums %d tell_fault %d "
                "edge_open %d edge_close %d close %d\n",
                what, calls[C_OPEN], calls[C_INPUTS], calls[C_ALL],
                calls[C_START], calls[C_TRACE_START], calls[C_FINISH],
                calls[C_CHECK_MERGE], calls[C_REDUCE_SUMS],
                calls[C_TELL_FAULT], calls[C_EDGE_OPEN], calls[C_EDGE_CLOSE],
                calls[C_CLOSE]);
}

/* job-1: a run calls its table at every point of its course: open when
 * created; the inputs, the agreement to start, the start and the tracer
 * before the workers; finish after them; the check's agreement and its
 * merge; a worker's fault told; close when freed. No edge leaves it. */
static void test_run_calls_its_job(void **state) {
  (void)state;
  rs_model_t *m = model_of(1000);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = 4;
  rs_run_t *run = make_run(&cfg, m);
  assert_int_equal(calls[C_OPEN], 1);
  assert_int_equal(rs_run_fill(run, RS_INIT_EXACT, 3), RS_OK);
  assert_int_equal(rs_run_execute(run), RS_OK);
  assert_true(rs_run_result(run)->identical);
  rs_run_free(run);
  print_calls("a run");
  assert_int_equal(calls[C_INPUTS], 1);
  assert_int_equal(calls[C_ALL], 3); /* to start, to check, the verdict */
  assert_int_equal(calls[C_START], 1);
  assert_int_equal(calls[C_TRACE_START], 1);
  assert_int_equal(calls[C_FINISH], 1);
  assert_int_equal(calls[C_CHECK_MERGE], 1);
  assert_int_equal(calls[C_REDUCE_SUMS], 0); /* (generated: streamed) */
  assert_int_equal(calls[C_TELL_FAULT], 0);
  assert_int_equal(calls[C_EDGE_OPEN], 0);
  assert_true(calls[C_EDGE_CLOSE] > 0); /* each edge's */
  assert_int_equal(calls[C_CLOSE], 1);

  /* a segment damaged on its way from worker 1: the fault its receiver
   * finds is told to the job, once */
  reset(NULL);
  cfg.fault_count = 1;
  cfg.faults[0] = (rs_fault_t){.kind = RS_FAULT_CORRUPT, .worker = 1};
  run = make_run(&cfg, m);
  assert_int_equal(rs_run_fill(run, RS_INIT_EXACT, 3), RS_OK);
  assert_int_not_equal(rs_run_execute(run), RS_OK);
  print_calls("a damaged segment");
  print_message("  %s\n", rs_run_errmsg(run));
  assert_int_equal(calls[C_TELL_FAULT], 1);
  assert_int_equal(told_worker, 2);
  rs_run_free(run);
  rs_model_free(m);
}

/* job-2: the job's agreement is the run's: when another process cannot
 * start, no worker starts here either, and the run says why. */
static void test_job_agreement_stops_the_run(void **state) {
  (void)state;
  rs_model_t *m = model_of(1000);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = 3;
  refuse_first_all = 1;
  rs_run_t *run = make_run(&cfg, m);
  assert_int_equal(rs_run_fill(run, RS_INIT_EXACT, 3), RS_OK);
  assert_int_equal(rs_run_execute(run), RS_EABORTED);
  print_calls("refused");
  print_message("  %s\n", rs_run_errmsg(run));
  assert_string_equal(rs_run_errmsg(run),
                      "another MPI process could not start the run");
  assert_int_equal(calls[C_START], 0);
  assert_int_equal(calls[C_FINISH], 0);
  assert_false(rs_run_result(run)->checked);
  rs_run_free(run);
  rs_model_free(m);
}

/* job-3: the reference of inputs given by hand is the job's reduction of
 * every process's sums: a job whose other process holds the same workers
 * doubles it, and the check fails; with this process's sums alone it
 * passes. */
static void test_reference_is_the_jobs_sum(void **state) {
  (void)state;
  rs_model_t *m = model_of(1000);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = 3;
  for (double_sums = 0; double_sums <= 1; double_sums++) {
    calls[C_REDUCE_SUMS] = 0;
    rs_run_t *run = make_run(&cfg, m);
    for (int r = 0; r < cfg.workers; r++) {
      float *buf = rs_run_buffer(run, r);
      for (size_t i = 0; i < 1000; i++)
        buf[i] = (float)(r + 1) * 0.25f + (float)i;
    }
    rs_run_mark_filled(run);
    int rc = rs_run_execute(run);
    print_message("doubled %d: %s, %d reductions\n", double_sums,
                  rs_status_name(rc), calls[C_REDUCE_SUMS]);
    assert_true(calls[C_REDUCE_SUMS] > 0);
    assert_int_equal(rc, double_sums ? RS_ECHECK : RS_OK);
    rs_run_free(run);
  }
  rs_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_run_calls_its_job, reset),
      cmocka_unit_test_setup(test_job_agreement_stops_the_run, reset),
      cmocka_unit_test_setup(test_reference_is_the_jobs_sum, reset),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
