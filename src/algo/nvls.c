/* algo/nvls.c - NVLink SHARP's all-reduce, as one GPU and its node's
 * switch run it (the schedule is in algo/nvls.h): one node whose NVLink
 * switch reduces.
 *
 * The switch is a participant of its own, a thread beside the GPUs'
 * (node n's: participant W + n, xfer.h), and the data moves for real
 * through its queues: GPU j puts its copy of every shard into the switch,
 * which adds each shard's copies (in nvls.h's order) and sends the sum
 * down to the shard's head; each head puts its sum into the switch once,
 * which copies it to every other GPU. The GPUs add nothing of each
 * other's. On the simulated clock the switch is netmodel.h's routes: a
 * put leaves on the sender's link but does not pass the head's port; the
 * head takes the sum once, a latency and its wire time after the last
 * copy reached the switch (the switch stamps the sum with that time: its
 * thread has no clock of its own); and a multicast leaves the head's link
 * once, its copies the switch's, stamped with the head's put. So each GPU
 * sends about S + S/W and receives about S, where the ring moves
 * 2(W-1)/W S each way, and a step is a latency a segment, not W-1.
 *
 * The switch's reduction rate is not charged: NVIDIA publishes none
 * (NCCL's own cost model derates NVLS by nvlsEfficiency 0.85, a
 * calibration: src/graph/tuning.cc). The segments go in rounds, every
 * GPU putting segment k of every shard in before it takes segment k's
 * sum, as NCCL's NVLS kernel works through its chunks, and multicasting
 * segment k - 1 in the same round (NVLS_LAG): the two phases overlap.
 * The switch runs the same rounds: it takes every put of round k pass by
 * pass (each GPU's d-th put in pass d, so no GPU waits on a queue the
 * switch is not about to empty, whatever the slots), sends the sums, then
 * takes the heads' multicasts of segment k - 1 and copies them out.
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

int rs__nvls_reduce_round(rs_worker_t *w, const rs_nvls_cut_t *cut, size_t k) {
  const int W = w->workers, r = w->rank;
  const int me = rs__group_worker(&w->group, r); /* (the run's worker) */
  const int first = me - r;                      /* (its node's first) */
  const int seg = (int)rs__nvls_seg(cut, k);
  size_t off, len;
  int rc = RS_OK;
  w->sim.route = RS_ROUTE_SWITCH;
  for (int d = 1; d <= W && !rc; d++) { /* (d = W: its own shard, last) */
    const int head = rs__nvls_head(W, r, d);
    const rs_tag_t put = {RS_PHASE_REDUCE_SCATTER, 0, head, seg, me, 1};
    shard_seg(w, cut, head, k, &off, &len);
    rc = rs__xfer_put(w, off, len, &put);
  }
  w->sim.route = RS_ROUTE_LINK;
  shard_seg(w, cut, r, k, &off, &len);
  const rs_tag_t sum = {RS_PHASE_REDUCE_SCATTER, 0, r, seg, first, W};
  if (!rc)
    rc = rs__xfer_take(w, off, len, &sum, 1); /* (the switch's sum) */
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
  if (W > 1) /* (once: the switch makes the copies) */
    rc = rs__xfer_put(w, off, len, &out);
  w->sim.route = RS_ROUTE_MULTICAST; /* (a copy: no segment of its own) */
  for (int d = 1; d < W && !rc; d++) {
    const int head = rs__nvls_from(W, r, d);
    const rs_tag_t in = {RS_PHASE_ALL_GATHER, 0, head, seg, 0, all};
    shard_seg(w, cut, head, k, &off, &len);
    rc = rs__xfer_take(w, off, len, &in, 0);
  }
  w->sim.route = RS_ROUTE_LINK;
  return rc;
}

/* The switch sw's node: its G GPUs, the first of them. */
static int switch_first(const rs_worker_t *sw) {
  return (sw->rank - sw->shape.workers) * sw->shape.gpus;
}

int rs__nvls_switch_reduce_round(rs_worker_t *sw, const rs_nvls_cut_t *cut,
                                 size_t k, int mean) {
  const int G = sw->workers, first = switch_first(sw);
  const int seg = (int)rs__nvls_seg(cut, k);
  rs_sim_times_t got = {0};
  int rc = RS_OK;
  for (int i = 0; i < G; i++)
    sw->held[i] = (rs_sim_times_t){0};
  /* Pass d takes each GPU j's d-th put, its copy of shard j + d: so shard
   * i's copies come in from GPU i - 1, i - 2, ..., i + 1, and the head's
   * own last (nvls.h); the first is copied, the others added, the last
   * add divides for mean. */
  for (int d = 1; d <= G && !rc; d++)
    for (int j = 0; j < G && !rc; j++) {
      const int head = rs__nvls_head(G, j, d);
      const rs_nvls_piece_t p = rs__nvls_piece(sw->elems, G, cut, head, k);
      const rs_part_t put = {
          first + j,
          p.off,
          p.len,
          {RS_PHASE_REDUCE_SCATTER, 0, head, seg, first + j, 1}};
      rc = rs__xfer_switch_take(sw, &put,
                                d == 1           ? RS_RECV_COPY
                                : d == G && mean ? RS_RECV_REDUCE_MEAN
                                                 : RS_RECV_REDUCE,
                                &got);
      if (got.arrive > sw->held[head].arrive)
        sw->held[head].arrive = got.arrive;
    }
  /* Each sum down to its head, stamped with when the last copy was in
   * (the head's clock adds the way down: rs__xfer_take). */
  for (int i = 0; i < G && !rc; i++) {
    const rs_nvls_piece_t p = rs__nvls_piece(sw->elems, G, cut, i, k);
    const rs_part_t sum = {first + i,
                           p.off,
                           p.len,
                           {RS_PHASE_REDUCE_SCATTER, 0, i, seg, first, G}};
    sw->held[i].depart = sw->held[i].arrive;
    rc = rs__xfer_switch_give(sw, &sum, &sw->held[i]);
  }
  return rc;
}

int rs__nvls_switch_multicast_round(rs_worker_t *sw, const rs_nvls_cut_t *cut,
                                    size_t k) {
  const int G = sw->workers, first = switch_first(sw), all = sw->shape.workers;
  const int seg = (int)rs__nvls_seg(cut, k);
  int rc = RS_OK;
  if (G < 2) /* (nobody to copy to: no head puts) */
    return RS_OK;
  for (int l = 0; l < G && !rc; l++) { /* (every head's, held) */
    const rs_nvls_piece_t p = rs__nvls_piece(sw->elems, G, cut, l, k);
    const rs_part_t in = {
        first + l, p.off, p.len, {RS_PHASE_ALL_GATHER, 0, l, seg, 0, all}};
    rc = rs__xfer_switch_take(sw, &in, RS_RECV_COPY, &sw->held[l]);
  }
  /* GPU j takes the heads' in its order, j - 1, j - 2, ..., each copy
   * stamped with its head's put (the switch copies it on the way). */
  for (int j = 0; j < G && !rc; j++)
    for (int d = 1; d < G && !rc; d++) {
      const int head = rs__nvls_from(G, j, d);
      const rs_nvls_piece_t p = rs__nvls_piece(sw->elems, G, cut, head, k);
      const rs_part_t out = {
          first + j, p.off, p.len, {RS_PHASE_ALL_GATHER, 0, head, seg, 0, all}};
      rc = rs__xfer_switch_give(sw, &out, &sw->held[head]);
    }
  return rc;
}

/* The rounds: the reduce of segment k beside the multicast of segment
 * k - NVLS_LAG, so that the two phases overlap on the links as NCCL's
 * separate warps overlap them. */
static int nvls_bucket(rs_worker_t *w) {
  const size_t segs = w->segs_per_chunk;
  const rs_nvls_cut_t cut = {segs, 0, 1};
  int rc;
  if ((rc = rs__xfer_step(w, RS_PHASE_REDUCE_SCATTER, 0, 0, 1)))
    return rc;
  for (size_t k = 0; k < segs + NVLS_LAG; k++) {
    if (k < segs && (rc = rs__nvls_reduce_round(w, &cut, k)))
      return rc;
    if (k == NVLS_LAG && (rc = rs__xfer_step(w, RS_PHASE_ALL_GATHER, 0, 1, 1)))
      return rc;
    if (k >= NVLS_LAG && (rc = rs__nvls_multicast_round(w, &cut, k - NVLS_LAG)))
      return rc;
  }
  return RS_OK;
}

/* The switch's part of a bucket: the GPUs' rounds, each round's reduce
 * of all shards, then the multicast of the segment before. */
static int nvls_switch_bucket(rs_worker_t *sw) {
  const size_t segs = sw->segs_per_chunk;
  const rs_nvls_cut_t cut = {segs, 0, 1};
  const int mean = sw->op == RS_OP_AVG && !sw->average;
  int rc;
  for (size_t k = 0; k < segs + NVLS_LAG; k++) {
    if (k < segs && (rc = rs__nvls_switch_reduce_round(sw, &cut, k, mean)))
      return rc;
    if (k >= NVLS_LAG &&
        (rc = rs__nvls_switch_multicast_round(sw, &cut, k - NVLS_LAG)))
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

/* A GPU's edges go to its node's switch and back; the switch's, to and
 * from each of its node's GPUs (rs__nvls_peers). */
static int peers(rs_shape_t shape, int rank, int *out) {
  return rs__nvls_peers(shape, rank, out);
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

/* A segment a GPU takes its shard's sum and W-1 heads' multicast copies;
 * the switch takes each GPU's W puts and each head's sum. */
static size_t messages(rs_shape_t shape, int rank, size_t elems, size_t segs,
                       size_t cap, rs_collective_t collective) {
  (void)elems, (void)cap, (void)collective;
  const size_t W = (size_t)shape.workers;
  return (rank < shape.workers ? W : W * (W + 1)) * segs;
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
               "the NVLink switch, and the switch sends the sum down to the "
               "shard's head. The switch adds them (in ringsim it is a "
               "participant of its own), starting from the copy of the GPU "
               "before the head, then the one before that, ..., the head's "
               "own last (NVIDIA does not say in which order the hardware "
               "adds): told as %d round%s, each shown at the shard's head "
               "as the switch's sum so far.\n",
               W, W == 2 ? "" : "s");
  for (int head = 0; head < W; head++) /* (its own, added last) */
    rs__narr_stash(n, head);
  for (int d = 1; d < W; d++) {
    rs__narr_begin(n);
    for (int j = 0; j < W; j++) {
      const int head = rs__nvls_head(W, j, d);
      rs__narr_send(n, j, head, head, head + 1,
                    d == 1 ? RS_RECV_COPY : RS_RECV_REDUCE);
    }
    snprintf(title, sizeof title, "reduce through the switch, round %d", d);
    rs__narr_end(n, title);
  }
  rs__narr_begin(n);
  for (int head = 0; head < W; head++)
    rs__narr_send(n, head, head, head, head + 1,
                  mean ? RS_RECV_REDUCE_MEAN : RS_RECV_REDUCE);
  rs__narr_end(n, "reduce through the switch: the head's own copy, last");
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
    .run_bucket = nvls_bucket,
    .run_switch = nvls_switch_bucket};
