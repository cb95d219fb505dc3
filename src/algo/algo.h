/* algo.h - what an all-reduce algorithm provides, one file each in
 * src/algo/ (as gloo keeps one algorithm per file).
 *
 * An algorithm is three things, all in its own file:
 * - its schedule, as pure functions of (W, rank, step): which peer, which
 *   region, whose contributions each message holds. The algorithm's own
 *   header (algo/ring.h) has them; the algorithm, `ringsim model` and the
 *   tests use those, so none re-derives them.
 * - its loop: what one worker does to all-reduce one bucket, written with
 *   the transfer primitive (xfer.h) and nothing else, and the same
 *   schedule on simulated clocks alone (sim_bucket).
 * - its narration (narrate, through algo/narrate.h's narrator) and the
 *   regions it cuts a bucket into (layout): --explain, diff's orders and
 *   regions, the pictures.
 * - what it needs and offers (caps, segment_bytes): the rest of ringsim
 *   asks its row (rs_algo_info, ringsim.h), never which algorithm it is.
 * The run (run.c) asks it which directed edges to create and how large
 * their messages get, then calls its loop once per bucket on every worker.
 *
 * To add an algorithm: write src/algo/NAME.h (its schedule) and
 * src/algo/NAME.c (its loop, its narration and its rs_algo_t), give it a
 * value in ringsim.h's rs_algorithm_t and a row in list.h's table, and
 * test its schedule and its result (tests/test_schedule.c,
 * tests/test_ring.c's matrix).
 */
#ifndef RINGSIM_ALGO_H
#define RINGSIM_ALGO_H

#include <stddef.h>

#include "algo/narrate.h"
#include "algo/simrun.h"
#include "net/xfer.h"

/* Every entry that answers for the workers takes their shape first
 * (rs_shape_t, net/topo.h): W, and under a topology of several nodes the
 * GPUs of each; the flat shape (gpus = W) otherwise. */
/* What an algorithm needs and offers: rs_algo_t's caps, one bit each, as
 * rs_algo_info_t's flags (ringsim.h) say them in full. */
#define RS__CAP_TOPOLOGY 0x01u       /* needs_topology: runs only on nodes */
#define RS__CAP_SLICES 0x02u         /* slices: NCCL's loop order too */
#define RS__CAP_REDUCE_SCATTER 0x04u /* reduce_scatter: stops after it */
#define RS__CAP_AUTO 0x08u           /* auto_eligible */
#define RS__CAP_NCCL 0x10u           /* in_nccl */
#define RS__CAP_FORMULA 0x20u        /* closed_formula: predict is one */
#define RS__CAP_TEXTBOOK_RING 0x40u  /* textbook_ring: DESIGN.md's ring */
/* A step sends only what earlier steps received: its segments stream
 * (netmodel.h's rs__sim_stream; docs/algorithms.md, "Pipelined links"). */
#define RS__CAP_STREAM 0x80u
/* needs_nvls_switch: runs only on one node whose NVLink switch reduces */
#define RS__CAP_NVLS 0x100u
/* Runs on NCCL's channels (rs_shape_t's channels; algo/channels.h): its
 * send_peers and recv_peers name one peer per channel, channel i's at i
 * (or, with peer_channels, the channel of each peer), and each channel
 * has its own queue on an edge. */
#define RS__CAP_CHANNELS 0x200u
/* The most peers an algorithm on channels names (send_peers, recv_peers):
 * the tree's parent and three children on each channel. */
#define RS__MAX_CHANNEL_PEERS (RS_MAX_CHANNELS * 4)

typedef struct rs_algo {
  const char *name;
  /* Another name --algo takes for it ("hier:ring": hier), or NULL. */
  const char *alias;
  /* What it needs and offers (RS__CAP_* above), and the segment size it
   * runs with unless told (0: the run's, RS_DEFAULT_SEGMENT_BYTES). */
  unsigned caps;
  size_t segment_bytes;
  /* The peers worker rank sends to, and receives from, written to peers
   * (room for W, and for RS__MAX_CHANNEL_PEERS); returns how many. Every
   * worker's send peers and receive peers agree: r sends to p iff p
   * receives from r. */
  int (*send_peers)(rs_shape_t shape, int rank, int *peers);
  int (*recv_peers)(rs_shape_t shape, int rank, int *peers);
  /* On channels (RS__CAP_CHANNELS), the channel of each peer send_peers
   * (sending 1) or recv_peers (0) names, in its order, into channels
   * (room for RS__MAX_CHANNEL_PEERS); NULL: peer i's is channel i. */
  void (*peer_channels)(rs_shape_t shape, int rank, int sending,
                        int *channels);
  /* The most elements one message from `from` to `to` carries, for a
   * bucket of elems elements (the ring cuts its chunks into segs segments;
   * no message carries more than cap): the edge's slots are sized for it. */
  size_t (*message_elems)(rs_shape_t shape, int from, int to, size_t elems,
                          size_t segs, size_t cap);
  /* Segments per chunk as the algorithm cuts a bucket of elems elements,
   * for the report (gloo-ring: gloo's layout); NULL: the ring's segs. */
  size_t (*chunk_segs)(rs_shape_t shape, size_t elems, size_t segs, size_t cap);
  /* With the direct transport a sender must not write a region it has
   * sent until its receiver has released it: the most slots per edge that
   * guarantee it (min_segs: the fewest segments per chunk of any bucket;
   * slices: NCCL's loop order); 0 if no slot count does (the algorithm
   * reduces into regions its peers may still be reading). */
  size_t (*direct_slots)(rs_shape_t shape, size_t min_segs, int slices);
  /* At most how many messages worker rank receives in one bucket of
   * elems elements (segs and cap as for message_elems): the trace's
   * records are sized by it. */
  size_t (*messages)(rs_shape_t shape, int rank, size_t elems, size_t segs,
                     size_t cap, rs_collective_t collective);
  /* Steps of the collective, as --inject counts them. */
  int (*steps)(rs_shape_t shape, rs_collective_t collective);
  /* The workers rank sends to in global step `step` (0 .. steps - 1, as
   * rs__xfer_step numbers them) of an all-reduce over W workers, written
   * to dst (room for max, at least RS_TOPO_MAX_SENDS); returns how many.
   * As the schedule has it, whatever the sizes: a worker that sends an
   * empty region (or skips it, as gloo's ring does) is still named. A
   * topology's contention is counted from it (net/topo.h). */
  int (*sends)(rs_shape_t shape, int step, int rank, int *dst, int max);
  /* The most roundings any one contribution goes through on its way to
   * the result (the ring: W-1; recursive doubling: about log2 W): the
   * check's error bound (check/check_prepare.c) grows with it. */
  int (*depth)(rs_shape_t shape);
  /* Does worker rank keep its own bucket aside (rs__xfer_stash)? NULL:
   * nobody does. */
  int (*stashes)(rs_shape_t shape, int rank);
  /* The network model's cost formula for one bucket of elems elements in
   * segs segments per chunk (netmodel.h; for `ringsim model` and --algo
   * auto). */
  uint64_t (*predict)(const rs_netmodel_t *m, rs_shape_t shape, size_t elems,
                      size_t segs, size_t cap, size_t elem_size);
  /* The schedule of one bucket of elems elements (segs segments per chunk,
   * as the run cuts it) played on simulated clocks alone, through the
   * shared runner below (rs__algo_simulate calls it bucket by bucket). */
  void (*sim_bucket)(rs_simrun_t *s, size_t elems, size_t segs);
  /* About how many clock calls sim_bucket makes for a bucket (segs as
   * for sim_bucket), before any steady repeat: --algo auto's argmin
   * simulates the cheapest first, so that it bounds the others. NULL: the
   * steps x W (one message a worker a step). */
  double (*sim_work)(rs_shape_t shape, size_t elems, size_t segs);
  /* A lower bound on how long its schedule takes, for a bounded
   * simulation to skip an algorithm that cannot win (rs__algo_least).
   * step_least, for a schedule played in rounds (each round every worker
   * the step's sends name sends one segment, then every receiver takes
   * it, before anyone sends the next): the fewest rounds any message of
   * global step `step` is cut into (*rounds), and the fewest elements of
   * any segment of those rounds (returned; an empty segment still pays its
   * latency). A chain of segments, each round's sent on by the worker that
   * received it, takes no less (NULL: no such chain). segs and cap as for
   * sim_bucket. Or least, a bound of its own (linear: its root's port). */
  size_t (*step_least)(rs_shape_t shape, int step, size_t elems, size_t segs,
                       size_t cap, size_t *rounds);
  uint64_t (*least)(const rs_netmodel_t *m, rs_shape_t shape, size_t elems,
                    size_t elem_size);
  /* Bytes of scratch the runner hands sim_bucket (s->algo_mem, zeroed
   * once), for W workers; NULL or 0: none. */
  size_t (*sim_scratch)(rs_shape_t shape);
  /* --explain's name for it: "ring all-reduce". */
  const char *title;
  /* The regions a bucket of elems elements is cut into (the narration's
   * columns, diff's per-region counts, the pictures): their offsets from
   * the bucket's start, offsets[0..count] (room for W + 1), and their
   * name and its plural ("chunk", "chunks"; NULL: the whole bucket moves
   * at once); cap as for message_elems. Returns count. */
  int (*layout)(rs_shape_t shape, size_t elems, size_t cap, size_t *offsets,
                const char **word, const char **words);
  /* The schedule of one bucket told to n (algo/narrate.h): each step's
   * messages, and in words what the steps do. mean: each sum's last fold
   * divides by W (op avg, not averaged before the sum). */
  void (*narrate)(rs_narrator_t *n, int mean);
  /* One worker's part of the collective over its current bucket (w->base,
   * w->elems, w->segs_per_chunk). Returns RS_OK or the first error of the
   * transfer primitive. */
  int (*run_bucket)(rs_worker_t *w);
  /* The part of a node's NVLink switch, a participant of its own (xfer.h's
   * rs__switch_of: worker numbers W + node), in the same bucket; NULL:
   * the algorithm has no switch. */
  int (*run_switch)(rs_worker_t *sw);
} rs_algo_t;

/* The segments per chunk a cuts a bucket of elems elements into (its
 * chunk_segs: gloo-ring's layout; else the run's segs). */
static inline size_t rs__algo_chunk_segs(const rs_algo_t *a, rs_shape_t shape,
                                         size_t elems, size_t segs,
                                         size_t cap) {
  return a->chunk_segs ? a->chunk_segs(shape, elems, segs, cap) : segs;
}

/* Shared pieces: message_elems for an algorithm that moves whole regions
 * cut into segments of at most cap (schedule.h's rs__segs); direct_slots
 * for one that reduces into regions its peers may still be reading. */
size_t rs__algo_capped_elems(rs_shape_t shape, int from, int to, size_t elems,
                             size_t segs, size_t cap);
size_t rs__algo_never_direct(rs_shape_t shape, size_t min_segs, int slices);

/* The simulated time of an exchange of an elems-element region cut into
 * segments of at most cap (each segment a latency and its transfer, and,
 * if reduced, its reduction, one after the other as a sendrecv runs them)
 * on the uniform network m. */
uint64_t rs__algo_region_ns(const rs_netmodel_t *m, size_t elems, size_t cap,
                            size_t elem_size, int reduced);

/* A schedule to simulate, the simulation family's one argument: algorithm
 * algo's over buckets (in order, each cut into segments of at most
 * segment_bytes of elem_size-byte elements) on W workers of network net. */
typedef struct rs_sim_job {
  const rs_algo_t *algo;
  const rs_netmodel_t *net;
  int workers;
  const rs_bucket_t *buckets;
  size_t bucket_count;
  size_t segment_bytes;
  size_t elem_size;
} rs_sim_job_t;

/* The job's schedule on simulated clocks alone: the one runner every
 * algorithm's simulation goes through (rs_netmodel_simulate_algo). 0 when
 * the model is off or W < 2; UINT64_MAX when out of memory. */
uint64_t rs__algo_simulate(const rs_sim_job_t *job);

/* The channels algorithm runs on under m for W workers: m's
 * (--channels) where it gives them, else the algorithm's own: NCCL's
 * count on a topology NCCL's model knows for one that runs on channels
 * (RS__CAP_CHANNELS; algo/channels.h, rs__rings_count), 1 for any
 * other; for auto, those its buckets of such an algorithm run on. rs_netmodel_predict_algo and rs_netmodel_simulate_algo run it
 * so; a run resolves its own (run/run.c). */
int rs__algo_channels(const rs_netmodel_t *m, rs_algorithm_t algo,
                      int workers);

/* The predict of an algorithm with no closed formula (hier, nvls,
 * nvlstree): one bucket of elems elements alone, segments of at most cap
 * elements, on simulated clocks (0 when m is off or W < 2). */
uint64_t rs__algo_predict_alone(const rs_algo_t *a, const rs_netmodel_t *m,
                                rs_shape_t shape, size_t elems, size_t cap,
                                size_t elem_size);

/* The same, stopping once a worker's clock passes bound: its time if that
 * is at most bound, else some time above bound (a lower bound of its
 * own). */
uint64_t rs__algo_simulate_bounded(const rs_sim_job_t *job, uint64_t bound);

/* No schedule of a's for one bucket of elems elements (segs segments per
 * chunk, of at most segment_bytes) ends sooner than this after it starts
 * (rs_algo_t's step_least or least; 0 if a has neither): --algo auto's
 * argmin skips an algorithm whose bound another's time already beats. */
uint64_t rs__algo_least(const rs_algo_t *a, const rs_netmodel_t *m, int workers,
                        size_t elems, size_t segs, size_t segment_bytes,
                        size_t elem_size);

/* rs__algo_simulate with every part of the schedule played, none
 * repeated at once (the steady repeats below): what the tests hold the
 * repeats to. */
uint64_t rs__algo_simulate_plain(const rs_sim_job_t *job);

/* When the buckets' all-reduces start and end (rs__algo_simulate_ready):
 * worker_start[b W + r] and worker_end[b W + r], worker r's clock when it
 * starts and ends bucket b (NULL: not wanted); end_ns, the last bucket's
 * end on the last worker (saturated below UINT64_MAX: netmodel.h). */
typedef struct rs_sim_spans {
  uint64_t *worker_start, *worker_end;
  uint64_t end_ns;
  /* Channels played alone, and channels taken as one played's image
   * (simrun.h), over the buckets played: what the tests see of them. */
  unsigned played, images;
} rs_sim_spans_t;

/* The same, each bucket b starting on worker r no earlier than
 * ready[b W + r] on its clock (NULL: at once), as a training step's
 * gradients become ready (step.h), the buckets' spans into spans. RS_OK,
 * or RS_ENOMEM. */
int rs__algo_simulate_ready(const rs_sim_job_t *job, const uint64_t *ready,
                            rs_sim_spans_t *spans);
/* The same played plainly (rs__algo_simulate_plain): what the tests hold
 * every worker's spans to. */
int rs__algo_simulate_ready_plain(const rs_sim_job_t *job,
                                  const uint64_t *ready,
                                  rs_sim_spans_t *spans);

/* The algorithm table, one row per algorithm: X(VALUE, id) pairs
 * RS_ALGO_<VALUE> (ringsim.h's rs_algorithm_t) with its rs_algo_t,
 * rs__algo_<id>, which its own file defines. list.c makes of it the table
 * indexed by rs_algorithm_t (rs__algos); nothing else names an algorithm. */
#define RS__ALGO_TABLE(X)                                                      \
  X(RING, ring)                                                                \
  X(RD, rd)                                                                    \
  X(RHD, rhd)                                                                  \
  X(LINEAR, linear)                                                            \
  X(TREE, tree)                                                                \
  X(GLOO_RING, gloo_ring)                                                      \
  X(HIER, hier)                                                                \
  X(HIER_RD, hier_rd)                                                          \
  X(HIER_RHD, hier_rhd)                                                        \
  X(NVLS, nvls)                                                                \
  X(NVLSTREE, nvlstree)

#define RS__ALGO_DECLARE(VALUE, id) extern const rs_algo_t rs__algo_##id;
RS__ALGO_TABLE(RS__ALGO_DECLARE)
#undef RS__ALGO_DECLARE

#endif /* RINGSIM_ALGO_H */
