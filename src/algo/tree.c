/* algo/tree.c - NCCL's double binary tree all-reduce, as one worker runs
 * it.
 *
 * Two binary trees span the W workers (algo/tree.h: how NCCL builds them
 * from each rank's bit pattern). A bucket is cut in two halves: tree 0
 * all-reduces the first, tree 1 the second (one after the other: see
 * Order). Each half
 * moves as H = ceil(W/2) chunks of segs segments (tree.h), segment by
 * segment, so the trees are pipelines: a segment climbs one level while
 * the next one climbs the level below.
 *
 * Reduce (up). For segment i of tree t, a worker receives its children's
 * segment i and folds each into its own: its own data first, then
 * down[0]'s, then down[1]'s, as NCCL's reduceCopy does. Then it sends the
 * sum, which now holds its whole subtree's contributions, to its parent.
 * The root's last fold completes the sum; with op avg (and no pre-division)
 * that fold also divides by W, as NCCL's root applies the postOp
 * (runTreeUpDown's directRecvReduceCopy(..., postOp=true)).
 *
 * Broadcast (down). For segment i of tree t, a worker receives the final
 * value from its parent, copies it over its own and sends it on to its
 * children. Every worker ends with a copy of the root's value, so all
 * buffers are bitwise identical.
 *
 * Order. Every worker runs the same sequence of "sweeps": the reduce of
 * tree 0's segments 0, 1, ..., S-1, then tree 1's; then the broadcast of
 * tree 0's segments, then tree 1's. This is NCCL's runTreeUpDown (the whole
 * reduce, then the whole broadcast), but NCCL runs the two trees at once,
 * on separate channels (separate thread blocks), and ringsim has one thread
 * per worker. Interleaving the trees segment by segment in that one thread
 * couples them: a worker waiting for a child in one tree cannot send its
 * next segment in the other, and two workers that are each other's parent
 * (one in each tree) wait for each other at every segment. On the network
 * model that made every segment cost the trees' depth in latencies (W = 16:
 * 5.5x slower than now). One tree after the other, each is a clean
 * pipeline whose children never wait for their parents; with one outgoing
 * link per worker the reduce loses nothing by it (a worker sends one
 * segment per index in each tree either way); the broadcast would gain from
 * both trees at once only on a machine that sends on two links at once.
 *
 * Why it cannot deadlock, whatever the slot count K >= 1. Each edge has one
 * sender and one receiver, each worker's next operation is fixed by its own
 * program, receives block on one edge and sends block only on a full FIFO.
 * Such a network is determinate: an operation that can proceed stays able
 * to until it does (nobody else can drain its input or fill its output),
 * so if one interleaving runs to the end, every one does. Here is one, with
 * K = 1: run the sweeps one after the other; within a reduce sweep take
 * the workers leaves first (children before parents), within a broadcast
 * sweep root first. In a sweep every message is received by the worker
 * taken after its sender, so each sweep ends with every edge empty, and the
 * next sweep's sends find a free slot. A pair of workers may be linked in
 * both trees (tree 0's child is tree 1's parent, or the same parent): one
 * edge then carries both trees' messages, in sweep order on both sides, and
 * at most one message per sweep. rs_algo_t's sim_bucket plays exactly this
 * interleaving on simulated clocks.
 *
 * The direct transport (the receiver reads the sender's buffer) is safe with
 * any slot count: a worker writes a region after sending it only once, when
 * the broadcast copies the parent's value over the segment it sent up, and
 * the parent sends that value only after it has received, folded and
 * released our segment. The broadcast's regions are never written again in
 * the bucket.
 *
 * Cost. Each worker sends about n/2 elements up per tree it is not the root
 * of, and n/2 to each child down: about n up and n down (a worker is
 * interior, with two children, in one tree), against the ring's 2(W-1)/W
 * n; in exchange a segment crosses about log2 W links instead of 2(W-1)
 * (predict, below).
 *
 * On NCCL's channels (--channels C > 1) each channel runs one of the two
 * trees over its own part of the bucket, as NCCL does ("on NCCL's
 * channels" below; tree.h): the same sweeps, channel by channel.
 *
 * This file is the algorithm alone; moving a segment, and everything around
 * it, is the transfer primitive's (xfer.h).
 */
#include "algo/tree.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "algo/algo.h"
#include "algo/channels.h"
#include "algo/nccl.h"
#include "algo/narrate.h"
#include "net/netmodel.h"
#include "net/xfer.h"

/* The trees' shape: the run's (on nodes, NCCL's chain in each node and
 * trees across), or, run on a group by another algorithm (nvlstree's
 * heads, one a node: xfer.h's rs_group_t), the flat trees of its
 * members. */
static rs_shape_t tree_shape(const rs_worker_t *w) {
  return w->group.stride ? rs__shape_flat(w->workers) : w->shape;
}

/* The tree a worker moves a region along: tree t of channel ch (with one
 * channel, ch 0: the pair's tree t as tree.h builds it). */
typedef struct tree_at {
  rs_shape_t shape;
  int ch, t;
} tree_at_t;

/* Reduce sweep (segment g of a tree): fold the children's segment into
 * ours, own data first, then down[0], down[1]; send the sum to the
 * parent. */
static int reduce_up(rs_worker_t *w, const tree_at_t *q,
                     const rs_tree_seg_t *g) {
  const int r = w->rank;
  int children[RS_TREE_MAX_CHILDREN];
  const int n = rs__tree_ch_children(q->shape, q->ch, q->t, r, children);
  const int parent = rs__tree_ch_parent(q->shape, q->ch, q->t, r);
  const size_t off = g->offset, len = g->len;
  rs_tag_t tag = {
      .phase = RS_PHASE_REDUCE, .chunk = g->chunk, .segment = g->segment};
  for (int i = 0; i < n; i++) {
    rs_recv_action_t action = RS_RECV_REDUCE;
    if (parent < 0 && i == n - 1 && w->op == RS_OP_AVG && !w->average)
      action = RS_RECV_REDUCE_MEAN; /* the root's sum is complete */
    rs__tree_ch_contributors(q->shape, q->ch, q->t, children[i],
                             &tag.contrib_first, &tag.contrib_count);
    int rc = rs__xfer_recv(w, children[i], off, len, &tag, action);
    if (rc)
      return rc;
  }
  if (parent < 0)
    return RS_OK;
  rs__tree_ch_contributors(q->shape, q->ch, q->t, r, &tag.contrib_first,
                           &tag.contrib_count);
  return rs__xfer_send(w, parent, off, len, &tag);
}

/* Broadcast sweep (segment g of a tree): take the parent's final value,
 * pass it to the children. */
static int broadcast_down(rs_worker_t *w, const tree_at_t *q,
                          const rs_tree_seg_t *g) {
  const int W = w->workers, r = w->rank;
  int children[RS_TREE_MAX_CHILDREN], rc;
  const int n = rs__tree_ch_children(q->shape, q->ch, q->t, r, children);
  const int parent = rs__tree_ch_parent(q->shape, q->ch, q->t, r);
  const size_t off = g->offset, len = g->len;
  rs_tag_t tag = {.phase = RS_PHASE_BROADCAST,
                  .chunk = g->chunk,
                  .segment = g->segment,
                  .contrib_first = 0,
                  .contrib_count = W};
  if (parent >= 0 &&
      (rc = rs__xfer_recv(w, parent, off, len, &tag, RS_RECV_COPY)))
    return rc;
  for (int i = 0; i < n; i++)
    if ((rc = rs__xfer_send(w, children[i], off, len, &tag)))
      return rc;
  return RS_OK;
}

/* ---- on NCCL's channels --------------------------------------------------
 * (tree.h: channel c runs tree rs__tree_ch_tree(c), renamed by its
 * chain head, over its own part of the bucket.) The bucket is cut between
 * the channels as the ring's is (rs__rings_part: NCCL's cut), and each
 * channel's part as a tree's half is: H = ceil(W/2) chunks of segs
 * segments, segs as many as keep a segment within the run's cap (the
 * largest part's). Each channel has its own queues on its edges and its
 * own clock, and the busy channels share the worker's ports (netmodel.h,
 * as the ring's do): so the worker moves segment i of every busy channel
 * in turn (channel 0's, then 1's, ...), sweep by sweep, and no channel
 * waits on another's messages on the simulated clock. The deadlock
 * argument of the head comment holds as it is: every worker runs the same
 * sequence of sweeps, each one channel's tree's, on that channel's
 * queues. */
typedef struct tree_chpart {
  int channel, tree; /* its channel, and the tree it runs */
  size_t base, len;  /* its part of the bucket */
} tree_chpart_t;

typedef struct tree_cut {
  int busy;    /* the channels with data (the first ones) */
  size_t segs; /* segments a chunk, every part's */
  tree_chpart_t part[RS_MAX_CHANNELS];
} tree_cut_t;

/* The cut of a bucket of elems elements of elem_size bytes between the
 * shape's C channels under protocol proto (messages of at most cap
 * elements). */
static void cut_channels(rs_shape_t shape, size_t elems, size_t elem_size,
                         rs_protocol_t proto, size_t cap, tree_cut_t *cut) {
  const int C = rs__tree_channels(shape), H = rs__tree_chunks(shape.workers);
  size_t most = 0;
  cut->busy = rs__rings_busy(elems, elem_size, C, proto);
  for (int c = 0; c < cut->busy; c++) {
    tree_chpart_t *p = &cut->part[c];
    p->channel = c;
    p->tree = rs__tree_ch_tree(shape, c);
    rs__rings_part(elems, elem_size, C, proto, c, &p->base, &p->len);
    most = p->len > most ? p->len : most;
  }
  cut->segs = rs_segs_per_chunk(most, H, cap ? cap : 1, 1);
}

/* Segment `index` (0 .. H segs - 1) of a channel's part: its region in
 * the bucket and its tag (tree t's chunk c is tagged t H + c, as a
 * half's). */
static rs_tree_seg_t part_segment(const tree_chpart_t *p, int workers,
                                  size_t segs, size_t index) {
  const int H = rs__tree_chunks(workers);
  const int c = (int)(index / segs);
  rs_tree_seg_t g = {.chunk = p->tree * H + c, .segment = (int)(index % segs)};
  rs__segment(p->len, H, segs, c, (size_t)g.segment, &g.offset, &g.len);
  g.offset += p->base;
  return g;
}

/* Has position p a parent or a child on another node in tree t? (A
 * channel's worker at position p is on p's node: rs__tree_ch_worker.) */
static int crosses_nodes(rs_shape_t shape, int t, int p) {
  int peers[RS_TREE_MAX_CHILDREN + 1];
  const int G = shape.gpus;
  int n = rs__tree_children_in(shape, t, p, peers);
  peers[n++] = rs__tree_parent_in(shape, t, p);
  for (int i = 0; i < n; i++)
    if (peers[i] >= 0 && peers[i] / G != p / G)
      return 1;
  return 0;
}

/* Of the busy channels, on how many worker r sends to another node (so
 * through its NIC: netmodel.h's rs__sim_busy). */
static int off_node(rs_shape_t shape, const tree_cut_t *cut, int r) {
  int n = 0;
  for (int c = 0; c < cut->busy && shape.gpus < shape.workers; c++)
    n += crosses_nodes(shape, cut->part[c].tree,
                       rs__tree_ch_pos(shape, cut->part[c].channel, r));
  return n;
}

static int channels_bucket(rs_worker_t *w) {
  tree_cut_t cut;
  int rc;
  cut_channels(w->shape, w->elems, w->elem_size, w->sim.proto, w->seg_cap,
               &cut);
  const size_t S = rs__tree_segments(w->workers, cut.segs);
  rs__sim_busy(&w->sim, cut.busy, off_node(w->shape, &cut, w->rank));
  for (int phase = 0; phase < 2; phase++) {
    const rs_phase_t ph = phase == 0 ? RS_PHASE_REDUCE : RS_PHASE_BROADCAST;
    if ((rc = rs__xfer_step(w, ph, 0, rs__tree_global_step(ph), 1)))
      return rc;
    /* the parts climb (then descend) their trees, segment by segment,
     * each segment on every busy channel in turn */
    for (size_t i = 0; i < S; i++)
      for (int c = 0; c < cut.busy; c++) {
        const tree_chpart_t *p = &cut.part[c];
        const tree_at_t q = {w->shape, p->channel, p->tree};
        const rs_tree_seg_t g = part_segment(p, w->workers, cut.segs, i);
        w->channel = p->channel; /* (its queues, its clock) */
        rc = phase == 0 ? reduce_up(w, &q, &g) : broadcast_down(w, &q, &g);
        if (rc)
          return rc;
      }
  }
  w->channel = 0;
  return RS_OK;
}

/* One bucket: the reduce over every segment of both trees, then the
 * broadcast, each as one --inject step (on channels: every channel's
 * tree). */
static int tree_bucket(rs_worker_t *w) {
  const size_t S = rs__tree_segments(w->workers, w->segs_per_chunk);
  const rs_shape_t shape = tree_shape(w);
  int rc;
  if (w->workers < 2)
    return RS_OK;
  if (rs__tree_channels(shape) > 1)
    return channels_bucket(w);
  /* Reduce: the halves climb their trees, segment by segment. */
  if ((rc = rs__xfer_step(w, RS_PHASE_REDUCE, 0,
                          rs__tree_global_step(RS_PHASE_REDUCE), 1)))
    return rc;
  for (int t = 0; t < 2; t++) {
    const tree_at_t q = {shape, 0, t};
    for (size_t i = 0; i < S; i++) {
      const rs_tree_seg_t g =
          rs__tree_segment(w->elems, w->workers, w->segs_per_chunk, t, i);
      if ((rc = reduce_up(w, &q, &g)))
        return rc;
    }
  }
  /* Now each root holds its half's result. Broadcast it down. */
  if ((rc = rs__xfer_step(w, RS_PHASE_BROADCAST, 0,
                          rs__tree_global_step(RS_PHASE_BROADCAST), 1)))
    return rc;
  for (int t = 0; t < 2; t++) {
    const tree_at_t q = {shape, 0, t};
    for (size_t i = 0; i < S; i++) {
      const rs_tree_seg_t g =
          rs__tree_segment(w->elems, w->workers, w->segs_per_chunk, t, i);
      if ((rc = broadcast_down(w, &q, &g)))
        return rc;
    }
  }
  return RS_OK;
}

/* The most edges from a root to a leaf of tree t. */
static int height(rs_shape_t shape, int t) {
  int most = 0;
  for (int r = 0; r < shape.workers; r++) {
    const int d = rs__tree_depth_in(shape, t, r);
    most = d > most ? d : most;
  }
  return most;
}

/* The cost formula, an estimate of the schedule above on a uniform network
 * (alpha latency, beta bandwidth, gamma reduce rate; s the bytes of one
 * segment, n/(2 H segs); S = H segs segments per tree; d the deeper tree's
 * depth). Each tree's reduce and broadcast is a pipeline of d stages,
 * filled once and then paced by its busiest worker:
 *   reduce:    d (alpha + s/beta) + (S-1) c max(s/beta, s/gamma) + 2 s/gamma
 *   broadcast: d (alpha + s/beta) + (S-1) c s/beta
 * (in the reduce a worker takes in and folds c segments per segment index,
 * one after the other through its one incoming port; in the broadcast it
 * sends to its c children one after the other on its one outgoing link;
 * c is the most children any worker has: 2, or 1 when W is 2 or 3;
 * netmodel.h). The trees run one after the other, so the total is twice
 * their sum. sim_bucket plays the exact schedule. */
static uint64_t predict_channels(const rs_netmodel_t *m, rs_shape_t shape,
                                 size_t elems, size_t cap, size_t elem_size);

static uint64_t predict(const rs_netmodel_t *m, rs_shape_t shape, size_t elems,
                        size_t segs, size_t cap, size_t elem_size) {
  const int workers = shape.workers;
  if (!m->enabled || workers < 2)
    return 0;
  if (rs__tree_channels(shape) > 1)
    return predict_channels(m, shape, elems, cap, elem_size);
  const uint64_t S = rs__tree_segments(workers, segs);
  const int d0 = height(shape, 0), d1 = height(shape, 1);
  const uint64_t d = (uint64_t)(d0 > d1 ? d0 : d1);
  uint64_t c = 1;
  for (int t = 0; t < 2; t++)
    for (int r = 0; r < workers; r++) {
      int children[RS_TREE_MAX_CHILDREN];
      uint64_t k = (uint64_t)rs__tree_children_in(shape, t, r, children);
      c = k > c ? k : c;
    }
  /* the largest segment, as the ring's */
  const size_t seg_bytes = (elems + 2 * S - 1) / (2 * S) * elem_size;
  const uint64_t wire = rs__net_wire_ns(m, seg_bytes);
  const uint64_t fold = rs__net_ns(seg_bytes, m->reduce_rate);
  const uint64_t up = d * (m->link.latency_ns + wire) +
                      (S - 1) * c * (wire > fold ? wire : fold) + 2 * fold;
  const uint64_t down = d * (m->link.latency_ns + wire) + (S - 1) * c * wire;
  return 2 * (up + down);
}

/* On channels: each busy channel one tree of the formula above over its
 * part (S = H segs' segments of it, segs its cut's), a segment taking busy
 * times its wire time (the channels share the ports: netmodel.h), the
 * channels side by side: the slowest's time. */
static uint64_t predict_channels(const rs_netmodel_t *m, rs_shape_t shape,
                                 size_t elems, size_t cap, size_t elem_size) {
  const int workers = shape.workers;
  tree_cut_t cut;
  cut_channels(shape, elems, elem_size, m->proto, cap, &cut);
  const uint64_t S = rs__tree_segments(workers, cut.segs);
  uint64_t most = 0;
  for (int k = 0; k < cut.busy; k++) {
    const int t = cut.part[k].tree;
    const uint64_t d = (uint64_t)height(shape, t);
    uint64_t c = 1;
    for (int r = 0; r < workers; r++) {
      int children[RS_TREE_MAX_CHILDREN];
      uint64_t n = (uint64_t)rs__tree_children_in(shape, t, r, children);
      c = n > c ? n : c;
    }
    const size_t seg_bytes = (cut.part[k].len + S - 1) / S * elem_size;
    const uint64_t wire =
        rs__sat_mul(rs__net_wire_ns(m, seg_bytes), (uint64_t)cut.busy);
    const uint64_t fold = rs__net_ns(seg_bytes, m->reduce_rate);
    const uint64_t up = d * (m->link.latency_ns + wire) +
                        (S - 1) * c * (wire > fold ? wire : fold) + 2 * fold;
    const uint64_t down = d * (m->link.latency_ns + wire) + (S - 1) * c * wire;
    most = up + down > most ? up + down : most;
  }
  return most;
}

/* The workers of tree t of channel ch, root first, each after its parent
 * (breadth first), into order[W]. */
static void top_down(rs_shape_t shape, int ch, int t, int *order) {
  int n = 0;
  order[n++] = rs__tree_ch_root(shape, ch, t);
  for (int i = 0; i < n; i++) {
    int children[RS_TREE_MAX_CHILDREN];
    int k = rs__tree_ch_children(shape, ch, t, order[i], children);
    for (int j = 0; j < k; j++)
      order[n++] = children[j];
  }
}

/* A worker of a tree, as a sweep visits it: its parent (-1 at the root)
 * and its children, worked out once a bucket (every sweep visits each). */
typedef struct sweep_at {
  int x, parent, n, children[RS_TREE_MAX_CHILDREN];
} sweep_at_t;

/* The simulation's scratch: both trees' workers top down (2W ranks),
 * then each one's edges in that order (2W); on C channels, each
 * channel's tree's (C W of each). */
static size_t sim_scratch(rs_shape_t shape) {
  const int workers = shape.workers, C = rs__tree_channels(shape);
  return (size_t)(C > 2 ? C : 2) * (size_t)workers *
         (sizeof(int) + sizeof(sweep_at_t));
}

/* Segment i of tree t's sweep in phase 0 (reduce) or 1 (broadcast) on
 * simulated clocks: every worker in the order of the head comment, leaves
 * first up, root first down (at: tree t's workers top down). */
static void sim_sweep(rs_simrun_t *s, const sweep_at_t *at, int phase,
                      size_t len) {
  const int W = s->shape.workers;
  for (int k = 0; k < W; k++) {
    const sweep_at_t *a = &at[phase == 0 ? W - 1 - k : k];
    const int x = a->x, parent = a->parent, n = a->n;
    const int *children = a->children;
    if (phase == 0) { /* up: mailbox x holds x's sum on its way up */
      for (int j = 0; j < n; j++)
        rs__simrun_recv(s, x, children[j], len);
      if (parent >= 0)
        rs__simrun_send(s, x, parent, len);
    } else { /* down: mailbox x holds the parent's value on its way to x */
      if (parent >= 0)
        rs__simrun_recv(s, x, x, 0);
      /* one message per child, one after the other on x's link */
      for (int j = 0; j < n; j++)
        rs__simrun_post(s, x, children[j], len);
    }
  }
}

/* Can tree t's reduce, `left` segments from its end, still end within the
 * simulation's bound? Its root takes each of them from each child through
 * its one port, which moves on by at least each message's time on the
 * wire (netmodel.h's rs__sim_recv), and no segment is shorter than
 * `shortest`: so the root's port has that much still to come, and the
 * bucket ends no sooner. A bounded simulation (rs_auto_choose's argmin)
 * stops when it cannot. */
static int reduce_can_end(rs_simrun_t *s, int t, size_t left, size_t shortest) {
  const int root = rs__tree_root_in(s->shape, t);
  int children[RS_TREE_MAX_CHILDREN];
  const int n = rs__tree_children_in(s->shape, t, root, children);
  uint64_t per = 0; /* the root's port, per segment */
  for (int j = 0; j < n; j++)
    per += rs__sim_wire_ns(&s->clocks[children[j]], root, s->step,
                           shortest * s->elem_size);
  const uint64_t port = s->clocks[root].in_free;
  if (port > s->bound)
    return 0;
  return per == 0 || (uint64_t)left <= (s->bound - port) / per;
}

/* One bucket on simulated clocks alone, no data (algo.h): the
 * sweep-by-sweep interleaving of the head comment, in which every worker
 * makes the same clock calls with the same arrival times as in a threaded
 * run. */
/* The workers of tree t of channel ch as the sweeps visit them, top down,
 * into at[W] (order: W ranks of scratch). */
static void sweep_order(rs_shape_t shape, int ch, int t, int *order,
                        sweep_at_t *at) {
  top_down(shape, ch, t, order);
  for (int k = 0; k < shape.workers; k++) {
    sweep_at_t *a = &at[k];
    a->x = order[k];
    a->parent = rs__tree_ch_parent(shape, ch, t, a->x);
    a->n = rs__tree_ch_children(shape, ch, t, a->x, a->children);
  }
}

/* Channel c of cut alone, both phases from step0 on, its sweeps of one
 * segment length certified repeats (algo.h): every worker's clock, link
 * and port stand for the channel's while it plays (s->live; netmodel.h's
 * on_channels clocks keep them equal), and the latest of all comes back
 * after (into all). */
static void sim_channel_alone(rs_simrun_t *s, const tree_cut_t *cut, int c,
                              const sweep_at_t *at, int step0,
                              rs_simstate_t *all) {
  const int W = s->shape.workers;
  const tree_chpart_t *p = &cut->part[c];
  const size_t S = rs__tree_segments(W, cut->segs);
  rs__simrun_channel_alone(s, p->channel, step0);
  for (int phase = 0; phase < 2; phase++) {
    rs__simrun_step(s);
    rs_simcert_t cert = RS_SIMCERT_INIT;
    size_t last = 0;
    for (size_t i = 0; i < S && !rs__simrun_stopped(s); i++) {
      const size_t len = part_segment(p, W, cut->segs, i).len;
      if (i == 0 || i > last)
        for (last = i; last + 1 < S &&
                       part_segment(p, W, cut->segs, last + 1).len == len;
             last++)
          ;
      rs__simcert_begin(s, &cert, i, last);
      sim_sweep(s, at, phase, len);
      i = rs__simcert_end(s, &cert, i);
    }
  }
  rs__simrun_channel_fold(s, all);
}

/* Is channel part b's tree part a's with the workers relabelled, a's
 * worker r being b's perm[r] (W of them, filled in), and b's part as
 * long? Channels of one tree differ only in the GPU that heads their
 * chain in every node (rs__tree_ch_worker): each is the other turned
 * within every node, and moves as it did where the model cannot tell
 * the GPUs apart (simrun.h's rs__simrun_image). */
static int image_of(rs_shape_t shape, const tree_chpart_t *a,
                    const tree_chpart_t *b, int *perm) {
  if (a->tree != b->tree || a->len != b->len)
    return 0;
  for (int r = 0; r < shape.workers; r++)
    perm[r] = rs__tree_ch_worker(shape, b->channel,
                                 rs__tree_ch_pos(shape, a->channel, r));
  return 1;
}

/* Every worker's busy channels, and of them those it sends off node on
 * (off_node's, netmodel.h's rs__sim_busy): whether a position crosses
 * nodes depends on its tree alone, so each tree's positions are asked
 * once. RS_OK or RS_ENOMEM. */
static int off_nodes(rs_simrun_t *s, const tree_cut_t *cut) {
  const rs_shape_t shape = s->shape;
  const int W = shape.workers, many = shape.gpus < W;
  uint8_t *crosses = many ? malloc(2 * (size_t)W) : NULL;
  if (many && !crosses)
    return RS_ENOMEM;
  for (int t = 0; many && t < 2; t++)
    for (int p = 0; p < W; p++)
      crosses[(size_t)t * W + p] = (uint8_t)crosses_nodes(shape, t, p);
  for (int r = 0; r < W; r++) {
    int n = 0;
    for (int c = 0; many && c < cut->busy; c++)
      n += crosses[(size_t)cut->part[c].tree * W +
                   rs__tree_ch_pos(shape, cut->part[c].channel, r)];
    rs__sim_busy(&s->clocks[r], cut->busy, n);
  }
  free(crosses);
  return RS_OK;
}

/* On channels. A threaded worker runs channels_bucket's order, each
 * segment on every busy channel in turn; but the channels share nothing
 * on the clocks but maxima (netmodel.h), so each is played alone, as the
 * ring's are (ring.c), a step's straggler on its clock alone (netmodel.h's
 * alone), its repeats certified: W^2 clock calls a channel become about
 * W. */
static void sim_channels(rs_simrun_t *s, size_t elems) {
  const rs_shape_t shape = s->shape;
  const int W = shape.workers;
  tree_cut_t cut;
  cut_channels(shape, elems, s->elem_size, s->net->proto, s->cap, &cut);
  int *order = s->algo_mem;
  sweep_at_t *at = (sweep_at_t *)(order + (size_t)cut.busy * W);
  rs_simstate_t *all = malloc((size_t)W * sizeof *all);
  /* (channels' images: every worker's state at the start, and a
   * relabelling) */
  rs_simstate_t *start = malloc((size_t)W * sizeof *start);
  int *perm = malloc((size_t)W * sizeof *perm);
  if (!all || !start || !perm || off_nodes(s, &cut)) {
    free(all);
    free(start);
    free(perm);
    s->nomem = 1;
    return;
  }
  const int step0 = s->step;
  for (int r = 0; r < W; r++)
    start[r] = all[r] = rs__simstate_of(&s->clocks[r]);
  /* (each channel's order as it comes to play: a bounded simulation that
   * stops in the first needs no other's) */
  int done[RS_MAX_CHANNELS] = {0};
  for (int c = 0; c < cut.busy && !rs__simrun_stopped(s); c++) {
    if (done[c])
      continue;
    sweep_order(shape, cut.part[c].channel, cut.part[c].tree,
                order + (size_t)c * W, at + (size_t)c * W);
    sim_channel_alone(s, &cut, c, at + (size_t)c * W, step0, all);
    s->played++;
    for (int j = c + 1; start && j < cut.busy && !rs__simrun_stopped(s); j++)
      if (!done[j] && image_of(shape, &cut.part[c], &cut.part[j], perm) &&
          rs__simrun_image(s, start, perm, step0 + 1)) {
        rs__simrun_channel_fold_image(s, perm, all);
        s->images++;
        done[j] = 1;
      }
  }
  rs__simrun_channels_done(s, all);
  free(all);
  free(start);
  free(perm);
}

static void sim_bucket(rs_simrun_t *s, size_t elems, size_t segs) {
  const int W = s->shape.workers;
  const size_t S = rs__tree_segments(W, segs);
  if (rs__tree_channels(s->shape) > 1) {
    sim_channels(s, elems);
    return;
  }
  int *order = s->algo_mem;
  sweep_at_t *at = (sweep_at_t *)(order + 2 * W);
  top_down(s->shape, 0, 0, order);
  top_down(s->shape, 0, 1, order + W);
  for (int k = 0; k < 2 * W; k++) {
    const int t = k / W;
    sweep_at_t *a = &at[k];
    a->x = order[k];
    a->parent = rs__tree_parent_in(s->shape, t, a->x);
    a->n = rs__tree_children_in(s->shape, t, a->x, a->children);
  }
  for (int phase = 0; phase < 2; phase++) {
    rs__simrun_step(s);
    for (int t = 0; t < 2; t++) {
      /* (no segment of tree t is shorter than its half's shortest chunk
       * cut into segs) */
      const size_t shortest = elems / 2 / (size_t)rs__tree_chunks(W) / segs;
      /* sweeps of one segment length are one round again (algo.h's
       * certified repeats) */
      rs_simcert_t cert = RS_SIMCERT_INIT;
      size_t last = 0;
      for (size_t i = 0; i < S && !rs__simrun_stopped(s); i++) {
        const size_t len = rs__tree_segment(elems, W, segs, t, i).len;
        if (i == 0 || i > last)
          for (last = i;
               last + 1 < S &&
               rs__tree_segment(elems, W, segs, t, last + 1).len == len;
               last++)
            ;
        rs__simcert_begin(s, &cert, i, last);
        sim_sweep(s, at + t * W, phase, len);
        const size_t next = rs__simcert_end(s, &cert, i);
        i = next;
        if (phase == 0 && s->bound != UINT64_MAX && i + 1 < S &&
            !reduce_can_end(s, t, S - 1 - i, shortest))
          s->over = 1;
      }
    }
  }
}

/* The cut of a bucket as the shape's rings say (its elements' bytes and
 * protocol: algo/channels.h); without them, every channel busy with the
 * whole bucket: bounds. */
static void shape_cut(rs_shape_t shape, size_t elems, size_t cap,
                      tree_cut_t *cut) {
  const rs_rings_t *g = shape.rings;
  if (g) {
    cut_channels(shape, elems, g->elem_size, g->proto, cap, cut);
    return;
  }
  const int C = rs__shape_channels(shape);
  cut->busy = C;
  for (int c = 0; c < C; c++)
    cut->part[c] = (tree_chpart_t){c, rs__tree_ch_tree(shape, c), 0, elems};
  cut->segs = rs_segs_per_chunk(elems, rs__tree_chunks(shape.workers),
                                cap ? cap : 1, 1);
}

/* Its simulation's clock calls: every worker, in both trees' sweeps of
 * every segment up and down (on channels about as many: the channels'
 * parts are cut into segments of the same cap). */
static double sim_work(rs_shape_t shape, size_t elems, size_t segs) {
  (void)elems;
  return 4.0 * (double)rs__tree_segments(shape.workers, segs) *
         (double)shape.workers;
}

/* On channels: each channel's tree's parent and children, each once a
 * channel, channel by channel; their channels into peer_channel (NULL:
 * not wanted). */
static int channel_peers(rs_shape_t shape, int rank, int *peers,
                         int *peer_channel) {
  const int C = rs__tree_channels(shape);
  int n = 0;
  for (int c = 0; c < C && shape.workers > 1; c++) {
    const int t = rs__tree_ch_tree(shape, c), first = n;
    int cand[RS_TREE_MAX_CHILDREN + 1];
    int k = rs__tree_ch_children(shape, c, t, rank, cand);
    const int parent = rs__tree_ch_parent(shape, c, t, rank);
    if (parent >= 0)
      cand[k++] = parent;
    for (int i = 0; i < k; i++) {
      int seen = 0;
      for (int j = first; j < n; j++)
        seen |= peers[j] == cand[i];
      if (seen)
        continue;
      if (peer_channel)
        peer_channel[n] = c;
      peers[n++] = cand[i];
    }
  }
  return n;
}

/* Parent and children in both trees, each worker once: the edges run both
 * ways (reduce up, broadcast down), so the send and receive peers are the
 * same set. On channels, each channel's (channel_peers). */
static int neighbours(rs_shape_t shape, int rank, int *peers) {
  const int workers = shape.workers;
  int n = 0;
  if (rs__tree_channels(shape) > 1)
    return channel_peers(shape, rank, peers, NULL);
  for (int t = 0; t < 2 && workers > 1; t++) {
    int cand[RS_TREE_MAX_CHILDREN + 1];
    int k = rs__tree_children_in(shape, t, rank, cand);
    int parent = rs__tree_parent_in(shape, t, rank);
    if (parent >= 0)
      cand[k++] = parent;
    for (int i = 0; i < k; i++) {
      int seen = 0;
      for (int j = 0; j < n; j++)
        seen |= peers[j] == cand[i];
      if (!seen)
        peers[n++] = cand[i];
    }
  }
  return n;
}

/* The channel of each of neighbours' peers (algo.h's peer_channels). */
static void peer_channels(rs_shape_t shape, int rank, int sending,
                          int *peer_channel) {
  int peers[RS__MAX_CHANNEL_PEERS];
  (void)sending;
  if (rs__tree_channels(shape) > 1) {
    channel_peers(shape, rank, peers, peer_channel);
    return;
  }
  const int n = neighbours(shape, rank, peers);
  for (int i = 0; i < n; i++)
    peer_channel[i] = 0;
}

/* Whom rank sends to in each step: in the reduce (step 0) its parent in
 * either tree, in the broadcast (step 1) its children in both; each
 * worker once (it may be linked to the same one in both trees). */
static int sends(rs_shape_t shape, int step, int rank, int *dst, int max) {
  const int workers = shape.workers, on = rs__tree_channels(shape) > 1;
  int n = 0;
  /* (on channels: the shape's channels' trees, a bucket's busy ones when
   * the NICs' load is made for it: algo/channels.h's
   * rs__rings_busy_shape) */
  for (int x = 0; x < (on ? rs__shape_channels(shape) : 2) && workers > 1;
       x++) {
    const int ch = on ? x : 0, t = on ? rs__tree_ch_tree(shape, x) : x;
    int cand[RS_TREE_MAX_CHILDREN + 1];
    int k = step == 0 ? 0 : rs__tree_ch_children(shape, ch, t, rank, cand);
    if (step == 0 && rs__tree_ch_parent(shape, ch, t, rank) >= 0)
      cand[k++] = rs__tree_ch_parent(shape, ch, t, rank);
    for (int i = 0; i < k && n < max; i++) {
      int seen = 0;
      for (int j = 0; j < n; j++)
        seen |= dst[j] == cand[i];
      if (!seen)
        dst[n++] = cand[i];
    }
  }
  return n;
}

/* Every message is one segment of a tree chunk: at most ceil(ceil(n/2)/H)
 * elements a chunk, ceil of that over segs a segment. */
static size_t message_elems(rs_shape_t shape, int from, int to, size_t elems,
                            size_t segs, size_t cap) {
  const int workers = shape.workers;
  (void)from, (void)to;
  const size_t H = (size_t)rs__tree_chunks(workers);
  if (rs__tree_channels(shape) > 1) { /* (the largest part's chunk) */
    tree_cut_t cut;
    size_t most = 0;
    shape_cut(shape, elems, cap, &cut);
    for (int c = 0; c < cut.busy; c++)
      most = cut.part[c].len > most ? cut.part[c].len : most;
    const size_t chunk = most / H + (most % H != 0);
    return chunk ? (chunk + cut.segs - 1) / cut.segs : 0;
  }
  size_t half = elems / 2 + elems % 2;
  size_t chunk = half / H + (half % H != 0);
  return chunk ? (chunk + segs - 1) / segs : 0;
}

/* Any number: see "The direct transport" in the head comment. */
static size_t direct_slots(rs_shape_t shape, size_t min_segs, int slices) {
  (void)shape, (void)min_segs, (void)slices;
  return RS_MAX_SLOTS;
}

/* Two steps: the reduce and the broadcast (none for one worker). The tree
 * is an all-reduce only: rs_run_create refuses it for reduce-scatter. */
static int steps(rs_shape_t shape, rs_collective_t collective) {
  const int workers = shape.workers;
  (void)collective;
  return workers > 1 ? 2 : 0;
}

/* Per segment index and tree: one message from each child (up), one from
 * the parent (down). */
static size_t messages(rs_shape_t shape, int rank, size_t elems, size_t segs,
                       size_t cap, rs_collective_t collective) {
  const int workers = shape.workers;
  (void)collective;
  size_t per_index = 0;
  if (rs__tree_channels(shape) > 1 && workers > 1) {
    tree_cut_t cut; /* (each busy channel's tree's) */
    shape_cut(shape, elems, cap, &cut);
    for (int c = 0; c < cut.busy; c++) {
      int children[RS_TREE_MAX_CHILDREN];
      const tree_chpart_t *p = &cut.part[c];
      per_index += (size_t)rs__tree_ch_children(shape, p->channel, p->tree,
                                                rank, children) +
                   (rs__tree_ch_parent(shape, p->channel, p->tree, rank) >= 0);
    }
    return per_index * rs__tree_segments(workers, cut.segs);
  }
  for (int t = 0; t < 2 && workers > 1; t++) {
    int children[RS_TREE_MAX_CHILDREN];
    per_index += (size_t)rs__tree_children_in(shape, t, rank, children) +
                 (rs__tree_parent_in(shape, t, rank) >= 0);
  }
  return per_index * rs__tree_segments(workers, segs);
}

/* A contribution is added into its parent's sum, which then adds the
 * other children: at most two roundings per level of the taller tree,
 * three on several nodes (a head adds its chain child and two nodes'). */
static int depth(rs_shape_t shape) {
  int h0 = height(shape, 0), h1 = height(shape, 1);
  return (rs__tree_nodes_of(shape) > 1 ? 3 : 2) * (h0 > h1 ? h0 : h1);
}

/* Worker r's depth in tree t of channel ch (tree.h's order). */
static int ch_depth(rs_shape_t shape, int ch, int t, int r) {
  return rs__tree_depth_in(shape, t, rs__tree_ch_pos(shape, ch, r));
}

/* The narration (algo/narrate.h): the columns are the two halves, half t
 * all-reduced by tree t; on one of NCCL's channels (n->channel), its tree
 * alone, over its whole part (one column), with the channel's workers. */
static void narrate(rs_narrator_t *n, int mean) {
  const int W = n->workers, on = n->channel >= 0;
  const int ch = on ? n->channel : 0; /* (channel 0 is the pair's order) */
  const int t0 = on ? rs__tree_ch_tree(n->shape, ch) : 0, t1 = on ? t0 + 1 : 2;
  char title[96];
  int most[2] = {0, 0};
  for (int t = t0; t < t1; t++) {
    rs__narr_say(n, "\ntree %d (root worker %d):", t,
                 rs__tree_ch_root(n->shape, ch, t));
    int any = 0;
    for (int r = 0; r < W; r++) {
      int children[RS_TREE_MAX_CHILDREN];
      const int k = rs__tree_ch_children(n->shape, ch, t, r, children);
      const int d = ch_depth(n->shape, ch, t, r);
      most[t] = d > most[t] ? d : most[t];
      if (k == 1)
        rs__narr_say(n, "%s worker %d's child %d", any++ ? ";" : "", r,
                     children[0]);
      else if (k == 2)
        rs__narr_say(n, "%s worker %d's children %d, %d", any++ ? ";" : "", r,
                     children[0], children[1]);
      else if (k == 3)
        rs__narr_say(n, "%s worker %d's children %d, %d, %d", any++ ? ";" : "",
                     r, children[0], children[1], children[2]);
    }
    rs__narr_say(n, ".");
  }
  if (on)
    rs__narr_say(n,
                 "\nThe part goes up tree %d (reduce) and back down "
                 "(broadcast), as %d chunk%s of segments, pipelined: a "
                 "segment climbs one level while the next climbs the level "
                 "below. The steps below follow the data level by level; a "
                 "worker folds its own data first, then its children's in "
                 "order.\n",
                 t0, rs__tree_chunks(W), rs__tree_chunks(W) == 1 ? "" : "s");
  else
    rs__narr_say(
        n,
        "\nHalf t of the bucket goes up tree t (reduce) and back down "
        "(broadcast), as %d chunk%s of segments, pipelined: a segment climbs "
        "one level while the next climbs the level below. The steps below "
        "follow the data level by level; a worker folds its own data first, "
        "then its children's in order.\n",
        rs__tree_chunks(W), rs__tree_chunks(W) == 1 ? "" : "s");
  for (int phase = 0; phase < 2; phase++)
    for (int t = t0; t < t1; t++) {
      const int col = on ? 0 : t; /* the region tree t carries */
      for (int i = 0; i < most[t]; i++) {
        /* reduce: the deepest level first; broadcast: the root's first */
        const int L = phase == 0 ? most[t] - i : i + 1;
        rs__narr_begin(n);
        for (int p = 0; p < W; p++) {
          int children[RS_TREE_MAX_CHILDREN];
          if (ch_depth(n->shape, ch, t, p) != L - 1)
            continue;
          const int k = rs__tree_ch_children(n->shape, ch, t, p, children);
          const int root = rs__tree_ch_parent(n->shape, ch, t, p) < 0;
          for (int j = 0; j < k; j++)
            if (phase == 0)
              rs__narr_send(n, children[j], p, col, col + 1,
                            mean && root && j == k - 1 ? RS_RECV_REDUCE_MEAN
                                                       : RS_RECV_REDUCE);
            else
              rs__narr_send(n, p, children[j], col, col + 1, RS_RECV_COPY);
        }
        snprintf(title, sizeof title, "tree %d %s, level %d %s level %d", t,
                 phase == 0 ? "reduce" : "broadcast", phase == 0 ? L : L - 1,
                 phase == 0 ? "up to" : "down to", phase == 0 ? L - 1 : L);
        rs__narr_end(n, title);
      }
    }
  if (on)
    rs__narr_say(n,
                 "\nEvery worker now holds the part %s all %d workers; it "
                 "crossed %d levels up and as many down.\n",
                 n->result, W, most[t0]);
  else
    rs__narr_say(
        n,
        "\nEvery worker now holds both halves %s all %d workers; each half "
        "crossed %d and %d levels up and as many down.\n",
        n->result, W, most[0], most[1]);
}

/* The columns: the two halves. */
static int layout(rs_shape_t shape, size_t elems, size_t cap, size_t *offsets,
                  const char **word, const char **words) {
  (void)shape, (void)cap;
  *word = "half";
  *words = "halves";
  for (int c = 0; c <= 2; c++)
    offsets[c] = c < 2 ? rs__chunk_offset(elems, 2, c) : elems;
  return 2;
}

/* NCCL's (NCCL_ALGO_TREE). */
const rs_algo_t rs__algo_tree = {.name = "tree",
                                 .caps = RS__CAP_AUTO | RS__CAP_NCCL |
                                         RS__CAP_FORMULA | RS__CAP_CHANNELS,
                                 .send_peers = neighbours,
                                 .recv_peers = neighbours,
                                 .peer_channels = peer_channels,
                                 .message_elems = message_elems,
                                 .direct_slots = direct_slots,
                                 .messages = messages,
                                 .steps = steps,
                                 .sends = sends,
                                 .depth = depth,
                                 .predict = predict,
                                 .sim_bucket = sim_bucket,
                                 .sim_work = sim_work,
                                 .sim_scratch = sim_scratch,
                                 .title = "double binary tree all-reduce",
                                 .layout = layout,
                                 .narrate = narrate,
                                 .run_bucket = tree_bucket};
