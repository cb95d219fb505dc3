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
 * So this file is gloo's direction and cut (an rs_ring_way_t), its cost
 * formula and its sizes; the ring's code in ring.c (algo/ring_way.h) runs,
 * simulates, narrates and lays it out.
 *
 * Averaging (op avg) is ringsim's, not gloo's (gloo only sums): after the
 * sum (the last reduce-scatter step divides), or before it by each worker
 * (average, in run.c): divided by W, or, as PyTorch 1.13's DDP reducer
 * does, multiplied by 1/W rounded to the dtype (docs/ddp.md).
 */
#include "algo/gloo_ring.h"

#include "algo/algo.h"
#include "algo/narrate.h"
#include "algo/ring_way.h"
#include "net/netmodel.h"
#include "net/xfer.h"

/* gloo's cut: N equal segments, P = N / W per chunk (gloo_ring.h). */
static rs_ring_cut_t cut(size_t elems, int workers, size_t segs, size_t cap) {
  const rs_gloo_layout_t l = rs__gloo_layout(elems, workers, cap);
  (void)segs;
  return (rs_ring_cut_t){.elems = elems,
                         .workers = workers,
                         .per_chunk = l.per_chunk,
                         .seg_elems = l.seg_elems};
}

static void segment(const rs_ring_cut_t *c, int chunk, size_t seg,
                    size_t *offset, size_t *len) {
  const rs_gloo_layout_t l = {c->per_chunk * (size_t)c->workers, c->per_chunk,
                              c->seg_elems};
  rs__gloo_segment(&l, c->elems, chunk, seg, offset, len);
}

/* The ring the other way round (r sends to r-1), each chunk starting at
 * the worker below its owner; empty segments are not sent, and the loop
 * order is always gloo's step order. */
static const rs_ring_way_t way = {
    .next = rs__gloo_next,
    .prev = rs__gloo_prev,
    .send_chunk = rs__gloo_send_chunk,
    .recv_chunk = rs__gloo_recv_chunk,
    .contributors = rs__gloo_contributors,
    .cut = cut,
    .segment = segment,
    .skip_empty = 1,
    .sends = "r sends one chunk to worker r-1 (gloo's direction)",
    .from = " from r+1"};

static int gloo_bucket(rs_worker_t *w) { return rs__ring_run(&way, w); }

static void sim_bucket(rs_simrun_t *s, size_t elems, size_t segs) {
  rs__ring_sim(&way, s, elems, segs);
}

static void narrate(rs_narrator_t *n, int mean) {
  rs__ring_narrate(&way, n, mean);
  rs__narr_say(n,
               "\nEvery worker now holds every chunk %s all %d workers, in "
               "gloo's order: chunk c summed from worker c-1 down to worker "
               "c.\n",
               n->result, n->workers);
}

/* The columns: gloo's chunks, P equal segments each, the last ones short
 * or empty. */
static int layout(rs_shape_t shape, size_t elems, size_t cap, size_t *offsets,
                  const char **word, const char **words) {
  const int workers = shape.workers;
  return rs__ring_layout(&way, workers, elems, cap, offsets, word, words);
}

/* The cost formula: 2(W-1) steps of P segments (each a latency and a
 * transfer of a full segment: the bound, as the short last chunks wait
 * for the full ones), and (W-1) P reductions. */
static uint64_t predict(const rs_netmodel_t *m, rs_shape_t shape, size_t elems,
                        size_t segs, size_t cap, size_t elem_size) {
  const int workers = shape.workers;
  (void)segs;
  if (!m->enabled || workers < 2)
    return 0;
  const rs_gloo_layout_t l = rs__gloo_layout(elems, workers, cap);
  const uint64_t W = (uint64_t)workers, P = l.per_chunk;
  size_t seg_bytes = l.seg_elems * elem_size;
  /* every step P segments of seg_bytes, streamed (ring.c) */
  const rs_stream_sizes_t sizes = {0, 0, seg_bytes};
  return rs__ring_stream_ns(m, (int)(2 * (W - 1)), (int)(W - 1), P, &sizes,
                            1);
}

/* The edges: r -> r-1. */
static int send_peers(rs_shape_t shape, int rank, int *peers) {
  const int workers = shape.workers;
  peers[0] = rs__gloo_next(workers, rank);
  return 1;
}

static int recv_peers(rs_shape_t shape, int rank, int *peers) {
  const int workers = shape.workers;
  peers[0] = rs__gloo_prev(workers, rank);
  return 1;
}

/* In every step each worker sends to r-1 (gloo_ring.h). */
static int sends(rs_shape_t shape, int step, int rank, int *dst, int max) {
  const int workers = shape.workers;
  (void)step, (void)max;
  dst[0] = rs__gloo_next(workers, rank);
  return 1;
}

/* Every message is one segment. */
static size_t message_elems(rs_shape_t shape, int from, int to, size_t elems,
                            size_t segs, size_t cap) {
  const int workers = shape.workers;
  (void)from, (void)to, (void)segs;
  return rs__gloo_layout(elems, workers, cap).seg_elems;
}

/* gloo's P = N / W segments per chunk. */
static size_t chunk_segs(rs_shape_t shape, size_t elems, size_t segs,
                         size_t cap) {
  const int workers = shape.workers;
  (void)segs;
  return rs__gloo_layout(elems, workers, cap).per_chunk;
}

/* As the ring's (ring.c): a worker overwrites a chunk it sent (W-1) steps
 * later, each of P >= min_segs messages (P is at least the ring's
 * segments per chunk, ceil(n / (W cap))). The loop order is always gloo's
 * step order. */
static size_t direct_slots(rs_shape_t shape, size_t min_segs, int slices) {
  const int workers = shape.workers;
  (void)slices;
  return (size_t)(workers > 1 ? workers - 1 : 1) * min_segs;
}

/* At most one message per segment of every step. */
static size_t messages(rs_shape_t shape, int rank, size_t elems, size_t segs,
                       size_t cap, rs_collective_t collective) {
  const int workers = shape.workers;
  (void)rank;
  return rs__ring_messages(&way, workers, elems, segs, cap, collective);
}

/* Never chosen by --algo auto (it is the ring in gloo's order, there for
 * PyTorch's bits: choosing it would only change which bits a user gets);
 * its segments are gloo's, whose size decides its bits. */
const rs_algo_t rs__algo_gloo_ring = {
    .name = "gloo-ring",
    .caps = RS__CAP_FORMULA | RS__CAP_STREAM,
    .segment_bytes = RS_GLOO_SEGMENT_BYTES,
    .send_peers = send_peers,
    .recv_peers = recv_peers,
    .message_elems = message_elems,
    .chunk_segs = chunk_segs,
    .direct_slots = direct_slots,
    .messages = messages,
    .steps = rs__ring_steps,
    .sends = sends,
    .depth = rs__ring_depth,
    .predict = predict,
    .sim_bucket = sim_bucket,
    .title = "gloo's ring all-reduce (PyTorch's gloo backend)",
    .layout = layout,
    .narrate = narrate,
    .run_bucket = gloo_bucket};
