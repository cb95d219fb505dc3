/* algo/list.c - the algorithms by name, and the public entry points that
 * reach an algorithm's cost model (ringsim.h's rs_netmodel_predict_algo
 * and rs_netmodel_simulate_algo). */
#include "algo/list.h"

#include <string.h>

/* Indexed by rs_algorithm_t; NULL where not yet written. */
static const rs_algo_t *const algos[RS_ALGO_COUNT] = {
    [RS_ALGO_RING] = &rs__algo_ring, [RS_ALGO_RD] = &rs__algo_rd,
    [RS_ALGO_RHD] = &rs__algo_rhd,   [RS_ALGO_LINEAR] = &rs__algo_linear,
    [RS_ALGO_TREE] = &rs__algo_tree, [RS_ALGO_GLOO_RING] = &rs__algo_gloo_ring,
    [RS_ALGO_HIER] = &rs__algo_hier, [RS_ALGO_HIER_RD] = &rs__algo_hier_rd,
    [RS_ALGO_HIER_RHD] = &rs__algo_hier_rhd};
static const char *const names[RS_ALGO_COUNT + 1] = {
    "ring", "rd",      "rhd",      "linear", "tree", "gloo-ring",
    "hier", "hier:rd", "hier:rhd", [RS_ALGO_AUTO] = "auto"};

const char *rs_algorithm_name(rs_algorithm_t algo) {
  return (unsigned)algo <= RS_ALGO_AUTO ? names[algo] : "?";
}

int rs_algorithm_parse(const char *name) {
  if (strcmp(name, "hier:ring") == 0) /* the default inner algorithm, named */
    return RS_ALGO_HIER;
  for (int i = 0; i <= RS_ALGO_AUTO; i++)
    if (strcmp(names[i], name) == 0)
      return i;
  return -1;
}

const rs_algo_t *rs__algo_get(rs_algorithm_t algo) {
  return (unsigned)algo < RS_ALGO_COUNT ? algos[algo] : NULL;
}

uint64_t rs__predict_bounded(rs_algorithm_t algo, const rs_netmodel_t *m,
                             int workers, size_t elems, size_t segs_per_chunk,
                             size_t segment_bytes, size_t elem_size,
                             uint64_t bound) {
  const rs_algo_t *a = rs__algo_get(algo);
  if (a && m->topo.enabled) {
    /* A topology has no closed formula (its NICs are shared as the
     * schedule has it): the prediction is the bucket's schedule, alone,
     * on the simulated clocks. */
    const rs_bucket_t bucket = {.elem_offset = 0, .elems = elems, .params = 1};
    return rs__algo_simulate_bounded(a, m, workers, &bucket, 1, segment_bytes,
                                     elem_size, bound);
  }
  size_t cap = segment_bytes / elem_size ? segment_bytes / elem_size : 1;
  return a ? a->predict(m, rs__shape_of(m, workers), elems, segs_per_chunk, cap,
                        elem_size)
           : 0;
}

uint64_t rs_netmodel_predict_algo(rs_algorithm_t algo, const rs_netmodel_t *m,
                                  int workers, size_t elems,
                                  size_t segs_per_chunk, size_t segment_bytes,
                                  size_t elem_size) {
  return rs__predict_bounded(algo, m, workers, elems, segs_per_chunk,
                             segment_bytes, elem_size, UINT64_MAX);
}

uint64_t rs_netmodel_simulate_algo(rs_algorithm_t algo, const rs_netmodel_t *m,
                                   int workers, const rs_bucket_t *buckets,
                                   size_t bucket_count, size_t segment_bytes,
                                   size_t elem_size) {
  const rs_algo_t *a = rs__algo_get(algo);
  return a ? rs__algo_simulate(a, m, workers, buckets, bucket_count,
                               segment_bytes, elem_size)
           : 0;
}
