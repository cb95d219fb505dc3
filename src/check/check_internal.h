/* check_internal.h - between the files of src/check/: the check of a
 * run's result against the direct reduction (check/check.h says what it
 * offers the run).
 *
 *   check_prepare.c    before the run: the plan (threads, exact inputs,
 *                      the reference streamed after the run or kept whole
 *                      from before it), the error bound's constants, a
 *                      reference timed on one thread, the order report's
 *                      fixed order
 *   check_reference.c  the reference of one block and its bound per
 *                      element, in a wider precision (exact inputs: their
 *                      direct mean, also as the fill makes it)
 *   check_compare.c    one block's result against its reference: the
 *                      vectorised f32 loops and the general one; the
 *                      workers that differ from worker 0
 *   check_job.c        the reference (before the run) or the check (after
 *                      it) on the helper threads, piece by piece
 *   check_result.c     the check after the run: its totals and its verdict
 *
 * The check's loops are compiled as well for AVX2 and AVX-512 (RS_CLONES,
 * util.h), as grads.c's generator: the same IEEE operations in every lane,
 * without fused multiply-adds (CMakeLists.txt compiles every file of
 * src/check/ with -ffp-contract=off), so every path gives the same bits.
 */
#ifndef RINGSIM_CHECK_INTERNAL_H
#define RINGSIM_CHECK_INTERNAL_H

#include <stddef.h>

#include "check/check.h"
#include "core/runstate.h"

#define BLOCK RS_CHECK_BLOCK

/* Element i of an array of the buffers' type (a buffer, bound, ref_exact,
 * fixed). */
static inline double array_at(const rs_run_t *run, const void *array,
                              size_t i) {
  if (run->dtype == RS_DTYPE_F64)
    return ((const double *)array)[i];
  return ((const float *)array)[i];
}

/* Worker w's element i. */
static inline double value_at(const rs_run_t *run, int w, size_t i) {
  return array_at(run, run->bufs[w], i);
}

/* One thread's room for one block (BLOCK elements each). */
typedef struct scratch {
  unsigned char *inputs;   /* one worker's inputs, made again */
  unsigned char *quotient; /* a pre-divided average's x / W */
  double *ref;             /* the reference ... */
  double *ref_lo;          /* (f64: its low part, RUN's ref_lo) */
  unsigned char *bound;    /* ... its bound (buffer type) */
  unsigned char *exact;    /* exact inputs: the direct mean (buffer type) */
  unsigned char *fixed;    /* order_report: the fixed order's result */
  double *acc, *amp;
  long double *acc_l, *amp_l;
  void *memory;
} scratch_t;

/* One block of the check: elements start .. start+len-1 (at most BLOCK)
 * and where its reference is, each indexed from start: ref and its bound
 * (buffer type; with ref_lo for f64), or exact inputs' direct mean (exact,
 * buffer type); fixed, the order report's fixed order's result. */
typedef struct check_block {
  size_t start, len;
  double *ref, *ref_lo;
  void *bound, *exact;
  const void *fixed;
} check_block_t;

/* ---- check_reference.c ---- */
/* The reference of block b: the direct mean into b->exact (exact inputs),
 * or the wider-precision reference into b->ref (and b->ref_lo) and its
 * bound into b->bound; with a streamed order report, the fixed order's
 * result into s->fixed. On bad inputs (not finite, or a product beyond the
 * reference's range) returns RS_EINVAL with the message in errmsg. */
int rs__check_block_reference(const rs_run_t *run, const check_plan_t *plan,
                              scratch_t *s, const check_block_t *b,
                              char *errmsg);

/* ---- check_compare.c ---- */
/* Compare this process's first worker's result in block b with b's
 * reference (ref and bound, with ref_lo for f64; or exact, where ref and
 * bound are NULL; and fixed for the order report, else NULL), into checks
 * (one per param). */
void rs__check_compare_block(const rs_run_t *run, const check_block_t *b,
                             rs_param_check_t *checks);

/* ---- check_job.c ---- */
/* Run the reference (after == 0) or the check (after == 1) on the plan's
 * threads; returns the run's status. */
int rs__check_run_job(rs_run_t *run, int after);

#endif /* RINGSIM_CHECK_INTERNAL_H */
