/* schedule.h - the ring's schedule: which chunk each worker sends and
 * receives at each step, and how chunks split into segments.
 *
 * One source of truth, used by the ring itself (ring.c), by the explain
 * mode (explain.c) and by the schedule-only simulation (netmodel.c), so the
 * narration and the model cannot drift from what runs.
 */
#ifndef RINGSIM_SCHEDULE_H
#define RINGSIM_SCHEDULE_H

#include <stddef.h>

#include "ringsim/ringsim.h"

typedef enum rs_phase {
  RS_PHASE_REDUCE_SCATTER = 0,
  RS_PHASE_ALL_GATHER = 1
} rs_phase_t;

static inline int rs_sched_mod(int a, int w) { return ((a % w) + w) % w; }

/* Reduce-scatter step s: worker r sends chunk (r-s) and receives chunk
 * (r-s-1), which it adds to its own. All-gather step s: it sends chunk
 * (r+1-s) and receives chunk (r-s), which it copies over its own. */
static inline int rs_sched_send_chunk(int workers, int rank, rs_phase_t phase,
                                      int step) {
  return phase == RS_PHASE_REDUCE_SCATTER
             ? rs_sched_mod(rank - step, workers)
             : rs_sched_mod(rank + 1 - step, workers);
}

static inline int rs_sched_recv_chunk(int workers, int rank, rs_phase_t phase,
                                      int step) {
  return phase == RS_PHASE_REDUCE_SCATTER
             ? rs_sched_mod(rank - step - 1, workers)
             : rs_sched_mod(rank - step, workers);
}

/* Segment seg of the segs near-equal segments of chunk `chunk` of an
 * elems-element buffer cut into `workers` chunks. */
static inline void rs_sched_segment(size_t elems, int workers, size_t segs,
                                    int chunk, size_t seg, size_t *elem_offset,
                                    size_t *seg_elems) {
  size_t chunk_off = rs_chunk_offset(elems, workers, chunk);
  size_t chunk_len = rs_chunk_elems(elems, workers, chunk);
  *elem_offset = chunk_off + rs_chunk_offset(chunk_len, (int)segs, (int)seg);
  *seg_elems = rs_chunk_elems(chunk_len, (int)segs, (int)seg);
}

#endif /* RINGSIM_SCHEDULE_H */
