/* job.c - the job of a run in this process alone (job.h): every worker
 * here, nothing to agree on, merge or gather; each operation does nothing
 * or says what this process says.
 *
 * This file holds the table alone: tests/test_job.c links a counting
 * table of its own in its place (as test_algo_table.c does list.c's). */
#include "core/job.h"

#include <assert.h>

#include "ringsim/ringsim.h"

static int one_open(rs_run_t *run, char *errmsg) {
  (void)run, (void)errmsg;
  return RS_OK;
}
static void one_close(rs_run_t *run) { (void)run; }
/* Never called: alone, both ends of every edge are here. */
static int one_edge_open(rs_run_t *run, rs_edge_t *e, size_t payload_bytes,
                         int slots) {
  (void)run, (void)e, (void)payload_bytes, (void)slots;
  assert(!"an edge leaves a run of one process");
  return RS_EINVAL;
}
static void one_edge_close(rs_run_t *run, rs_edge_t *e) { (void)run, (void)e; }
static int one_run(rs_run_t *run) {
  (void)run;
  return RS_OK;
}
static size_t one_trace_batch(const rs_run_t *run) {
  (void)run;
  return 0;
}
static void one_finish(rs_run_t *run) { (void)run; }
static int one_trace_json(const rs_run_t *run, char *buf, size_t cap) {
  (void)run, (void)buf, (void)cap;
  return 0;
}
static void one_tell_fault(rs_run_t *run, int worker, int code,
                           const char *message) {
  (void)run, (void)worker, (void)code, (void)message;
}
static int one_all(rs_run_t *run, int ok) {
  (void)run;
  return ok;
}
static void one_check_merge(rs_run_t *run, int *identical) {
  (void)run, (void)identical;
}
static void one_reduce_sums(const rs_run_t *run, void *acc, void *amp,
                            size_t len, int f64) {
  (void)run, (void)acc, (void)amp, (void)len, (void)f64;
}
static const char *one_host(const rs_run_t *run, int proc) {
  (void)run, (void)proc;
  return "";
}
static int64_t one_offset(const rs_run_t *run, int proc) {
  (void)run, (void)proc;
  return 0;
}
static uint64_t one_rtt(const rs_run_t *run, int proc) {
  (void)run, (void)proc;
  return 0;
}

const rs_job_ops_t rs__job_one = {
    .all_here = 1,
    .own_cores = 1,
    .collective_check = 0,
    .ordered_check = 0,
    .streams_trace = 0,
    .trace_places = 0,
    .open = one_open,
    .close = one_close,
    .edge_open = one_edge_open,
    .edge_close = one_edge_close,
    .inputs = one_run,
    .start = one_run,
    .trace_batch = one_trace_batch,
    .trace_start = one_run,
    .finish = one_finish,
    .trace_json = one_trace_json,
    .tell_fault = one_tell_fault,
    .all = one_all,
    .check_merge = one_check_merge,
    .reduce_sums = one_reduce_sums,
    .host = one_host,
    .offset = one_offset,
    .rtt = one_rtt,
};
