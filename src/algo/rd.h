/* algo/rd.h - recursive doubling's schedule, as Open MPI runs it
 * (coll_base_allreduce.c, ompi_coll_base_allreduce_intra_recursivedoubling).
 *
 * With W a power of two, in exchange k (distance d = 2^k) worker r swaps
 * its whole buffer with r xor d and both add: log2 W steps, after which
 * everyone holds the sum. Otherwise let P be the largest power of two
 * below W and E = W - P the extra workers. First (the fold-in, phase
 * reduce) each even worker r < 2E sends its buffer to r+1, which adds it
 * and takes its place; then the P remaining workers, renumbered 0..P-1
 * (odd r < 2E is r/2, every r >= 2E is r - E), exchange as above; last (the
 * fold-out, phase broadcast) each odd r < 2E sends the result back to r-1.
 */
#ifndef RINGSIM_ALGO_RD_H
#define RINGSIM_ALGO_RD_H

/* The largest power of two <= workers (>= 1). (The schedule simulation
 * asks it per message: its top bit, not a loop.) */
static inline int rs__pof2(int workers) {
  return workers < 2 ? 1 : 1 << (31 - __builtin_clz((unsigned)workers));
}

/* log2 of a power of two (of any n >= 1, rounded up). */
static inline int rs__log2(int pof2) {
  return pof2 < 2 ? 0 : 32 - __builtin_clz((unsigned)pof2 - 1u);
}

/* The renumbered rank of worker r in the exchanges, or -1 if it sits them
 * out (an even r < 2E, folded into r+1). */
static inline int rs__rd_newrank(int workers, int rank) {
  const int extra = workers - rs__pof2(workers);
  if (rank < 2 * extra)
    return rank % 2 ? rank / 2 : -1;
  return rank - extra;
}

/* The worker with renumbered rank v. */
static inline int rs__rd_rank(int workers, int v) {
  const int extra = workers - rs__pof2(workers);
  return v < extra ? 2 * v + 1 : v + extra;
}

/* Whose contributions renumbered rank v holds before the exchange at
 * distance d (d = P: after the last): the aligned block of d renumbered
 * ranks that holds v, which is a range of workers (renumbered rank u < E
 * holds workers 2u and 2u+1, u >= E holds u+E). */
static inline void rs__rd_contributors(int workers, int v, int d, int *first,
                                       int *count) {
  const int extra = workers - rs__pof2(workers);
  const int lo = v & ~(d - 1), hi = lo + d - 1;
  *first = lo < extra ? 2 * lo : lo + extra;
  const int last = hi < extra ? 2 * hi + 1 : hi + extra;
  *count = last - *first + 1;
}

/* The most additions one contribution goes through: the fold-in's, then
 * one per exchange (Rabenseifner's halvings the same). */
static inline int rs__rd_depth(int workers) {
  const int P = rs__pof2(workers);
  return rs__log2(P) + (workers > P);
}

/* Worker rank's partner in the fold-in and fold-out when W is not a power
 * of two (the workers r < 2E pair up, even r with r+1), or -1 if it has
 * none. The same pairs in recursive doubling and Rabenseifner's. */
static inline int rs__pof2_fold_peer(int workers, int rank) {
  const int extra = workers - rs__pof2(workers);
  if (rank >= 2 * extra)
    return -1;
  return rank % 2 ? rank - 1 : rank + 1;
}

/* The peers of worker rank in an algorithm over the largest power of two
 * P <= W: its fold partner (rank < 2E pair up: even with odd), and, if it
 * takes part as virtual rank v >= 0, the worker rank_of(W, v ^ d) at every
 * distance d. Send and receive peers alike. */
static inline int rs__pof2_peers(int workers, int rank, int v,
                                 int (*rank_of)(int workers, int v), int *out) {
  int n = 0;
  if (rs__pof2_fold_peer(workers, rank) >= 0)
    out[n++] = rs__pof2_fold_peer(workers, rank);
  for (int d = 1; v >= 0 && d < rs__pof2(workers); d *= 2)
    out[n++] = rank_of(workers, v ^ d);
  return n;
}

#endif /* RINGSIM_ALGO_RD_H */
