/* algo/ring_way.h - one ring, two ways: the code ringsim's ring (ring.c)
 * and gloo's (gloo_ring.c) share.
 *
 * A ring is a direction (whom a worker sends to, which chunk at which
 * step, whose contributions it holds: algo/ring.h, algo/gloo_ring.h) and a
 * cut (how a bucket is cut into W chunks of segments). ring.c runs,
 * simulates, narrates and lays out a ring from those alone; each of the
 * two files gives its own as an rs_ring_way_t, and its cost formula.
 */
#ifndef RINGSIM_ALGO_RING_WAY_H
#define RINGSIM_ALGO_RING_WAY_H

#include <stddef.h>

#include "algo/algo.h"
#include "algo/narrate.h"
#include "base/schedule.h"

/* A bucket of elems elements cut into W chunks of per_chunk segments. */
typedef struct rs_ring_cut {
  size_t elems;
  int workers;
  size_t per_chunk; /* segments per chunk */
  size_t seg_elems; /* gloo's: elements per segment (the last fewer, or
                       none); the ring's near-equal segments: unused */
} rs_ring_cut_t;

typedef struct rs_ring_way {
  /* The direction: worker r sends to next(r) and receives from prev(r),
   * worker 0's neighbours plus r, mod W (the schedule simulation walks
   * them so). */
  int (*next)(int workers, int rank);
  int (*prev)(int workers, int rank);
  /* The chunk worker rank sends, and receives, in a step: worker 0's plus
   * rank, mod W (a chunk moves one worker on per step, either way round),
   * as the schedule simulation walks them. */
  int (*send_chunk)(int workers, int rank, rs_phase_t phase, int step);
  int (*recv_chunk)(int workers, int rank, rs_phase_t phase, int step);
  void (*contributors)(int workers, int sender, rs_phase_t phase, int step,
                       int *first, int *count);
  /* The cut of a bucket of elems elements (segs: the run's segments per
   * chunk; cap: the most elements one message carries), and segment seg
   * of chunk `chunk`: [*offset, *offset + *len) of the bucket. */
  rs_ring_cut_t (*cut)(size_t elems, int workers, size_t segs, size_t cap);
  void (*segment)(const rs_ring_cut_t *c, int chunk, size_t seg, size_t *offset,
                  size_t *len);
  int skip_empty; /* an empty segment moves no message (gloo's) */
  int slices;     /* runs NCCL's slice order when asked (w->slices) */
  /* The narration: "every worker <sends> and adds ... the chunk it
   * receives<from>". */
  const char *sends, *from;
} rs_ring_way_t;

/* rs_algo_t's run_bucket, sim_bucket, narrate (its two phases: the
 * closing words are each way's own) and layout, for the ring way. */
int rs__ring_run(const rs_ring_way_t *way, rs_worker_t *w);
void rs__ring_sim(const rs_ring_way_t *way, rs_simrun_t *s, size_t elems,
                  size_t segs);
void rs__ring_narrate(const rs_ring_way_t *way, rs_narrator_t *n, int mean);
int rs__ring_layout(const rs_ring_way_t *way, int workers, size_t elems,
                    size_t cap, size_t *offsets, const char **word,
                    const char **words);
/* And the ones every ring has alike: its steps, its depth (a chunk's sum
 * starts at one worker and gains one addition per hop), and one message
 * per segment of every step. */
int rs__ring_steps(rs_shape_t shape, rs_collective_t collective);
/* A ring of `steps` steps on the uniform network m, the first `reduced`
 * of them reducing, its segments streamed (netmodel.h's pipelined
 * links): k segments a step, the first `big` of hi bytes and the rest of
 * lo, each sent once its data is in, the link free and a slot free. Its
 * time (the cost formulas'); UINT64_MAX when out of memory. On C
 * channels (NCCL's: algo/channels.h), each with its own segments
 * (sizes[c]) and slots, side by side on the one link, segment j of
 * every channel in turn. */
typedef struct rs_stream_sizes {
  size_t big, hi, lo;
} rs_stream_sizes_t;
uint64_t rs__ring_stream_ns(const rs_netmodel_t *m, int steps, int reduced,
                            size_t k, const rs_stream_sizes_t *sizes,
                            int channels);
int rs__ring_depth(rs_shape_t shape);
size_t rs__ring_messages(const rs_ring_way_t *way, int workers, size_t elems,
                         size_t segs, size_t cap, rs_collective_t collective);

#endif /* RINGSIM_ALGO_RING_WAY_H */
