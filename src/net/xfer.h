/* xfer.h - the transfer primitive: the only way an algorithm moves data.
 *
 * An algorithm (src/algo/) says what moves: "send this region of my bucket
 * to worker p", "receive that region from worker q and add it to mine (or
 * add and divide by W, or copy it over mine)", each message tagged with
 * where it is in the schedule and whose contributions it holds. Everything
 * around one message happens here, and nowhere in an algorithm:
 * - the transport (transport.h) that carries it, over the edge to the peer;
 * - packing of 2-byte dtypes, sequence numbers and checksums (the queue);
 * - the fold itself, in the run's dtype (reduce.h), unpacking f16/bf16;
 * - the simulated clock (netmodel.h);
 * - the trace record (rs_event_t, one per message received);
 * - statistics, and the watchdog's view of what the worker is doing;
 * - injected faults: a crash or stall at a step's start, a wire fault on
 *   the step's first message.
 *
 * Regions are in elements of the bucket being all-reduced (offset 0 is the
 * bucket's first element); the worker's buffer holds the whole model.
 */
#ifndef RINGSIM_XFER_H
#define RINGSIM_XFER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/schedule.h"
#include "net/netmodel.h"
#include "net/transport.h"
#include "ringsim/ringsim.h"

/* One transfer, as its receiver recorded it (for the trace). */
typedef struct rs_event {
  uint64_t seq;
  uint64_t checksum;
  uint64_t elem_offset;
  uint64_t send_begin_ns; /* absolute CLOCK_MONOTONIC */
  uint64_t send_end_ns;
  uint64_t recv_begin_ns;
  uint64_t recv_end_ns;
  uint64_t wait_ns;     /* how long the receiver waited for this message */
  uint64_t sim_send_ns; /* simulated departure and receipt (net model) */
  uint64_t sim_recv_ns;
  uint32_t elems;
  uint32_t iter;
  uint32_t bucket;
  uint16_t step; /* < 2 RS_MAX_WORKERS: any algorithm's phase step */
  uint16_t
      share; /* the message's sim_share (queue.h), at most a node's GPUs */
  uint32_t chunk;
  uint32_t segment;
  /* The sender (the receiver is whoever holds the record) and the
   * payload's provenance; 16 bits each keep a record at 112 bytes. */
  uint16_t src;
  uint16_t contrib_first, contrib_count;
  uint8_t phase;
  uint8_t channel; /* < RS_MAX_CHANNELS */
} rs_event_t;
_Static_assert(RS_MAX_CHANNELS <= UINT8_MAX,
               "rs_event_t holds a channel in 8 bits");
_Static_assert(RS_MAX_WORKERS <= UINT16_MAX,
               "rs_event_t holds ranks in 16 bits");
_Static_assert(2 * RS_MAX_WORKERS <= UINT16_MAX,
               "rs_event_t holds a phase's step in 16 bits");

typedef struct rs_event_buf {
  rs_event_t *events;
  size_t count;
  size_t capacity;
  /* Over MPI (mpi/stream.c's tracer) the buffer is a ring of capacity
   * records, one producer (the worker) and one consumer (the tracer
   * thread): the worker writes record count % capacity once count - taken <
   * capacity (else it waits for the tracer) and publishes count in `written`;
   * the tracer hands records on in order and publishes `taken`. held_max is the
   * most records the ring held at once, as the worker saw it. */
  int ring;
  atomic_size_t written, taken;
  size_t held_max;
} rs_event_buf_t;

/* What a message says of itself: a record without its receipt. */
rs_event_t rs__event_of(const rs_msg_t *msg, int iter);

/* What a worker is doing, for the watchdog: where it blocks, if it does. */
typedef enum rs_activity {
  RS_ACT_WORKING,   /* between messages (or not started) */
  RS_ACT_SENDING,   /* sending: waiting for a free slot */
  RS_ACT_RECEIVING, /* receiving: waiting for a message, or checking it */
  RS_ACT_STALLED,   /* sleeping in an injected stall */
  RS_ACT_FINISHING  /* its steps done: checking a sender's end of stream */
} rs_activity_t;

/* Where a worker is, for error reports: written by the worker, read by the
 * main thread only after the worker has been joined. */
typedef struct rs_progress {
  rs_phase_t phase;
  int step;
  int chunk;
  rs_activity_t activity;
  int peer;              /* whom it sends to or receives from, or -1 */
  int mismatch;          /* it received a message other than the one expected */
  const rs_edge_t *edge; /* and the edge it uses */
  /* Its injected stall, if it had one: length, where, and when it ended
   * (0 while it lasts). */
  int stall_ms;
  rs_phase_t stall_phase;
  int stall_step;
  uint64_t stall_end_ns;
} rs_progress_t;

/* An edge a worker sends or receives on, and the worker at its other end
 * (and the channel whose queue it is: each channel has its own). */
typedef struct rs_link {
  int peer;
  int channel;
  rs_edge_t *edge;
} rs_link_t;

/* What a receiver does with an incoming region. */
typedef enum rs_recv_action {
  RS_RECV_REDUCE,      /* fold it into its own with the op */
  RS_RECV_REDUCE_MEAN, /* add it, then divide by W: the last addition of
                          a post-divided average */
  RS_RECV_COPY         /* copy it over its own */
} rs_recv_action_t;

/* What a message is, in its algorithm's schedule. */
typedef struct rs_tag {
  rs_phase_t phase;
  int step;
  int chunk;
  int segment;
  int contrib_first, contrib_count; /* provenance (queue.h's rs_msg_t) */
} rs_tag_t;

/* The workers an algorithm runs among when it runs on some of them, as an
 * MPI communicator does: hier (algo/hier.c) runs ring, rd or rhd across
 * the nodes, on the workers of one local rank. The algorithm sees member
 * ranks 0..size-1 (w->rank, w->workers); the transfer primitive maps them
 * to workers. All zero: the whole run, members are workers. */
typedef struct rs_group {
  /* Member k is worker first + k x stride; with block placement it stands
   * for node k, whose stride workers its copy already holds: a
   * contribution range of members [a, a+c) is the workers [a x stride,
   * (a+c) x stride). */
  int first, stride;
  int step_base; /* the group's global step 0 is the collective's this */
  /* Added to the group's step within each phase, so a phase's steps are
   * numbered through the whole collective (rs_phase_t). */
  int phase_step[RS_PHASE_COUNT];
} rs_group_t;

/* Worker of member k of group g. */
static inline int rs__group_worker(const rs_group_t *g, int k) {
  return g->stride ? g->first + g->stride * k : k;
}

/* A message's simulated times: departure, arrival, time on the wire, and
 * its NIC's sharing (queue.h's rs_msg_t). */
typedef struct rs_sim_times {
  uint64_t depart, arrive, wire;
  uint32_t share;
} rs_sim_times_t;

/* Everything one worker thread needs. The run fills it in; the thread owns
 * it while it runs. Aligned so workers never share a cache line. */
typedef struct rs_worker {
  _Alignas(64) int rank; /* within group (the run's rank when not grouped) */
  int workers;           /* the group's size (W when not grouped) */
  rs_shape_t shape;      /* all W workers, and their nodes (net/topo.h) */
  rs_group_t group;      /* whom rank and workers count (all zero: all) */
  unsigned char *buf;    /* the worker's flat gradient buffer */
  size_t buf_elem_bytes; /* its element size: 8 (double, f64) or 4 (float) */
  /* The bucket being all-reduced: its index, place and segmentation. */
  size_t bucket;
  size_t base;  /* the bucket's first element in the flat buffer */
  size_t elems; /* elements in the bucket */
  size_t segs_per_chunk;
  size_t seg_cap; /* the most elements one message carries (segment_bytes) */
  /* A bucket-sized place for the worker's own data while it accumulates
   * others' (linear's root); NULL when its algorithm needs none. */
  unsigned char *stash;
  /* A bucket-sized place to lay a bucket out as DDP does (ddp_layout), or
   * NULL. */
  unsigned char *relayout;
  rs_op_t op;
  rs_dtype_t dtype; /* f64: double buffers; f16/bf16: round to it after
                       every float32 addition */
  size_t elem_size; /* bytes per element on the wire */
  /* f16/bf16 through a copying transport arrive packed in 2 bytes: unpack
   * into unpacked (room for the largest message) before folding. NULL
   * otherwise. */
  void (*unpack)(float *dst, const void *src, size_t n);
  float *unpacked;
  int average;
  /* A compressing hook (fp16, bf16): the bucket is cast to dtype before
   * the division (run_worker); in the checked iteration its losses are
   * counted here: overflowed by the cast, flushed to zero by the cast, by
   * the division; and the largest |value| after the cast. */
  int hook_cast;
  uint64_t hook_over, hook_flushed, hook_div_flushed;
  float hook_max;
  int slices; /* NCCL's loop order: the whole ring per slice (rs_config_t) */
  rs_collective_t collective;
  uint64_t timeout_ns;
  const rs_fault_t *faults; /* the run's injected faults (all workers) */
  int fault_count;
  rs_wire_t step_wire; /* what the wire does to this step's first message */
  int global_step;     /* the step under way (rs__xfer_step's global_step):
                          a topology's contention is counted per step */
  int channel; /* NCCL's channel of the messages it moves next (the ring
                  sets it, on its channels; else 0): each channel has its
                  own queue on an edge and its own streaming state */
  rs_link_t *out;      /* the edges it sends on */
  int out_count;
  rs_link_t *in; /* the edges it receives on */
  int in_count;
  int out_last, in_last; /* where edge lookups last found one */
  rs_progress_t progress;
  rs_worker_stats_t stats;
  rs_simclock_t sim;     /* simulated time (alpha-beta model), if on */
  /* Room for a streaming bucket's clocks (netmodel.h's rs__sim_stream),
   * the worker's own: on each channel, when each segment's data is ready
   * (ready_cap), the slot rule's arrivals (slot_cap), its clock and its
   * count. */
  uint64_t *stream_mem;
  size_t ready_cap, slot_cap;
  /* A switch's (algo/nvls.c): per shard of its node, what it holds of
   * the round under way (when every copy was in; a multicast's times);
   * NULL for a GPU. */
  rs_sim_times_t *held;
  rs_event_buf_t events; /* transfers received, when tracing */
  int iter;              /* which iteration of the run is running */
  int rc;                /* what the worker's run returned */
} rs_worker_t;

/* A worker's run ended by an injected crash, or never began. */
#define RS_WORKER_CRASHED 1
#define RS_WORKER_NOT_STARTED 2

/* NVLink SHARP (algo/nvls.c): each node's switch is a participant of the
 * run, a thread of its own (run/pool.c) numbered after the W GPUs: node
 * n's is participant W + n (docs/trace-schema.md). A GPU puts its copies
 * into it and takes sums and multicast copies from it; the switch sums
 * and copies. On the simulated clock the switch is the routes
 * (netmodel.h's RS_ROUTE_*): it has no clock of its own, and stamps what
 * it sends with the times the routes give. */
static inline int rs__switch_of(rs_shape_t shape, int worker) {
  return shape.workers + worker / shape.gpus;
}

/* A GPU puts elems elements at offset into its node's switch (its clock
 * charges the transfer on its route, w->sim.route, as to a GPU of its
 * node); and takes elems elements at offset from it, copied over its own:
 * the sum it heads (sum 1: its clock takes it as the switch's result,
 * netmodel.h's rs__sim_switch_result, the message saying when the switch
 * held every copy) or a multicast copy (sum 0: a receive as any). The
 * tag's contributors are the run's workers. */
int rs__xfer_put(rs_worker_t *w, size_t offset, size_t elems,
                 const rs_tag_t *tag);
int rs__xfer_take(rs_worker_t *w, size_t offset, size_t elems,
                  const rs_tag_t *tag, int sum);

/* The switch sw's side: take what GPU from->peer put, the region and
 * tag from says (do action with it; its times to *times), and give GPU
 * to->peer the region to says, stamped with times (rs_part_t: below). */
struct rs_part;
int rs__xfer_switch_take(rs_worker_t *sw, const struct rs_part *from,
                         rs_recv_action_t action, rs_sim_times_t *times);
int rs__xfer_switch_give(rs_worker_t *sw, const struct rs_part *to,
                         const rs_sim_times_t *times);

/* A step begins: note where the worker is (phase, step; global_step counts
 * every step of the collective from 0, as --inject does), charge a
 * straggler's compute, and apply the faults injected into this worker at
 * this step of the first bucket. first_part: this is the step's first part
 * (NCCL's slice order runs each step once per slice; a fault is one
 * event). Returns RS_OK; RS_WORKER_CRASHED if the worker crashes here;
 * RS_EABORTED if the run ended during its stall. */
int rs__xfer_step(rs_worker_t *w, rs_phase_t phase, int step, int global_step,
                  int first_part);

/* Send elems elements at offset of the bucket to worker peer (member peer
 * of the worker's group, when it is in one: rs_group_t). */
int rs__xfer_send(rs_worker_t *w, int peer, size_t offset, size_t elems,
                  const rs_tag_t *tag);

/* Receive elems elements at offset of the bucket from worker (or member)
 * peer, which must have sent exactly that region with that chunk (else
 * RS_EPROTO), and do action with them. */
int rs__xfer_recv(rs_worker_t *w, int peer, size_t offset, size_t elems,
                  const rs_tag_t *tag, rs_recv_action_t action);

/* One side of a transfer of a region: the peer, the region (elements of
 * the bucket) and its tag (the segment field is filled per segment). */
typedef struct rs_part {
  int peer;
  size_t offset, elems;
  rs_tag_t tag;
} rs_part_t;

/* How many segments of at most w->seg_cap elements a region of elems
 * elements moves as (1 for an empty region: it still sends a message). */
size_t rs__xfer_segs(const rs_worker_t *w, size_t elems);

/* Send, or receive and do action with, a whole region, as segs segments
 * (near-equal, in order). */
int rs__xfer_send_all(rs_worker_t *w, rs_part_t *send, size_t segs);
int rs__xfer_recv_all(rs_worker_t *w, rs_part_t *recv, rs_recv_action_t action,
                      size_t segs);

/* Exchange with peers, as MPI_Sendrecv does: cut both regions into segs
 * segments, and for each send ours, then receive theirs and do action
 * with it. Two workers exchanging with each other cannot deadlock, whatever
 * the slots. */
int rs__xfer_sendrecv(rs_worker_t *w, rs_part_t *send, rs_part_t *recv,
                      rs_recv_action_t action, size_t segs);

/* Keep the worker's own bucket aside (in w->stash), and later fold it into
 * what the bucket then holds with action: how a root adds its own data
 * last. */
void rs__xfer_stash(rs_worker_t *w);
void rs__xfer_unstash(rs_worker_t *w, rs_recv_action_t action);

/* The worker's last step is done: end the stream on every edge it sends
 * on, then check every edge it receives on (none lost, none left over). */
int rs__xfer_finish(rs_worker_t *w);

#endif /* RINGSIM_XFER_H */
