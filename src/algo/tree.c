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
 * channels" below; tree.h), and there, where a segment crosses an edge
 * within the time a port takes to move it, reduces and broadcasts at
 * once, as NCCL's runTreeSplit does ("the split" below); elsewhere the
 * sweeps above, channel by channel. The pair of trees on one channel
 * keeps the sweeps: this is the textbook order (NCCL's runTreeUpDown),
 * where NCCL, which runs the two trees on two channels, splits them too.
 *
 * This file is the algorithm alone; moving a segment, and everything around
 * it, is the transfer primitive's (xfer.h).
 */
#include "algo/tree.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
 * in turn (channel 0's, then 1's, ...), and no channel waits on
 * another's messages on the simulated clock. The up-down order's
 * argument that it cannot deadlock is the head comment's as it is: every
 * worker runs the same sequence of sweeps, each one channel's tree's, on
 * that channel's queues; the split has its own (below). */
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

/* Where position p's parent and children are in tree t: CROSSES, one on
 * another node; STAYS, one on its own (either, both or none). (A
 * channel's worker at position p is on p's node: rs__tree_ch_worker.) */
enum { CROSSES = 1, STAYS = 2 };
static int crosses_nodes(rs_shape_t shape, int t, int p) {
  int peers[RS_TREE_MAX_CHILDREN + 1];
  const int G = shape.gpus;
  int n = rs__tree_children_in(shape, t, p, peers), where = 0;
  peers[n++] = rs__tree_parent_in(shape, t, p);
  for (int i = 0; i < n; i++)
    if (peers[i] >= 0)
      where |= peers[i] / G != p / G ? CROSSES : STAYS;
  return where;
}

/* Of the busy channels, on how many worker r sends to another node (so
 * through its NIC side), and on how many within its node (through its
 * NVLink port: netmodel.h's rs__sim_busy; a head does both). */
static void sim_busy(rs_simclock_t *c, rs_shape_t shape, const tree_cut_t *cut,
                     int r) {
  int off = 0, on = 0;
  for (int k = 0; k < cut->busy && shape.gpus < shape.workers; k++) {
    const int where =
        crosses_nodes(shape, cut->part[k].tree,
                      rs__tree_ch_pos(shape, cut->part[k].channel, r));
    off += (where & CROSSES) != 0;
    on += (where & STAYS) != 0;
  }
  rs__sim_busy(c, cut->busy, on, off);
}

/* ---- the split (NCCL's runTreeSplit) ------------------------------------
 * NCCL runs a channel's tree all-reduce with runTreeSplit
 * (src/device/all_reduce.h): the channel's threads split in two groups,
 * one receiving from the children, reducing and sending up
 * (directRecvReduceDirectSend; a leaf's directSend), the other receiving
 * from the parent and sending down (directRecvCopyDirectSend; a leaf's
 * directRecv), both from the kernel's start, so segment k comes down
 * while later ones still climb; the root, unsplit, turns each segment
 * round at once (directRecvReduceCopyDirectSend). ringsim's worker is one
 * thread: it interleaves its two programs in one fixed order, and the
 * simulated clocks overlap them: one clock a channel, and the channel's
 * share of each port carries both directions, each transfer where the
 * worker's program puts it (netmodel.h).
 *
 * The order. Up(j) is segment j's reduce at the worker (receive every
 * child's j, fold, send to the parent), Down(j) its broadcast (receive
 * the parent's j, send it to each child). Time goes in ticks, a segment
 * crossing one edge a tick. A worker at depth d of its channel's tree
 * does Up(j) at tick j - d and Down(j) at tick j + d + 1/2: its program is
 * Up(t + d), Down(t - d), Up(t + 1 + d), ...; the root does Up(j) and at
 * once Down(j), a leaf at depth d starts its broadcast after 2d segments
 * up. On several channels a worker takes, tick by tick, every channel's
 * Up, then every channel's Down.
 *
 *     tick:     -2      -1       0       1       2       3    ...
 *     root d=0                  U0 D0   U1 D1   U2 D2   U3 D3
 *     d=1              U0       U1 .    U2 D0   U3 D1   U4 D2
 *     leaf d=2  U0     U1       U2 .    U3 .    U4 D0   U5 D1
 *
 * Why it cannot deadlock, whatever the slot count K >= 1. The network is
 * determinate (head comment), so one interleaving that runs to the end
 * suffices: take the ticks in order; in an integer tick every Up, each
 * worker after its parent (top down), channel by channel; in a half tick
 * every Down, each worker after its children (bottom up). Each worker's
 * program is that order restricted to it. A message is received one tick
 * after it is sent (a child's Up(j) at tick j - d - 1, its parent's at
 * j - d; the parent's Down(j) at j + d - 1/2, the child's at j + d +
 * 1/2), and the next one on its edge is sent in the tick it is received,
 * after it (top down up, bottom up down): so every send finds an empty
 * edge and every receive its message, and the order runs to the end.
 *
 * When. The order keeps NCCL's timing only where a segment crosses an
 * edge within a tick, the time a worker's port takes to move the
 * segments of a tick (two or three, up and down): then a worker's
 * Down(t - d) has arrived when its Up(t + 1 + d) is due, and the
 * pipeline runs at its busiest port's pace. Where latency is long
 * against a segment's wire time (small buckets, many nodes), a worker's
 * Down would come late and hold its next Up (they share its clock and
 * ports), and the pipeline would go at the pace of its round trips: there
 * each channel keeps the up-down order (channels_updown), whose two
 * pipelines never wait on each other. split_fits draws the line: every
 * kind of hop's latency at most a quarter of a segment's wire time on
 * the channel's share of the port (a hop then takes at most 1.25 wire
 * times, a tick at least 2).
 *
 * The direct transport stays safe: a worker's Down(j) writes segment j
 * after its parent has taken (and released) its Up(j), as in the up-down
 * order. */

/* Does the split fit the bucket (its largest segment of elems elements,
 * its busy channels) on net (NULL: no clocks, it does)? Each kind of hop
 * a channel's tree has, within a node (workers 0 -> 1) and between nodes
 * (0 -> G), at the least time net gives it (rs__sim_hop_least_ns), its
 * wire time on the channel's share of the port busy times its own
 * (netmodel.h): its latency at most a quarter of that ("When" above). The
 * threaded run and the schedule simulation ask it alike. */
static int split_fits(const rs_netmodel_t *net, rs_shape_t shape,
                      size_t elems, size_t elem_size, int busy) {
  const int W = shape.workers, G = shape.gpus < W ? shape.gpus : W;
  if (!net || !net->enabled)
    return 1;
  const size_t bytes = (size_t)rs__proto_wire_bytes(net->proto, elems * elem_size);
  const int to[2] = {G > 1 ? 1 : -1, G < W ? G : -1};
  for (int k = 0; k < 2; k++) {
    uint64_t latency;
    if (to[k] < 0)
      continue;
    const uint64_t wire = rs__sat_mul(
        rs__sim_hop_least_ns(net, W, 0, to[k], bytes, &latency),
        (uint64_t)(busy > 1 ? busy : 1));
    if (rs__sat_mul(latency, 4) > wire)
      return 0;
  }
  return 1;
}

/* The largest segment of a cut (its largest part's chunk, cut in segs). */
static size_t cut_segment(const tree_cut_t *cut, int workers) {
  const size_t H = (size_t)rs__tree_chunks(workers);
  size_t most = 0;
  for (int c = 0; c < cut->busy; c++)
    most = cut->part[c].len > most ? cut->part[c].len : most;
  const size_t chunk = most / H + (most % H != 0);
  return (chunk + cut->segs - 1) / (cut->segs ? cut->segs : 1);
}

/* The split's moves take their step's NIC load (rs__tree_global_step:
 * the reduce's sends go to parents, the broadcast's to children, as the
 * load counts them). */
static void split_phase(rs_worker_t *w, rs_phase_t ph) {
  w->global_step = rs__tree_global_step(ph) + w->group.step_base;
  w->progress.phase = ph;
}

/* The split order, on every busy channel. */
static int channels_split(rs_worker_t *w, const tree_cut_t *cut) {
  const long long S = (long long)rs__tree_segments(w->workers, cut->segs);
  int rc, depth[RS_MAX_CHANNELS], most = 0;
  /* both steps begin at once: the reduce's and the broadcast's, each
   * with what the wire does to its first message (an injected fault:
   * it waits for that step's first send) */
  rs_wire_t wire[2];
  for (int phase = 0; phase < 2; phase++) {
    const rs_phase_t ph = phase == 0 ? RS_PHASE_REDUCE : RS_PHASE_BROADCAST;
    if ((rc = rs__xfer_step(w, ph, 0, rs__tree_global_step(ph), 1)))
      return rc;
    wire[phase] = w->step_wire;
  }
  for (int c = 0; c < cut->busy; c++) {
    const tree_chpart_t *p = &cut->part[c];
    depth[c] = rs__tree_depth_in(w->shape, p->tree,
                                 rs__tree_ch_pos(w->shape, p->channel, w->rank));
    most = depth[c] > most ? depth[c] : most;
  }
  for (long long t = -most; t < S + most; t++)
    for (int phase = 0; phase < 2; phase++) {
      split_phase(w, phase == 0 ? RS_PHASE_REDUCE : RS_PHASE_BROADCAST);
      w->step_wire = wire[phase];
      for (int c = 0; c < cut->busy; c++) {
        /* up: segment t + d; down: segment t - d */
        const long long j = phase == 0 ? t + depth[c] : t - depth[c];
        if (j < 0 || j >= S)
          continue;
        const tree_chpart_t *p = &cut->part[c];
        const tree_at_t q = {w->shape, p->channel, p->tree};
        const rs_tree_seg_t g =
            part_segment(p, w->workers, cut->segs, (size_t)j);
        w->channel = p->channel; /* (its queues, its clock) */
        rc = phase == 0 ? reduce_up(w, &q, &g) : broadcast_down(w, &q, &g);
        if (rc)
          return rc;
      }
      wire[phase] = w->step_wire; /* (a send took it: RS_WIRE_OK) */
    }
  return RS_OK;
}

/* The up-down order (NCCL's runTreeUpDown): every busy channel's reduce,
 * segment by segment, each segment on every channel in turn; then the
 * broadcast so. */
static int channels_updown(rs_worker_t *w, const tree_cut_t *cut) {
  const size_t S = rs__tree_segments(w->workers, cut->segs);
  int rc;
  for (int phase = 0; phase < 2; phase++) {
    const rs_phase_t ph = phase == 0 ? RS_PHASE_REDUCE : RS_PHASE_BROADCAST;
    if ((rc = rs__xfer_step(w, ph, 0, rs__tree_global_step(ph), 1)))
      return rc;
    for (size_t i = 0; i < S; i++)
      for (int c = 0; c < cut->busy; c++) {
        const tree_chpart_t *p = &cut->part[c];
        const tree_at_t q = {w->shape, p->channel, p->tree};
        const rs_tree_seg_t g = part_segment(p, w->workers, cut->segs, i);
        w->channel = p->channel; /* (its queues, its clock) */
        rc = phase == 0 ? reduce_up(w, &q, &g) : broadcast_down(w, &q, &g);
        if (rc)
          return rc;
      }
  }
  return RS_OK;
}

static int channels_bucket(rs_worker_t *w) {
  tree_cut_t cut;
  cut_channels(w->shape, w->elems, w->elem_size, w->sim.proto, w->seg_cap,
               &cut);
  sim_busy(&w->sim, w->shape, &cut, w->rank);
  const int rc = split_fits(w->sim.net, w->shape,
                            cut_segment(&cut, w->workers), w->elem_size,
                            cut.busy)
                     ? channels_split(w, &cut)
                     : channels_updown(w, &cut);
  w->channel = 0;
  return rc;
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
 * channels side by side: the slowest's time. It estimates the up-down
 * order (channels_updown); where the split runs, the schedule is faster
 * (up to the reduce and broadcast's sum less their overlap). */
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
  int depth; /* (the split's ticks: its depth) */
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
 * its incoming port (a child on another node: its NIC side's), which
 * moves on by at least each message's time on the wire (netmodel.h's
 * rs__sim_recv), and no segment is shorter than `shortest`: so each of
 * the root's ports has that much still to come, and the bucket ends no
 * sooner. A bounded simulation (rs_auto_choose's argmin) stops when it
 * cannot. */
static int reduce_can_end(rs_simrun_t *s, int t, size_t left, size_t shortest) {
  const int root = rs__tree_root_in(s->shape, t);
  int children[RS_TREE_MAX_CHILDREN];
  const int n = rs__tree_children_in(s->shape, t, root, children);
  const rs_simclock_t *c = &s->clocks[root];
  uint64_t per[2] = {0, 0}; /* each of the root's ports, per segment */
  for (int j = 0; j < n; j++)
    per[rs__sim_off_node(c, children[j])] += rs__sim_wire_ns(
        &s->clocks[children[j]], root, s->step, shortest * s->elem_size);
  const uint64_t port[2] = {c->in_free, c->nic_in_free};
  for (int p = 0; p < 2; p++) {
    if (port[p] > s->bound)
      return 0;
    if (per[p] && (uint64_t)left > (s->bound - port[p]) / per[p])
      return 0;
  }
  return 1;
}

/* One bucket on simulated clocks alone, no data (algo.h): the
 * sweep-by-sweep interleaving of the head comment, in which every worker
 * makes the same clock calls with the same arrival times as in a threaded
 * run. */
/* The workers of tree t of channel ch as the sweeps visit them, top down,
 * into at[W], with their depths (order: W ranks of scratch). */
static void sweep_order(rs_shape_t shape, int ch, int t, int *order,
                        sweep_at_t *at) {
  top_down(shape, ch, t, order);
  for (int k = 0; k < shape.workers; k++) {
    sweep_at_t *a = &at[k];
    a->x = order[k];
    a->parent = rs__tree_ch_parent(shape, ch, t, a->x);
    a->n = rs__tree_ch_children(shape, ch, t, a->x, a->children);
    a->depth = 0;
  }
  /* (top down: a worker's parent is before it, its depth known; order's
   * ranks are free again: each one's place in at) */
  for (int k = 0; k < shape.workers; k++)
    order[at[k].x] = k;
  for (int k = 1; k < shape.workers; k++)
    at[k].depth = at[order[at[k].parent]].depth + 1;
}

/* Channel c of cut alone in the up-down order (channels_updown), both
 * phases from step0 on, its sweeps of one segment length certified
 * repeats (algo.h): every worker's clock, link and port stand for the
 * channel's while it plays (s->live; netmodel.h's on_channels clocks keep
 * them equal), and the latest of all comes back after (into all). */
static void sim_channel_updown(rs_simrun_t *s, const tree_cut_t *cut, int c,
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

/* A channel's split on simulated clocks: its tree's workers top down,
 * with their depths (at), its part (S segments, cut into segs a chunk),
 * and the steps whose NIC load its sends take (the reduce's step0 + 1,
 * the broadcast's step0 + 2). */
typedef struct split_sim {
  const sweep_at_t *at;
  const tree_chpart_t *p;
  size_t segs;
  long long S;
  int step0;
} split_sim_t;

/* Tick t of the split (channels_split) on simulated clocks, one
 * channel's: every worker's Up(t + d) top down, then every worker's
 * Down(t - d) bottom up. A child's Up waits in its mailbox (box x) until
 * its parent takes it a tick later, before the child sends again (top
 * down); a Down in the child's second mailbox (box W + x) until the child
 * takes it a half tick later, before the parent posts again (bottom
 * up). */
static void sim_tick(rs_simrun_t *s, const split_sim_t *q, long long t) {
  const int W = s->shape.workers;
  s->step = q->step0 + 1;
  for (int k = 0; k < W; k++) {
    const sweep_at_t *a = &q->at[k];
    const long long j = t + a->depth;
    if (j < 0 || j >= q->S)
      continue;
    const size_t len = part_segment(q->p, W, q->segs, (size_t)j).len;
    for (int i = 0; i < a->n; i++)
      rs__simrun_recv(s, a->x, a->children[i], len);
    if (a->parent >= 0)
      rs__simrun_send(s, a->x, a->parent, len);
  }
  s->step = q->step0 + 2;
  for (int k = W - 1; k >= 0; k--) {
    const sweep_at_t *a = &q->at[k];
    const long long j = t - a->depth;
    if (j < 0 || j >= q->S)
      continue;
    const size_t len = part_segment(q->p, W, q->segs, (size_t)j).len;
    if (a->parent >= 0)
      rs__simrun_recv(s, a->x, W + a->x, 0);
    for (int i = 0; i < a->n; i++) /* (one after the other on x's link) */
      rs__simrun_mail(s, a->x, a->children[i], W + a->children[i], len, 0);
  }
}

/* The last tick from t on (t itself if none) whose ticks t..last move
 * the same messages, of the same sizes: every worker's Up and Down in
 * each of them in range, of segments all as long (every tick reads
 * segments t - most .. t + most). */
static long long ticks_alike(const tree_chpart_t *p, int W, size_t segs,
                             long long S, long long t, int most) {
  if (t - most < 0 || t + most >= S)
    return t;
  const size_t len = part_segment(p, W, segs, (size_t)(t - most)).len;
  long long e = t - most; /* (the last segment of that length) */
  while (e + 1 < S && part_segment(p, W, segs, (size_t)(e + 1)).len == len)
    e++;
  return e - most > t ? e - most : t;
}

/* DESIGN: the split's repeats. A tick's messages are received in the
 * next one, so the state one tick hands the next is every worker's clock
 * and ports and every mailbox in flight (a non-root worker's two);
 * and a run's steady state may repeat only every few ticks (a cycle of
 * the schedule spans several: its period a fraction of a tick). So the
 * whole state is saved before a tick of a run of ticks alike, and after
 * each tick since compared with it: if every field of it (each worker's
 * clock, link and port on the channel, each mailbox's arrival) has moved
 * on by one delta and each mailbox's wire time is as it was, the ticks
 * since (a period) map the state to itself moved on, and every period
 * after it, the same messages again, would too (every clock call is max
 * and +): the rest of the run's whole periods are not played, the state
 * moved on by a delta each. Exact, as the plain simulation checks
 * (test_tree_channels). The longest period looked for: SPLIT_PERIOD_MAX
 * ticks, from SPLIT_PERIOD_MIN, twice as long at each save. */
#define SPLIT_PERIOD_MIN 4
#define SPLIT_PERIOD_MAX 64

/* A worker's words on the channel that the split's state holds: its
 * clock, then its shares of its four ports (RS_PORT_* order), and the
 * transfers its ports had taken (netmodel.h: a port it has not used
 * since has not moved, and need not). */
enum { SPLIT_WORDS = 5, SPLIT_KEPT = SPLIT_WORDS + 1 };
static uint64_t *split_word(const rs_simclock_t *x, int f, int ch) {
  static const int which[SPLIT_WORDS] = {
      RS_SIM_CHANNEL_CLOCK, RS_SIM_CHANNEL_LINK, RS_SIM_CHANNEL_IN,
      RS_SIM_CHANNEL_NIC, RS_SIM_CHANNEL_NIC_IN};
  return &x->channel_words[RS_SIM_CHANNEL_WORDS * (size_t)ch +
                           (size_t)which[f]]; /* (RS_SIM_CHANNEL's) */
}

/* Word f of x's moves by delta: the clock, and a port it used since
 * `transfers`. */
static int split_moves(const rs_simclock_t *x, int f, uint64_t transfers) {
  return f == 0 || x->port_last[f - 1] > transfers;
}

/* The state of a channel's split at a tick's boundary, into (or compared
 * with) saved: SPLIT_KEPT W words of clocks, then 2 W arrivals and 2 W
 * wire times of mailboxes (sim_tick's). */
static size_t split_state_len(int W) { return (SPLIT_KEPT + 4) * (size_t)W; }

static void split_save(const rs_simrun_t *s, int ch, uint64_t *saved) {
  const int W = s->shape.workers;
  for (int r = 0; r < W; r++) {
    const rs_simclock_t *x = &s->clocks[r];
    for (int f = 0; f < SPLIT_WORDS; f++)
      saved[SPLIT_KEPT * (size_t)r + (size_t)f] = *split_word(x, f, ch);
    saved[SPLIT_KEPT * (size_t)r + SPLIT_WORDS] = x->transfers;
  }
  memcpy(saved + SPLIT_KEPT * (size_t)W, s->arrive,
         2 * (size_t)W * sizeof *saved);
  memcpy(saved + (SPLIT_KEPT + 2) * (size_t)W, s->wire,
         2 * (size_t)W * sizeof *saved);
}

/* Has the state moved on from saved by one delta (at: the tree's
 * workers, whose mailboxes are in flight unless at the root)? The delta,
 * or 0. */
static uint64_t split_moved(const rs_simrun_t *s, int ch, const sweep_at_t *at,
                            const uint64_t *saved) {
  const int W = s->shape.workers;
  uint64_t delta = 0;
  for (int k = 0; k < W; k++) {
    const int r = at[k].x;
    const rs_simclock_t *x = &s->clocks[r];
    const uint64_t *kept = saved + SPLIT_KEPT * (size_t)r;
    uint64_t now[SPLIT_WORDS + 2], was[SPLIT_WORDS + 2];
    int n = 0;
    for (int f = 0; f < SPLIT_WORDS; f++) {
      if (!split_moves(x, f, kept[SPLIT_WORDS])) {
        if (*split_word(x, f, ch) != kept[f]) /* (unused: as it was) */
          return 0;
        continue;
      }
      now[n] = *split_word(x, f, ch);
      was[n++] = kept[f];
    }
    if (at[k].parent >= 0) /* (its mailboxes up and down) */
      for (int box = r; box < 2 * W; box += W) {
        if (s->wire[box] != saved[(SPLIT_KEPT + 2) * (size_t)W + (size_t)box])
          return 0;
        now[n] = s->arrive[box];
        was[n++] = saved[SPLIT_KEPT * (size_t)W + (size_t)box];
      }
    for (int f = 0; f < n; f++) {
      if (now[f] <= was[f] || now[f] > RS_SIM_NS_MAX)
        return 0;
      if (!delta)
        delta = now[f] - was[f];
      if (now[f] - was[f] != delta)
        return 0;
    }
  }
  return delta;
}

/* Can every field split_moved compared move on by `by` and stay within
 * RS_SIM_NS_MAX? */
static int split_room(const rs_simrun_t *s, int ch, const sweep_at_t *at,
                      uint64_t by) {
  const int W = s->shape.workers;
  for (int k = 0; k < W; k++) {
    const int r = at[k].x;
    const rs_simclock_t *x = &s->clocks[r];
    uint64_t most = 0;
    for (int f = 0; f < SPLIT_WORDS; f++)
      most = *split_word(x, f, ch) > most ? *split_word(x, f, ch) : most;
    for (int box = r; at[k].parent >= 0 && box < 2 * W; box += W)
      most = s->arrive[box] > most ? s->arrive[box] : most;
    if (most > RS_SIM_NS_MAX - by)
      return 0;
  }
  return 1;
}

/* Move the state on by `by` (every field split_moved compared, saved's
 * the state it compared with). */
static void split_move(rs_simrun_t *s, int ch, const sweep_at_t *at,
                       const uint64_t *saved, uint64_t by) {
  const int W = s->shape.workers;
  for (int k = 0; k < W; k++) {
    const int r = at[k].x;
    rs_simclock_t *x = &s->clocks[r];
    const uint64_t since = saved[SPLIT_KEPT * (size_t)r + SPLIT_WORDS];
    for (int f = 0; f < SPLIT_WORDS; f++)
      *split_word(x, f, ch) += split_moves(x, f, since) ? by : 0;
    /* (the worker's own stand for the channel's while it plays) */
    x->clock = *split_word(x, 0, ch);
    x->link_free = *split_word(x, 1, ch);
    x->in_free = *split_word(x, 2, ch);
    x->nic_free = *split_word(x, 3, ch);
    x->nic_in_free = *split_word(x, 4, ch);
    if (x->clock > s->bound)
      s->over = 1;
    if (at[k].parent >= 0)
      for (int box = r; box < 2 * W; box += W)
        s->arrive[box] += by;
  }
}

/* Channel c of cut alone in the split order (channels_split), from
 * step0 on, tick by tick, every worker's clock, link and port standing
 * for the channel's while it plays (as sim_channel_updown's), its runs
 * of ticks alike repeated (the split's repeats, above; saved: room for
 * split_state_len words, NULL in a plain simulation). */
static void sim_channel_split(rs_simrun_t *s, const tree_cut_t *cut, int c,
                              const sweep_at_t *at, uint64_t *saved,
                              rs_simstate_t *all) {
  const int W = s->shape.workers, step0 = s->step;
  const tree_chpart_t *p = &cut->part[c];
  const long long S = (long long)rs__tree_segments(W, cut->segs);
  int most = 0;
  for (int k = 0; k < W; k++)
    most = at[k].depth > most ? at[k].depth : most;
  rs__simrun_channel_alone(s, p->channel, step0);
  rs__simrun_step(s); /* (both steps begin at once) */
  rs__simrun_step(s);
  const split_sim_t q = {at, p, cut->segs, S, step0};
  long long last = -most - 1, from = LLONG_MIN;
  long long window = SPLIT_PERIOD_MIN;
  int done = 0; /* (this run repeated: the rest is played) */
  for (long long t = -most; t < S + most && !rs__simrun_stopped(s); t++) {
    if (t > last) { /* (a new run: ticks t..last alike) */
      last = ticks_alike(p, W, cut->segs, S, t, most);
      from = LLONG_MIN;
      window = SPLIT_PERIOD_MIN;
      done = 0;
    }
    if (saved && !done && from == LLONG_MIN && t < last) {
      split_save(s, p->channel, saved);
      from = t;
    }
    sim_tick(s, &q, t);
    if (from == LLONG_MIN || rs__simrun_stopped(s))
      continue;
    const long long period = t + 1 - from, times = (last - t) / period;
    const uint64_t delta = times ? split_moved(s, p->channel, at, saved) : 0;
    if (delta && delta <= RS_SIM_NS_MAX / (uint64_t)times &&
        split_room(s, p->channel, at, delta * (uint64_t)times)) {
      split_move(s, p->channel, at, saved, delta * (uint64_t)times);
      t += times * period;
      from = LLONG_MIN;
      done = 1;
    } else if (period >= window || !times) { /* (still settling: again) */
      from = LLONG_MIN;
      window = 2 * window < SPLIT_PERIOD_MAX ? 2 * window : SPLIT_PERIOD_MAX;
    }
  }
  s->step = step0 + 2;
  rs__simrun_channel_fold(s, all);
}

/* Is channel b's tree channel a's with the workers relabelled, a's
 * worker r being b's perm[r] (W of them, filled in), and b's part as
 * long (ctx: the cut)? Channels of one tree differ only in the GPU that heads their
 * chain in every node (rs__tree_ch_worker): each is the other turned
 * within every node, and moves as it did where the model cannot tell
 * the GPUs apart (simrun.h's rs_simchannels_t). */
static int image_of(const rs_simrun_t *s, const void *ctx, int ca, int cb,
                    int *perm) {
  const tree_cut_t *cut = ctx;
  const tree_chpart_t *a = &cut->part[ca], *b = &cut->part[cb];
  if (a->tree != b->tree || a->len != b->len)
    return 0;
  for (int r = 0; r < s->shape.workers; r++)
    perm[r] = rs__tree_ch_worker(s->shape, b->channel,
                                 rs__tree_ch_pos(s->shape, a->channel, r));
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
    int off = 0, on = 0;
    for (int c = 0; many && c < cut->busy; c++) {
      const int where =
          crosses[(size_t)cut->part[c].tree * W +
                  rs__tree_ch_pos(shape, cut->part[c].channel, r)];
      off += (where & CROSSES) != 0;
      on += (where & STAYS) != 0;
    }
    rs__sim_busy(&s->clocks[r], cut->busy, on, off);
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
  rs_simchannels_t ch = {.busy = cut.busy, .image_of = image_of, .ctx = &cut};
  if (off_nodes(s, &cut)) {
    s->nomem = 1;
    return;
  }
  if (rs__simchannels_begin(s, &ch, 1))
    return;
  /* (the order; the split's two mailboxes a worker in place of the
   * runner's, and its repeats' saved state: none in a plain simulation) */
  const int split = split_fits(s->net, shape, cut_segment(&cut, W),
                               s->elem_size, cut.busy);
  uint64_t *const runner_arrive = s->arrive, *const runner_wire = s->wire;
  uint8_t *const runner_nic = s->via_nic;
  uint64_t *mail_arrive = NULL, *mail_wire = NULL, *saved = NULL;
  uint8_t *mail_nic = NULL;
  if (split &&
      (!(mail_arrive = malloc(2 * (size_t)W * sizeof *mail_arrive)) ||
       !(mail_wire = malloc(2 * (size_t)W * sizeof *mail_wire)) ||
       !(mail_nic = calloc(2 * (size_t)W, sizeof *mail_nic)) ||
       (rs__simrun_may_repeat(s) &&
        !(saved = malloc(split_state_len(W) * sizeof *saved)))))
    s->nomem = 1;
  /* (each channel's order as it comes to play: a bounded simulation that
   * stops in the first needs no other's) */
  for (int c = 0; c < cut.busy && !s->nomem && !rs__simrun_stopped(s); c++) {
    if (ch.done[c])
      continue;
    sweep_order(shape, cut.part[c].channel, cut.part[c].tree,
                order + (size_t)c * W, at + (size_t)c * W);
    if (split) {
      s->arrive = mail_arrive; /* (two mailboxes a worker: sim_tick) */
      s->wire = mail_wire;
      s->via_nic = mail_nic;
      s->step = ch.step0;
      sim_channel_split(s, &cut, c, at + (size_t)c * W, saved, ch.all);
      s->arrive = runner_arrive;
      s->wire = runner_wire;
      s->via_nic = runner_nic;
    } else
      sim_channel_updown(s, &cut, c, at + (size_t)c * W, ch.step0, ch.all);
    rs__simchannels_played(s, &ch, c);
  }
  rs__simchannels_end(s, &ch);
  free(saved);
  free(mail_arrive);
  free(mail_wire);
  free(mail_nic);
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
                 "below; where segments are long against a hop's latency, "
                 "a segment comes down as soon as the root has its sum, "
                 "while later ones still climb (NCCL's split). The steps "
                 "below follow the data level by level; a worker folds its "
                 "own data first, then its children's in order.\n",
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
/* A bound of its own (algo.h's least). The sum of an element needs every
 * worker's contribution, so the message that carries it climbs from each
 * leaf to the root, hop by hop, and its result comes down to each leaf:
 * the deepest leaf's way up and the deepest's way down, each hop no
 * sooner than its least latency (rs__sim_hop_least_ns; the bytes are not
 * counted), whatever the order the reduce and broadcast run in. Channel
 * 0 has data whenever the bucket has (algo/channels.h), and runs tree 0;
 * on one channel the two trees each take a half, of which one may be
 * empty: the lesser of theirs. Where a channel's chain through a node
 * starts changes no hop's kind (within a node or across), so the trees
 * are taken unturned. 0 when memory runs out. */
static uint64_t least(const rs_netmodel_t *m, rs_shape_t shape, size_t elems,
                      size_t elem_size) {
  const int W = shape.workers;
  (void)elem_size;
  shape.rings = NULL; /* (unturned) */
  int *order = malloc((size_t)W * sizeof *order);
  uint64_t *up = malloc((size_t)W * sizeof *up),
           *down = malloc((size_t)W * sizeof *down);
  uint64_t bound = UINT64_MAX;
  const int trees = rs__tree_channels(shape) > 1 ? 1 : 2;
  for (int t = 0; order && up && down && elems && t < trees; t++) {
    top_down(shape, 0, t, order);
    uint64_t most_up = 0, most_down = 0, latency;
    up[order[0]] = down[order[0]] = 0;
    for (int i = 1; i < W; i++) { /* (each after its parent) */
      const int r = order[i], parent = rs__tree_parent_in(shape, t, r);
      rs__sim_hop_least_ns(m, W, r, parent, 0, &latency);
      up[r] = rs__sat_add(up[parent], latency);
      rs__sim_hop_least_ns(m, W, parent, r, 0, &latency);
      down[r] = rs__sat_add(down[parent], latency);
      most_up = up[r] > most_up ? up[r] : most_up;
      most_down = down[r] > most_down ? down[r] : most_down;
    }
    const uint64_t b = rs__sat_add(most_up, most_down);
    bound = b < bound ? b : bound;
  }
  free(order);
  free(up);
  free(down);
  return bound == UINT64_MAX ? 0 : bound;
}

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
                                 .least = least,
                                 .sim_bucket = sim_bucket,
                                 .sim_work = sim_work,
                                 .sim_scratch = sim_scratch,
                                 .title = "double binary tree all-reduce",
                                 .layout = layout,
                                 .narrate = narrate,
                                 .run_bucket = tree_bucket};
