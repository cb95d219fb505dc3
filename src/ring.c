/* ring.c - the ring all-reduce, as one worker runs it.
 *
 * W workers sit on a ring; worker r sends only to r+1 and receives only from
 * r-1 (mod W). The model's flat buffer is all-reduced bucket by bucket, in
 * DDP's order; each bucket of n elements is cut into W chunks (chunk c is
 * rs_chunk_offset/rs_chunk_elems: sizes differ by at most one). Which chunk
 * moves when is schedule.h's rs_sched_send_chunk/rs_sched_recv_chunk.
 *
 * Reduce-scatter, W-1 steps. In step s worker r sends chunk (r-s) mod W to
 * r+1, and receives chunk (r-s-1) mod W from r-1 and adds it to its own copy
 * (or folds it in with min, max or prod: the op).
 * The chunk it sends in step s+1 is the one it just summed, so each chunk
 * travels once round the ring, gathering one more worker's contribution at
 * every hop. After W-1 steps worker r holds the full sum of chunk (r+1) mod W.
 *
 * All-gather, W-1 steps. In step s worker r sends chunk (r+1-s) mod W (at
 * s=0 the one it completed) and receives chunk (r-s) mod W, which it copies
 * over its own. After W-1 steps every worker holds every summed chunk, and
 * they are bitwise identical because they are copies of one value.
 *
 * Each worker sends 2(W-1) chunks of n/W elements: 2(W-1)/W of the buffer,
 * whatever W is. That is why the ring is bandwidth-optimal.
 *
 * Pipelining: a chunk moves as segs_per_chunk segments. Within a step the
 * worker sends segment k, then receives and reduces segment k; the next
 * step's segment k depends only on this step's segment k, so with K channel
 * slots neighbours overlap sending with reducing.
 *
 * Loop order. By default the worker runs step by step, each step moving
 * its whole chunk (the order above, as the algorithm is taught). NCCL
 * loops the other way round: it cuts the buffer into slices of one
 * segment per chunk and runs all 2(W-1) steps on one slice before the next
 * (runRing's loop over gridOffset). Segment k of step s depends only on
 * segment k of step s-1, so both orders send the same messages and compute
 * the same sums, bit for bit; but in NCCL's, a segment a neighbour has just
 * written is read while it is still in cache, instead of a whole chunk
 * later. w->slices picks it.
 *
 * Averaging (op avg) happens where the sum completes: the last reduce-scatter
 * step divides by W, so the all-gather copies the mean. Or, as DDP's hook
 * does (average_pre), every worker divides its own gradient first.
 *
 * Elements are floats (f32, and f16/bf16 rounded after every hop) or, for an
 * f64 model, doubles; the ring handles bytes and leaves the arithmetic to
 * reduce.h's rs_fold.
 *
 * Besides the data, the loop makes one call per event for the simulated
 * clock (netmodel.h) and one for the trace (trace.h), and begin_step applies
 * injected faults; nothing else.
 */
#include "ring.h"

#include <string.h>

#include "reduce.h"
#include "util.h"

const char *rs_phase_name(rs_phase_t phase) {
  return phase == RS_PHASE_REDUCE_SCATTER ? "reduce_scatter" : "all_gather";
}

/* What a receiver does with an incoming segment. */
typedef enum { RECV_REDUCE, RECV_REDUCE_DIV, RECV_COPY } recv_action_t;

void rs_ring_segment(const rs_worker_t *w, int chunk, size_t seg,
                     size_t *elem_offset, size_t *elems) {
  rs_sched_segment(w->elems, w->workers, w->segs_per_chunk, chunk, seg,
                   elem_offset, elems);
  *elem_offset += w->base; /* chunks are of the bucket, offsets of the buffer */
}

/* One step, on segments seg_first..seg_end-1 of its chunks (all of them,
 * or one slice): pass send_chunk to the next worker and fold recv_chunk
 * from the previous one into our buffer, segment by segment. */
static int ring_step(rs_worker_t *w, rs_phase_t phase, int step, int send_chunk,
                     int recv_chunk, recv_action_t action, size_t seg_first,
                     size_t seg_end) {
  for (size_t seg = seg_first; seg < seg_end; seg++) {
    size_t off, len;
    rs_ring_segment(w, send_chunk, seg, &off, &len);
    rs_msg_t hdr = {.bucket = (int32_t)w->bucket,
                    .phase = phase,
                    .step = step,
                    .chunk = send_chunk,
                    .segment = (int32_t)seg,
                    .elem_offset = off,
                    .elems = len};
    rs_sim_send(&w->sim, len * w->elem_size, &hdr.sim_send_ns,
                &hdr.sim_arrive_ns); /* simulated time, when modelled */
    w->progress.chunk = send_chunk;
    w->progress.activity = RS_ACT_SENDING;
    rs_wire_t wire = seg == 0 ? w->step_wire : RS_WIRE_OK;
    int rc = rs_chan_send(w->to_next, &hdr, w->buf + off * w->buf_elem_bytes,
                          wire, w->timeout_ns, &w->stats.wait_ns);
    if (rc)
      return rc;
    w->stats.transfers_sent++;
    w->stats.bytes_sent += len * w->elem_size;

    rs_ring_segment(w, recv_chunk, seg, &off, &len);
    rs_msg_t *msg;
    w->progress.chunk = recv_chunk;
    w->progress.activity = RS_ACT_RECEIVING;
    uint64_t recv_begin = rs__now_ns(), waited = w->stats.wait_ns;
    rc = rs_chan_recv(w->from_prev, &msg, w->timeout_ns, &w->stats.wait_ns);
    if (rc)
      return rc;
    /* The sender must have sent exactly the segment we expect. */
    if (msg->chunk != recv_chunk || msg->elem_offset != off ||
        msg->elems != len)
      return RS_EPROTO;
    w->progress.activity = RS_ACT_WORKING; /* reducing: blocked on nobody */
    void *dst = w->buf + off * w->buf_elem_bytes;
    const void *src = msg->data;
    /* f16/bf16 arrive packed in 2 bytes: a fold needs them back in float
     * beside the buffer; a copy unpacks straight into place, below */
    if (w->unpack && action != RECV_COPY) {
      w->unpack(w->unpacked, src, len);
      src = w->unpacked;
    }
    switch (action) {
    case RECV_REDUCE: /* in the buffers' type, rounded to the dtype */
      rs_fold(w->dtype, dst, src, len, w->op, 0);
      break;
    case RECV_REDUCE_DIV:
      rs_fold(w->dtype, dst, src, len, w->op, w->workers);
      break;
    case RECV_COPY:
      if (w->unpack)
        w->unpack(dst, src, len);
      else if (len)
        memcpy(dst, src, len * w->buf_elem_bytes);
      break;
    }
    uint64_t sim_recv =
        rs_sim_recv(&w->sim, msg->sim_arrive_ns,
                    action == RECV_COPY ? 0 : len * w->elem_size);
    rs__trace_record(&w->events, msg, w->iter, recv_begin,
                     w->stats.wait_ns - waited, rs__now_ns(), sim_recv);
    rs_chan_release(w->from_prev);
    w->stats.bytes_received += len * w->elem_size;
  }
  return RS_OK;
}

/* Note where the worker is, for error reports, and apply the faults
 * injected into this worker at this step of the first bucket (a fault is
 * one event, not one per bucket, nor one per slice: first_slice says
 * whether this is the step's first part): a stall sleeps here (until the
 * run aborts, if it does first), a wire fault hits the step's first
 * segment. Returns RS_RING_CRASHED if the worker crashes here, RS_EABORTED
 * if the run ended during its stall, else RS_OK. */
static int begin_step(rs_worker_t *w, rs_phase_t phase, int step,
                      int first_slice) {
  w->progress.phase = phase;
  w->progress.step = step;
  w->progress.activity = RS_ACT_WORKING;
  rs_sim_step(&w->sim); /* a straggler computes before it can send */
  w->step_wire = RS_WIRE_OK;
  int global_step =
      phase == RS_PHASE_REDUCE_SCATTER ? step : w->workers - 1 + step;
  for (int i = 0; i < w->fault_count && w->bucket == 0 && first_slice; i++) {
    const rs_fault_t *f = &w->faults[i];
    if (f->worker != w->rank || f->step != global_step)
      continue;
    switch (f->kind) {
    case RS_FAULT_CRASH:
      return RS_RING_CRASHED;
    case RS_FAULT_STALL:
      w->progress.activity = RS_ACT_STALLED;
      w->progress.stall_ms = f->ms;
      w->progress.stall_phase = phase;
      w->progress.stall_step = step;
      if (rs_chan_pause(w->to_next, (uint64_t)f->ms * 1000000u))
        return RS_EABORTED; /* stays STALLED: what it was doing */
      w->progress.stall_end_ns = rs__now_ns();
      w->progress.activity = RS_ACT_WORKING;
      break;
    case RS_FAULT_CORRUPT:
      w->step_wire = RS_WIRE_CORRUPT;
      break;
    case RS_FAULT_DROP:
      w->step_wire = RS_WIRE_DROP;
      break;
    case RS_FAULT_DUP:
      w->step_wire = RS_WIRE_DUP;
      break;
    }
  }
  return RS_OK;
}

/* The ring on segments seg_first..seg_end-1 of every chunk of the bucket:
 * reduce-scatter, then all-gather. */
static int ring_steps(rs_worker_t *w, size_t seg_first, size_t seg_end) {
  const int W = w->workers, r = w->rank;
  const int first = seg_first == 0;
  int rc;
  /* Reduce-scatter: W-1 steps, each adding one more contribution. */
  for (int s = 0; s < W - 1; s++) {
    if ((rc = begin_step(w, RS_PHASE_REDUCE_SCATTER, s, first)))
      return rc;
    recv_action_t action = RECV_REDUCE;
    if (s == W - 2 && w->op == RS_OP_AVG && !w->average_pre)
      action = RECV_REDUCE_DIV; /* the sum is complete: make it the mean */
    rc = ring_step(w, RS_PHASE_REDUCE_SCATTER, s,
                   rs_sched_send_chunk(W, r, RS_PHASE_REDUCE_SCATTER, s),
                   rs_sched_recv_chunk(W, r, RS_PHASE_REDUCE_SCATTER, s),
                   action, seg_first, seg_end);
    if (rc)
      return rc;
  }
  /* Now worker r holds the reduced chunk (r+1) mod W. */
  if (w->collective == RS_COLL_REDUCE_SCATTER)
    return RS_OK;

  /* All-gather: W-1 steps, forwarding the reduced chunks round the ring. */
  for (int s = 0; s < W - 1; s++) {
    if ((rc = begin_step(w, RS_PHASE_ALL_GATHER, s, first)))
      return rc;
    rc = ring_step(w, RS_PHASE_ALL_GATHER, s,
                   rs_sched_send_chunk(W, r, RS_PHASE_ALL_GATHER, s),
                   rs_sched_recv_chunk(W, r, RS_PHASE_ALL_GATHER, s), RECV_COPY,
                   seg_first, seg_end);
    if (rc)
      return rc;
  }
  return RS_OK;
}

/* One bucket: every step over whole chunks, or (NCCL's loop) every step
 * over one slice, slice after slice. */
static int ring_bucket(rs_worker_t *w) {
  /* Average, DDP's way: each worker divides its own gradient first, and
   * the ring sums the quotients. */
  if (w->op == RS_OP_AVG && w->average_pre)
    rs_scale_div(w->dtype, w->buf + w->base * w->buf_elem_bytes, w->elems,
                 w->workers);
  if (!w->slices)
    return ring_steps(w, 0, w->segs_per_chunk);
  for (size_t seg = 0; seg < w->segs_per_chunk; seg++) {
    int rc = ring_steps(w, seg, seg + 1);
    if (rc)
      return rc;
  }
  return RS_OK;
}

int rs_ring_run(rs_worker_t *w) {
  /* Each iteration's simulated time starts from zero. */
  w->sim.clock = w->sim.link_free = 0;
  if (w->workers == 1)
    return RS_OK; /* one worker: its gradient already is the mean */
  /* DDP all-reduces bucket by bucket, in the order backward fills them. */
  for (size_t b = 0; b < w->bucket_count; b++) {
    w->bucket = b;
    w->base = w->buckets[b].elem_offset;
    w->elems = w->buckets[b].elems;
    w->segs_per_chunk = w->bucket_segs[b];
    int rc = ring_bucket(w);
    if (rc)
      return rc;
  }
  /* End of stream: tell the successor how many messages went out, then
   * check the predecessor's: none lost, none left over. */
  rs_chan_finish(w->to_next);
  w->progress.activity = RS_ACT_FINISHING;
  return rs_chan_end(w->from_prev, w->timeout_ns, &w->stats.wait_ns);
}

/* Chunk c of W over n elements: the first n mod W chunks get one extra. */
size_t rs_chunk_offset(size_t elem_count, int workers, int chunk) {
  size_t base = elem_count / (size_t)workers;
  size_t extra = elem_count % (size_t)workers;
  size_t c = (size_t)chunk;
  return c * base + (c < extra ? c : extra);
}

size_t rs_chunk_elems(size_t elem_count, int workers, int chunk) {
  return elem_count / (size_t)workers +
         ((size_t)chunk < elem_count % (size_t)workers);
}
