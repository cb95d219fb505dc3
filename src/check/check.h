/* check.h - the check of a run's result against the direct reduction. */
#ifndef RINGSIM_CHECK_H
#define RINGSIM_CHECK_H

#include "ringsim/ringsim.h"

/* Whether rs_run_fill, generating exact inputs, also makes their
 * reference (rs__check_fill_fold, rs__check_fill_finish) as it goes, so
 * that the check need not make the W inputs again after the run: exact
 * inputs (the reference is the direct mean, one buffer), in one process,
 * without the order report or a timed reference. */
int rs__check_fills_reference(const rs_run_t *run);
/* The direct mean of elements start .. start+len-1 (at most one check
 * block, 2048) into run->ref_exact: worker w's inputs just filled there
 * folded in (workers 0, 1, ..., W-1 in turn, each while its block is in
 * cache), then finished (divided for a mean, rounded to the dtype). Pure
 * over the range, so fill threads call them on their own ranges. */
void rs__check_fill_fold(const rs_run_t *run, int w, size_t start, size_t len);
void rs__check_fill_finish(const rs_run_t *run, size_t start, size_t len);
#define RS_CHECK_BLOCK 2048

/* Compute the reference and its error bound from the buffers (before the
 * workers run); returns the run's status. */
int rs__check_prepare(rs_run_t *run);
/* Compare every worker's buffer with the reference (after). */
void rs__check_result(rs_run_t *run);

/* A listing of the workers that differ from worker 0 as it is made
 * (rs_run_mismatches): how many elements each worker differs in
 * (counts[w]), and the first RS_MISMATCH_LIST mismatches, by element then
 * worker (list, *listed of them). */
typedef struct mismatch_tally {
  uint64_t *counts;
  rs_mismatch_t *list;
  size_t *listed;
} mismatch_tally_t;

/* Workers that differ from worker 0: compare this process's workers'
 * elements start .. start+len-1 with worker 0's (ref0, that block of its
 * buffer), element by element, adding to the tally. */
void rs__check_list_block(const rs_run_t *run, size_t start, size_t len,
                          const void *ref0, const mismatch_tally_t *tally);
/* Merge n listed mismatches into list (the same order and bound). */
void rs__check_list_merge(rs_mismatch_t *list, size_t *listed,
                          const rs_mismatch_t *from, size_t n);

#endif /* RINGSIM_CHECK_H */
