/* algo/list.h - the algorithms by name. */
#ifndef RINGSIM_ALGO_LIST_H
#define RINGSIM_ALGO_LIST_H

#include "algo/algo.h"

/* The algorithm called name, or NULL. */
const rs_algo_t *rs__algo_find(const char *name);

/* The algorithm a run uses (today the ring). */
const rs_algo_t *rs__algo_default(void);

#endif /* RINGSIM_ALGO_LIST_H */
