/* algo/nvlstree.c - NCCL's NVLSTree (NCCL_ALGO_NVLS_TREE): NVLink SHARP
 * within each node, a tree across the nodes, on N nodes of G GPUs whose
 * NVLink switch reduces (dgx-h100,nodes=N).
 *
 * The bucket is cut into G shards, shard l headed by local rank l; each
 * shard into two halves, half t carried by tree t of NCCL's double binary
 * tree over the N nodes (algo/tree.h); each half into U units of at most
 * a segment (the same U for every half). A unit goes through four stages:
 * 1. Within its node, NVLS's reduce (algo/nvls.h): every GPU puts its
 *    copy into the node's switch (a participant of its own, W + node:
 *    xfer.h), which adds them; the head (local rank l) takes the sum.
 * 2. Up tree t, among the N heads of shard l (local rank l, one a node,
 *    each through its own NIC: GPU l's): a head folds its children's sums
 *    into its own, its own first, then down[0]'s, down[1]'s (NCCL's
 *    reduceCopy order), and sends the sum to its parent. The root's last
 *    fold completes the sum (and divides by W for avg).
 * 3. Down tree t: a head takes the result from its parent and passes it
 *    to its children.
 * 4. Within its node, NVLS's multicast: the head writes the unit's result
 *    to every GPU of its node through the switch.
 *
 * NCCL runs the stages at once, each in its own warps, a chunk behind the
 * one before it (src/device/all_reduce.h, RunWorkColl for
 * NCCL_ALGO_NVLS_TREE: scatter, reduce-and-send-up, receive-down-and-
 * broadcast, gather; src/graph/connect.cc makes the switch's sum and the
 * child nodes' heads the tree's down[]). ringsim has one thread a GPU, so
 * the thread interleaves the stages unit by unit, in rounds. In round k
 * every worker runs, in this order:
 *
 *   node reduce of unit k, half 0 then half 1                 (step 0)
 *   for tree t = 0, then 1, as a head at depth d of tree t (D: the
 *   trees' height):
 *     send up   unit k - 1 - (D - d)       to the parent       (step 1)
 *     take up   unit k - 1 - (D - d - 1)   from each child     (step 1)
 *     send down unit k - 1 - D - d         to each child       (step 2)
 *     take down unit k - 1 - D - (d - 1)   from the parent     (step 2)
 *   multicast of unit k - 1 - 2D, half 0 then half 1          (step 3)
 *
 * (where there is no such unit, that part does nothing). So a unit goes
 * up one level a round and down one level a round: what a head takes in
 * round k it sends on in round k + 1, never in the round it took it. On
 * the simulated clock every send is ready when its own unit's data is
 * (netmodel.h's streaming clock: a put at the bucket's start, anything
 * else when the unit's last receive before it was taken; the unit's
 * segment is part x U + k, nvls.h's cut) and leaves when its port is
 * free: every send's data came in a round or more before it, so while a
 * unit climbs the tree the next ones are reduced in the node and the
 * ones before are multicast, and no port waits within a round for a
 * message of that round, as in NCCL. A worker's port serves its sends in
 * its program's order, and so does its incoming port its receives.
 *
 * Why it cannot deadlock, whatever the slot count K >= 1. The network is
 * determinate (tree.c's argument: one sender and one receiver an edge,
 * each worker's next operation fixed by its own program), so one
 * interleaving that runs to the end is enough. Every worker runs the same
 * rounds and, in a round, the same parts in the same order: each node
 * reduce or multicast of a half, and each tree's up sends, up receives,
 * down sends and down receives. Take the parts one after another, every
 * worker's (and switch's) at once. A node's reduce or multicast of a half
 * is one of nvls.c's rounds: every GPU puts its messages into its node's
 * switch, which takes them pass by pass (a GPU's next put needs only its
 * last taken), then sends each GPU what it takes next. In a tree's part
 * every message goes on an edge of that tree (a head's to its parent, or
 * to each child), at most one an edge, and the next part takes them all.
 * So every part leaves every edge as empty as it found it, and each send
 * finds a free slot. (Were a message taken a round after it was sent, an
 * edge that both trees use, as the two nodes' heads' do, would hold two
 * at once: with K = 1 that deadlocks.)
 */
#include <stdio.h>

#include "algo/algo.h"
#include "algo/hier.h"
#include "algo/narrate.h"
#include "algo/nvls.h"
#include "algo/tree.h"
#include "net/netmodel.h"
#include "net/xfer.h"

/* The rounds a unit goes up the tree after its node's reduce: one, so its
 * sum has come down from the switch before it leaves. */
enum { UP_LAG = 1 };

/* A unit's stages, as --inject numbers the steps. */
enum { STAGE_REDUCE, STAGE_UP, STAGE_DOWN, STAGE_CAST, STAGES };

static int nodes_of(rs_shape_t shape) { return shape.workers / shape.gpus; }

/* The units U each half is cut into: at most cap elements each (the
 * largest half's, the first half of shard 0). */
static size_t units(rs_shape_t shape, size_t elems, size_t cap) {
  return rs__segs(rs__chunk_elems(rs__chunk_elems(elems, shape.gpus, 0), 2, 0),
                  cap);
}

/* A bucket's pipeline: its elements, its units a half, the nodes' GPUs,
 * the nodes and the trees' height D over them (the most edges from a
 * root to a head; both trees have the same shape: tree.h). */
typedef struct tree_at tree_at_t;
typedef struct pipe {
  size_t elems, U;
  int G, N, D;
  /* (a simulation's: each head's place in tree 0, then tree 1, N each;
   * shard l's half t cut into U units, half[2 l + t]) */
  const tree_at_t *at;
  const rs_cut_t *half;
} pipe_t;

static pipe_t pipe_of(rs_shape_t shape, size_t elems, size_t cap) {
  pipe_t p = {elems, units(shape, elems, cap), shape.gpus, nodes_of(shape), 0,
              NULL, NULL};
  for (int m = 0; m < p.N; m++) {
    const int d = rs__tree_depth(p.N, 0, m);
    p.D = d > p.D ? d : p.D;
  }
  return p;
}

/* The rounds of a bucket: a unit's multicast comes 1 + 2D after its
 * node's reduce. */
static size_t cast_lag(const pipe_t *p) { return UP_LAG + 2 * (size_t)p->D; }

/* Half t of every shard, cut into U units (nvls.h's cut). */
static rs_nvls_cut_t half_cut(const pipe_t *p, int t) {
  return (rs_nvls_cut_t){.segs = p->U, .part = t, .parts = 2};
}

/* The unit a part handles in round k, lag rounds after that unit's node
 * reduce: 1 and *unit, or 0 where there is none. */
static int unit_of(const pipe_t *p, size_t k, size_t lag, size_t *unit) {
  *unit = k - lag;
  return k >= lag && k - lag < p->U;
}

/* Unit k of half t of shard l: where it lies, and its tag (its chunk: the
 * shard's half, layout's region 2 l + t; its segment on the clock). */
typedef struct unit_at {
  size_t off, len;
  rs_tag_t tag;
} unit_at_t;

static unit_at_t unit_at(const pipe_t *p, int l, int t, size_t k,
                         rs_phase_t phase) {
  const rs_nvls_cut_t cut = half_cut(p, t);
  unit_at_t u = {.tag = {.phase = phase,
                         .chunk = 2 * l + t,
                         .segment = (int)rs__nvls_seg(&cut, k)}};
  const rs_nvls_piece_t at = rs__nvls_piece(p->elems, p->G, &cut, l, k);
  u.off = at.off;
  u.len = at.len;
  return u;
}

/* Worker rank's node, as a group of G members (the node's GPUs). */
static rs_group_t node_group(rs_shape_t shape, int rank) {
  return (rs_group_t){.first = rank / shape.gpus * shape.gpus, .stride = 1};
}

/* Worker rank's heads across the nodes: the N workers of its local rank,
 * member m for node m (standing for node m's G workers in a message's
 * contributors: xfer.h's rs_group_t). */
static rs_group_t heads_group(rs_shape_t shape, int rank) {
  return (rs_group_t){.first = rank % shape.gpus, .stride = shape.gpus};
}

/* A head's place in tree t of its N: parent (-1 at the root), children
 * (NCCL's down[] order), depth. */
struct tree_at {
  int parent, n, children[2], depth;
};

static tree_at_t tree_at(int N, int t, int m) {
  tree_at_t h = {.parent = rs__tree_parent(N, t, m),
                 .depth = rs__tree_depth(N, t, m)};
  h.n = rs__tree_children(N, t, m, h.children);
  return h;
}

/* A worker as a head: of shard l, member m of its local rank's N heads,
 * its place in each tree, and the stages it has entered in the bucket. */
typedef struct pipe_head {
  int l, m;
  tree_at_t at[2];
  unsigned entered;
} pipe_head_t;

/* Worker w enters stage s (the first time in the bucket, an --inject
 * fault of the step strikes): within the node it is member r % G of its
 * node's G, across the nodes member r / G of its local rank's N heads. */
static int enter(rs_worker_t *w, int s, pipe_head_t *me) {
  static const rs_phase_t phase[STAGES] = {
      RS_PHASE_REDUCE_SCATTER, RS_PHASE_REDUCE, RS_PHASE_BROADCAST,
      RS_PHASE_ALL_GATHER};
  const rs_shape_t shape = w->shape;
  const int r = rs__group_worker(&w->group, w->rank), G = shape.gpus;
  const int within = s == STAGE_REDUCE || s == STAGE_CAST;
  const int first = !(me->entered & 1u << s);
  me->entered |= 1u << s;
  w->group = within ? node_group(shape, r) : heads_group(shape, r);
  w->rank = within ? r % G : r / G;
  w->workers = within ? G : nodes_of(shape);
  return rs__xfer_step(w, phase[s], 0, s, first);
}

/* The rounds after a unit's node reduce that a head at depth d sends it
 * up (it takes it from its children a round before) and down (it takes
 * it from its parent a round before): the head comment's. */
static size_t up_lag(const pipe_t *p, int d) {
  return UP_LAG + (size_t)(p->D - d);
}
static size_t down_lag(const pipe_t *p, int d) {
  return UP_LAG + (size_t)(p->D + d);
}

/* Tree t's part of round k on worker w, the head me (the head comment):
 * its send up, its receives from its children (folded, its own data
 * first), its sends down, its receive from its parent (copied). */
static int tree_part(rs_worker_t *w, const pipe_t *p, pipe_head_t *me, int t,
                     size_t k) {
  const tree_at_t *h = &me->at[t];
  const int mean = w->op == RS_OP_AVG && !w->average;
  const size_t up = up_lag(p, h->depth), down = down_lag(p, h->depth);
  size_t unit;
  unit_at_t u;
  int rc = RS_OK;
  if (h->parent >= 0 && unit_of(p, k, up, &unit) &&
      !(rc = enter(w, STAGE_UP, me))) {
    u = unit_at(p, me->l, t, unit, RS_PHASE_REDUCE);
    rs__tree_contributors(p->N, t, me->m, &u.tag.contrib_first,
                          &u.tag.contrib_count);
    rc = rs__xfer_send(w, h->parent, u.off, u.len, &u.tag);
  }
  if (!rc && h->n && unit_of(p, k, up - 1, &unit) &&
      !(rc = enter(w, STAGE_UP, me))) {
    u = unit_at(p, me->l, t, unit, RS_PHASE_REDUCE);
    for (int i = 0; i < h->n && !rc; i++) {
      rs__tree_contributors(p->N, t, h->children[i], &u.tag.contrib_first,
                            &u.tag.contrib_count);
      rc = rs__xfer_recv(w, h->children[i], u.off, u.len, &u.tag,
                         h->parent < 0 && i == h->n - 1 && mean
                             ? RS_RECV_REDUCE_MEAN /* (the sum complete) */
                             : RS_RECV_REDUCE);
    }
  }
  if (!rc && h->n && unit_of(p, k, down, &unit) &&
      !(rc = enter(w, STAGE_DOWN, me))) {
    u = unit_at(p, me->l, t, unit, RS_PHASE_BROADCAST);
    u.tag.contrib_count = p->N; /* (the result: every node's) */
    for (int i = 0; i < h->n && !rc; i++)
      rc = rs__xfer_send(w, h->children[i], u.off, u.len, &u.tag);
  }
  if (!rc && h->parent >= 0 && unit_of(p, k, down - 1, &unit) &&
      !(rc = enter(w, STAGE_DOWN, me))) {
    u = unit_at(p, me->l, t, unit, RS_PHASE_BROADCAST);
    u.tag.contrib_count = p->N;
    rc = rs__xfer_recv(w, h->parent, u.off, u.len, &u.tag, RS_RECV_COPY);
  }
  return rc;
}

/* One bucket: the rounds of the head comment. */
static int nvlstree_bucket(rs_worker_t *w) {
  const int r = w->rank, W = w->workers;
  const pipe_t p = pipe_of(w->shape, w->elems, w->seg_cap);
  pipe_head_t me = {.l = r % p.G, .m = r / p.G};
  for (int t = 0; t < 2; t++)
    me.at[t] = tree_at(p.N, t, me.m);
  size_t unit;
  int rc = RS_OK;
  for (size_t k = 0; k < p.U + cast_lag(&p) && !rc; k++) {
    if (unit_of(&p, k, 0, &unit) && !(rc = enter(w, STAGE_REDUCE, &me)))
      for (int t = 0; t < 2 && !rc; t++) { /* (the tree's root divides) */
        const rs_nvls_cut_t cut = half_cut(&p, t);
        rc = rs__nvls_reduce_round(w, &cut, unit);
      }
    for (int t = 0; t < 2 && !rc; t++)
      rc = tree_part(w, &p, &me, t, k);
    if (!rc && unit_of(&p, k, cast_lag(&p), &unit) &&
        !(rc = enter(w, STAGE_CAST, &me)))
      for (int t = 0; t < 2 && !rc; t++) {
        const rs_nvls_cut_t cut = half_cut(&p, t);
        rc = rs__nvls_multicast_round(w, &cut, unit);
      }
  }
  w->group = (rs_group_t){0};
  w->rank = r;
  w->workers = W;
  return rc;
}

/* The switch's part of a bucket: its node's parts of the rounds, the
 * GPUs' (the head comment), the tree's root dividing (mean 0 here). */
static int nvlstree_switch_bucket(rs_worker_t *sw) {
  const pipe_t p = pipe_of(sw->shape, sw->elems, sw->seg_cap);
  size_t unit;
  int rc = RS_OK;
  for (size_t k = 0; k < p.U + cast_lag(&p) && !rc; k++) {
    for (int t = 0; t < 2 && !rc && unit_of(&p, k, 0, &unit); t++) {
      const rs_nvls_cut_t cut = half_cut(&p, t);
      rc = rs__nvls_switch_reduce_round(sw, &cut, unit, 0);
    }
    for (int t = 0; t < 2 && !rc && unit_of(&p, k, cast_lag(&p), &unit); t++) {
      const rs_nvls_cut_t cut = half_cut(&p, t);
      rc = rs__nvls_switch_multicast_round(sw, &cut, unit);
    }
  }
  return rc;
}

/* Tree t's part of round k on simulated clocks, for local rank l's heads
 * (worker l + G m for member m): tree_part's clock calls, every head's
 * send up, then receives from its children, then sends down, then
 * receive from its parent; each message waits in a mailbox (up: its
 * sender's; down: its receiver's) for the next of these. */
static void sim_tree_part(rs_simrun_t *s, const pipe_t *p, int l, int t,
                          size_t k) {
  const int G = p->G;
  const tree_at_t *at = p->at + t * p->N;
  const rs_cut_t half = p->half[2 * l + t];
  size_t unit;
  for (int part = 0; part < 4; part++) {
    s->step = part < 2 ? STAGE_UP : STAGE_DOWN;
    for (int m = 0; m < p->N; m++) {
      const tree_at_t *h = &at[m];
      const int x = l + G * m;
      const size_t up = up_lag(p, h->depth), down = down_lag(p, h->depth);
      const int has = part == 0   ? h->parent >= 0 && unit_of(p, k, up, &unit)
                      : part == 1 ? h->n && unit_of(p, k, up - 1, &unit)
                      : part == 2 ? h->n && unit_of(p, k, down, &unit)
                                  : h->parent >= 0 &&
                                        unit_of(p, k, down - 1, &unit);
      if (!has)
        continue;
      /* (unit_at's length and segment, the cut worked out once) */
      const size_t len = half.len + (unit < half.longer);
      const size_t seg = (size_t)t * p->U + unit;
      if (part == 0)
        rs__simrun_mail(s, x, l + G * h->parent, x, len, seg);
      for (int i = 0; part == 1 && i < h->n; i++)
        rs__simrun_recv_seg(s, x, l + G * h->children[i], len, seg);
      for (int i = 0; part == 2 && i < h->n; i++) {
        const int child = l + G * h->children[i];
        rs__simrun_mail(s, x, child, child, len, seg);
      }
      if (part == 3)
        rs__simrun_recv_seg(s, x, x, 0, seg);
    }
  }
}

/* May a head have a tree part in round k (none before the first unit
 * climbs, none once the last has come down)? */
static int trees_busy(const pipe_t *p, size_t k) {
  return k >= UP_LAG && k - UP_LAG < p->U + 2 * (size_t)p->D;
}

/* One bucket on simulated clocks alone: the rounds of the head comment,
 * each part for every node's GPUs, or every local rank's heads, at once
 * (their edges are their own), so every worker makes its clock calls in
 * its own program's order with the arrivals a threaded run gives it. */
static void sim_bucket(rs_simrun_t *s, size_t elems, size_t segs) {
  (void)segs;
  pipe_t p = pipe_of(s->shape, elems, s->cap);
  const int G = p.G, N = p.N;
  tree_at_t *at = s->algo_mem; /* (pipe_t's at and half) */
  rs_cut_t *half = (rs_cut_t *)(at + 2 * N);
  p.at = at;
  p.half = half;
  for (int t = 0; t < 2; t++)
    for (int m = 0; m < N; m++)
      at[t * N + m] = tree_at(N, t, m);
  for (int c = 0; c < 2 * G; c++)
    half[c] = rs__cut(rs__chunk_elems(rs__chunk_elems(elems, G, c / 2), 2,
                                      c % 2),
                      p.U);
  for (int st = 0; st < STAGES; st++) /* (each step's NIC load placed) */
    rs__simrun_step(s);
  size_t unit;
  for (size_t k = 0; k < p.U + cast_lag(&p) && !rs__simrun_stopped(s); k++) {
    s->step = STAGE_REDUCE;
    for (int t = 0; t < 2 && unit_of(&p, k, 0, &unit); t++)
      for (int node = 0; node < N; node++) {
        const rs_nvls_cut_t cut = half_cut(&p, t);
        rs__nvls_sim_reduce_round(s, node * G, G, elems, &cut, unit);
      }
    for (int t = 0; t < 2 && trees_busy(&p, k); t++)
      for (int l = 0; l < G; l++)
        sim_tree_part(s, &p, l, t, k);
    s->step = STAGE_CAST;
    for (int t = 0; t < 2 && unit_of(&p, k, cast_lag(&p), &unit); t++)
      for (int node = 0; node < N; node++) {
        const rs_nvls_cut_t cut = half_cut(&p, t);
        rs__nvls_sim_multicast_round(s, node * G, G, elems, &cut, unit);
      }
  }
}

/* The two trees' heads and the shards' halves' cuts (sim_bucket's). */
static size_t sim_scratch(rs_shape_t shape) {
  return 2 * (size_t)nodes_of(shape) * sizeof(tree_at_t) +
         2 * (size_t)shape.gpus * sizeof(rs_cut_t);
}

/* Edges: the node's switch (a switch's: its node's GPUs), and the tree's
 * across the nodes among the same local rank. */
static int peers(rs_shape_t shape, int rank, int *out, int sending) {
  const int G = shape.gpus;
  int n = rs__nvls_peers(shape, rank, out);
  if (rank >= shape.workers)
    return n;
  const rs_algo_t *t = &rs__algo_tree;
  const int k = (sending ? t->send_peers : t->recv_peers)(
      rs__shape_flat(nodes_of(shape)), rank / G, out + n);
  for (int i = 0; i < k; i++)
    out[n + i] = rank % G + G * out[n + i];
  return n + k;
}
static int send_peers(rs_shape_t shape, int rank, int *out) {
  return peers(shape, rank, out, 1);
}
static int recv_peers(rs_shape_t shape, int rank, int *out) {
  return peers(shape, rank, out, 0);
}

/* Every message is a unit of a half: within the node a copy or a sum,
 * across it the tree's. */
static size_t message_elems(rs_shape_t shape, int from, int to, size_t elems,
                            size_t segs, size_t cap) {
  (void)from, (void)to, (void)segs;
  const size_t half = rs__chunk_elems(rs__chunk_elems(elems, shape.gpus, 0),
                                      2, 0);
  return rs__chunk_elems(half, (int)units(shape, elems, cap), 0);
}

/* A shard's 2U units: the streaming clock's segments (seg_ready's room). */
static size_t chunk_segs(rs_shape_t shape, size_t elems, size_t segs,
                         size_t cap) {
  (void)segs;
  return 2 * units(shape, elems, cap);
}

/* Per unit of each half, a GPU takes its shard's sum and G-1 multicast
 * copies, and as a head a message from each child in each tree and one
 * from its parent; the switch takes each GPU's G puts and each head's sum
 * (none alone on its node). */
static size_t messages(rs_shape_t shape, int rank, size_t elems, size_t segs,
                       size_t cap, rs_collective_t collective) {
  (void)segs, (void)collective;
  const int G = shape.gpus, N = nodes_of(shape);
  if (rank >= shape.workers)
    return 2 * (size_t)(G * G + (G > 1 ? G : 0)) * units(shape, elems, cap);
  size_t per_unit = 2 * (size_t)G;
  for (int t = 0; t < 2; t++) {
    int children[2];
    per_unit += (size_t)rs__tree_children(N, t, rank / G, children) +
                (rs__tree_parent(N, t, rank / G) >= 0);
  }
  return per_unit * units(shape, elems, cap);
}

/* The node's reduce, the tree's reduce and broadcast, the multicast. */
static int steps(rs_shape_t shape, rs_collective_t collective) {
  (void)shape, (void)collective;
  return 4;
}

static int sends(rs_shape_t shape, int step, int rank, int *dst, int max) {
  const int G = shape.gpus;
  int n = 0;
  if (step == 0 || step == 3) {
    for (int d = 1; d < G && n < max; d++)
      dst[n++] = rank / G * G + rs__nvls_to(G, rank % G, d);
    return n;
  }
  n = rs__algo_tree.sends(rs__shape_flat(nodes_of(shape)), step - 1, rank / G,
                          dst, max);
  for (int i = 0; i < n; i++)
    dst[i] = rank % G + G * dst[i];
  return n;
}

/* A head adds its node's G-1 copies, then the tree's. */
static int depth(rs_shape_t shape) {
  return shape.gpus - 1 + rs__algo_tree.depth(rs__shape_flat(nodes_of(shape)));
}

/* The prediction: one bucket alone on simulated clocks. */
static uint64_t predict(const rs_netmodel_t *m, rs_shape_t shape, size_t elems,
                        size_t segs, size_t cap, size_t elem_size) {
  (void)segs;
  return rs__algo_predict_alone(&rs__algo_nvlstree, m, shape, elems, cap,
                                elem_size);
}

/* The regions: each shard's halves, the tree's (hier's nesting). */
static int layout(rs_shape_t shape, size_t elems, size_t cap, size_t *offsets,
                  const char **word, const char **words) {
  const int G = shape.gpus, N = nodes_of(shape);
  int count = 0;
  for (int l = 0; l < G; l++) {
    const size_t off = rs__chunk_offset(elems, G, l);
    const int k =
        rs__algo_tree.layout(rs__shape_flat(N), rs__chunk_elems(elems, G, l),
                             cap, offsets + count, word, words);
    for (int j = 0; j < k; j++)
      offsets[count + j] += off;
    count += k;
  }
  offsets[count] = elems;
  *word = "shard half";
  *words = "shard halves";
  return count;
}

/* Every node's GPUs at once: round d of its NVLS reduce (to; the switch's
 * sum so far shown at the head: its first copy copied, round G the head's
 * own, set aside) or multicast (from a head), over shard columns of cols
 * each. */
static void node_round(rs_narrator_t *n, int d, int cols, int reduce) {
  const int G = n->shape.gpus;
  rs__narr_begin(n);
  for (int j = 0; j < n->workers; j++) {
    const int first = j / G * G, l = j % G;
    const int to = first + rs__nvls_to(G, l, d);
    const int shard = reduce ? to % G : l;
    rs__narr_send(n, j, to, shard * cols, (shard + 1) * cols,
                  !reduce || d == 1 ? RS_RECV_COPY : RS_RECV_REDUCE);
  }
}

/* --explain's narration (algo/narrate.h). */
static void narrate(rs_narrator_t *n, int mean) {
  const int G = n->shape.gpus, N = nodes_of(n->shape), cols = 2;
  char title[80];
  rs__narr_say(n,
               "\n%d nodes of %d GPUs on an NVLink switch that reduces: the "
               "bucket is cut into %d shards, shard l headed by local rank "
               "l, each told in the tree's two halves. Each half moves in "
               "units of a segment, and the stages below run at once, a "
               "unit apart: while a unit climbs the tree, the next ones are "
               "reduced in the node and the ones before come down and are "
               "multicast (told here stage by stage).\n\nwithin each node, "
               "NVLS's reduce: every GPU puts its copy of each shard into "
               "the switch, which adds them and sends the node's sum to the "
               "shard's head (the switch adds the copy of the GPU before "
               "the head first, then the one before that, ..., the head's "
               "own last: NVIDIA does not say in which order the hardware "
               "adds): told as %d round%s, each shown at the shard's head "
               "as the switch's sum so far.\n",
               N, G, G, G, G == 2 ? "" : "s");
  for (int j = 0; j < n->workers; j++) /* (its own, added last) */
    rs__narr_stash(n, j);
  for (int d = 1; d < G; d++) {
    node_round(n, d, cols, 1);
    snprintf(title, sizeof title,
             "within nodes, reduce through the switch, "
             "round %d",
             d);
    rs__narr_end(n, title);
  }
  rs__narr_begin(n);
  for (int j = 0; j < n->workers; j++)
    rs__narr_send(n, j, j, j % G * cols, (j % G + 1) * cols, RS_RECV_REDUCE);
  rs__narr_end(n, "within nodes, reduce through the switch: the head's own "
                  "copy, last");
  rs__narr_say(n,
               "\nacross the nodes: the %d heads of each shard, one a node, "
               "each through its own NIC, all-reduce it with NCCL's double "
               "binary tree; the %d shards at once.\n",
               N, G);
  rs__hier_narrate_across(n, &rs__algo_tree, cols, mean);
  rs__narr_owners(n, "the trees across nodes");
  rs__narr_say(n,
               "\nwithin each node, NVLS's multicast: each head puts its "
               "shard into the switch once, which writes it to every GPU "
               "of the node: told as %d round%s.\n",
               G - 1, G == 2 ? "" : "s");
  for (int d = 1; d < G; d++) {
    node_round(n, d, cols, 0);
    snprintf(title, sizeof title, "within nodes, multicast, round %d", d);
    rs__narr_end(n, title);
  }
  rs__narr_say(n, "\nEvery GPU now holds every shard %s all %d GPUs.\n",
               n->result, n->workers);
}

/* NCCL's NVLSTree (NCCL_ALGO_NVLS_TREE): nodes whose NVLink switch
 * reduces. */
const rs_algo_t rs__algo_nvlstree = {
    .name = "nvlstree",
    .caps = RS__CAP_NVLS | RS__CAP_TOPOLOGY | RS__CAP_NCCL | RS__CAP_STREAM,
    .send_peers = send_peers,
    .recv_peers = recv_peers,
    .message_elems = message_elems,
    .chunk_segs = chunk_segs,
    .direct_slots = rs__algo_never_direct,
    .messages = messages,
    .steps = steps,
    .sends = sends,
    .depth = depth,
    .predict = predict,
    .sim_bucket = sim_bucket,
    .sim_scratch = sim_scratch,
    .title = "NVLSTree all-reduce (NCCL's: NVLink SHARP in each node, a tree "
             "across)",
    .layout = layout,
    .narrate = narrate,
    .run_bucket = nvlstree_bucket,
    .run_switch = nvlstree_switch_bucket};
