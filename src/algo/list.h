/* algo/list.h - the algorithms by name. */
#ifndef RINGSIM_ALGO_LIST_H
#define RINGSIM_ALGO_LIST_H

#include "algo/algo.h"

/* The algorithm's implementation, or NULL if it has none yet. */
const rs_algo_t *rs__algo_get(rs_algorithm_t algo);

#endif /* RINGSIM_ALGO_LIST_H */
