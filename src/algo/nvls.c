/* algo/nvls.c - NVLink SHARP's all-reduce, as one GPU runs it (the
 * schedule is in algo/nvls.h): one node whose NVLink switch reduces.
 *
 * The data moves for real between the worker threads: GPU j sends its
 * copy of shard i to head i, which adds them into its own, and each head
 * sends its shard's sum to every other GPU. What the switch does differs
 * only on the simulated clock (netmodel.h's routes): a copy put into the
 * switch leaves on the sender's link but does not pass the head's port;
 * the head takes the sum once, a latency and its wire time after the last
 * copy reached the switch (rs__xfer_switch_result); and a multicast
 * leaves the head's link once, its copies made by the switch. So each GPU
 * sends about S + S/W and receives about S, where the ring moves
 * 2(W-1)/W S each way, and a step is a latency a segment, not W-1.
 *
 * The switch's reduction rate is not charged: NVIDIA publishes none
 * (NCCL's own cost model derates NVLS by nvlsEfficiency 0.85, a
 * calibration: src/graph/tuning.cc). The segments go in rounds, every
 * GPU putting segment k of every shard in before it takes segment k's
 * sum, as NCCL's NVLS kernel works through its chunks, and multicasting
 * segment k - 1 in the same round (NVLS_LAG): the two phases overlap.
 *
 * The threads hand each multicast copy to its GPU's queue, so a run's
 * report counts 2(W-1)/W S sent per GPU; on the wire the copies are the
 * switch's.
 */
#include "algo/nvls.h"

#include <stdio.h>

#include "algo/algo.h"
#include "algo/narrate.h"
#include "net/netmodel.h"
#include "net/xfer.h"

/* How many rounds a segment's multicast comes after its reduce: one,
 * so that a GPU puts segment k + 1 in while segment k's sum comes down
 * (NCCL overlaps the two with separate warps: src/device/all_reduce.h,
 * the NVLS scatter, reduce and broadcast groups). With the queues'
 * single order per edge, a fixed lag is how one thread overlaps them. */
#define NVLS_LAG 1

/* Segment k of shard c of the bucket, cut as cut says (nvls.h). */
static void shard_seg(const rs_worker_t *w, const rs_nvls_cut_t *cut, int c,
                      size_t k, size_t *off, size_t *len) {
  const rs_nvls_piece_t p = rs__nvls_piece(w->elems, w->workers, cut, c, k);
  *off = p.off;
  *len = p.len;
}

int rs__nvls_reduce_round(rs_worker_t *w, const rs_nvls_cut_t *cut, size_t k,
                          int mean) {
  const int W = w->workers, r = w->rank;
  const int me = rs__group_worker(&w->group, r); /* (the run's worker) */
  const int seg = (int)rs__nvls_seg(cut, k);
  size_t off, len;
  int rc = RS_OK;
  w->sim.route = RS_ROUTE_SWITCH;
  for (int d = 1; d < W && !rc; d++) {
    const int head = rs__nvls_head(W, r, d);
    const rs_tag_t put = {RS_PHASE_REDUCE_SCATTER, 0, head, seg, me, 1};
    shard_seg(w, cut, head, k, &off, &len);
    rc = rs__xfer_send(w, head, off, len, &put);
  }
  shard_seg(w, cut, r, k, &off, &len);
  if (!rc)
    rs__xfer_switch_put(w, len, (size_t)seg); /* (its own, into the switch) */
  for (int d = 1; d < W && !rc; d++) { /* (r-1, r-2, ...: nvls.h) */
    const int j = rs__nvls_from(W, r, d);
    const rs_tag_t sum = {RS_PHASE_REDUCE_SCATTER, 0, r, seg,
                          rs__group_worker(&w->group, j), 1};
    rc = rs__xfer_recv(w, j, off, len, &sum,
                       d == W - 1 && mean ? RS_RECV_REDUCE_MEAN
                                          : RS_RECV_REDUCE);
  }
  w->sim.route = RS_ROUTE_LINK;
  if (!rc)
    rs__xfer_switch_result(w, len, (size_t)seg);
  return rc;
}

int rs__nvls_multicast_round(rs_worker_t *w, const rs_nvls_cut_t *cut,
                             size_t k) {
  const int W = w->workers, r = w->rank, all = w->shape.workers;
  const int seg = (int)rs__nvls_seg(cut, k);
  size_t off, len;
  int rc = RS_OK;
  shard_seg(w, cut, r, k, &off, &len);
  const rs_tag_t out = {RS_PHASE_ALL_GATHER, 0, r, seg, 0, all};
  for (int d = 1; d < W && !rc; d++) {
    w->sim.route = d == 1 ? RS_ROUTE_LINK : RS_ROUTE_MULTICAST;
    rc = rs__xfer_send(w, rs__nvls_to(W, r, d), off, len, &out);
  }
  w->sim.route = RS_ROUTE_MULTICAST; /* (a copy: no segment of its own) */
  for (int d = 1; d < W && !rc; d++) {
    const int head = rs__nvls_from(W, r, d);
    const rs_tag_t in = {RS_PHASE_ALL_GATHER, 0, head, seg, 0, all};
    shard_seg(w, cut, head, k, &off, &len);
    rc = rs__xfer_recv(w, head, off, len, &in, RS_RECV_COPY);
  }
  w->sim.route = RS_ROUTE_LINK;
  return rc;
}

/* The rounds: the reduce of segment k beside the multicast of segment
 * k - NVLS_LAG, so that the two phases overlap on the links as NCCL's
 * separate warps overlap them. */
static int nvls_bucket(rs_worker_t *w) {
  const size_t segs = w->segs_per_chunk;
  const rs_nvls_cut_t cut = {segs, 0, 1};
  const int mean = w->op == RS_OP_AVG && !w->average;
  int rc;
  if ((rc = rs__xfer_step(w, RS_PHASE_REDUCE_SCATTER, 0, 0, 1)))
    return rc;
  for (size_t k = 0; k < segs + NVLS_LAG; k++) {
    if (k < segs && (rc = rs__nvls_reduce_round(w, &cut, k, mean)))
      return rc;
    if (k == NVLS_LAG && (rc = rs__xfer_step(w, RS_PHASE_ALL_GATHER, 0, 1, 1)))
      return rc;
    if (k >= NVLS_LAG && (rc = rs__nvls_multicast_round(w, &cut, k - NVLS_LAG)))
      return rc;
  }
  return RS_OK;
}

void rs__nvls_sim_reduce_round(rs_simrun_t *s, int first, int G, size_t elems,
                               const rs_nvls_cut_t *cut, size_t k) {
  const size_t seg = rs__nvls_seg(cut, k);
  size_t len;
  for (int l = 0; l < G; l++) {
    rs_simclock_t *c = &s->clocks[first + l];
    c->route = RS_ROUTE_SWITCH;
    for (int d = 1; d < G; d++) { /* (puts: the switch keeps the latest) */
      const int head = rs__nvls_head(G, l, d);
      uint64_t depart, arrive, wire;
      len = rs__nvls_piece(elems, G, cut, head, k).len;
      rs__sim_send(c, first + head, s->step, len * s->elem_size, seg, &depart,
                   &arrive, &wire);
      if (arrive > s->clocks[first + head].switch_ready)
        s->clocks[first + head].switch_ready = arrive;
    }
    c->route = RS_ROUTE_LINK;
    len = rs__nvls_piece(elems, G, cut, l, k).len;
    rs__sim_switch_put(c, s->step, len * s->elem_size, seg);
  }
  for (int l = 0; l < G; l++) {
    len = rs__nvls_piece(elems, G, cut, l, k).len;
    rs__sim_switch_result(&s->clocks[first + l], len * s->elem_size, seg);
    if (s->clocks[first + l].clock > s->bound)
      s->over = 1;
  }
}

void rs__nvls_sim_multicast_round(rs_simrun_t *s, int first, int G,
                                  size_t elems, const rs_nvls_cut_t *cut,
                                  size_t k) {
  const size_t seg = rs__nvls_seg(cut, k);
  size_t len;
  for (int l = 0; l < G; l++) { /* (one send: its copies are free) */
    len = rs__nvls_piece(elems, G, cut, l, k).len;
    rs__simrun_send_seg(s, first + l, first + rs__nvls_to(G, l, 1), len, seg);
  }
  for (int l = 0; l < G; l++) {
    s->clocks[first + l].route = RS_ROUTE_MULTICAST;
    for (int d = 1; d < G; d++)
      rs__simrun_recv(s, first + l, first + rs__nvls_from(G, l, d), 0);
    s->clocks[first + l].route = RS_ROUTE_LINK;
  }
}

/* One bucket on simulated clocks alone, round by round as the threads run
 * it (algo.h). */
static void sim_bucket(rs_simrun_t *s, size_t elems, size_t segs) {
  const int W = s->shape.workers;
  const rs_nvls_cut_t cut = {segs, 0, 1};
  rs__simrun_step(s);
  for (size_t k = 0; k < segs + NVLS_LAG && !rs__simrun_stopped(s); k++) {
    if (k < segs)
      rs__nvls_sim_reduce_round(s, 0, W, elems, &cut, k);
    if (k == NVLS_LAG)
      rs__simrun_step(s);
    if (k >= NVLS_LAG)
      rs__nvls_sim_multicast_round(s, 0, W, elems, &cut, k - NVLS_LAG);
  }
}

/* Everyone to everyone: the heads are every GPU. */
static int peers(rs_shape_t shape, int rank, int *out) {
  int n = 0;
  for (int d = 1; d < shape.workers; d++)
    out[n++] = rs__nvls_to(shape.workers, rank, d);
  return n;
}

static int steps(rs_shape_t shape, rs_collective_t collective) {
  (void)shape, (void)collective;
  return 2;
}

/* In each step, everyone sends to everyone. */
static int sends(rs_shape_t shape, int step, int rank, int *dst, int max) {
  (void)step;
  int n = 0;
  for (int d = 1; d < shape.workers && n < max; d++)
    dst[n++] = rs__nvls_to(shape.workers, rank, d);
  return n;
}

/* A GPU receives W-1 copies a segment of its shard, and W-1 sums. */
static size_t messages(rs_shape_t shape, int rank, size_t elems, size_t segs,
                       size_t cap, rs_collective_t collective) {
  (void)rank, (void)elems, (void)cap, (void)collective;
  return 2 * (size_t)(shape.workers - 1) * segs;
}

/* Every message is one segment of a shard: the ring's. */
static size_t message_elems(rs_shape_t shape, int from, int to, size_t elems,
                            size_t segs, size_t cap) {
  (void)from, (void)to, (void)cap;
  const size_t W = (size_t)shape.workers;
  const size_t shard = elems / W + (elems % W != 0);
  return shard ? (shard + segs - 1) / segs : 0;
}

/* A head adds W-1 copies into its own, one after another. */
static int depth(rs_shape_t shape) { return shape.workers - 1; }

/* The prediction: one bucket alone on simulated clocks (nvls runs only
 * on its switch's topology, which has no closed formula). */
static uint64_t predict(const rs_netmodel_t *m, rs_shape_t shape, size_t elems,
                        size_t segs, size_t cap, size_t elem_size) {
  (void)segs;
  return rs__algo_predict_alone(&rs__algo_nvls, m, shape, elems, cap,
                                elem_size);
}

/* --explain's narration (algo/narrate.h). */
static void narrate(rs_narrator_t *n, int mean) {
  const int W = n->workers;
  char title[64];
  rs__narr_say(n,
               "\nreduce: 1 step; every GPU puts its copy of each shard into "
               "the NVLink switch for the shard's head, and the switch sends "
               "the sum down to the head. Here the head adds them, its own "
               "first, then the GPU before it, the one before that, ... "
               "(NVIDIA does not say in which order the switch adds): told "
               "as %d round%s, one copy a head.\n",
               W - 1, W == 2 ? "" : "s");
  for (int d = 1; d < W; d++) {
    rs__narr_begin(n);
    for (int j = 0; j < W; j++) {
      const int head = rs__nvls_head(W, j, d);
      rs__narr_send(n, j, head, head, head + 1,
                    d == W - 1 && mean ? RS_RECV_REDUCE_MEAN
                                       : RS_RECV_REDUCE);
    }
    snprintf(title, sizeof title, "reduce through the switch, round %d", d);
    rs__narr_end(n, title);
  }
  rs__narr_owners(n, "the reduce");
  rs__narr_say(n, "\nmulticast: 1 step; each head sends its shard's sum "
                  "into the switch once, which writes it to every GPU: told "
                  "as %d round%s, one copy a head. (On the clock a segment's "
                  "multicast runs beside the next segment's reduce.)\n",
               W - 1, W == 2 ? "" : "s");
  for (int d = 1; d < W; d++) {
    rs__narr_begin(n);
    for (int head = 0; head < W; head++)
      rs__narr_send(n, head, rs__nvls_to(W, head, d), head, head + 1,
                    RS_RECV_COPY);
    snprintf(title, sizeof title, "multicast, round %d", d);
    rs__narr_end(n, title);
  }
  rs__narr_say(n,
               "\nEvery GPU now holds every shard %s all %d GPUs: each sent "
               "about its buffer once and received it once, where the ring "
               "moves 2(W-1)/W of it each way.\n",
               n->result, W);
}

/* The narration's columns are the W shards. */
static int layout(rs_shape_t shape, size_t elems, size_t cap, size_t *offsets,
                  const char **word, const char **words) {
  (void)cap;
  const int W = shape.workers;
  *word = "shard";
  *words = "shards";
  for (int c = 0; c <= W; c++)
    offsets[c] = c < W ? rs__chunk_offset(elems, W, c) : elems;
  return W;
}

/* NCCL's NVLS (NCCL_ALGO_NVLS): one node whose NVLink switch reduces. */
const rs_algo_t rs__algo_nvls = {
    .name = "nvls",
    .caps = RS__CAP_NVLS | RS__CAP_NCCL | RS__CAP_STREAM,
    .send_peers = peers,
    .recv_peers = peers,
    .message_elems = message_elems,
    .direct_slots = rs__algo_never_direct,
    .messages = messages,
    .steps = steps,
    .sends = sends,
    .depth = depth,
    .predict = predict,
    .sim_bucket = sim_bucket,
    .title = "NVLink SHARP all-reduce (NCCL's NVLS)",
    .layout = layout,
    .narrate = narrate,
    .run_bucket = nvls_bucket};
