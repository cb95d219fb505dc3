/* check_job.c - the reference before the run, or the check after it, on
 * the helper threads (parallel.h): each takes a piece of the elements at a
 * time, block by block, and merges what it found when there are no more.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/parallel.h"
#include "base/util.h"
#include "check/check_internal.h"
#include "io/model.h"

/* A thread's scratch_t, in one allocation (s->memory). */
static int scratch_alloc(scratch_t *s) {
  const size_t d = BLOCK * sizeof(double), l = BLOCK * sizeof(long double);
  unsigned char *m = malloc(9 * d + 2 * l);
  s->memory = m;
  if (!m)
    return RS_ENOMEM;
  s->inputs = m;
  s->quotient = m + d;
  s->ref = (double *)(void *)(m + 2 * d);
  s->bound = m + 3 * d;
  s->exact = m + 4 * d;
  s->fixed = m + 5 * d;
  s->acc = (double *)(void *)(m + 6 * d);
  s->amp = (double *)(void *)(m + 7 * d);
  s->ref_lo = (double *)(void *)(m + 8 * d);
  s->acc_l = (long double *)(void *)(m + 9 * d);
  s->amp_l = (long double *)(void *)(m + 9 * d + l);
  return RS_OK;
}

/* Merge one param's check b into a (the same rules as
 * rs__check_compare_block's). */
static void merge_check(rs_param_check_t *a, const rs_param_check_t *b) {
  if (!(b->max_abs_err <= a->max_abs_err))
    a->max_abs_err = b->max_abs_err;
  if (b->max_rel_err > a->max_rel_err)
    a->max_rel_err = b->max_rel_err;
  if (b->bound > a->bound)
    a->bound = b->bound;
  if (!(b->worst_ratio <= a->worst_ratio))
    a->worst_ratio = b->worst_ratio;
  a->differing += b->differing;
  a->wrong += b->wrong;
  a->order_differing += b->order_differing;
  if (b->order_max_ulps > a->order_max_ulps)
    a->order_max_ulps = b->order_max_ulps;
  a->sum_overflow += b->sum_overflow;
  a->sum_overflow_saved += b->sum_overflow_saved;
  if (b->max_abs_ref > a->max_abs_ref)
    a->max_abs_ref = b->max_abs_ref;
}

/* Elements a thread takes at a time (whole blocks). */
#define PIECE (32 * BLOCK)

/* The work every helper thread shares (parallel.h): the pieces of the
 * reference before the run, or of the check after it. */
typedef struct check_job {
  rs_run_t *run;
  const check_plan_t *plan;
  int after; /* the check after the run; else the reference before it */
  atomic_size_t next;
  atomic_int stop;    /* a thread failed: take no more pieces */
  pthread_mutex_t mu; /* guards what follows */
  rs_param_check_t *checks;
  int identical;
  int rc;            /* the failure of the lowest piece that failed */
  size_t fail_piece; /* (the same inputs give the same message) */
  char errmsg[RS_ERRMSG_MAX];
} check_job_t;

static void *check_pieces(void *arg) {
  check_job_t *job = arg;
  rs_run_t *run = job->run;
  const check_plan_t *plan = job->plan;
  const size_t n = run->elems, size = run->buf_elem_bytes;
  const size_t params = rs_model_param_count(run->model);
  scratch_t s = {0};
  rs_param_check_t *checks = calloc(params, sizeof *checks);
  /* workers that differ from worker 0 (one process; mpi/merge.c's merge
   * lists them over MPI) */
  uint64_t *counts =
      job->after ? calloc((size_t)run->config.workers, sizeof *counts) : NULL;
  rs_mismatch_t list[RS_MISMATCH_LIST];
  size_t listed = 0;
  const mismatch_tally_t tally = {counts, list, &listed};
  char errmsg[RS_ERRMSG_MAX];
  int rc = RS_OK, identical = 1;
  size_t piece = 0;
  if (!checks || (job->after && !counts) || scratch_alloc(&s)) {
    rc = rs__err(errmsg, RS_ENOMEM, "out of memory for the check");
    free(checks);
    checks = NULL;
    s.memory = NULL;
  }
  while (rc == RS_OK && !atomic_load(&job->stop) && !rs__run_stopped(run)) {
    piece = atomic_fetch_add(&job->next, 1);
    if (piece * PIECE >= n)
      break;
    size_t end = n - piece * PIECE < PIECE ? n : (piece + 1) * PIECE;
    for (size_t start = piece * PIECE; start < end && rc == RS_OK;
         start += BLOCK) {
      size_t len = end - start < BLOCK ? end - start : BLOCK;
      /* the reference of the block: kept whole from before the run, or
       * made now */
      int kept = !plan->stream;
      double *ref = kept && run->ref ? run->ref + start : s.ref;
      double *ref_lo = !plan->k.f64          ? NULL
                       : kept && run->ref_lo ? run->ref_lo + start
                                             : s.ref_lo;
      void *bound = kept && run->bound
                        ? (unsigned char *)run->bound + start * size
                        : s.bound;
      void *exact = kept && run->ref_exact
                        ? (unsigned char *)run->ref_exact + start * size
                        : s.exact;
      const check_block_t blk = {.start = start,
                                 .len = len,
                                 .ref = ref,
                                 .ref_lo = ref_lo,
                                 .bound = bound,
                                 .exact = exact};
      if (!job->after || plan->stream)
        rc = rs__check_block_reference(run, plan, &s, &blk, errmsg);
      if (rc == RS_OK && job->after) {
        /* this process's workers (mpi/merge.c compares the processes) */
        const int first = run->first_local;
        int same = 1;
        for (int w = first + 1; w < run->local_end && same; w++)
          same = memcmp(run->bufs[w] + start * size,
                        run->bufs[first] + start * size, len * size) == 0;
        identical &= same;
        if (!same && run->job->all_here) /* (first is worker 0) */
          rs__check_list_block(run, start, len, run->bufs[0] + start * size,
                               &tally);
        const void *fixed =
            !plan->fixed   ? NULL
            : plan->stream ? (const void *)s.fixed
                           : (const unsigned char *)run->fixed + start * size;
        /* (exact inputs: compared with exact, bit for bit) */
        const check_block_t got = {.start = start,
                                   .len = len,
                                   .ref = plan->exact ? NULL : ref,
                                   .ref_lo = plan->exact ? NULL : ref_lo,
                                   .bound = plan->exact ? NULL : bound,
                                   .exact = exact,
                                   .fixed = fixed};
        rs__check_compare_block(run, &got, checks);
      }
      rs__progress_add(run, len);
    }
  }
  if (rc)
    atomic_store(&job->stop, 1);
  RS_PTHREAD_CHECK(pthread_mutex_lock(&job->mu));
  if (rc && (job->rc == RS_OK || piece < job->fail_piece)) {
    job->rc = rc;
    job->fail_piece = piece;
    memcpy(job->errmsg, errmsg, sizeof errmsg);
  }
  job->identical &= identical;
  for (size_t p = 0; checks && p < params; p++)
    merge_check(&job->checks[p], &checks[p]);
  for (int w = 0; counts && run->mismatches && w < run->config.workers; w++)
    run->mismatches[w] += counts[w];
  if (run->mismatches)
    rs__check_list_merge(run->first_mismatches, &run->mismatches_listed, list,
                         listed);
  RS_PTHREAD_CHECK(pthread_mutex_unlock(&job->mu));
  free(counts);
  free(checks);
  free(s.memory);
  return NULL;
}

/* Run the reference (after == 0) or the check (after == 1) on the plan's
 * threads; returns the run's status. */
int rs__check_run_job(rs_run_t *run, int after) {
  check_job_t job = {.run = run,
                     .plan = run->check_plan,
                     .after = after,
                     .checks = run->checks,
                     .identical = 1};
  atomic_init(&job.next, 0);
  atomic_init(&job.stop, 0);
  RS_PTHREAD_CHECK(pthread_mutex_init(&job.mu, NULL));
  /* (between a pool's iterations the check interrupts the all-reduce's
   * stage, which then goes on) */
  int stage = atomic_load(&run->phase);
  size_t done = atomic_load(&run->phase_done);
  size_t total = atomic_load(&run->phase_total);
  rs__progress_begin(run, after ? RS_STAGE_CHECK : RS_STAGE_REFERENCE,
                     run->elems);
  rs__parallel(job.plan->threads, check_pieces, &job);
  rs__progress_begin(run, (rs_stage_t)stage, total);
  rs__progress_add(run, done);
  RS_PTHREAD_CHECK(pthread_mutex_destroy(&job.mu));
  run->result.identical = job.identical;
  if (job.rc)
    return rs__run_fail(run, job.rc, "%s", job.errmsg);
  if (rs__run_stopped(run))
    return rs__run_take_interrupt(run);
  return RS_OK;
}
