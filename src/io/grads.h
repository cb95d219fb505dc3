/* grads.h - making a run's generated inputs again, block by block. */
#ifndef RINGSIM_GRADS_H
#define RINGSIM_GRADS_H

#include <stddef.h>

#include "ringsim/ringsim.h"

/* Worker's generated inputs at flat elements first .. first+len-1, as
 * rs_run_fill stored them (rounded to the dtype, in the buffers' type),
 * into out[0 .. len-1]. Only for a run filled by rs_run_fill
 * (run->generated); any range, across params; pure, so any thread may
 * call it at any time. */
void rs__grads_generate(const rs_run_t *run, int worker, size_t first,
                        size_t len, void *out);

#endif /* RINGSIM_GRADS_H */
