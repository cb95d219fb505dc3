/* algo/ring.h - the ring's schedule, as pure functions (algo.h).
 *
 * Worker r sends only to r+1 and receives only from r-1 (mod W). A bucket
 * is cut into W chunks (schedule.h). In reduce-scatter step s (0..W-2)
 * worker r sends chunk (r-s) and receives chunk (r-s-1), which it adds to
 * its own; in all-gather step s it sends chunk (r+1-s) and receives chunk
 * (r-s), which it copies over its own.
 */
#ifndef RINGSIM_ALGO_RING_H
#define RINGSIM_ALGO_RING_H

#include "base/schedule.h"

static inline int rs__ring_next(int workers, int rank) {
  return (rank + 1) % workers;
}

static inline int rs__ring_prev(int workers, int rank) {
  return (rank + workers - 1) % workers;
}

static inline int rs__ring_send_chunk(int workers, int rank, rs_phase_t phase,
                                      int step) {
  return phase == RS_PHASE_REDUCE_SCATTER ? rs__mod(rank - step, workers)
                                          : rs__mod(rank + 1 - step, workers);
}

static inline int rs__ring_recv_chunk(int workers, int rank, rs_phase_t phase,
                                      int step) {
  return phase == RS_PHASE_REDUCE_SCATTER ? rs__mod(rank - step - 1, workers)
                                          : rs__mod(rank - step, workers);
}

/* Whose contributions the message worker `sender` sends in this step
 * holds, as a range round the ring: workers *first, *first+1, ...,
 * *first+*count-1 (mod W). In reduce-scatter step s it has summed
 * r-s..r; in all-gather every message holds all W. */
static inline void rs__ring_contributors(int workers, int sender,
                                         rs_phase_t phase, int step, int *first,
                                         int *count) {
  if (phase == RS_PHASE_REDUCE_SCATTER) {
    *first = rs__mod(sender - step, workers);
    *count = step + 1;
  } else {
    *first = 0;
    *count = workers;
  }
}

/* The --inject step number of (phase, step): reduce-scatter 0..W-2, then
 * all-gather W-1..2W-3. */
static inline int rs__ring_global_step(int workers, rs_phase_t phase,
                                       int step) {
  return phase == RS_PHASE_REDUCE_SCATTER ? step : workers - 1 + step;
}

#endif /* RINGSIM_ALGO_RING_H */
