/* algo.h - what an all-reduce algorithm provides, one file each in
 * src/algo/ (as gloo keeps one algorithm per file).
 *
 * An algorithm is two things:
 * - its schedule, as pure functions of (W, rank, step): which peer, which
 *   region, whose contributions each message holds. The algorithm's own
 *   header (algo/ring.h) has them; the algorithm, --explain, `ringsim
 *   model` and the tests use those, so none re-derives them.
 * - its loop: what one worker does to all-reduce one bucket, written with
 *   the transfer primitive (xfer.h) and nothing else.
 * The run (run.c) asks it which directed edges to create and how large
 * their messages get, then calls its loop once per bucket on every worker.
 *
 * To add an algorithm: write src/algo/NAME.h (its schedule) and
 * src/algo/NAME.c (its loop and its rs_algo_t), list it in list.c, and
 * test its schedule and its result (tests/test_schedule.c,
 * tests/test_ring.c's matrix).
 */
#ifndef RINGSIM_ALGO_H
#define RINGSIM_ALGO_H

#include <stddef.h>

#include "net/xfer.h"

typedef struct rs_algo {
  const char *name;
  /* The peers worker rank sends to, and receives from, written to peers
   * (room for W); returns how many. Every worker's send peers and receive
   * peers agree: r sends to p iff p receives from r. */
  int (*send_peers)(int workers, int rank, int *peers);
  int (*recv_peers)(int workers, int rank, int *peers);
  /* The most elements one message from `from` to `to` carries, for a
   * bucket of elems elements (the ring cuts its chunks into segs segments;
   * no message carries more than cap): the edge's slots are sized for it. */
  size_t (*message_elems)(int workers, int from, int to, size_t elems,
                          size_t segs, size_t cap);
  /* Segments per chunk as the algorithm cuts a bucket of elems elements,
   * for the report (gloo-ring: gloo's layout); NULL: the ring's segs. */
  size_t (*chunk_segs)(int workers, size_t elems, size_t segs, size_t cap);
  /* With the direct transport a sender must not write a region it has
   * sent until its receiver has released it: the most slots per edge that
   * guarantee it (min_segs: the fewest segments per chunk of any bucket;
   * slices: NCCL's loop order); 0 if no slot count does (the algorithm
   * reduces into regions its peers may still be reading). */
  size_t (*direct_slots)(int workers, size_t min_segs, int slices);
  /* At most how many messages worker rank receives in one bucket of
   * elems elements (segs and cap as for message_elems): the trace's
   * records are sized by it. */
  size_t (*messages)(int workers, int rank, size_t elems, size_t segs,
                     size_t cap, rs_collective_t collective);
  /* Steps of the collective, as --inject counts them. */
  int (*steps)(int workers, rs_collective_t collective);
  /* The most roundings any one contribution goes through on its way to
   * the result (the ring: W-1; recursive doubling: about log2 W): the
   * check's error bound (check.c) grows with it. */
  int (*depth)(int workers);
  /* Does worker rank keep its own bucket aside (rs__xfer_stash)? NULL:
   * nobody does. */
  int (*stashes)(int workers, int rank);
  /* The network model's cost formula for one bucket of elems elements in
   * segs segments per chunk, and the schedule played on simulated clocks
   * alone (netmodel.h; for `ringsim model`). */
  uint64_t (*predict)(const rs_netmodel_t *m, int workers, size_t elems,
                      size_t segs, size_t cap, size_t elem_size);
  uint64_t (*simulate)(const rs_netmodel_t *m, int workers,
                       const rs_bucket_t *buckets, size_t bucket_count,
                       size_t segment_bytes, size_t elem_size);
  /* One worker's part of the collective over its current bucket (w->base,
   * w->elems, w->segs_per_chunk). Returns RS_OK or the first error of the
   * transfer primitive. */
  int (*run_bucket)(rs_worker_t *w);
} rs_algo_t;

/* Shared pieces: message_elems for an algorithm that moves whole regions
 * cut into segments of at most cap (schedule.h's rs__segs); direct_slots
 * for one that reduces into regions its peers may still be reading. */
size_t rs__algo_capped_elems(int workers, int from, int to, size_t elems,
                             size_t segs, size_t cap);
size_t rs__algo_never_direct(int workers, size_t min_segs, int slices);

/* The simulated time of an exchange of an elems-element region cut into
 * segments of at most cap (each segment a latency and its transfer, and,
 * if reduced, its reduction, one after the other as a sendrecv runs them)
 * on the uniform network m. */
uint64_t rs__algo_region_ns(const rs_netmodel_t *m, size_t elems, size_t cap,
                            size_t elem_size, int reduced);

/* A schedule played on simulated clocks alone (an algorithm's simulate):
 * the same clock calls a threaded run's transfer primitive makes, in lock
 * step. Within a round every sender sends (at most one message each) and
 * then every receiver receives, each worker's own program order. */
typedef struct rs_simrun {
  const rs_netmodel_t *net;
  int workers;
  size_t cap, elem_size; /* elements per message at most; bytes each */
  rs_simclock_t *clocks;
  uint64_t *arrive; /* when each worker's last message arrives */
  uint64_t *wire;   /* and how long it took on the wire */
} rs_simrun_t;
int rs__simrun_init(rs_simrun_t *s, const rs_netmodel_t *m, int workers,
                    size_t segment_bytes, size_t elem_size);
void rs__simrun_step(rs_simrun_t *s);
/* Has the simulation been asked to stop (rs_netmodel_t's stop)? Each
 * simulate asks it per segment, and then runs out its loops at once. */
static inline int rs__simrun_stopped(const rs_simrun_t *s) {
  return rs__sim_stopped(s->net);
}
void rs__simrun_send(rs_simrun_t *s, int from, size_t elems);
void rs__simrun_recv(rs_simrun_t *s, int to, int from, size_t reduced_elems);
/* The latest clock, and the clocks freed. */
uint64_t rs__simrun_end(rs_simrun_t *s);

/* The algorithms (algo/list.h has them by name). */
extern const rs_algo_t rs__algo_ring;
extern const rs_algo_t rs__algo_rd;
extern const rs_algo_t rs__algo_rhd;
extern const rs_algo_t rs__algo_linear;
extern const rs_algo_t rs__algo_tree;
extern const rs_algo_t rs__algo_gloo_ring;

#endif /* RINGSIM_ALGO_H */
