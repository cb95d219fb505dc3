/* algo/list.c - the algorithms by name, and the public entry points that
 * reach an algorithm's cost model (ringsim.h's rs_netmodel_predict and
 * rs_netmodel_simulate, which model the ring). */
#include "algo/list.h"

#include <string.h>

static const rs_algo_t *const algos[] = {&rs__algo_ring};

const rs_algo_t *rs__algo_find(const char *name) {
  for (size_t i = 0; i < sizeof algos / sizeof *algos; i++)
    if (strcmp(algos[i]->name, name) == 0)
      return algos[i];
  return NULL;
}

const rs_algo_t *rs__algo_default(void) { return &rs__algo_ring; }

uint64_t rs_netmodel_predict(const rs_netmodel_t *m, int workers, size_t elems,
                             size_t segs, size_t elem_size) {
  return rs__algo_default()->predict(m, workers, elems, segs, elem_size);
}

uint64_t rs_netmodel_simulate(const rs_netmodel_t *m, int workers,
                              const rs_bucket_t *buckets, size_t bucket_count,
                              size_t segment_bytes, size_t elem_size) {
  return rs__algo_default()->simulate(m, workers, buckets, bucket_count,
                                      segment_bytes, elem_size);
}
