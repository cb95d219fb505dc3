/* check_result.c - the check after the run: every worker's buffer
 * compared with the reference (check_job.c), the totals over the params
 * and, over MPI, over the processes; the run's verdict and its message.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "check/check_internal.h"
#include "io/model.h"

/* For a result outside its bound: the inputs are finite (refused
 * otherwise), so a result that is not finite is an arithmetic overflow,
 * of a partial sum (or product) or of the exact one itself. Names the
 * first such element in text (": the sum overflowed to inf in f16, ..."),
 * or leaves text empty if every element is finite. */
static void name_overflow(const rs_run_t *run, char *text, size_t size) {
  text[0] = '\0';
  const size_t n = rs_model_elems(run->model);
  size_t i = 0, count = 0;
  for (size_t k = 0; k < n; k++)
    if (!isfinite(value_at(run, run->first_local, k)) && !count++)
      i = k;
  if (!count)
    return;
  const rs_param_t *param =
      rs_model_param(run->model, rs__model_param_at(run->model, i));
  double got = value_at(run, run->first_local, i);
  const rs_config_t *c = &run->config;
  int post_avg = c->op == RS_OP_AVG && c->average == RS_AVERAGE_POST;
  if (run->result.hook_cast_overflow) { /* before the sum: the hook's cast */
    snprintf(text, size,
             ": the hook's cast to %s overflowed %" PRIu64
             " input element(s) to inf, so %zu result element(s) are not "
             "finite, the first \"%.100s\"[%zu] (element %zu)",
             rs_dtype_name(run->dtype), run->result.hook_cast_overflow, count,
             param->name, i - param->elem_offset, i);
    return;
  }
  snprintf(text, size,
           ": the %s overflowed to %s in %s, at %zu element(s), the first "
           "\"%.100s\"[%zu] (element %zu)%s",
           c->op == RS_OP_PROD ? "product" : "sum",
           isnan(got) ? "nan (inf - inf)"
           : got < 0  ? "-inf"
                      : "inf",
           rs_dtype_name(run->dtype), count, param->name,
           i - param->elem_offset, i,
           post_avg ? "; --average pre divides each gradient by the worker "
                      "count before the sum"
                    : "");
}

static uint64_t wrong_total(const rs_run_t *run) {
  uint64_t total = 0;
  for (size_t p = 0; p < rs_model_param_count(run->model); p++)
    total += run->checks[p].wrong;
  return total;
}

void rs__check_result(rs_run_t *run) {
  const check_plan_t *plan = run->check_plan;
  rs_result_t *res = &run->result;
  memset(run->checks, 0,
         rs_model_param_count(run->model) * sizeof *run->checks);
  res->exact = plan->exact; /* bitwise check, not a bound */
  res->check_threads = plan->threads;
  const size_t W = (size_t)run->config.workers;
  if (!run->mismatches)
    run->mismatches = calloc(W, sizeof *run->mismatches);
  else
    memset(run->mismatches, 0, W * sizeof *run->mismatches);
  run->mismatches_listed = 0; /* (out of memory: no listing) */
  uint64_t t0 = rs__now_ns();
  int rc = rs__check_run_job(run, 1);
  /* every process checked its own workers: merge */
  if (!run->job->all(run, rc == RS_OK))
    return; /* interrupted somewhere: not checked */
  run->job->check_merge(run, &res->identical);
  res->check_ns = rs__now_ns() - t0;
  for (size_t p = 0; p < rs_model_param_count(run->model); p++) {
    const rs_param_check_t *c = &run->checks[p];
    if (!(c->max_abs_err <= res->max_abs_err))
      res->max_abs_err = c->max_abs_err;
    if (c->bound > res->bound)
      res->bound = c->bound;
    if (!(c->worst_ratio <= res->worst_ratio))
      res->worst_ratio = c->worst_ratio;
  }
  run->checked = 1;
  run->result.checked = 1;
  /* rs__run_fail sets the status with its message */
  if (!res->identical)
    rs__run_fail(run, RS_ECHECK,
                 "workers do not hold identical results (worst error/bound "
                 "%g)",
                 res->worst_ratio);
  else if (!(res->worst_ratio <= 1.0)) {
    char overflow[RS_ERRMSG_MAX];
    name_overflow(run, overflow, sizeof overflow);
    rs__run_fail(run, RS_ECHECK,
                 "%llu element(s) outside the error bound (worst "
                 "error/bound %g)%s",
                 (unsigned long long)wrong_total(run), res->worst_ratio,
                 overflow);
  }
}
