/* access.c - what a run reports once made or executed: its config and
 * result, its buckets and their algorithms (with --algo auto's
 * predictions), its buffers, every worker's statistics, the check per
 * param and the workers that differ, and its place in its trace.
 */
#include "ringsim/internal/command.h" /* rs_run_switches */
#include "run/run.h"

const char *rs_run_errmsg(const rs_run_t *run) { return run->errmsg; }
const rs_result_t *rs_run_result(const rs_run_t *run) { return &run->result; }
const rs_config_t *rs_run_config(const rs_run_t *run) { return &run->config; }
int rs_run_switches(const rs_run_t *run) { return run->switches; }

const rs_bucket_t *rs_run_bucket(const rs_run_t *run, size_t index) {
  return index < run->result.buckets ? &run->buckets[index] : NULL;
}

rs_algorithm_t rs_run_bucket_algo(const rs_run_t *run, size_t index) {
  return index < run->result.buckets ? run->bucket_choice[index]
                                     : (rs_algorithm_t)RS_ALGO_COUNT;
}

uint64_t rs_run_bucket_predicted(const rs_run_t *run, size_t index,
                                 rs_algorithm_t algo) {
  if (!run->bucket_predicted || index >= run->result.buckets ||
      (unsigned)algo >= RS_ALGO_COUNT)
    return 0;
  return run->bucket_predicted[index * RS_ALGO_COUNT + algo];
}

const rs_netmodel_t *rs_run_auto_model(const rs_run_t *run, int *measured) {
  if (!run->bucket_predicted)
    return NULL;
  if (measured)
    *measured = run->auto_measured;
  return &run->auto_model;
}

void *rs_run_buffer(rs_run_t *run, int worker) {
  if (worker < 0 || worker >= run->config.workers)
    return NULL;
  /* The caller may change the inputs: the check cannot make them again. */
  if (!run->executed)
    run->generated = 0;
  return run->bufs[worker];
}

void rs_run_mark_filled(rs_run_t *run) {
  run->filled = 1;
  run->generated = 0;
}

const rs_worker_stats_t *rs_run_worker_stats(const rs_run_t *run, int worker) {
  if (worker < 0 || worker >= run->config.workers)
    return NULL;
  return &run->workers[worker].stats;
}

const rs_param_check_t *rs_run_param_check(const rs_run_t *run, size_t param) {
  if (param >= rs_model_param_count(run->model))
    return NULL;
  return &run->checks[param];
}

uint64_t rs_run_worker_mismatches(const rs_run_t *run, int worker) {
  if (!run->checked || !run->mismatches || worker < 0 ||
      worker >= run->config.workers)
    return 0;
  return run->mismatches[worker];
}

size_t rs_run_mismatches(const rs_run_t *run, const rs_mismatch_t **first) {
  *first = run->first_mismatches;
  return run->checked ? run->mismatches_listed : 0;
}

int64_t rs_run_trace_id(const rs_run_t *run) { return run->trace_run_id; }

const char *rs_run_trace_error(const rs_run_t *run) {
  return run->trace_failed ? run->trace_errmsg : NULL;
}
