/* check.h - the check of a run's result against the direct reduction. */
#ifndef RINGSIM_CHECK_H
#define RINGSIM_CHECK_H

#include "ringsim/ringsim.h"

/* Compute the reference and its error bound from the buffers (before the
 * workers run); returns the run's status. */
int rs__check_prepare(rs_run_t *run);
/* Compare every worker's buffer with the reference (after). */
void rs__check_result(rs_run_t *run);

#endif /* RINGSIM_CHECK_H */
