/* algo/algo.c - the pieces of an rs_algo_t (algo.h) that several
 * algorithms share. */
#include "algo/algo.h"

#include <stdlib.h>
#include <string.h>

size_t rs__algo_capped_elems(rs_shape_t shape, int from, int to, size_t elems,
                             size_t segs, size_t cap) {
  (void)shape, (void)from, (void)to, (void)segs;
  return elems < cap ? elems : cap;
}

size_t rs__algo_never_direct(rs_shape_t shape, size_t min_segs, int slices) {
  (void)shape, (void)min_segs, (void)slices;
  return 0;
}

uint64_t rs__algo_region_ns(const rs_netmodel_t *m, size_t elems, size_t cap,
                            size_t elem_size, int reduced) {
  const size_t segs = rs__segs(elems, cap);
  uint64_t t = 0;
  for (size_t k = 0; k < segs; k++) {
    size_t bytes = rs__chunk_elems(elems, (int)segs, (int)k) * elem_size;
    t += m->link.latency_ns + rs__net_ns(bytes, m->link.bandwidth) +
         (reduced ? rs__net_ns(bytes, m->reduce_rate) : 0);
  }
  return t;
}
