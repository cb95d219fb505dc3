/* algo/rhd.h - Rabenseifner's schedule (recursive halving, then recursive
 * doubling), as Open MPI runs it (coll_base_allreduce.c,
 * ompi_coll_base_allreduce_intra_redscat_allgather).
 *
 * Let P be the largest power of two <= W and E = W - P. The fold-in (phase
 * reduce, when E > 0): each pair r, r+1 (even r < 2E) swaps halves of the
 * buffer, the even one keeping and adding the left half, the odd one the
 * right; then the odd one sends its summed right half to the even one,
 * which takes part in what follows as virtual rank r/2 while the odd one
 * sits it out. The others are virtual rank r - E. Reduce-scatter, log2 P
 * steps: at distance m = 1, 2, 4, ... each virtual rank swaps half of its
 * current window with its partner v xor m (the lower real rank keeps the
 * left half) and adds the half it keeps, so the window halves every step
 * and ends as one worker's share of the sum. All-gather, log2 P steps in
 * the reverse order: the partners swap what they hold, and the windows
 * double back to the whole buffer. The fold-out (phase broadcast): each
 * even r < 2E sends the result to r+1.
 */
#ifndef RINGSIM_ALGO_RHD_H
#define RINGSIM_ALGO_RHD_H

#include <stddef.h>

#include "algo/rd.h"

/* Worker r's virtual rank, or -1 for an odd r < 2E (folded into r-1). */
static inline int rs__rhd_vrank(int workers, int rank) {
  const int extra = workers - rs__pof2(workers);
  if (rank < 2 * extra)
    return rank % 2 ? -1 : rank / 2;
  return rank - extra;
}

/* The worker with virtual rank v. */
static inline int rs__rhd_rank(int workers, int v) {
  const int extra = workers - rs__pof2(workers);
  return v < extra ? 2 * v : v + extra;
}

/* Whose contributions virtual rank v's window holds before the step at
 * distance m: the aligned block of m virtual ranks, a range of workers
 * (virtual rank u < E holds workers 2u and 2u+1). The same ranges as
 * recursive doubling's renumbering. */
static inline void rs__rhd_contributors(int workers, int v, int m, int *first,
                                        int *count) {
  rs__rd_contributors(workers, v, m, first, count);
}

/* A worker's two halves of its window in one halving: the half it keeps
 * (receives its partner's copy of, and adds) and the half it gives
 * (sends), each an offset and a length in the bucket. */
typedef struct rs_rhd_halves {
  size_t give_off, give_len;
  size_t keep_off, keep_len;
} rs_rhd_halves_t;

/* Worker rank's halves in the halving at distance 2^k (k = 0 .. log2 P -
 * 1) of an elems-element bucket; rank must take part (vrank >= 0). Its
 * window before the step is the half it kept in the step before (the
 * whole bucket before step 0); the lower real rank of the pair keeps the
 * left half, size/2 rounded down, the higher the right. The all-gather
 * step at the same distance sends the kept half and receives the given
 * one. */
static inline rs_rhd_halves_t rs__rhd_halving(int workers, int rank,
                                              size_t elems, int k) {
  const int v = rs__rhd_vrank(workers, rank);
  rs_rhd_halves_t h = {0, 0, 0, 0};
  size_t start = 0, size = elems;
  for (int j = 0; j <= k; j++) {
    const int peer = rs__rhd_rank(workers, v ^ (1 << j));
    const size_t half = size / 2;
    h.keep_off = rank < peer ? start : start + half;
    h.keep_len = rank < peer ? half : size - half;
    h.give_off = rank < peer ? start + half : start;
    h.give_len = size - h.keep_len;
    start = h.keep_off;
    size = h.keep_len;
  }
  return h;
}

#endif /* RINGSIM_ALGO_RHD_H */
