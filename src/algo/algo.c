/* algo/algo.c - the pieces of an rs_algo_t (algo.h) that several
 * algorithms share. */
#include "algo/algo.h"

size_t rs__algo_segs(size_t elems, size_t cap) {
  return elems ? (elems + cap - 1) / cap : 1;
}

size_t rs__algo_capped_elems(int workers, int from, int to, size_t elems,
                             size_t segs, size_t cap) {
  (void)workers, (void)from, (void)to, (void)segs;
  return elems < cap ? elems : cap;
}

size_t rs__algo_never_direct(int workers, size_t min_segs, int slices) {
  (void)workers, (void)min_segs, (void)slices;
  return 0;
}
