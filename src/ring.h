/* ring.h - one worker's part of the ring all-reduce. */
#ifndef RINGSIM_RING_H
#define RINGSIM_RING_H

#include <stdatomic.h>

#include "channel.h"
#include "netmodel.h"
#include "ringsim/ringsim.h"
#include "schedule.h"
#include "trace.h"

const char *rs_phase_name(rs_phase_t phase);

/* What a worker is doing, for the watchdog: where it blocks, if it does. */
typedef enum rs_activity {
  RS_ACT_WORKING,   /* between messages (or not started) */
  RS_ACT_SENDING,   /* sending: waiting for a free slot */
  RS_ACT_RECEIVING, /* receiving: waiting for a message, or checking it */
  RS_ACT_STALLED,   /* sleeping in an injected stall */
  RS_ACT_FINISHING  /* its steps done: checking its predecessor's end */
} rs_activity_t;

/* Where a worker is, for error reports: written by the worker, read by the
 * main thread only after the worker has been joined. */
typedef struct rs_progress {
  rs_phase_t phase;
  int step;
  int chunk;
  rs_activity_t activity;
  /* Its injected stall, if it had one: length, where, and when it ended
   * (0 while it lasts). */
  int stall_ms;
  rs_phase_t stall_phase;
  int stall_step;
  uint64_t stall_end_ns;
} rs_progress_t;

/* Everything one worker thread needs. The run fills it in; the thread owns
 * it while it runs. Aligned so workers never share a cache line. */
struct rs_run;

typedef struct rs_worker {
  _Alignas(64) struct rs_run *run;
  int rank;
  int workers;
  unsigned char *buf;    /* the worker's flat gradient buffer */
  size_t buf_elem_bytes; /* its element size: 8 (double, f64) or 4 (float) */
  const rs_bucket_t *buckets;
  const size_t *bucket_segs;
  size_t bucket_count;
  /* The bucket being all-reduced: its index, place and segmentation. */
  size_t bucket;
  size_t base;  /* the bucket's first element in the flat buffer */
  size_t elems; /* elements in the bucket */
  size_t segs_per_chunk;
  rs_op_t op;
  rs_dtype_t dtype; /* f64: double buffers; f16/bf16: round to it after
                       every float32 addition */
  size_t elem_size; /* bytes per element on the wire */
  /* f16/bf16 through a copying channel arrive packed in 2 bytes: unpack
   * into unpacked (room for the largest segment) before folding. NULL
   * otherwise. */
  void (*unpack)(float *dst, const void *src, size_t n);
  float *unpacked;
  int average_pre;
  int slices; /* NCCL's loop order: the whole ring per slice (rs_config_t) */
  rs_collective_t collective;
  uint64_t timeout_ns;
  const rs_fault_t *faults; /* the run's injected faults (all workers) */
  int fault_count;
  rs_wire_t step_wire;  /* what the wire does to this step's first segment */
  rs_chan_t *to_next;   /* channel to (rank + 1) mod W */
  rs_chan_t *from_prev; /* channel from (rank - 1) mod W */
  rs_progress_t progress;
  rs_worker_stats_t stats;
  rs_simclock_t sim;     /* simulated time (alpha-beta model), if on */
  rs_event_buf_t events; /* transfers received, when tracing */
  int iter;              /* which iteration of the run is running */
  int rc;                /* what rs_ring_run returned */
} rs_worker_t;

/* Run worker w's part of the collective over its buffer. Returns RS_OK,
 * RS_ETIMEDOUT, RS_EPROTO or RS_ECORRUPT (this worker found the fault),
 * RS_EABORTED (another worker did), or RS_RING_CRASHED if an injected crash
 * stopped it. */
#define RS_RING_CRASHED 1
#define RS_RING_NOT_STARTED 2 /* rc before the worker ran (the run stopped) */
int rs_ring_run(rs_worker_t *w);

/* Segment seg of segs near-equal segments of chunk chunk. */
void rs_ring_segment(const rs_worker_t *w, int chunk, size_t seg,
                     size_t *elem_offset, size_t *elems);

#endif /* RINGSIM_RING_H */
