/* algo/linear.h - the linear all-reduce's schedule, as Open MPI's basic
 * linear algorithm runs it (coll_base_allreduce.c,
 * ompi_coll_base_allreduce_intra_basic_linear: a reduce to worker 0, then
 * a broadcast).
 *
 * Reduce, W-1 steps: in step j worker W-1-j sends its whole buffer to
 * worker 0, the root. The root starts from worker W-1's data, adds W-2's,
 * ..., 1's, and its own last (coll_base_reduce.c's basic linear reduce
 * loops i = W-2 down to 0, taking its own input when i is the root).
 * Broadcast, W-1 steps: in step j the root sends the result to j+1.
 */
#ifndef RINGSIM_ALGO_LINEAR_H
#define RINGSIM_ALGO_LINEAR_H

#define RS_LINEAR_ROOT 0

/* The worker that sends to the root in reduce step j. */
static inline int rs__linear_sender(int workers, int step) {
  return workers - 1 - step;
}

/* The worker the root sends to in broadcast step j. */
static inline int rs__linear_receiver(int step) { return step + 1; }

#endif /* RINGSIM_ALGO_LINEAR_H */
