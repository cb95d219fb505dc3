/* algo/gloo_ring.h - the schedule of gloo's ring all-reduce (gloo's
 * allreduce.cc, ring(), as PyTorch's gloo backend runs it for CPU
 * tensors), as pure functions (algo.h).
 *
 * Three things tell it from ringsim's ring (algo/ring.h), and each one
 * changes the bits of a float sum:
 * - direction: worker r sends to r-1 and receives from r+1;
 * - layout: the bucket is cut into N equal segments (the last ones short
 *   or empty), not into W near-equal chunks. N is the number of segments
 *   of at most max_seg elements the bucket needs, at least 2W, rounded up
 *   to a multiple of W; a segment has ceil(n/N) elements; chunk c is
 *   segments cP..cP+P-1 (P = N/W), so the last chunks may be short or
 *   empty when W does not divide n;
 * - order: in reduce-scatter step s worker r sends chunk (r+1+s) and
 *   receives chunk (r+2+s), adding it to its own (mod W). Chunk c starts at
 *   worker c-1 and travels down the ring to c, which ends with it:
 *       x[c] + (x[c+1] + (... + (x[c-2] + x[c-1])))
 * All-gather step s: send chunk (r+s), receive chunk (r+1+s), copy it.
 * Empty segments are not sent (gloo skips them too).
 */
#ifndef RINGSIM_ALGO_GLOO_RING_H
#define RINGSIM_ALGO_GLOO_RING_H

#include "base/schedule.h"

typedef struct rs_gloo_layout {
  size_t segs;      /* N: segments in the bucket, a multiple of W, >= 2W */
  size_t per_chunk; /* P = N / W: segments per chunk */
  size_t seg_elems; /* elements per segment (the last ones fewer or none) */
} rs_gloo_layout_t;

/* gloo's layout of an elems-element bucket over W workers, segments of at
 * most max_seg elements (gloo's maxSegmentSize over the element size). */
static inline rs_gloo_layout_t rs__gloo_layout(size_t elems, int workers,
                                               size_t max_seg) {
  const size_t W = (size_t)workers, cap = max_seg ? max_seg : 1;
  size_t segs = (elems + cap - 1) / cap;
  if (segs < 2 * W)
    segs = 2 * W;
  segs = (segs + W - 1) / W * W;
  rs_gloo_layout_t l = {segs, segs / W, (elems + segs - 1) / segs};
  return l;
}

/* Segment seg (0..P-1) of chunk `chunk`: [*offset, *offset + *seg_elems)
 * of the bucket; *seg_elems is 0 past the bucket's end. */
static inline void rs__gloo_segment(const rs_gloo_layout_t *l, size_t elems,
                                    int chunk, size_t seg, size_t *offset,
                                    size_t *seg_elems) {
  size_t start = ((size_t)chunk * l->per_chunk + seg) * l->seg_elems;
  size_t end = start + l->seg_elems;
  start = start < elems ? start : elems;
  end = end < elems ? end : elems;
  *offset = start;
  *seg_elems = end - start;
}

/* Chunk c's elements: [*offset, *offset + *chunk_elems). */
static inline void rs__gloo_chunk(const rs_gloo_layout_t *l, size_t elems,
                                  int chunk, size_t *offset,
                                  size_t *chunk_elems) {
  size_t end_off, last;
  rs__gloo_segment(l, elems, chunk, 0, offset, &last);
  rs__gloo_segment(l, elems, chunk, l->per_chunk - 1, &end_off, &last);
  *chunk_elems = end_off + last - *offset;
}

/* Worker r sends to r-1 and receives from r+1. */
static inline int rs__gloo_next(int workers, int rank) {
  return rs__mod(rank - 1, workers);
}

static inline int rs__gloo_prev(int workers, int rank) {
  return rs__mod(rank + 1, workers);
}

static inline int rs__gloo_send_chunk(int workers, int rank, rs_phase_t phase,
                                      int step) {
  return phase == RS_PHASE_REDUCE_SCATTER ? rs__mod(rank + 1 + step, workers)
                                          : rs__mod(rank + step, workers);
}

static inline int rs__gloo_recv_chunk(int workers, int rank, rs_phase_t phase,
                                      int step) {
  return phase == RS_PHASE_REDUCE_SCATTER ? rs__mod(rank + 2 + step, workers)
                                          : rs__mod(rank + 1 + step, workers);
}

/* Whose contributions the message `sender` sends in this step holds, as a
 * range round the ring (*first, *first+1, ... mod W): in reduce-scatter
 * step s, sender..sender+s (the chunk came down from sender+s); in
 * all-gather all W. */
static inline void rs__gloo_contributors(int workers, int sender,
                                         rs_phase_t phase, int step, int *first,
                                         int *count) {
  if (phase == RS_PHASE_REDUCE_SCATTER) {
    *first = rs__mod(sender, workers);
    *count = step + 1;
  } else {
    *first = 0;
    *count = workers;
  }
}

#endif /* RINGSIM_ALGO_GLOO_RING_H */
