/* algo/list.h - the algorithms by name. */
#ifndef RINGSIM_ALGO_LIST_H
#define RINGSIM_ALGO_LIST_H

#include "algo/algo.h"

/* The algorithm's implementation, or NULL if it has none yet. */
const rs_algo_t *rs__algo_get(rs_algorithm_t algo);

/* rs_netmodel_predict_algo, stopping once the prediction passes bound (a
 * topology's, which is a simulation: algo.h's rs__algo_simulate_bounded):
 * the prediction if it is at most bound, else some time above bound. */
uint64_t rs__predict_bounded(rs_algorithm_t algo, const rs_netmodel_t *m,
                             int workers, size_t elems, size_t segs_per_chunk,
                             size_t segment_bytes, size_t elem_size,
                             uint64_t bound);

#endif /* RINGSIM_ALGO_LIST_H */
