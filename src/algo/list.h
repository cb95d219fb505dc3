/* algo/list.h - the algorithms by number and by name: the table
 * (list.c) and the lookups into it (algo.c). */
#ifndef RINGSIM_ALGO_LIST_H
#define RINGSIM_ALGO_LIST_H

#include "algo/algo.h"

/* Every algorithm's row, indexed by rs_algorithm_t (algo.h's
 * RS__ALGO_TABLE). */
extern const rs_algo_t *const rs__algos[RS_ALGO_COUNT];

/* The algorithm's implementation, or NULL for a value that names none
 * (RS_ALGO_AUTO among them). */
const rs_algo_t *rs__algo_get(rs_algorithm_t algo);

/* rs_netmodel_predict_algo, stopping once the prediction passes bound (a
 * topology's, which is a simulation: algo.h's rs__algo_simulate_bounded):
 * the prediction if it is at most bound, else some time above bound. */
uint64_t rs__predict_bounded(rs_algorithm_t algo, const rs_netmodel_t *m,
                             int workers, size_t elems, size_t segs_per_chunk,
                             size_t segment_bytes, size_t elem_size,
                             uint64_t bound);

#endif /* RINGSIM_ALGO_LIST_H */
