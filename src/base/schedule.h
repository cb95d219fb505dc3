/* schedule.h - the arithmetic every algorithm's schedule is made of: how a
 * bucket splits into W chunks and a chunk into segments, and the names of
 * the phases. Pure functions of their arguments; no state.
 *
 * Which chunk moves when is the algorithm's own (src/algo/): the ring's is
 * in algo/ring.h.
 */
#ifndef RINGSIM_SCHEDULE_H
#define RINGSIM_SCHEDULE_H

#include <stddef.h>

/* The phases of the algorithms, as the trace names them. */
typedef enum rs_phase {
  RS_PHASE_REDUCE_SCATTER = 0, /* ring, rhd: each worker ends with a part */
  RS_PHASE_ALL_GATHER = 1,     /* ring, rhd: the parts go to everyone */
  RS_PHASE_EXCHANGE = 2,       /* rd: partners swap and both reduce */
  RS_PHASE_REDUCE = 3,         /* linear, tree, and the fold-in of the
                                  workers beyond a power of two: data
                                  flows to where it is reduced */
  RS_PHASE_BROADCAST = 4       /* linear, tree, and the fold-out: the
                                  result flows back */
} rs_phase_t;
#define RS_PHASE_COUNT 5

/* "reduce_scatter", "all_gather", "exchange", "reduce" or "broadcast", as
 * the trace and reports write it. */
const char *rs__phase_name(rs_phase_t phase);

/* a mod w, in 0..w-1 for any sign of a. */
static inline int rs__mod(int a, int w) { return ((a % w) + w) % w; }

/* The chunk layout: chunk c of W covers [rs__chunk_offset, +
 * rs__chunk_elems) of an n-element buffer; the first n mod W chunks have
 * one element more than the others. (Inline: the schedule simulation
 * asks them per message.) */
static inline size_t rs__chunk_offset(size_t elem_count, int workers,
                                      int chunk) {
  const size_t base = elem_count / (size_t)workers;
  const size_t extra = elem_count % (size_t)workers;
  const size_t c = (size_t)chunk;
  return c * base + (c < extra ? c : extra);
}

static inline size_t rs__chunk_elems(size_t elem_count, int workers,
                                     int chunk) {
  return elem_count / (size_t)workers +
         ((size_t)chunk < elem_count % (size_t)workers);
}

/* elem_count elements cut into `parts` near-equal parts, as
 * rs__chunk_elems cuts them, worked out once (one division) for a loop
 * that asks part after part: part k has len + (k < longer) elements. */
typedef struct rs_cut {
  size_t len, longer;
} rs_cut_t;

static inline rs_cut_t rs__cut(size_t elem_count, size_t parts) {
  const rs_cut_t c = {elem_count / parts, elem_count % parts};
  return c;
}

static inline size_t rs__cut_len(rs_cut_t c, size_t k) {
  return c.len + (k < c.longer);
}

/* The last of the parts of one length around part k (of parts). */
static inline size_t rs__cut_same_last(rs_cut_t c, size_t parts, size_t k) {
  return k < c.longer ? c.longer - 1 : parts - 1;
}

/* The same, of elem_count elements cut into `parts` near-equal parts. */
static inline size_t rs__same_len_last(size_t elem_count, size_t parts,
                                       size_t k) {
  return rs__cut_same_last(rs__cut(elem_count, parts), parts, k);
}

/* How many segments of at most cap elements a region of elems elements
 * moves as (one, empty, for none: it still sends a message). */
static inline size_t rs__segs(size_t elems, size_t cap) {
  return elems ? (elems + cap - 1) / cap : 1;
}

/* Segment seg of the segs near-equal segments of chunk `chunk` of an
 * elems-element buffer cut into `workers` chunks. */
static inline void rs__segment(size_t elems, int workers, size_t segs,
                               int chunk, size_t seg, size_t *elem_offset,
                               size_t *seg_elems) {
  size_t chunk_off = rs__chunk_offset(elems, workers, chunk);
  size_t chunk_len = rs__chunk_elems(elems, workers, chunk);
  *elem_offset = chunk_off + rs__chunk_offset(chunk_len, (int)segs, (int)seg);
  *seg_elems = rs__chunk_elems(chunk_len, (int)segs, (int)seg);
}

#endif /* RINGSIM_SCHEDULE_H */
