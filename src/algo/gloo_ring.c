/* algo/gloo_ring.c - gloo's ring all-reduce, as one worker runs it: the
 * ring PyTorch's gloo backend runs for a CPU tensor (torch.distributed
 * all_reduce, and DDP's buckets), step for step and bit for bit.
 *
 * It is the ring of algo/ring.c with gloo's choices, each of which decides
 * the order a float sum is taken in, so the bits (algo/gloo_ring.h):
 * - the ring runs the other way: worker r sends to r-1, receives from r+1;
 * - the bucket is cut into N equal segments (N at least 2W, a multiple of
 *   W, segments of at most 1 MiB by default), chunk c being P = N/W
 *   consecutive ones: when W does not divide n the last chunks are the
 *   short ones, possibly empty, not the near-equal chunks of ring.c;
 * - chunk c starts at worker c-1 and ends, fully reduced, at worker c.
 *
 * Reduce-scatter, W-1 steps. In step s worker r sends chunk (r+1+s) to
 * r-1, segment by segment, and receives chunk (r+2+s) from r+1, adding it
 * to its own. Step s+1 sends what step s summed; after W-1 steps worker r
 * holds the sum of chunk r.
 * All-gather, W-1 steps. In step s worker r sends chunk (r+s) (at s=0 the
 * one it completed) and receives chunk (r+1+s), copying it over its own.
 *
 * gloo runs the same messages as one loop over the N - P segments a worker
 * sends, two in flight, reducing segment i while segment i+1 is on the
 * wire; a segment past the end of the buffer is neither sent nor received.
 * Step s here is gloo's iterations sP..sP+P-1; the sums are the same.
 *
 * Averaging (op avg) is ringsim's, not gloo's (gloo only sums): after the
 * sum (the last reduce-scatter step divides), or before it by each worker
 * (average_pre, in run.c): divided by W, or, as PyTorch 1.13's DDP reducer
 * does, multiplied by 1/W rounded to the dtype (docs/ddp.md).
 */
#include "algo/gloo_ring.h"

#include "algo/algo.h"
#include "net/netmodel.h"
#include "net/xfer.h"

/* The layout of the worker's current bucket. */
static rs_gloo_layout_t layout_of(const rs_worker_t *w) {
  return rs__gloo_layout(w->elems, w->workers, w->seg_cap);
}

/* One step: send our chunk to r-1 and receive r+1's, segment by segment,
 * doing action with each; empty segments move no message. */
static int gloo_step(rs_worker_t *w, const rs_gloo_layout_t *l,
                     rs_phase_t phase, int s, rs_recv_action_t action) {
  const int W = w->workers, r = w->rank;
  const int next = rs__gloo_next(W, r), prev = rs__gloo_prev(W, r);
  rs_tag_t out = {.phase = phase, .step = s}, in = out;
  out.chunk = rs__gloo_send_chunk(W, r, phase, s);
  in.chunk = rs__gloo_recv_chunk(W, r, phase, s);
  rs__gloo_contributors(W, r, phase, s, &out.contrib_first, &out.contrib_count);
  rs__gloo_contributors(W, prev, phase, s, &in.contrib_first,
                        &in.contrib_count);
  for (size_t seg = 0; seg < l->per_chunk; seg++) {
    size_t off, len;
    int rc;
    out.segment = in.segment = (int)seg;
    rs__gloo_segment(l, w->elems, out.chunk, seg, &off, &len);
    if (len && (rc = rs__xfer_send(w, next, off, len, &out)))
      return rc;
    rs__gloo_segment(l, w->elems, in.chunk, seg, &off, &len);
    if (len && (rc = rs__xfer_recv(w, prev, off, len, &in, action)))
      return rc;
  }
  return RS_OK;
}

/* One bucket: reduce-scatter, then all-gather. */
static int gloo_bucket(rs_worker_t *w) {
  const int W = w->workers;
  const rs_phase_t RS = RS_PHASE_REDUCE_SCATTER, AG = RS_PHASE_ALL_GATHER;
  const rs_gloo_layout_t l = layout_of(w);
  int rc;
  /* Reduce-scatter: W-1 steps, each adding one more contribution. */
  for (int s = 0; s < W - 1; s++) {
    rs_recv_action_t action = RS_RECV_REDUCE;
    if (s == W - 2 && w->op == RS_OP_AVG && !w->average_pre)
      action = RS_RECV_REDUCE_MEAN; /* the sum is complete: make it the mean */
    if ((rc = rs__xfer_step(w, RS, s, s, 1)) ||
        (rc = gloo_step(w, &l, RS, s, action)))
      return rc;
  }
  /* Now worker r holds the reduced chunk r. */
  if (w->collective == RS_COLL_REDUCE_SCATTER)
    return RS_OK;
  /* All-gather: W-1 steps, forwarding the reduced chunks down the ring. */
  for (int s = 0; s < W - 1; s++)
    if ((rc = rs__xfer_step(w, AG, s, W - 1 + s, 1)) ||
        (rc = gloo_step(w, &l, AG, s, RS_RECV_COPY)))
      return rc;
  return RS_OK;
}

/* The cost formula: 2(W-1) steps of P segments (each a latency and a
 * transfer of a full segment: the bound, as the short last chunks wait
 * for the full ones), and (W-1) P reductions. */
static uint64_t predict(const rs_netmodel_t *m, int workers, size_t elems,
                        size_t segs, size_t cap, size_t elem_size) {
  (void)segs;
  if (!m->enabled || workers < 2)
    return 0;
  const rs_gloo_layout_t l = rs__gloo_layout(elems, workers, cap);
  const uint64_t W = (uint64_t)workers, P = l.per_chunk;
  size_t seg_bytes = l.seg_elems * elem_size;
  uint64_t per_segment =
      m->link.latency_ns + rs__net_ns(seg_bytes, m->link.bandwidth);
  return 2 * (W - 1) * P * per_segment +
         (W - 1) * P * rs__net_ns(seg_bytes, m->reduce_rate);
}

/* One bucket on simulated clocks alone, no data (algo.h). */
static void sim_bucket(rs_simrun_t *s, size_t elems, size_t segs) {
  const int W = s->workers;
  const rs_gloo_layout_t l = rs__gloo_layout(elems, W, s->cap);
  (void)segs;
  for (int phase = 0; phase < 2; phase++)
    for (int step = 0; step < W - 1; step++) {
      const rs_phase_t ph = (rs_phase_t)phase;
      rs__simrun_step(s);
      for (size_t seg = 0; seg < l.per_chunk && !rs__simrun_stopped(s); seg++) {
        size_t off, len;
        for (int r = 0; r < W; r++) {
          rs__gloo_segment(&l, elems, rs__gloo_send_chunk(W, r, ph, step), seg,
                           &off, &len);
          if (len)
            rs__simrun_send(s, r, len);
        }
        for (int r = 0; r < W; r++) {
          rs__gloo_segment(&l, elems, rs__gloo_recv_chunk(W, r, ph, step), seg,
                           &off, &len);
          if (len)
            rs__simrun_recv(s, r, rs__gloo_prev(W, r),
                            ph == RS_PHASE_REDUCE_SCATTER ? len : 0);
        }
      }
    }
}

/* The edges: r -> r-1. */
static int send_peers(int workers, int rank, int *peers) {
  peers[0] = rs__gloo_next(workers, rank);
  return 1;
}

static int recv_peers(int workers, int rank, int *peers) {
  peers[0] = rs__gloo_prev(workers, rank);
  return 1;
}

/* Every message is one segment. */
static size_t message_elems(int workers, int from, int to, size_t elems,
                            size_t segs, size_t cap) {
  (void)from, (void)to, (void)segs;
  return rs__gloo_layout(elems, workers, cap).seg_elems;
}

/* gloo's P = N / W segments per chunk. */
static size_t chunk_segs(int workers, size_t elems, size_t segs, size_t cap) {
  (void)segs;
  return rs__gloo_layout(elems, workers, cap).per_chunk;
}

/* As the ring's (ring.c): a worker overwrites a chunk it sent (W-1) steps
 * later, each of P >= min_segs messages (P is at least the ring's
 * segments per chunk, ceil(n / (W cap))). The loop order is always gloo's
 * step order. */
static size_t direct_slots(int workers, size_t min_segs, int slices) {
  (void)slices;
  return (size_t)(workers > 1 ? workers - 1 : 1) * min_segs;
}

static int steps(int workers, rs_collective_t collective) {
  return (collective == RS_COLL_ALLREDUCE ? 2 : 1) * (workers - 1);
}

/* A chunk's sum starts at one worker and gains one addition per hop. */
static int depth(int workers) { return workers - 1; }

/* At most one message per segment of every step. */
static size_t messages(int workers, int rank, size_t elems, size_t segs,
                       size_t cap, rs_collective_t collective) {
  (void)rank, (void)segs;
  return (size_t)steps(workers, collective) *
         rs__gloo_layout(elems, workers, cap).per_chunk;
}

const rs_algo_t rs__algo_gloo_ring = {.name = "gloo-ring",
                                      .send_peers = send_peers,
                                      .recv_peers = recv_peers,
                                      .message_elems = message_elems,
                                      .chunk_segs = chunk_segs,
                                      .direct_slots = direct_slots,
                                      .messages = messages,
                                      .steps = steps,
                                      .depth = depth,
                                      .predict = predict,
                                      .sim_bucket = sim_bucket,
                                      .run_bucket = gloo_bucket};
